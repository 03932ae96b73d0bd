"""One row per (question, paradigm) and the paper-style summary of many rows.

A row keeps what the summary, attribution (engine.eval.outcomes) and paired differences
(engine.eval.paired) read: metrics, seconds per step, reader cost, the gold-document recall
of what was read, each track's outcome and the run's cuts.

The summary per paradigm holds the means (AR@1..4, gold-document recall per stage, EM, F1),
seconds per stage (mean, median, p95), median total seconds, reader tokens, LLM calls and
documents sent to the reader per question.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence

from engine.eval.outcomes import SKIPPED, row_outcomes
from engine.metrics import has_span_answer, support_recall
from engine.trace import FAILED, NO_CANDIDATES, RunTrace


def row(trace: RunTrace) -> dict:
    """The JSONL row of one run (a preset's run listed under the preset's name)."""
    return {
        "question_id": trace.gold.id if trace.gold else "",
        "question": trace.question,
        "paradigm": trace.preset or trace.paradigm,
        "answer": trace.answer,
        "gold": list(trace.gold.answers) if trace.gold else [],
        "span_answer": has_span_answer(trace.gold) if trace.gold else False,
        "metrics": trace.metrics,
        "seconds": step_seconds(trace),
        "reader_tokens": trace.reader_input_tokens,
        "llm_calls": trace.llm_calls,
        "docs_to_reader": docs_to_reader(trace),
        "gold_doc_recall": read_gold_doc_recall(trace),
        "status": trace.status,
        **({"error": trace.error} if trace.error else {}),
        **row_outcomes(trace),
    }


def read_gold_doc_recall(trace: RunTrace) -> float | None:
    """Share of the gold supporting documents among those the reader read (None when the
    question names none)."""
    if trace.gold is None or not trace.gold.supporting_titles:
        return None
    read = [d for c in trace.read for d in c.unit.doc_ids]
    return support_recall(read, list(dict.fromkeys(trace.gold.supporting_titles)))


def docs_to_reader(trace: RunTrace) -> int:
    """How many distinct documents the final stage sent to the reader."""
    if not trace.stages:
        return 0
    return len({d for c in trace.stages[-1].candidates for d in c.unit.doc_ids})


def step_seconds(trace: RunTrace) -> dict[str, float]:
    """Seconds of every stage, then of every LLM call by purpose ("answer", ...)."""
    seconds = {s.name: round(s.seconds, 4) for s in trace.stages}
    for step in trace.llm_steps:
        seconds[step.purpose] = round(seconds.get(step.purpose, 0.0) + step.seconds, 4)
    return seconds


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of `values` (the smallest value at or above it)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


RANKING = re.compile(r"^(?:nDCG'?@10|RR|AP|R@\d+|P@\d+|gold_doc_recall)@")  # and a cut


def _skipped_with_gold(row: dict) -> bool:
    """A run whose query classifier skipped retrieval, of a question naming gold
    documents (its outcome on a documents track says so)."""
    outcome = row.get("outcome", {})
    return any(outcome.get(track) == SKIPPED for track in ("support", "relevant"))


def summarise(rows: Sequence[dict]) -> dict[str, dict[str, float]]:
    """{paradigm: {metric: mean}} with AR over span-answer questions only (as LongRAG).
    A failed run counts among the questions and as `failed`, never in a mean (it is no
    wrong answer); runs that found no candidates count as `no candidates` and in the means
    (their pipeline answered nothing right); a run that skipped retrieval for a question
    with gold documents counts 0 in every cut's ranking measures."""
    summary: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["paradigm"] for r in rows):
        every = [r for r in rows if r["paradigm"] == name]
        mine = [r for r in every if r.get("status") != FAILED]
        out: dict[str, float] = {"questions": len(every)}
        for status in (FAILED, NO_CANDIDATES):
            counted = sum(r.get("status") == status for r in every)
            if counted:
                out[status] = counted
        summary[name] = out
        if not mine:
            continue
        spans = [r for r in mine if r["span_answer"]]
        # a run whose query classifier skipped retrieval ranked nothing: 0 in every ranking
        # measure of its question's gold documents, as in answer recall (else a paradigm
        # that retrieves for one question in ten is measured on that one alone)
        for key in sorted({k for r in mine for k in r["metrics"]}):
            pool = spans if key.startswith("AR@") else mine
            ranking = RANKING.match(key) is not None
            values = [r["metrics"].get(key, 0.0) for r in pool if key in r["metrics"]
                      or (ranking and _skipped_with_gold(r))]
            if values:
                out[key] = round(statistics.fmean(values), 4)
        for stage in dict.fromkeys(s for r in mine for s in r["seconds"]):
            times = [r["seconds"][stage] for r in mine if stage in r["seconds"]]
            out[f"seconds_{stage}"] = round(statistics.fmean(times), 4)
            out[f"seconds_{stage}_median"] = round(statistics.median(times), 4)
            out[f"seconds_{stage}_p95"] = round(percentile(times, 0.95), 4)
        out["seconds_total_median"] = round(statistics.median(
            sum(r["seconds"].values()) for r in mine), 4)
        out["reader_tokens"] = round(statistics.fmean(r["reader_tokens"] for r in mine), 1)
        out["llm_calls"] = round(statistics.fmean(r.get("llm_calls", 0) for r in mine), 2)
        out["docs_to_reader"] = round(statistics.fmean(r.get("docs_to_reader", 0)
                                                       for r in mine), 2)
    return summary
