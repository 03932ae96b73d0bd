"""How far two assessors agree: on the documents both judged, and on how they rank systems.

On the (question, document) pairs both judged: the 4x4 confusion matrix of their grades
(rows the first assessor's 0-3, columns the second's), the share graded alike, Cohen's kappa
and its linearly weighted form (a 3 against a 2 is a smaller disagreement than a 3 against
a 0), with its 95% interval, by statsmodels. On systems: whether the paradigms' order by a
measure (nDCG@10) is the same under each assessor's judgments, as Kendall's tau (scipy).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.store.judgments import GRADES

Grades = Mapping[str, Mapping[str, int]]  # {question id: {document id: grade}}


@dataclass(frozen=True)
class Agreement:
    pairs: int  # (question, document) pairs both judged
    matrix: tuple[tuple[int, ...], ...]  # [first's grade][second's grade]
    exact: float  # share graded alike
    kappa: float | None  # None where it is undefined (one grade used by both throughout)
    weighted_kappa: float | None  # linear weights
    weighted_ci: tuple[float, float] | None
    undefined: str = ""  # why kappa is undefined, where it is

    def weighted_said(self) -> str:
        """The linear-weighted kappa with its interval, as the CLI and Diagnose say it."""
        if self.weighted_kappa is None or self.weighted_ci is None:
            return f"undefined: {self.undefined or 'one grade throughout'}"
        low, high = self.weighted_ci
        return f"{self.weighted_kappa:.3f} (95% interval {low:.3f} to {high:.3f})"


def agreement(first: Grades, second: Grades, categories: int = len(GRADES)) -> Agreement:
    """The agreement of two assessors' grades (0 to `categories` - 1: four relevance
    grades, or two for a classifier label) on the pairs both judged."""
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa

    shared = [(q, d) for q, docs in first.items() for d in docs if d in second.get(q, {})]
    if not shared:
        raise ConfigError("The two assessors judged no document of the same question: "
                          "there is nothing to agree on. Judge a pool both have judged.")
    matrix = np.zeros((categories, categories), dtype=int)
    for q, d in shared:
        matrix[first[q][d], second[q][d]] += 1
    exact = float(np.trace(matrix)) / len(shared)
    kappa = weighted = ci = None
    # an assessor who gave one grade throughout tells nothing apart: chance agreement is
    # then all the agreement there is, and kappa (0 by the formula, its interval nan)
    # says nothing; said so, by whom, instead of "0.000 (95% interval nan to nan)"
    undefined = _one_grade(matrix.sum(axis=1), "the first") or \
        _one_grade(matrix.sum(axis=0), "the second")
    if not undefined:
        kappa = float(cohens_kappa(matrix).kappa)
        found = cohens_kappa(matrix, wt="linear")
        weighted, ci = float(found.kappa), (float(found.kappa_low), float(found.kappa_upp))
    return Agreement(len(shared), tuple(tuple(int(x) for x in row) for row in matrix),
                     exact, kappa, weighted, ci, undefined)


def _one_grade(counts, who: str) -> str:
    """Why kappa is undefined when assessor `who` used one grade alone ("" otherwise)."""
    used = [grade for grade, n in enumerate(counts) if n]
    if len(used) > 1:
        return ""
    return (f"{who} assessor gave grade {used[0]} to every one of the {int(sum(counts))} "
            "pairs, so chance explains all agreement")


def pairwise(people: Mapping[str, Grades], categories: int = len(GRADES)
             ) -> list[tuple[str, str, Agreement]]:
    """(first, second, their agreement) for every two of `people` who graded something
    in common, in the order the names come."""
    names = list(people)
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            try:
                found.append((first, second, agreement(people[first], people[second],
                                                       categories)))
            except ConfigError:  # nothing in common
                continue
    return found


def same_order(first: Mapping[str, float], second: Mapping[str, float]
               ) -> tuple[float, float]:
    """(Kendall's tau, its p) of the systems both score, ranked by each scoring: 1 is the
    same order, -1 the reverse."""
    from scipy.stats import kendalltau

    systems = [s for s in first if s in second]
    if len(systems) < 2:
        raise ConfigError(f"Ranking systems needs at least two scored under both "
                          f"assessors' judgments; {len(systems)} are.")
    found = kendalltau([first[s] for s in systems], [second[s] for s in systems])
    return float(found.statistic), float(found.pvalue)
