"""A plugin's re-ranker or retriever declares its resources as a paradigm does and is handed
them loaded by the service: they are among the needs of a paradigm naming it, the store
loads them (BM25 standing in for a dense index still being built, declared by the loaded
index and noted in the trace), and a declaration that is not one is refused when the plugin
loads."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint

import numpy as np
import pytest

from engine import plugins
from engine.api import (
    BM25,
    Candidate,
    Dense,
    Reranker,
    RerankerSpec,
    Resources,
    RetrieverSpec,
    Stage,
    StageOutput,
)
from engine.paradigms import registry
from engine.service.store import LoadedResources, make_paradigm
from engine.units.build import UnitConfig

QUESTION = "Which river flows through Budapest?"
PASSAGES = UnitConfig("passages")  # flat's default passages


@dataclass(frozen=True)
class Indexes(Resources):
    bm25: BM25
    dense: Dense


def declared(at):
    return Indexes(BM25(at.units), Dense(at.units, at.bi_encoder))


class DenseScores(Reranker):
    """Candidates by the dense index's score of each, read by id."""

    def __init__(self, uses, granularity="passages", name="dense-scores") -> None:
        self.uses, self.granularity, self.name = uses, granularity, name

    @property
    def stand_in(self):
        return self.uses.stand_in

    def scores(self, query, candidates):
        return self.uses.dense.score_units(query, [c.unit.id for c in candidates]).tolist()


class DenseFirst(Stage):
    """A first stage searching the dense index it was handed."""

    name, granularity = "dense-first", "passages"

    def __init__(self, uses) -> None:
        self.uses = uses

    def run(self, query, candidates, k):
        return StageOutput(tuple(Candidate(c.unit, c.score, c.rank)
                                 for c in self.uses.dense.search(query, k)))


SCORES = RerankerSpec("dense-scores", "the dense index's scores",
                      lambda corpus, passages, uses, **how: DenseScores(uses, **how),
                      resources=declared)
FIRST = RetrieverSpec("dense-first", "the dense index searched by a plugin",
                      lambda corpus, passages, uses: DenseFirst(uses), resources=declared)
NOT_RESOURCES = RerankerSpec("bad-1", "", lambda *a, **k: None, resources=lambda at: {})
NOT_A_RESOURCE = RerankerSpec("bad-2", "", lambda *a, **k: None,
                              resources=lambda at: Indexes(BM25(at.units), "dense"))


@pytest.fixture
def added():
    registry._add_reranker(SCORES)
    registry._add_retriever(FIRST)
    yield
    registry.unload_plugin(SCORES.name)
    registry.unload_plugin(FIRST.name)


def test_a_plugin_stages_resources_are_needs_of_the_paradigm_naming_it(added):
    needs = registry.spec("flat").needs(registry.make_config("flat", {
        "reranker": "dense-scores", "retriever": "dense-first"}))
    keys = [need.key for need in needs]
    ranker = next(n for n in needs if n.key.startswith("ranker dense-scores"))
    first = next(n for n in needs if n.key.startswith("retriever dense-first"))
    dense = next(n for n in needs if n.key.startswith("dense minilm"))
    bm25 = next(n for n in needs if n.key.startswith("bm25") and '"passages"' in n.key)
    assert keys.index(bm25.key) < keys.index(ranker.key)  # what it reads, then the stage
    # made after the dense index (slow needs are prepared last, in order); BM25 stands in
    # for the stage meanwhile, as for the index, so no paradigm waits for it
    assert ranker.slow and first.slow and ranker.stand_in == dense.stand_in != ""
    assert not bm25.slow and not bm25.stand_in


def test_the_store_hands_them_loaded_with_the_stand_in_declared(added, tiny_corpus):
    pytest.importorskip("faiss")
    store = LoadedResources()
    store.promise_dense(tiny_corpus, PASSAGES)  # a background build under way
    config = {"reranker": "dense-scores", "retriever": "dense-first", "M": 6, "k": 3}
    paradigm = make_paradigm("flat", tiny_corpus, config, retrieval_only=True, store=store)
    uses = paradigm.uses.ranker.uses
    assert uses.bm25 is store.bm25(tiny_corpus, PASSAGES)
    assert uses.dense.stand_in is not None and uses.stand_in == uses.dense.stand_in
    assert paradigm.uses.retriever is store.retriever("dense-first", tiny_corpus, PASSAGES)
    trace = paradigm.run(QUESTION)
    first, ranked = trace.stages
    assert ranked.settings["stand_in"] == "bm25" and "stands in" in ranked.details.note
    ids = [c.unit.id for c in ranked.candidates]
    assert [c.score for c in ranked.candidates] == pytest.approx(
        uses.bm25.score_units(QUESTION, ids).tolist())  # BM25's scores, as it says
    # the build ends: the next paradigm made is handed the real index, and the retriever
    # made over the stand-in is made again
    real = store.dense(tiny_corpus, PASSAGES)
    again = make_paradigm("flat", tiny_corpus, config, retrieval_only=True, store=store)
    assert again.uses.ranker.uses.dense is real and again.uses.ranker.uses.stand_in is None
    assert again.uses.retriever is not paradigm.uses.retriever
    assert again.uses.retriever.uses.dense is real
    trace = again.run(QUESTION)
    assert "stand_in" not in trace.stages[1].settings
    ids = [c.unit.id for c in trace.stages[1].candidates]
    cosines = real.unit_vectors(list(c.unit for c in trace.stages[1].candidates)) @ \
        real.encode_queries([QUESTION])[0]
    assert np.allclose([c.score for c in trace.stages[1].candidates], cosines, atol=1e-5)
    assert [c.unit.id for c in trace.stages[0].candidates] == [
        c.unit.id for c in real.search(QUESTION, 6)]


@pytest.mark.parametrize(("spec", "error"), [
    (NOT_RESOURCES, "re-ranker 'bad-1': its resources(at) returned a dict, not a Resources"),
    (NOT_A_RESOURCE, "re-ranker 'bad-2': its resource 'dense' is a str, not a resource"),
    (RerankerSpec("bad-3", "", lambda *a, **k: None, resources=3),
     "re-ranker 'bad-3': its resources is not callable")])
def test_a_declaration_that_is_not_one_is_refused_when_the_plugin_loads(spec, error):
    import tests.test_plugin_resources as here

    here.BROKEN = spec
    (loaded,) = plugins.load(plugins.RERANKER_GROUP, registry._add_reranker, [
        (EntryPoint(spec.name, "tests.test_plugin_resources:BROKEN",
                    plugins.RERANKER_GROUP), "pkg")])
    assert error in loaded.error and spec.name not in registry.RERANKERS
