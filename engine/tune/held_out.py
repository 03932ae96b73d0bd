"""A winner that must hold: the seeded split, and the picks against the defaults on
questions the search never saw.

The questions are shuffled with the search's seed and cut in two before the search starts:
the search sees only its part (in that shuffled order, so its rungs are random subsets).
After it, each paradigm's pick (engine.tune.halving.pick) and that paradigm's default run
on the held-out part; each pair is compared as Diagnose compares two runs
(engine.eval.paired: the paired bootstrap interval of the difference, and McNemar's exact
test for a binary measure), with a paired randomization test (sign flips, seeded) for a
graded one (F1, nDCG, MRR, MAP: Smucker et al., 2007, found it the test to trust for IR
measures); with several paradigms the p-values are Holm-corrected together. The gain held
when the interval lies above 0 and the corrected p is below 0.05.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from engine.documents import Question
from engine.errors import ConfigError
from engine.eval.paired import BINARY, holm, paired
from engine.eval.summary import row
from engine.paradigms.base import Paradigm

ALPHA = 0.05
RESAMPLES = 10_000
MAX_HELD_OUT = 0.9


def split(questions: Sequence[Question], held_out: float = 0.5, seed: int = 0
          ) -> tuple[list[Question], list[Question]]:
    """(search part, held-out part): the questions shuffled with `seed`, the last
    `held_out` share held out; both parts keep at least one question."""
    if not 0 < held_out <= MAX_HELD_OUT:
        raise ConfigError(f"held_out={held_out!r} is out of range; give the share of "
                          f"questions kept from the search, above 0 and at most "
                          f"{MAX_HELD_OUT}.")
    if len(questions) < 2:
        raise ConfigError(f"A search needs at least two questions (one to search, one to "
                          f"check on); the dataset has {len(questions)}.")
    shuffled = list(questions)
    random.Random(seed).shuffle(shuffled)
    cut = min(len(shuffled) - 1, max(1, round(len(shuffled) * (1 - held_out))))
    return shuffled[:cut], shuffled[cut:]


def randomization_p(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES,
                    seed: int = 0) -> float:
    """Two-sided p of the paired randomization test of mean(A - B): each question's
    difference flips sign at random; the share of flips whose mean is at least as far
    from 0 as the observed one (counting the observed)."""
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not diffs.any():
        return 1.0
    observed = abs(diffs.mean())
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(resamples, len(diffs)))
    extreme = np.count_nonzero(np.abs((signs * diffs).mean(axis=1)) >= observed - 1e-12)
    return float((extreme + 1) / (resamples + 1))


def answers(paradigm: Paradigm, questions: Sequence[Question],
            cancelled: Callable[[], bool] = lambda: False) -> Iterator[dict]:
    """`paradigm`'s eval row of each question, until cancelled."""
    for question in questions:
        if cancelled():
            return
        yield row(paradigm.run(question))


def compare(rows_pick: Sequence[dict], rows_default: Sequence[dict], measure: str,
            cost: str) -> dict:
    """The pick against the default on `measure` and `cost` over the questions both
    answered: each side's value, the difference, its interval and p."""
    from engine.eval.paired import question_values

    differences = {d.metric: d for d in paired(rows_pick, rows_default)}
    found = differences.get(measure)
    if found is None:
        raise ConfigError(f"No held-out question has {measure} for both runs; pick a measure "
                          "the dataset's questions have.")
    if measure in BINARY:
        p, test = found.p, "McNemar (exact)"
    else:
        by_id = {r["question_id"]: question_values(r) for r in rows_default}
        pairs = [(question_values(r).get(measure), by_id.get(r["question_id"], {}).get(
            measure)) for r in rows_pick]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        p, test = randomization_p([x for x, _ in pairs], [y for _, y in pairs]), \
            "paired randomization"
    out = {"measure": measure, "n": found.n, "pick": found.a, "default": found.b,
           "diff": found.diff, "ci": list(found.ci), "p": p, "test": test}
    spent = differences.get("seconds") if cost == "seconds" else None
    if spent is not None:
        out["cost"] = {"pick": spent.a, "default": spent.b, "diff": spent.diff,
                       "ci": list(spent.ci)}
    else:
        mean = lambda rows: float(np.mean([r.get("reader_tokens") or 0 for r in rows]))  # noqa: E731
        out["cost"] = {"pick": mean(rows_pick), "default": mean(rows_default),
                       "diff": mean(rows_pick) - mean(rows_default)}
    return out


def with_verdicts(comparisons: Sequence[dict]) -> list[dict]:
    """Each comparison with `p_holm` (Holm over all of them) and a plain verdict."""
    corrected = holm([c["p"] for c in comparisons])
    out = []
    for comparison, p_holm in zip(comparisons, corrected, strict=True):
        if comparison.get("pick_is_default"):
            out.append({**comparison, "p_holm": p_holm, "held": False,
                        "verdict": "the search picked the default itself: nothing to gain"})
            continue
        low, high = comparison["ci"]
        n = comparison["n"]
        questions = f"{n} held-out question{'s' if n != 1 else ''}"
        held = low > 0 and p_holm < ALPHA
        worse = high < 0 and p_holm < ALPHA
        name = comparison["measure"]
        verdict = (
            f"held: {name} {comparison['diff']:+.3f} over the default (95% interval "
            f"{low:+.3f} to {high:+.3f}, p={p_holm:.3g}{' Holm' if len(comparisons) > 1 else ''}"
            f") on {questions}" if held else
            f"worse than the default: {name} {comparison['diff']:+.3f} (interval {low:+.3f} "
            f"to {high:+.3f}, p={p_holm:.3g})" if worse else
            f"did not hold: {name} {comparison['diff']:+.3f} (95% interval {low:+.3f} to "
            f"{high:+.3f}, p={p_holm:.3g}) on {questions}, not a difference the test tells "
            "from chance")
        out.append({**comparison, "p_holm": p_holm, "held": held, "verdict": verdict})
    return out
