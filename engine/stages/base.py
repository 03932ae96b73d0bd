"""The stage interface: one required method, `run`, and two hooks with defaults.

A stage takes the query and the previous stage's candidates (empty for a first-stage
retriever, which searches its own index) and returns at most `k` ranked candidates. The
pipeline (`run_stage`), not the stage, times each call and records it as a `StageResult`.
What a stage says beyond its candidates (a note, classifier calls, weighed sentences,
attention) goes in the typed `StageDetails` of the returned `StageOutput`; the hooks
`haystack` (how many units a search looks through) and `settings()` (how the stage is set
up) are read by the pipeline into the trace.

Within `reusing_stages()` (a sweep answering one question at many settings) a stage that is
`prefix_stable` (its top k is the head of its top k' > k: retrievers and re-rankers that
sort by a score) runs once per question and input; a smaller k is cut from what it gave.
Within `replaying(stored, at, change)` (a stage's ceiling, engine/eval/ceilings.py) a run's
stages up to `at` are its stored results, the one at `at` changed, the rest run as usual.
Within `leaving_out(doc_ids)` (a test collection's query that is itself a corpus document,
as ArguAna's are) every stage's units of those documents alone are left out and the stage
is asked for more, so they take no cut's place: BEIR retrieves k + 1 and drops the query.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import ClassVar

from engine.documents import Candidate
from engine.errors import check_range
from engine.trace import StageResult
from engine.trace_details import NO_DETAILS, StageDetails, StandIn


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
    prefix_stable: ClassVar[bool] = False  # its top k is the head of its top k' > k

    def reuse_key(self) -> tuple | None:
        """What identifies this stage's results for a question and input, so a sweep can
        reuse them (None: never reused): its class, name and public attributes (how it is
        set up), the shared indexes and models it reads by identity; private attributes
        are its own bookkeeping. Only `prefix_stable` stages have one."""
        if not self.prefix_stable:
            return None
        return (type(self).__qualname__, self.name,
                tuple(sorted((attr, _identity(value)) for attr, value in vars(self).items()
                             if not attr.startswith("_"))))

    @abstractmethod
    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """Rank (or retrieve) and return at most `k` candidates, best first."""

    @property
    def stand_in(self) -> StandIn | None:
        """What stands in for a resource this stage reads (BM25 for a dense index still
        being built, an untrained classifier), as that loaded resource declares it; None
        when every one is the real thing. `run_stage` puts its note and what stands in
        into the trace."""
        return None

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


class Reranker(Stage):
    """A stage that re-sorts the candidates it is given by a score of each."""

    prefix_stable = True

    @abstractmethod
    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        """A score per candidate, in input order (higher is better)."""

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The top-`k` of `candidates` by `scores`, ranks renumbered from 1."""
        check_range("k", k, 1, 1_000_000)
        return StageOutput(rerank(candidates, self.scores(query, candidates), k))


def rerank(candidates: Sequence[Candidate], scores: Sequence[float],
           k: int) -> tuple[Candidate, ...]:
    """`candidates` re-sorted by `scores` (stable for ties), cut to `k`, ranks renumbered."""
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])[:k]
    return tuple(replace(candidates[i], score=float(scores[i]), rank=rank)
                 for rank, i in enumerate(order, start=1))


def _identity(value: object) -> object:
    """A plain value as itself; anything else (an index, a model) by identity."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple) and all(isinstance(v, bool | int | float | str) for v in value):
        return value
    return ("id", id(value))


_reused: ContextVar[dict | None] = ContextVar("reused_stages", default=None)


@contextmanager
def reusing_stages() -> Iterator[dict]:
    """Within the block, `run_stage` reuses a prefix-stable stage's results for the same
    query and input: a request for k at most the k it ran with (or than it could give) is
    cut from them, keeping their seconds. Yields the memo ({key: (k, result)})."""
    memo: dict = {}
    token = _reused.set(memo)
    try:
        yield memo
    finally:
        _reused.reset(token)


class _Replay:
    """The stored results of a run's stages, handed back in order (see `replaying`)."""

    def __init__(self, stored: Sequence[StageResult], at: int,
                 change: Callable[[StageResult, Sequence[Candidate]], StageResult]) -> None:
        self.stored, self.at, self.change, self.next = tuple(stored), at, change, 0

    def result(self, stage: Stage, candidates: Sequence[Candidate]) -> StageResult | None:
        n, self.next = self.next, self.next + 1
        if n > self.at:
            return None
        stored = self.stored[n]
        if stored.name != stage.name:
            raise RuntimeError(f"Replaying a run: its stage {n + 1} was {stored.name!r}, "
                               f"this run's is {stage.name!r}; the config differs.")
        return self.change(stored, candidates) if n == self.at else stored


_replayed: ContextVar[_Replay | None] = ContextVar("replayed_stages", default=None)


@contextmanager
def replaying(stored: Sequence[StageResult], at: int,
              change: Callable[[StageResult, Sequence[Candidate]], StageResult]
              ) -> Iterator[None]:
    """Within the block, one run's `run_stage` calls give back `stored` (a run of the same
    question and config) instead of running, up to the `at`-th (from 0), which gives
    `change(stored result, the candidates it was given)`; the later ones run as usual."""
    token = _replayed.set(_Replay(stored, at, change))
    try:
        yield
    finally:
        _replayed.reset(token)


_left_out: ContextVar[frozenset[str]] = ContextVar("left_out_documents", default=frozenset())


@contextmanager
def leaving_out(doc_ids: frozenset[str]) -> Iterator[None]:
    """Within the block, `run_stage` leaves out the units of `doc_ids` alone (a unit that
    also holds other documents, a cluster or a group, stays) and asks the stage for as many
    more as it left out, so every cut still keeps k others where the stage has them."""
    token = _left_out.set(frozenset(doc_ids))
    try:
        yield
    finally:
        _left_out.reset(token)


def run_stage(stage: Stage, query: str, candidates: Sequence[Candidate], k: int) -> StageResult:
    """`stage`'s result over `candidates` (the previous stage's), cut to `k`, timed (see
    `_run_stage`); within `leaving_out`, without the units of the documents it names: the
    stage is asked again for k plus what it left out until k others are kept or it has no
    more (a stored result being replayed is only filtered). Its seconds are those of every
    call that ran; its note says what was left out."""
    left_out = _left_out.get()
    if not left_out:
        return _run_stage(stage, query, candidates, k)[0]
    asked, seconds, ran = k, 0.0, False
    while True:
        result, how = _run_stage(stage, query, candidates, asked)
        if how == RAN:  # a result reused or replayed keeps the seconds it was stored with
            seconds, ran = seconds + result.seconds, True
        kept = [c for c in result.candidates if not set(c.unit.doc_ids) <= left_out]
        dropped = len(result.candidates) - len(kept)
        if how == REPLAYED or len(kept) >= k or not dropped or len(result.candidates) < asked:
            break
        asked = k + dropped  # more than asked: fewer than k were kept
    if ran:
        result = replace(result, seconds=seconds)
    if not dropped:
        return replace(result, candidates=result.candidates[:k])
    note = (f"left out {dropped} unit{'s' if dropped > 1 else ''} of the question's own "
            "document (BEIR's ignore_identical_ids)")
    details = replace(result.details,
                      note="; ".join(filter(None, (result.details.note, note))))
    return replace(result, details=details,
                   candidates=tuple(replace(c, rank=rank)
                                    for rank, c in enumerate(kept[:k], start=1)))


RAN, REUSED, REPLAYED = "ran", "reused", "replayed"  # where `_run_stage`'s result came from


def _run_stage(stage: Stage, query: str, candidates: Sequence[Candidate], k: int
               ) -> tuple[StageResult, str]:
    """Run `stage` and wrap its output with its name, input size and wall time; with where
    the result came from: RAN, or REUSED (`reusing_stages`) or REPLAYED (`replaying`).

    A stage that searches an index (a first-stage retriever, DR-RAG's q + d retrieval)
    reports its `haystack`, the number of units it searched, as its input size, so its bar
    shows the whole haystack; a stage that changes granularity may report its own count
    (`StageOutput.n_in`: LongRAG's context counts the documents of the units it was given);
    any other stage reports the candidates it was given.
    """
    replay = _replayed.get()
    if replay is not None and (given := replay.result(stage, candidates)) is not None:
        return given, REPLAYED
    memo = _reused.get()
    key = stage.reuse_key() if memo is not None else None
    if key is not None:
        key = (key, query, tuple(c.unit.id for c in candidates))
        if key in memo:
            ran_with, result = memo[key]
            if k <= ran_with or len(result.candidates) < ran_with:
                return replace(result, candidates=result.candidates[:k]), REUSED
    result = _timed(stage, query, candidates, k)
    if key is not None:
        memo[key] = (k, result)
    return result, RAN


def _timed(stage: Stage, query: str, candidates: Sequence[Candidate], k: int) -> StageResult:
    start = time.perf_counter()
    out = stage.run(query, candidates, k)
    seconds = time.perf_counter() - start
    n_in = out.n_in if out.n_in is not None else (
        stage.haystack if stage.haystack is not None else len(candidates))
    details, settings = out.details, stage.settings()
    stood_in = stage.stand_in
    if stood_in is not None:  # it read a stand-in (engine.trace_details.StandIn)
        details = replace(details, note="; ".join(filter(None, (stood_in.note, details.note))))
        settings = {**settings, "stand_in": stood_in.what}
    return StageResult(name=stage.name, granularity=stage.granularity, n_in=n_in,
                       candidates=out.candidates, seconds=seconds, details=details,
                       settings=settings)
