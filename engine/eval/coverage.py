"""Questions the corpus does not cover: an evaluation's questions and the corpus's passages
in one 2-D map of their stored vectors, and the groups of questions far from every passage.

The passages' vectors are the dense index's own; the questions are encoded by its query
encoder. The map is a principal-component projection (Phoenix draws its embedding map with
UMAP; two linear components keep distances comparable across the map and need no new
dependency) fitted on every question and a seeded sample of the passages, so a corpus of
millions costs what its sample costs. Each question's cover is the cosine of its nearest
passage in the whole index. The questions are grouped by k-means over their vectors; a
group whose questions' median cover falls below the lower quartile of all questions'
covers is flagged "far from the corpus", with the passages nearest its centre, so that a
missing topic shows as one group instead of scattered misses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.documents import Question

FIT_PASSAGES = 20_000  # passages the projection is fitted on, at most
SHOWN_PASSAGES = 3_000  # passages drawn on the map, at most (of the fitted sample)
NEAREST = 3  # passages listed per question and per flagged group
SEED = 0


@dataclass(frozen=True)
class Asked:
    """One question of the evaluation: its position, the question and its outcome per
    paradigm (engine.eval.outcomes)."""

    position: int
    question: Question
    outcomes: dict


@dataclass(frozen=True)
class Nearby:
    """A passage near a question or a group's centre: its id, title, first 300 characters
    and cosine."""

    id: str
    title: str
    text: str
    cosine: float


@dataclass(frozen=True)
class MappedQuestion:
    """A question on the map: where it is (`x`, `y`), its `cover` (the cosine of its nearest
    passage), its k-means `group`, its outcome per paradigm (None: a judged evaluation's
    run has no answer outcome) and its nearest passages."""

    position: int
    question_id: str
    question: str
    x: float
    y: float
    cover: float
    group: int
    outcomes: dict[str, str | None]
    nearest: tuple[Nearby, ...]


@dataclass(frozen=True)
class MappedPassage:
    """A passage drawn on the map."""

    id: str
    title: str
    x: float
    y: float


@dataclass(frozen=True)
class QuestionGroup:
    """A k-means group of questions: its size, its questions' median cover, whether it is
    `far` from the corpus, its questions' positions and the passages nearest its centre."""

    group: int
    size: int
    median_cover: float
    far: bool
    positions: tuple[int, ...]
    nearest: tuple[Nearby, ...]


@dataclass(frozen=True)
class Fitted:
    """What the projection was fitted on: every question, a sample of the passages."""

    questions: int
    passages: int
    corpus_passages: int


@dataclass(frozen=True)
class CoverageMap:
    """The map and the flagged groups (see the module docstring): the groups farthest first;
    `far_below` the cover a group's median falls under to be far; `explained` the share of
    variance of each of the two components. `engine.results.plain` of it is its JSON form
    (the API's, the cache's), read back by `from_dict`."""

    questions: tuple[MappedQuestion, ...]
    passages: tuple[MappedPassage, ...]
    groups: tuple[QuestionGroup, ...]
    far_below: float
    fitted_on: Fitted
    explained: tuple[float, ...]

    def far_positions(self) -> set[int]:
        """The positions of the questions in groups far from the corpus."""
        return {p for g in self.groups if g.far for p in g.positions}

    def paradigms(self) -> list[str]:
        """The paradigms with an outcome on the map, in the order first met."""
        return list(dict.fromkeys(p for q in self.questions for p in q.outcomes))

    @classmethod
    def from_dict(cls, data: dict) -> CoverageMap:
        def near(rows) -> tuple[Nearby, ...]:
            return tuple(Nearby(**n) for n in rows)

        return cls(
            questions=tuple(MappedQuestion(**{**q, "nearest": near(q["nearest"])})
                            for q in data["questions"]),
            passages=tuple(MappedPassage(**p) for p in data["passages"]),
            groups=tuple(QuestionGroup(**{**g, "positions": tuple(g["positions"]),
                                          "nearest": near(g["nearest"])})
                         for g in data["groups"]),
            far_below=data["far_below"], fitted_on=Fitted(**data["fitted_on"]),
            explained=tuple(data["explained"]))


def coverage(index, asked: Sequence[Asked], *, fit_passages: int = FIT_PASSAGES,
             shown: int = SHOWN_PASSAGES, seed: int = SEED) -> CoverageMap:
    """The map and the flagged groups of `asked` over the dense `index` (an
    engine.index.dense.DenseIndex: `units`, `vectors`, `encode_queries`, `top`)."""
    if not asked:
        raise ValueError("no questions to map")
    queries = np.asarray(index.encode_queries([a.question.text for a in asked]),
                         dtype=np.float32)
    nearest = [index.top(q, NEAREST) for q in queries]
    cover = np.array([float(scores[0]) if len(scores) else 0.0 for _, scores in nearest])
    rng = np.random.default_rng(seed)
    total = len(index.units)
    rows = np.sort(rng.choice(total, size=min(fit_passages, total), replace=False))
    passages = np.asarray(index.vectors[rows], dtype=np.float32)
    mean, axes, explained = _principal_axes(np.vstack([queries, passages]))
    drawn = rows[:shown] if len(rows) <= shown else np.sort(
        rng.choice(rows, size=shown, replace=False))
    at_q = (queries - mean) @ axes.T
    at_p = (np.asarray(index.vectors[drawn], dtype=np.float32) - mean) @ axes.T
    groups = _groups(queries, seed)
    low = float(np.percentile(cover, 25))
    clusters = []
    for g in range(int(groups.max()) + 1):
        members = np.flatnonzero(groups == g)
        if not len(members):
            continue
        centre = queries[members].mean(axis=0)
        centre /= np.linalg.norm(centre) or 1.0
        near_rows, near_scores = index.top(centre, NEAREST)
        median = float(np.median(cover[members]))
        clusters.append(QuestionGroup(
            group=g, size=int(len(members)), median_cover=round(median, 4),
            far=bool(median < low and len(asked) >= 4),
            positions=tuple(asked[i].position for i in members),
            nearest=_nearby(index, near_rows, near_scores)))
    clusters.sort(key=lambda c: c.median_cover)
    return CoverageMap(
        questions=tuple(MappedQuestion(
            position=a.position, question_id=a.question.id, question=a.question.text,
            x=round(float(at_q[i, 0]), 4), y=round(float(at_q[i, 1]), 4),
            cover=round(float(cover[i]), 4), group=int(groups[i]), outcomes=dict(a.outcomes),
            nearest=_nearby(index, *nearest[i])) for i, a in enumerate(asked)),
        passages=tuple(MappedPassage(index.units[int(r)].id, index.units[int(r)].title,
                                     round(float(at_p[j, 0]), 4), round(float(at_p[j, 1]), 4))
                       for j, r in enumerate(drawn)),
        groups=tuple(clusters), far_below=round(low, 4),
        fitted_on=Fitted(len(asked), int(len(rows)), total),
        explained=tuple(round(float(e), 4) for e in explained))


def _principal_axes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, the two principal axes as rows, the share of variance each explains)."""
    mean = points.mean(axis=0)
    centred = points - mean
    _, values, axes = np.linalg.svd(centred, full_matrices=False)
    variance = values ** 2
    return mean, axes[:2], variance[:2] / (variance.sum() or 1.0)


def _groups(vectors: np.ndarray, seed: int) -> np.ndarray:
    """Each question's k-means group (k about the square root of the questions: 14
    groups of about 14 for 200)."""
    n = len(vectors)
    k = max(1, min(n, round(math.sqrt(n))))
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    import faiss

    kmeans = faiss.Kmeans(vectors.shape[1], k, niter=25, seed=seed, spherical=True,
                          min_points_per_centroid=1)
    kmeans.train(np.ascontiguousarray(vectors))
    _, assigned = kmeans.index.search(np.ascontiguousarray(vectors), 1)
    return assigned[:, 0].astype(np.int64)


def _nearby(index, rows, scores) -> tuple[Nearby, ...]:
    return tuple(Nearby(index.units[int(r)].id, index.units[int(r)].title,
                        index.units[int(r)].text[:300], round(float(score), 4))
                 for r, score in zip(rows, scores, strict=True))
