"""What answers for the dense passage index while a first start is still building it.

On a CPU without native bf16, encoding the default corpus's passages takes minutes
(docs/benchmarks/app.md, "Ready from a fresh start"). Rather than keep every dense
paradigm waiting, the app answers meanwhile with BM25: `DenseStandIn` searches the same
passages like a `DenseIndex`, document scores fall back to BM25 alone, and passages keep
the order they come in where stored vectors would re-rank them (engine.service.store). Every
stage that read a stand-in says so in its note and its settings (the loaded resource
declares it: `stand_in`, read by `engine.stages.base.run_stage`), and the
next question after the build runs on the real index. Only a build the app's background
preparation has promised is stood in for: the CLI builds the real index, and evaluations
prepare it (wait for it) before their first question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.trace_details import StandIn

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from engine.documents import Candidate, Unit
    from engine.index.bm25 import BM25Index

STAND_IN = "bm25"  # what stands in, in the settings of a stage that read a stand-in
# what stands in, as the status line names it
SEARCH_LABEL = "BM25 over the same passages"
SCORES_LABEL = "BM25 over documents"


def stand_in_reason(error: str = "") -> str:
    """Why a stand-in answers: the promised build is under way, or it failed with `error`."""
    if error:
        return f"the dense index failed to build ({error})"
    return "the dense index is still being built"


@dataclass(frozen=True)
class DenseStandIn:
    """BM25 over a dense index's units, searched as the dense index would be."""

    bm25: BM25Index
    model: str
    reason: str

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.bm25.units

    @property
    def stand_in(self) -> StandIn:
        return StandIn(STAND_IN, f"{self.reason}: {SEARCH_LABEL} stands in (the scores are "
                                 "BM25's)")

    def search(self, query: str, k: int = 10) -> list[Candidate]:
        """Top-`k` units for `query` by BM25 (those with a positive score), best first."""
        return self.bm25.search(query, k)

    def score_units(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """BM25's scores of units `ids` for `query` (engine.index.unit_scores)."""
        return self.bm25.score_units(query, ids)

