"""Attention against leave-one-out attribution across an evaluation, per paradigm.

For every run whose reader step carries an ablation (`reader.ablation`, or added to a
stored run) and attention: whether attention's most attended passage is the one the answer
depends on most, the rank correlation of the two over the passages read, how often leaving
one passage out changes the answer, and what the ablation cost against the answer itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, median

from engine.readers.ablation import agreement, reading_step
from engine.trace import FAILED, RunTrace


def run_agreement(trace: RunTrace) -> dict | None:
    """One run's row: attention against ablation (None: the run has no ablation)."""
    step = reading_step(trace)
    if step is None or trace.status == FAILED:
        return None
    ablation = step.ablation
    agreed = agreement(step.attention, ablation) if step.attention is not None else None
    return {"passages": len(ablation.passages),
            "same_top": agreed.same_top if agreed else None,
            "spearman": agreed.spearman if agreed else None,
            "changed": sum(ablation.changed),
            "ablation_seconds": ablation.seconds, "answer_seconds": step.seconds,
            "tokens_read": ablation.tokens_read, "prompt_tokens": step.prompt_tokens}


@dataclass(frozen=True)
class AblationAgreement:
    """Attention against leave-one-out attribution over one paradigm's runs that carry an
    ablation: how often attention's top passage is ablation's (`same_top`, over the
    `compared` runs of two or more passages with attention), Spearman's correlation, the
    share of runs some single passage's removal changes the answer of, and the cost."""

    runs: int
    compared: int
    same_top: float | None
    spearman_mean: float | None
    spearman_median: float | None
    spearman_runs: int
    answer_changes: float
    passages: float  # read per run, on average
    ablation_seconds: float  # per run
    answer_seconds: float
    cost_ratio: float | None  # ablation seconds / answer seconds
    tokens_ratio: float | None  # ablation tokens read / the answer's prompt tokens


def agreement_summary(traces: Sequence[RunTrace],
                      labels: Sequence[str] = ()) -> dict[str, AblationAgreement]:
    """Per paradigm (in the order first met; per label where `labels` name each trace's
    place in its evaluation, a sweep's grid point or a ceiling's cut): runs with an
    ablation, how often attention's
    top passage is ablation's (`same_top`, over runs of two or more passages with
    attention), the mean and median Spearman correlation, the share of runs some single
    passage's removal changes the answer of, and the cost: ablation seconds and tokens per
    run against the answer step's."""
    by: dict[str, list[dict]] = {}
    for n, trace in enumerate(traces):
        row = run_agreement(trace)
        if row is not None:
            by.setdefault(labels[n] if labels else trace.paradigm, []).append(row)
    return {paradigm: _summary(rows) for paradigm, rows in by.items()}


def _summary(rows: list[dict]) -> AblationAgreement:
    tops = [r["same_top"] for r in rows if r["same_top"] is not None]
    rhos = [r["spearman"] for r in rows if r["spearman"] is not None]
    answer_s = fmean(r["answer_seconds"] for r in rows)
    ablation_s = fmean(r["ablation_seconds"] for r in rows)
    return AblationAgreement(
        runs=len(rows),
        compared=len(tops),
        same_top=round(fmean(tops), 4) if tops else None,
        spearman_mean=round(fmean(rhos), 4) if rhos else None,
        spearman_median=round(median(rhos), 4) if rhos else None,
        spearman_runs=len(rhos),
        answer_changes=round(fmean(r["changed"] > 0 for r in rows), 4),
        passages=round(fmean(r["passages"] for r in rows), 2),
        ablation_seconds=round(ablation_s, 4),
        answer_seconds=round(answer_s, 4),
        cost_ratio=round(ablation_s / answer_s, 3) if answer_s else None,
        tokens_ratio=round(fmean(r["tokens_read"] for r in rows)
                           / fmean(r["prompt_tokens"] for r in rows), 3)
        if any(r["prompt_tokens"] for r in rows) else None)
