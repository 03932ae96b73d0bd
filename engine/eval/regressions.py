"""Regressions between runs: which questions one setting improved, which it broke.

Two sets of eval rows (two paradigms of one evaluation, or one of each of two) are lined up
by question id, and each shared question is classed on one metric: improved (B above A),
regressed (B below A), or stayed (equal: for a right/wrong metric, right/right or
wrong/wrong; seconds within 10% of each other are the machine's noise, the same). A
failed run is no answer: its question is left out, as paired comparisons
leave it. Where two runs part is the first cut whose candidates differ (`first_divergence`),
where their side-by-side view opens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.eval.paired import BINARY, METRICS, question_values
from engine.trace import FAILED, RunTrace

IMPROVED, REGRESSED, STAYED_RIGHT, STAYED_WRONG, SAME = (
    "improved", "regressed", "stayed right", "stayed wrong", "same")
CHANGES = (IMPROVED, REGRESSED, STAYED_RIGHT, STAYED_WRONG, SAME)


@dataclass(frozen=True)
class Changed:
    """One question both runs answered, and how B's `metric` compares with A's."""

    question_id: str
    question: str
    position_a: int | None
    position_b: int | None
    a: float
    b: float
    change: str  # one of CHANGES


@dataclass(frozen=True)
class Changes:
    """How many shared questions each change has, and the questions, regressions first."""

    metric: str
    counts: dict[str, int]  # in CHANGES order, only the changes that occur
    questions: tuple[Changed, ...]


def changes(rows_a: Sequence[dict], rows_b: Sequence[dict], metric: str = "EM") -> Changes:
    """The questions both ran classed on `metric`, regressions first, then improvements,
    each by the size of the change."""
    if metric not in METRICS:
        raise ConfigError(f"metric={metric!r}: choose one of {', '.join(METRICS)}.")
    a_rows = {r["question_id"]: r for r in rows_a if r.get("status") != FAILED}
    b_rows = {r["question_id"]: r for r in rows_b if r.get("status") != FAILED}
    found = []
    for qid, a_row in a_rows.items():
        b_row = b_rows.get(qid)
        if b_row is None:
            continue
        a, b = question_values(a_row).get(metric), question_values(b_row).get(metric)
        if a is None or b is None:
            continue
        found.append(Changed(qid, a_row["question"], a_row.get("position"),
                             b_row.get("position"), a, b, _change(a, b, metric)))
    if not found:
        raise ConfigError(f"No question has {metric} in both runs (they share "
                          f"{len(a_rows.keys() & b_rows.keys())} answered questions).")
    order = {REGRESSED: 0, IMPROVED: 1}
    found.sort(key=lambda q: (order.get(q.change, 2), -abs(q.b - q.a)))
    counts = Counter(q.change for q in found)
    return Changes(metric, {c: counts[c] for c in CHANGES if counts[c]}, tuple(found))


def _change(a: float, b: float, metric: str) -> str:
    if metric == "seconds":  # fewer is better; within 10% is the machine's noise
        if abs(b - a) <= 0.1 * max(a, b):
            return SAME
        return IMPROVED if b < a else REGRESSED
    if a != b:
        return IMPROVED if b > a else REGRESSED
    if metric in BINARY:
        return STAYED_RIGHT if a else STAYED_WRONG
    return SAME


def first_divergence(a: RunTrace, b: RunTrace) -> int | None:
    """The index of the first cut whose candidates (unit ids, in order) differ between the
    two runs, None when every cut of both kept the same."""
    for i in range(max(len(a.stages), len(b.stages))):
        if i >= len(a.stages) or i >= len(b.stages):
            return i
        if [c.unit.id for c in a.stages[i].candidates] != \
                [c.unit.id for c in b.stages[i].candidates]:
            return i
    return None
