"""One contract for every stage, and the re-sorting helper they share."""

from __future__ import annotations

import inspect

import pytest

from engine.documents import Candidate, Unit
from engine.errors import ConfigError, ResourceMissingError
from engine.index.bm25 import bm25_index
from engine.service.store import process_store
from engine.stages.base import Stage, StageOutput, rerank
from engine.stages.expand import ReaderContext
from engine.stages.postrank import FiDPostRanker, fused_scores
from engine.stages.rerank import CrossEncoderReranker, KeptOrder, StoredScoreReranker
from engine.stages.retrieve import (
    BM25Retriever,
    ClusterRetriever,
    DenseRetriever,
    DocumentRetriever,
    HybridRetriever,
    LongUnitRetriever,
    ScoredDocumentRetriever,
)
from engine.stages.select import ForwardSelection, InverseSelection, QueryDocumentConcatenation
from engine.trace_details import ClassifierCall
from engine.units.build import UnitConfig, passage_units
from engine.units.chunking import Chunker
from engine.units.lazy import document_unit

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


def _documents(corpus) -> tuple[Candidate, ...]:
    return tuple(Candidate(unit=document_unit(d), score=0.0, rank=i, parents=("c0",))
                 for i, d in enumerate(corpus.documents, start=1))


def _passages(corpus) -> tuple[Candidate, ...]:
    units = passage_units(corpus.documents, Chunker(12))
    return tuple(Candidate(unit=u, score=0.0, rank=i, parents=("c0", u.doc_ids[0]))
                 for i, u in enumerate(units, start=1))


def _cross_encoder(corpus) -> CrossEncoderReranker:
    pytest.importorskip("sentence_transformers")
    return CrossEncoderReranker(process_store().cross_encoder("minilm", max_length=64),
                                "minilm", batch_size=4)


def _stored(corpus) -> StoredScoreReranker:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    return process_store().ranker("hybrid", corpus, UnitConfig("passages", chunker=Chunker(12)))


def _clusters(corpus) -> ClusterRetriever:
    from engine.service.store import process_store

    store = process_store()
    config = UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=64)
    documents = store.documents(corpus, "bm25", 0.5, UnitConfig("passages"))
    return ClusterRetriever(*store.clusters(corpus, config), corpus, documents)


def _post_ranker(corpus, tiny_causal_lm) -> FiDPostRanker:
    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig

    tokenizer, model = tiny_causal_lm
    return FiDPostRanker(ReaderConfig(model="tiny"), reader=FiDReader("tiny", tokenizer, model))


# every Stage class of the engine, how to make one and what it ranks (None: its own index)
def _documents_of_passages(corpus) -> DocumentRetriever:
    return DocumentRetriever(bm25_index(corpus, UnitConfig("passages", chunker=Chunker(12))),
                             corpus)


def _long_units(corpus) -> LongUnitRetriever:
    pytest.importorskip("faiss")
    from engine.service.store import process_store

    store = process_store()
    config = UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=64)
    documents = store.documents(corpus, "dense", 1.0, UnitConfig("passages",
                                                                chunker=Chunker(12)))
    return LongUnitRetriever(*store.clusters(corpus, config), corpus, documents)


def _hybrid(corpus) -> HybridRetriever:
    pytest.importorskip("faiss")
    from engine.service.store import process_store

    passages = UnitConfig("passages", chunker=Chunker(12))
    store = process_store()
    return HybridRetriever(store.bm25(corpus, passages), store.dense(corpus, passages),
                           alpha=0.3, depth=20)


def _scored_documents(corpus) -> ScoredDocumentRetriever:
    pytest.importorskip("faiss")
    from engine.service.store import process_store

    scorer = process_store().documents(corpus, "hybrid", 0.7,
                                        UnitConfig("passages", chunker=Chunker(12)))
    return ScoredDocumentRetriever(scorer)


STAGES = {BM25Retriever: (_bm25, None), DenseRetriever: (_dense, None),
          HybridRetriever: (_hybrid, None),
          DocumentRetriever: (_documents_of_passages, None),
          ScoredDocumentRetriever: (_scored_documents, None),
          ClusterRetriever: (_clusters, None), LongUnitRetriever: (_long_units, None),
          CrossEncoderReranker: (_cross_encoder, _documents),
          StoredScoreReranker: (_stored, _documents),
          KeptOrder: (lambda corpus: KeptOrder("documents"), _documents),
          FiDPostRanker: (_post_ranker, _passages)}


def _concrete(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        if (sub.__module__.startswith("engine.") and not sub.__name__.startswith("_")
                and not inspect.isabstract(sub)):  # Reranker: the base of re-rankers
            found.add(sub)
        found |= _concrete(sub)
    return found


def test_the_contract_covers_every_stage_class():
    import engine.stages.classify  # noqa: F401 - every stage module loaded
    import engine.stages.postrank  # noqa: F401
    import engine.stages.prune  # noqa: F401
    import engine.stages.rerank  # noqa: F401
    import engine.stages.summarise  # noqa: F401

    # not rankings, so outside this contract: ReaderContext turns units into their
    # documents under a token cap (tests/test_longrag.py), SentencePruner (and
    # ExtractiveSummariser, best's settings of it) cuts passages to their best sentences
    # (tests/test_prune.py) and QueryClassification decides about the query
    # (tests/test_best.py)

    assert _concrete(Stage) == set(STAGES) | set(SELECTIONS) | {
        ReaderContext, engine.stages.prune.SentencePruner,
        engine.stages.summarise.ExtractiveSummariser,
        engine.stages.classify.QueryClassification}


# the cross-encoder's contract converts the packaged MiniLM first (about 10 s): slow
@pytest.mark.parametrize("cls", [
    pytest.param(cls, marks=pytest.mark.slow) if cls is CrossEncoderReranker else cls
    for cls in STAGES], ids=lambda c: c.__name__)
def test_stage_contract(cls, tiny_corpus, request):
    make, inputs = STAGES[cls]
    stage = make(tiny_corpus, request.getfixturevalue("tiny_causal_lm")) \
        if cls is FiDPostRanker else make(tiny_corpus)
    assert isinstance(stage, cls) and stage.name
    given = inputs(tiny_corpus) if inputs else ()
    pool = {c.unit for c in given} or (
        {document_unit(d) for d in tiny_corpus.documents} if isinstance(stage, DocumentRetriever)
        else set(stage.clusters) if isinstance(stage, ClusterRetriever)
        else set(stage.dense.units) if cls is HybridRetriever else set(stage.index.units))
    pool_ids = {u.id: u for u in pool}
    decoy = (Candidate(unit=_unit("not in the index"), score=9.0, rank=1),)
    for query in QUERIES:
        for k in (1, 3, 100):
            output = stage.run(query, given, k)
            assert isinstance(output, StageOutput)
            found = output.candidates
            assert len(found) <= k and (not given or len(found) == min(k, len(given)))
            assert all(a.score >= b.score for a, b in zip(found, found[1:], strict=False))
            assert [c.rank for c in found] == list(range(1, len(found) + 1))
            # a cluster comes titled by its best-matching members, its documents best first
            assert all(c.unit.id in pool_ids and c.unit.granularity == stage.granularity
                       and set(c.unit.doc_ids) == set(pool_ids[c.unit.id].doc_ids)
                       for c in found)
            assert isinstance(stage, ClusterRetriever) or all(c.unit in pool for c in found)
            if given:  # a re-ranker keeps each candidate's lineage
                parents = {c.unit.id: c.parents for c in given}
                assert all(c.parents == parents[c.unit.id] for c in found)
            else:  # a first-stage retriever searches its index, whatever comes in
                assert stage.run(query, decoy, k).candidates == found
    assert given == () or stage.run(QUERIES[0], (), 5).candidates == ()


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


def test_post_ranking_fuses_attention_ranks_with_the_input_order():
    attention = [0.1, 0.4, 0.3, 0.2]  # attention order: 1, 2, 3, 0
    by = lambda w: sorted(range(4), key=lambda i: -fused_scores(attention, w)[i])  # noqa: E731
    assert by(1.0) == [1, 2, 3, 0]
    assert by(0.0) == [0, 1, 2, 3]
    assert by(0.5) == [1, 0, 2, 3]  # 1 is second in input, first in attention: it leads
    assert fused_scores([0.2, 0.2], 1.0) == [1.0, 0.5]  # an attention tie keeps input order
    assert fused_scores([], 0.5) == []


def test_a_post_ranker_with_no_attention_weight_keeps_the_order_and_skips_the_reader(
        tiny_corpus):
    from engine.readers.reader import ReaderConfig

    class NoReader:
        def read(self, *args, **kwargs):
            raise AssertionError("the reader must not run at attention weight 0")

    given = _passages(tiny_corpus)
    out = FiDPostRanker(ReaderConfig(model="tiny"), NoReader(), attention_weight=0.0).run(
        "Which river flows through Budapest?", given, 3)
    assert [c.unit.id for c in out.candidates] == [c.unit.id for c in given[:3]]
    assert "skipped" in out.details.note and out.details.attention is None
    with pytest.raises(ConfigError, match="attention_weight=1.5"):
        FiDPostRanker(ReaderConfig(model="tiny"), NoReader(), attention_weight=1.5)


def test_post_ranking_with_attention_reads_once_and_records_raw_scores(tiny_corpus,
                                                                       tiny_causal_lm):
    given = _passages(tiny_corpus)
    ranker = _post_ranker(tiny_corpus, tiny_causal_lm)
    pure = ranker.run("Which river flows through Budapest?", given, len(given))
    raw = pure.details.attention.scores
    assert len(raw) == len(given) and ranker.settings()["attention_weight"] == 1.0
    assert [c.unit.id for c in pure.candidates] == [
        given[i].unit.id for i in sorted(range(len(raw)), key=lambda i: -raw[i])]


# DR-RAG's stages add documents (QDC) or keep a subset (the classifier's selections): they do
# not re-sort, so they share a contract of their own


class HashClassifier:
    """A fixed, arbitrary probability per (query, pair): both decisions occur."""

    threshold = 0.5

    def probabilities(self, query, pairs):
        import hashlib

        return [int(hashlib.sha256(f"{query}|{a}|{b}".encode()).hexdigest()[:4], 16) / 65535
                for a, b in pairs]


def _statics_and_dynamics(corpus) -> tuple[Candidate, ...]:
    statics = tuple(Candidate(document_unit(d), 1.0, i) for i, d in
                    enumerate(corpus.documents[:3], start=1))
    dynamics = tuple(Candidate(document_unit(d), 0.5, 3 + i, parents=(statics[i % 3].unit.id,))
                     for i, d in enumerate(corpus.documents[3:]))
    return statics + dynamics


SELECTIONS = {
    QueryDocumentConcatenation: lambda corpus: QueryDocumentConcatenation(
        DocumentRetriever(bm25_index(corpus, UnitConfig("documents")), corpus), 2),
    ForwardSelection: lambda corpus: ForwardSelection(HashClassifier(), 0.5),
    InverseSelection: lambda corpus: InverseSelection(HashClassifier(), 0.5),
}


@pytest.mark.parametrize("cls", list(SELECTIONS), ids=lambda c: c.__name__)
def test_selection_stage_contract(cls, tiny_corpus):
    stage = SELECTIONS[cls](tiny_corpus)
    assert isinstance(stage, cls) and stage.name and stage.granularity == "documents"
    given = _statics_and_dynamics(tiny_corpus)
    if cls is QueryDocumentConcatenation:
        given = given[:2]  # it starts from static documents only
    for query in QUERIES:
        for k in (1, 3, 100):
            found = stage.run(query, given, k).candidates
            ids = [c.unit.id for c in found]
            assert 1 <= len(found) <= k and len(ids) == len(set(ids))
            assert [c.rank for c in found] == list(range(1, len(found) + 1))
            assert all(c.unit.granularity == "documents" for c in found)
            inputs = {c.unit.id: c for c in given}
            if cls is QueryDocumentConcatenation:  # the statics first, then what they found
                assert ids[:len(given)] == list(inputs)[:len(ids)]
                assert all(c.parents[0] in inputs for c in found[len(given):])
            else:  # a subset of the input, in its order, lineage kept
                assert all(c.unit == inputs[c.unit.id].unit
                           and c.parents == inputs[c.unit.id].parents for c in found)
                order = list(inputs)
                assert [order.index(i) for i in ids] == sorted(order.index(i) for i in ids)
                calls = stage.run(query, given, k).details.calls
                assert calls and all(isinstance(c, ClassifierCall) for c in calls)

