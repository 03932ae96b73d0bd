"""TREC depth-d pooling: what a collection's questions are judged from.

For each question, every system's top `depth` documents (a system is a paradigm's cut:
"flat/reranker"; by default each paradigm's last), deduplicated, with the documents already
judged left out. A document is shown by the unit that ranked it best (a passage, not its
whole document, where the cut ranks passages), and keeps which systems found it at which
rank. Questions come in their order; a question's documents by their best rank over the
systems, so a judge who stops early has judged every system's head.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from engine.documents import Candidate
from engine.errors import ConfigError, check_range
from engine.progress import duration
from engine.stages.classify import QUERY
from engine.store.judgments import PoolUnit
from engine.trace import RunTrace, StageResult

MAX_DEPTH = 100
SECONDS_PER_JUDGMENT = 20.0  # a person's pace where none was measured yet (said so)


def cuts(trace: RunTrace, stages: Sequence[str] = ()) -> list[StageResult]:
    """The cuts of a run that are pooled: those named in `stages` (every one it has), or
    its last ranking cut."""
    ranked = [s for s in trace.stages if s.granularity != QUERY]
    if stages:
        return [s for s in ranked if s.name in stages]
    return ranked[-1:]


def pool_units(runs: Mapping[str, Sequence[RunTrace]], depth: int,
               judged: Mapping[str, set[str]] | None = None, stages: Sequence[str] = ()
               ) -> list[PoolUnit]:
    """The pool of `runs` ({question id: its runs, one per paradigm}, in question order):
    per question, the top `depth` documents of each pooled cut, minus those `judged`
    ({question id: document ids}), in judging order."""
    check_range("depth", depth, 1, MAX_DEPTH)
    judged = judged or {}
    units: list[PoolUnit] = []
    for question_id, traces in runs.items():
        found: dict[str, list[tuple[str, int]]] = {}
        shown: dict[str, tuple[int, Candidate]] = {}  # document: (best rank, its unit)
        for trace in traces:
            for cut in cuts(trace, stages):
                system = f"{trace.paradigm}/{cut.name}"
                for rank, (doc, unit) in enumerate(_documents(cut.candidates)[:depth], 1):
                    if doc in judged.get(question_id, set()):
                        continue
                    found.setdefault(doc, []).append((system, rank))
                    if doc not in shown or rank < shown[doc][0]:
                        shown[doc] = (rank, unit)
        order = sorted(found, key=lambda d: (min(r for _, r in found[d]), list(found).index(d)))
        for doc in order:
            unit = shown[doc][1].unit
            units.append(PoolUnit(question_id, doc, unit.id, unit.title, unit.text,
                                  tuple(found[doc]), len(units)))
    return units


def _documents(candidates: Sequence[Candidate]) -> list[tuple[str, Candidate]]:
    """A cut's documents in rank order, each with the first unit holding it."""
    first: dict[str, Candidate] = {}
    for cand in candidates:
        for doc in cand.unit.doc_ids:
            first.setdefault(doc, cand)
    return list(first.items())


def judging_estimate(units: int, seconds: Sequence[float] = ()) -> str:
    """How long judging `units` takes: at the median of `seconds` (an assessor's measured
    time per judgment), or at SECONDS_PER_JUDGMENT where none was measured."""
    if units < 0:
        raise ConfigError(f"units={units}: a pool holds 0 or more.")
    pace, said = median_pace(seconds), "at your median pace"
    if pace is None:
        pace, said = SECONDS_PER_JUDGMENT, f"at {SECONDS_PER_JUDGMENT:.0f} s a judgment"
    return f"{units:,} units: about {duration(units * pace)} {said}"


def median_pace(seconds: Iterable[float]) -> float | None:
    """The median of measured seconds a judgment (the upper one of an even count); None
    where none was measured."""
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2] if ordered else None


def contributions(runs: Mapping[str, Sequence[RunTrace]], units: Sequence[PoolUnit],
                  stages: Sequence[str] = ()) -> str:
    """What each system put in the pool, and each paradigm that retrieved nothing for some
    questions (a query classifier that skipped retrieval, a failed run): a pool whose
    systems contribute unevenly says so before anyone judges it."""
    found = Counter(system for unit in units for system, _ in unit.found_by)
    said = ", ".join(f"{system} {n}" for system, n in sorted(found.items()))
    empty = Counter(trace.paradigm for traces in runs.values() for trace in traces
                    if not any(cut.candidates for cut in cuts(trace, stages)))
    lacking = "; ".join(f"{paradigm} retrieved nothing for {n} of {len(runs)} questions "
                        "(its query classifier skipped retrieval, or the run failed)"
                        for paradigm, n in sorted(empty.items()))
    return "units per system: " + (said or "none") + (f"; {lacking}" if lacking else "")

class NothingToPool(ConfigError):
    """A pool of runs whose cuts hold no document left to judge: says how deep the cuts
    reach, so "pool deeper" is offered only where deeper finds more."""

    def __init__(self, runs: dict, depth: int, stages: tuple[str, ...], found: set[str]
                 ) -> None:
        reach = max((len({d for c in cut.candidates for d in c.unit.doc_ids})
                     for traces in runs.values() for t in traces for cut in cuts(t, stages)),
                    default=0)
        if depth < reach:
            fix = f"Pool deeper (its cuts hold up to {reach} documents a question)"
        else:
            fix = (f"Depth {depth} reaches past what its cuts hold (at most {reach} documents "
                   "a question: the last cut's k), so a deeper pool finds nothing more; pool "
                   f"an earlier, longer cut (its cuts: {', '.join(sorted(found))}) or other "
                   "paradigms")
        super().__init__("The pool holds no unit to judge: every document the runs' cuts "
                         f"hold is judged already. {fix}. Nothing was stored.")
