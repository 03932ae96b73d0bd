"""Is a difference real? Paired differences of two runs over the same questions.

For each metric, the difference of A's and B's statistic (the mean; the median for seconds)
over the questions both ran, with a 95% percentile interval from a paired bootstrap
(questions resampled with replacement, A and B together; seeded, 10,000 resamples, as
UltraRAG's significance test) and, for the binary metrics (EM, AR@k), the exact McNemar
p-value over the discordant questions. A difference whose interval holds 0 is within noise.
When more than two paradigms are compared (every pair of an evaluation), each metric's
McNemar p-values are also corrected for the number of pairs by Holm's step-down method
(statsmodels' `multipletests`), as `p_holm`: the chance that any one of the pairs looks
different by luck stays at the level asked.

AR@k counts only questions with a span answer (as the summary does); gold-document recall,
nDCG@10, MRR and MAP (of the last cut, what the reader was sent: trec_eval's, engine.metrics,
graded where the questions are judged) only where the dataset names supporting documents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from engine.errors import ConfigError
from engine.metrics import at_stage
from engine.trace import FAILED

RESAMPLES = 10_000
SEED = 0
LEVEL = 0.95
BINARY = ("EM", "AR@1", "AR@2", "AR@3", "AR@4")
METRICS = ("EM", "F1", "AR@1", "AR@2", "AR@3", "AR@4", "gold_doc_recall", "nDCG@10", "MRR",
           "MAP", "seconds")


@dataclass(frozen=True)
class PairedDifference:
    """A minus B on one metric over `n` shared questions."""

    metric: str
    n: int
    a: float  # A's mean (median for seconds)
    b: float
    diff: float
    ci: tuple[float, float]
    p: float | None  # exact McNemar, binary metrics only
    p_holm: float | None = None  # p corrected with the other comparisons' (`corrected`)

    @property
    def within_noise(self) -> bool:
        return self.ci[0] <= 0.0 <= self.ci[1]

    def to_dict(self) -> dict:
        """As JSON: `p_holm` only where it was corrected, `within_noise` beside."""
        found = {**asdict(self), "ci": list(self.ci), "within_noise": self.within_noise}
        if self.p_holm is None:
            del found["p_holm"]
        return found


def mcnemar(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided McNemar p-value of paired binary outcomes: the binomial test of the
    questions only A got right against those only B got right, at p = 1/2."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap_interval(a: Sequence[float], b: Sequence[float], statistic: str = "mean",
                       resamples: int = RESAMPLES, seed: int = SEED,
                       level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of statistic(A) - statistic(B) over paired resamples."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(x), size=(resamples, len(x)))
    if statistic == "mean":
        diffs = (x - y)[picks].mean(axis=1)
    elif statistic == "median":
        diffs = np.median(x[picks], axis=1) - np.median(y[picks], axis=1)
    else:
        raise ConfigError(f"statistic={statistic!r}: use mean or median.")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(low), float(high)


def question_values(row: dict) -> dict[str, float]:
    """The per-question value of every metric an eval row has (see METRICS)."""
    metrics = row.get("metrics", {})
    values = {k: float(metrics[k]) for k in ("EM", "F1") if k in metrics}
    if row.get("span_answer"):
        values.update({k: float(metrics[k]) for k in BINARY[1:] if k in metrics})
    if row.get("gold_doc_recall") is not None:
        values["gold_doc_recall"] = float(row["gold_doc_recall"])
    # the last stage's cut (a token cap's cut after it has no ranking of its own)
    sent = next((c for c in reversed(row.get("cuts") or []) if at_stage("RR", c) in metrics), None)
    for measure, name in (("nDCG@10", "nDCG@10"), ("RR", "MRR"), ("AP", "MAP")):
        if sent is not None and at_stage(measure, sent) in metrics:  # AP: stored since issue 52
            values[name] = float(metrics[at_stage(measure, sent)])
    values["seconds"] = float(sum(row.get("seconds", {}).values()))
    return values


def paired(rows_a: Sequence[dict], rows_b: Sequence[dict], *,
           resamples: int = RESAMPLES, seed: int = SEED) -> list[PairedDifference]:
    """A minus B on every metric both have, over the questions (by id) both ran (a
    failed run is no answer: its question is left out)."""
    a_by_id = {r["question_id"]: question_values(r) for r in rows_a
               if r.get("status") != FAILED}
    b_by_id = {r["question_id"]: question_values(r) for r in rows_b
               if r.get("status") != FAILED}
    shared = [q for q in a_by_id if q in b_by_id]
    if not shared:
        raise ConfigError("The two runs share no question id, so nothing can be paired; "
                          "compare evaluations of the same dataset.")
    out = []
    for metric in METRICS:
        ids = [q for q in shared if metric in a_by_id[q] and metric in b_by_id[q]]
        if not ids:
            continue
        x = [a_by_id[q][metric] for q in ids]
        y = [b_by_id[q][metric] for q in ids]
        statistic = "median" if metric == "seconds" else "mean"
        centre = np.median if statistic == "median" else np.mean
        a, b = float(centre(x)), float(centre(y))
        out.append(PairedDifference(
            metric, len(ids), round(a, 4), round(b, 4), round(a - b, 4),
            tuple(round(v, 4) for v in bootstrap_interval(x, y, statistic, resamples, seed)),
            mcnemar(x, y) if metric in BINARY else None))
    return out



def every_pair(rows: Sequence[dict], *, resamples: int = RESAMPLES,
               seed: int = SEED) -> dict[str, dict[str, dict]]:
    """{"A-B": {metric: {diff, ci, p, within_noise, n}}} for every two paradigms of one
    evaluation's rows, in the order they first appear (with `p_holm` where there are
    several pairs)."""
    names = list(dict.fromkeys(r["paradigm"] for r in rows))
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    found = corrected([paired([r for r in rows if r["paradigm"] == a],
                              [r for r in rows if r["paradigm"] == b],
                              resamples=resamples, seed=seed) for a, b in pairs])
    keep = ("diff", "ci", "p", "p_holm", "within_noise", "n")
    return {f"{a}-{b}": {d.metric: {k: v for k, v in d.to_dict().items() if k in keep}
                         for d in differences}
            for (a, b), differences in zip(pairs, found, strict=True)}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down correction of `p_values` for their number (statsmodels), to four
    significant figures (a p of 1e-30 stays one, never 0)."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(f"{p:.4g}") for p in multipletests(list(p_values), method="holm")[1]]


def corrected(comparisons: Sequence[Sequence[PairedDifference]]
              ) -> list[tuple[PairedDifference, ...]]:
    """Several comparisons' differences, each McNemar p beside its Holm correction
    (`p_holm`) for the number of comparisons, per metric; one comparison is left as it
    is."""
    found = [tuple(differences) for differences in comparisons]
    if len(found) < 2:
        return found
    fixed: dict[tuple[int, int], float] = {}
    for metric in BINARY:
        tested = [(i, j) for i, differences in enumerate(found)
                  for j, d in enumerate(differences) if d.metric == metric and d.p is not None]
        ps = holm([found[i][j].p for i, j in tested])
        fixed.update(zip(tested, ps, strict=True))
    return [tuple(replace(d, p_holm=fixed[i, j]) if (i, j) in fixed else d
                  for j, d in enumerate(differences))
            for i, differences in enumerate(found)]
