from __future__ import annotations

import pytest

from engine.errors import ResourceMissingError
from engine.index.bm25 import bm25_index
from engine.stages.base import Stage, StageOutput, rerank
from engine.stages.retrieve import BM25Retriever, DenseRetriever
from engine.types import Candidate, Unit
from engine.units.build import UnitConfig

QUERIES = ("Which river flows through Budapest?", "pointillism painter",
           "capital of Austria", "zzzyx qwerty")


def _bm25(corpus) -> BM25Retriever:
    return BM25Retriever(bm25_index(corpus, UnitConfig("documents")))


def _dense(corpus) -> DenseRetriever:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    from engine.index.dense import dense_index

    try:
        return DenseRetriever(dense_index(corpus, UnitConfig("passages")))
    except ResourceMissingError as err:
        pytest.skip(str(err))


def _unit(name: str) -> Unit:
    return Unit(id=name, title=name, text=f"text of {name}", doc_ids=(name,),
                granularity="documents")


@pytest.mark.parametrize("make", [_bm25, _dense], ids=["bm25", "dense"])
def test_retriever_contract(make, tiny_corpus):
    stage = make(tiny_corpus)
    assert isinstance(stage, Stage) and stage.name in {"bm25", "dense"}
    units = set(stage.index.units)
    decoy = (Candidate(unit=_unit("not in the index"), score=9.0, rank=1),)
    for query in QUERIES:
        for k in (1, 3, 100):
            output = stage.run(query, (), k)
            assert isinstance(output, StageOutput)
            found = output.candidates
            assert len(found) <= k
            assert all(a.score >= b.score for a, b in zip(found, found[1:], strict=False))
            assert [c.rank for c in found] == list(range(1, len(found) + 1))
            assert all(c.unit in units and c.unit.granularity == stage.granularity
                       for c in found)
            assert stage.run(query, decoy, k).candidates == found  # input is ignored


def test_rerank_sorts_stably_renumbers_and_cuts():
    names = ("a", "b", "c", "d")
    candidates = tuple(Candidate(unit=_unit(n), score=1.0, rank=i, parents=(f"p{n}",))
                       for i, n in enumerate(names, start=1))
    ranked = rerank(candidates, [0.5, 0.9, 0.5, 0.1], k=3)
    assert [c.unit.id for c in ranked] == ["b", "a", "c"]  # the tie keeps input order
    assert [c.rank for c in ranked] == [1, 2, 3]
    assert [c.score for c in ranked] == [0.9, 0.5, 0.5]
    assert [c.parents for c in ranked] == [("pb",), ("pa",), ("pc",)]
    assert [c.score for c in candidates] == [1.0] * 4  # inputs untouched
    assert rerank(candidates, [0.0, 0.0, 0.0, 0.0], k=10) == tuple(
        Candidate(unit=c.unit, score=0.0, rank=c.rank, parents=c.parents) for c in candidates)
    assert rerank((), [], k=5) == ()
