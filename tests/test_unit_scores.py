"""`score_units(query, ids)`: BM25, the dense index (exact, HNSW) and BM25 standing in for it
score a given set of units by id as their own search scores the same units (the Ray shards'
and Qdrant's are checked in tests/test_shards.py and tests/test_qdrant.py with the same
helper)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.index.bm25 import bm25_index
from engine.index.stand_in import DenseStandIn
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

PASSAGES = UnitConfig("passages", Chunker(max_tokens=10))  # seventeen rows
QUESTIONS = ("Which river flows through Budapest?", "Who painted A Sunday Afternoon?",
             "pointillism technique dots", "capital city on the Danube")


def scores_as_searched(index, questions=QUESTIONS, *, atol: float) -> None:
    """Assert that `index.score_units` gives every unit its search's score (within `atol`),
    for the units in any order, a subset, repeats, and -inf for ids it does not hold."""
    shuffled = random.Random(0)
    for question in questions:
        found = index.search(question, len(index.units))
        assert found, question
        searched = {c.unit.id: c.score for c in found}
        ids = list(searched)
        shuffled.shuffle(ids)
        ids = [*ids, "oracle:Danube", ids[0]]  # a unit it does not hold; one asked twice
        scores = index.score_units(question, ids)
        assert scores.dtype == np.float32 and scores.shape == (len(ids),)
        assert np.allclose(scores[:-2], [searched[i] for i in ids[:-2]], atol=atol, rtol=0)
        assert scores[-2] == -np.inf and scores[-1] == pytest.approx(scores[0], abs=1e-6)
        assert np.allclose(index.score_units(question, ids[1:4]), scores[1:4], atol=1e-6)
    assert index.score_units(QUESTIONS[0], []).shape == (0,)


@pytest.mark.parametrize("units", [PASSAGES, UnitConfig("documents")],
                         ids=["passages", "documents"])
def test_bm25_scores_units_by_id_as_its_search_does(tiny_corpus, units):
    index = bm25_index(tiny_corpus, units)
    scores_as_searched(index, atol=1e-6)
    # units no query word reaches score 0, as `scores` gives every unit
    unreached = [u.id for u in index.units if u.id not in {
        c.unit.id for c in index.search(QUESTIONS[0], len(index.units))}]
    assert unreached and not index.score_units(QUESTIONS[0], unreached).any()


def test_the_stand_in_scores_units_as_bm25_and_says_it_stands_in(tiny_corpus):
    bm25 = bm25_index(tiny_corpus, PASSAGES)
    stand_in = DenseStandIn(bm25, "minilm", "the dense index is still being built")
    scores_as_searched(stand_in, atol=1e-6)
    ids = [u.id for u in bm25.units]
    assert np.array_equal(stand_in.score_units(QUESTIONS[1], ids),
                          bm25.score_units(QUESTIONS[1], ids))
    assert stand_in.stand_in.what == "bm25" and bm25.stand_in is None


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_the_dense_index_scores_units_by_id_as_its_search_does(tiny_corpus, kind):
    pytest.importorskip("faiss")
    from engine.index.dense import dense_index

    index = dense_index(tiny_corpus, PASSAGES, kind=kind)
    assert index.exact == (kind == "exact")
    scores_as_searched(index, atol=1e-5)
