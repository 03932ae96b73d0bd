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


def coverage(index, asked: Sequence[Asked], *, fit_passages: int = FIT_PASSAGES,
             shown: int = SHOWN_PASSAGES, seed: int = SEED) -> dict:
    """The map and the flagged groups of `asked` over the dense `index` (an
    engine.index.dense.DenseIndex: `units`, `vectors`, `encode_queries`, `top`), as a
    JSON-friendly dict (see the module docstring)."""
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
        clusters.append({
            "group": g, "size": int(len(members)), "median_cover": round(median, 4),
            "far": bool(median < low and len(asked) >= 4),
            "positions": [asked[i].position for i in members],
            "nearest": [_passage(index.units[int(r)], s) for r, s in
                        zip(near_rows, near_scores, strict=True)]})
    clusters.sort(key=lambda c: c["median_cover"])
    return {
        "questions": [{"position": a.position, "question_id": a.question.id,
                       "question": a.question.text, "x": round(float(at_q[i, 0]), 4),
                       "y": round(float(at_q[i, 1]), 4), "cover": round(float(cover[i]), 4),
                       "group": int(groups[i]), "outcomes": a.outcomes,
                       "nearest": [_passage(index.units[int(r)], s) for r, s in
                                   zip(*nearest[i], strict=True)]}
                      for i, a in enumerate(asked)],
        "passages": [{"id": index.units[int(r)].id, "title": index.units[int(r)].title,
                      "x": round(float(at_p[j, 0]), 4), "y": round(float(at_p[j, 1]), 4)}
                     for j, r in enumerate(drawn)],
        "groups": clusters, "far_below": round(low, 4),
        "fitted_on": {"questions": len(asked), "passages": int(len(rows)),
                      "corpus_passages": total},
        "explained": [round(float(e), 4) for e in explained],
    }


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


def _passage(unit, score) -> dict:
    return {"id": unit.id, "title": unit.title, "text": unit.text[:300],
            "cosine": round(float(score), 4)}
