"""The stage interface: one required method, `run`, and two hooks with defaults.

A stage takes the query and the previous stage's candidates (empty for a first-stage
retriever, which searches its own index) and returns at most `k` ranked candidates. The
pipeline (`run_stage`), not the stage, times each call and records it as a `StageResult`.
What a stage says beyond its candidates (a note, classifier calls, weighed sentences,
attention) goes in the typed `StageDetails` of the returned `StageOutput`; the hooks
`haystack` (how many units a search looks through) and `settings()` (how the stage is set
up) are read by the pipeline into the trace.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.records import NO_DETAILS, StageDetails
from engine.trace import StageResult
from engine.types import Candidate


@dataclass(frozen=True)
class StageOutput:
    """What a stage returns: ranked candidates and what it says about them."""

    candidates: tuple[Candidate, ...]
    details: StageDetails = NO_DETAILS
    n_in: int | None = None  # how many units it looked at, when not the candidates given


class Stage(ABC):
    """A ranking step of a funnel."""

    name: str = "stage"
    granularity: str = "documents"  # of the candidates it returns

    @abstractmethod
    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """Rank (or retrieve) and return at most `k` candidates, best first."""

    @property
    def haystack(self) -> int | None:
        """How many units the stage searches when it searches an index of its own (a
        first-stage retriever, DR-RAG's q + d retrieval); None when it ranks the candidates
        it is given."""
        return None

    def settings(self) -> dict:
        """How the stage is set up, JSON-friendly, for the run trace (its model, budget,
        weights); empty when its name and parameters say it all."""
        return {}


def rerank(candidates: Sequence[Candidate], scores: Sequence[float],
           k: int) -> tuple[Candidate, ...]:
    """`candidates` re-sorted by `scores` (stable for ties), cut to `k`, ranks renumbered."""
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])[:k]
    return tuple(replace(candidates[i], score=float(scores[i]), rank=rank)
                 for rank, i in enumerate(order, start=1))


def run_stage(stage: Stage, query: str, candidates: Sequence[Candidate], k: int) -> StageResult:
    """Run `stage` and wrap its output with its name, input size and wall time.

    A stage that searches an index (a first-stage retriever, DR-RAG's q + d retrieval)
    reports its `haystack`, the number of units it searched, as its input size, so its bar
    shows the whole haystack; a stage that changes granularity may report its own count
    (`StageOutput.n_in`: LongRAG's context counts the documents of the units it was given);
    any other stage reports the candidates it was given.
    """
    start = time.perf_counter()
    out = stage.run(query, candidates, k)
    seconds = time.perf_counter() - start
    n_in = out.n_in if out.n_in is not None else (
        stage.haystack if stage.haystack is not None else len(candidates))
    return StageResult(name=stage.name, granularity=stage.granularity, n_in=n_in,
                       candidates=out.candidates, seconds=seconds, details=out.details,
                       settings=stage.settings())
