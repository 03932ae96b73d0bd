"""Needs derived from what runs: for every registered paradigm, preparing its `needs()` and
then running one question loads nothing new into any process-wide store (indexes, readers,
FiD readers, encoders, cross-encoders, classifiers). Real packaged models, the tiny corpus;
models trained here are replaced by a tiny random classifier folder (training is not the
point)."""

from __future__ import annotations

import pytest

from engine.documents import Question
from engine.paradigms.registry import PARADIGMS, PLUGINS, make_config, spec
from engine.plugins import BUILT_IN
from engine.service.store import make_paradigm, process_store
from tests.conftest import torch_single_thread

pytestmark = pytest.mark.slow
pytest.fixture(autouse=True)(torch_single_thread)

QUESTION = Question("q1", "Which river flows through Budapest?", answers=("Danube",),
                    supporting_titles=("Budapest",))
SHORT = {"reader": {"max_answer_tokens": 4}}
# each registered paradigm at its defaults, and the options that load something else
CASES = {
    "flat": [{}, {"reranker": "minilm"}, {"reader": {**SHORT["reader"], "attention": False}}],
    "funnel": [{}, {"cluster_scores": "text", "postrank_prior": "preranker",
                    "preranker": "minilm"}, {"bi_encoder": "MINILM_FOLDER"},
               {"attention_weight": 1.0, "reader": {**SHORT["reader"], "attention": False}}],
    "longrag": [{"long_answer_tokens": 8}, {"unit_scores": "text", "turns": 1},
                {"bi_encoder": "MINILM_FOLDER", "turns": 1}],
    "drrag": [{"classifier": "TINY"}, {"retriever": "bm25", "selection": "cfs",
                                       "classifier": "TINY"},
              {"retriever": "hybrid", "selection": "qdc", "bi_encoder": "MINILM_FOLDER"}],
    "best": [{"classifier": "TINY"}, {"classify": False, "search": "bm25", "hyde": True,
                                      "reranker": "minilm"},
             {"classify": False, "bi_encoder": "MINILM_FOLDER"}],
}
# attention off: the reader through ONNX Runtime (the funnel's FiD post-ranking in torch)
# "MINILM_FOLDER": the packaged MiniLM named by its folder, as another encoder is named: the
# paradigm's every dense part must load that encoder's index and nothing else


def option(value, tiny_classifier_base):
    from engine.models.packaged import minilm_path

    return {"TINY": str(tiny_classifier_base), "MINILM_FOLDER": str(minilm_path())}.get(
        value, value) if isinstance(value, str) else value


def loaded() -> dict[str, int]:
    """How many times each process-wide store has loaded something (misses, not sizes: a
    bounded cache that evicts keeps its size)."""
    from engine.models.cross_encoder import load_cross_encoder
    from engine.models.loading import _bi_encoder, _causal_lm
    from engine.models.query_classifier import load_query_classifier
    from engine.models.selection_classifier import load_classifier
    from engine.readers import backends, fid
    from engine.service.store import process_store

    caches = {"generators": backends._shared_hf, "ONNX generators": backends._shared_onnx,
              "FiD readers": fid._shared,
              "encoders": _bi_encoder, "causal LMs": _causal_lm,
              "cross-encoders": load_cross_encoder,
              "selection classifiers": load_classifier,
              "query classifiers": load_query_classifier}
    return {"indexes": len(process_store()),
            **{name: cache.cache_info().misses for name, cache in caches.items()}}


def test_every_built_in_paradigm_has_a_case():
    """(A plugin's paradigm, installed where the tests run, is its package's to test.)"""
    built_in = {p.name for p in PLUGINS if p.package == BUILT_IN and p.kind == "paradigm"}
    assert set(CASES) == built_in and built_in <= set(PARADIGMS)


@pytest.mark.parametrize("name, options", [(name, options) for name, cases in CASES.items()
                                           for options in cases])
def test_preparing_the_needs_leaves_nothing_to_load_at_the_first_question(
        name, options, tiny_corpus, shared_models, tiny_classifier_base):
    values = {**SHORT, **{k: option(v, tiny_classifier_base) for k, v in options.items()}}
    config = make_config(name, values)
    needs = spec(name).paradigm.needs(config)
    assert len({need.key for need in needs}) == len(needs)  # each once
    if "bi_encoder" in values:  # no dense part left on the default encoder
        dense = [n.key for n in needs if n.key.startswith(("dense", "documents", "encoder"))]
        assert dense and all(values["bi_encoder"] in key for key in dense), dense
    for need in needs:
        need.prepare(tiny_corpus, lambda done, total: None, process_store())
    before = loaded()
    trace = make_paradigm(name, tiny_corpus, values).run(QUESTION)
    assert trace.stages and trace.llm_steps
    assert loaded() == before
