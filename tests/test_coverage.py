"""Questions the corpus does not cover: a group of questions far from every passage is
flagged with the passages nearest it; the map projects questions and passages alike."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.documents import Question, Unit
from engine.eval.coverage import Asked, CoverageMap, Fitted, coverage
from engine.results import plain

DIM = 8


class FakeIndex:
    """Passages around two directions of an 8-d space; exact cosine search."""

    def __init__(self, questions: dict[str, np.ndarray]) -> None:
        rng = np.random.default_rng(1)
        rows = []
        for axis in (0, 1):
            for _ in range(30):
                v = np.zeros(DIM)
                v[axis] = 1.0
                rows.append(v + rng.normal(0, 0.1, DIM))
        self.vectors = np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)
        self.units = tuple(Unit(f"p{i}", f"topic {i // 30}", f"passage {i}", (f"d{i}",),
                                "passages") for i in range(len(rows)))
        self.questions = questions

    def encode_queries(self, texts):
        return np.stack([self.questions[t] for t in texts])

    def top(self, vector, k):
        scores = self.vectors @ vector
        rows = np.argsort(-scores)[:k]
        return rows, scores[rows]


def _toward(axis: int, noise: float, seed: int) -> np.ndarray:
    v = np.zeros(DIM)
    v[axis] = 1.0
    v += np.random.default_rng(seed).normal(0, noise, DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


def test_a_group_of_questions_far_from_every_passage_is_flagged_with_its_nearest():
    vectors = {}
    asked = []
    for n in range(12):  # 8 on the corpus's two topics, 4 on a third it lacks
        axis = (0, 1, 5)[0 if n < 4 else 1 if n < 8 else 2]
        text = f"question {n} on axis {axis}"
        vectors[text] = _toward(axis, 0.05, n)
        asked.append(Asked(n, Question(f"q{n}", text), {"flat": "answered right"
                                                       if axis != 5 else "not retrieved"}))
    found = coverage(FakeIndex(vectors), asked, fit_passages=40, shown=25)
    far = [g for g in found.groups if g.far]
    assert len(far) == 1 and sorted(far[0].positions) == [8, 9, 10, 11]
    assert found.far_positions() == {8, 9, 10, 11}
    assert far[0].median_cover < found.far_below < min(
        q.cover for q in found.questions if q.position < 8)
    assert len(far[0].nearest) == 3 and far[0].nearest[0].id.startswith("p")
    assert found.groups[0] is far[0]  # the farthest group first
    assert len(found.passages) == 25 and found.fitted_on == Fitted(
        questions=12, passages=40, corpus_passages=60)
    assert found.questions[9].outcomes == {"flat": "not retrieved"}
    assert found.paradigms() == ["flat"]
    assert 0 < sum(found.explained) <= 1
    # the same points project the same way: passages on one topic sit together on the map
    xy = np.array([[p.x, p.y] for p in found.passages])
    topic = np.array([int(p.title[-1]) for p in found.passages])
    spread = np.linalg.norm(xy[topic == 0].mean(0) - xy[topic == 1].mean(0))
    assert spread > 3 * xy[topic == 0].std(0).max()
    again = coverage(FakeIndex(vectors), asked, fit_passages=40, shown=25)
    assert again == found  # seeded: the map is the same each time
    # its JSON form (the API's and the cache's) reads back as the same map
    assert CoverageMap.from_dict(json.loads(json.dumps(plain(found)))) == found


def test_questions_all_near_the_corpus_flag_nothing():
    vectors = {f"q{n}": _toward(n % 2, 0.05, n) for n in range(10)}
    asked = [Asked(n, Question(f"q{n}", f"q{n}"), {}) for n in range(10)]
    found = coverage(FakeIndex(vectors), asked, fit_passages=60)
    assert not any(g.far for g in found.groups) or all(
        g.median_cover > 0.9 for g in found.groups)
    with pytest.raises(ValueError, match="no questions"):
        coverage(FakeIndex(vectors), [])
