"""First-stage retrievers: search a prebuilt index and ignore incoming candidates.

Building the index (slow, cached) stays outside the stage, so a stage is cheap to make and
several funnels can share one index.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.index.bm25 import BM25Index
from engine.index.dense import DenseIndex
from engine.stages.base import Stage, StageOutput
from engine.types import Candidate


class _IndexRetriever(Stage):
    """A stage returning the top-`k` units of `index` for the query."""

    def __init__(self, index: BM25Index | DenseIndex) -> None:
        self.index = index
        if index.units:  # an empty index keeps the class default
            self.granularity = index.units[0].granularity

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """Top-`k` units of the index for `query`; `candidates` are ignored."""
        return StageOutput(candidates=tuple(self.index.search(query, k)))


class BM25Retriever(_IndexRetriever):
    """Lexical first stage over an `engine.index.bm25.BM25Index`."""

    name = "bm25"

    def __init__(self, index: BM25Index) -> None:
        super().__init__(index)


class DenseRetriever(_IndexRetriever):
    """Bi-encoder first stage over an `engine.index.dense.DenseIndex` (cosine scores)."""

    name = "dense"

    def __init__(self, index: DenseIndex) -> None:
        super().__init__(index)
