"""The best-practices pipeline: hybrid fusion, extractive summarisation, the query
classifier's labelled set and training, and the paradigm end to end on the tiny corpus.

Fusion and the labelled set are logic (tiny fixtures); summarisation and the paradigm run
the real packaged MiniLM and SmolLM2; the query classifier trains on a tiny random BERT
(the real MiniLM fine-tune is `python -m engine train query-classifier`, measured in
docs/benchmarks/longrag-best.md, "The query classifier").
"""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from engine.documents import Candidate, Question, Unit
from engine.errors import ConfigError
from engine.paradigms.registry import make_config
from engine.service.store import make_paradigm
from engine.stages.retrieve import fuse_hybrid, min_max
from engine.train.query_data import TEMPLATES, build_examples

QUESTION = Question("q1", "Which river flows through Budapest?", answers=("Danube",),
                    supporting_titles=("Budapest",))
BEST = {"classify": False, "M": 6, "k": 2, "summary_tokens": 20,
        "reader": {"max_answer_tokens": 8}}


def _hits(*pairs: tuple[str, float]) -> tuple[Candidate, ...]:
    return tuple(Candidate(Unit(u, u, f"text {u}", (u,), "passages"), s, r)
                 for r, (u, s) in enumerate(pairs, start=1))


def test_min_max_scales_each_list_to_unit_range():
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([5.0, 5.0]) == [1.0, 1.0] and min_max([]) == []


def test_hybrid_fusion_gives_a_missing_unit_its_lists_minimum():
    bm25 = _hits(("a", 12.0), ("b", 8.0), ("c", 4.0))  # scaled 1, 0.5, 0
    dense = _hits(("b", 0.9), ("d", 0.7), ("a", 0.5))  # scaled 1, 0.5, 0
    fused = {c.unit.id: c.score for c in fuse_hybrid(bm25, dense, 0.3, 10)}
    assert fused == pytest.approx({"a": 0.3, "b": 0.3 * 0.5 + 1.0, "c": 0.0, "d": 0.5})
    ranked = fuse_hybrid(bm25, dense, 0.3, 2)
    assert [c.unit.id for c in ranked] == ["b", "d"] and [c.rank for c in ranked] == [1, 2]
    # alpha 0: the dense order; a large alpha: BM25's order decides
    assert [c.unit.id for c in fuse_hybrid(bm25, dense, 0.0, 3)] == ["b", "d", "a"]
    assert [c.unit.id for c in fuse_hybrid(bm25, dense, 10.0, 2)] == ["a", "b"]


def test_labelled_set_is_balanced_deduplicated_and_holds_apart_whole_templates():
    sentences = [f"Sentence number {i} mentions Budapest and the Danube." for i in range(50)]
    questions = [("hotpotqa", f"Who founded city {i}?") for i in range(20)] + \
        [("squad", f"When was bridge {i} built?") for i in range(10)]
    examples = build_examples(sentences, questions, seed=1)
    assert examples == build_examples(sentences, questions, seed=1)  # deterministic
    texts = [e.text for e in examples]
    assert len(texts) == len(set(texts))
    assert {e.kind for e in examples if e.label == 0} == set(TEMPLATES)
    assert Counter(e.label for e in examples)[1] == 30
    # a held-apart template never has an example in training: its prefix marks it
    for kind, templates in TEMPLATES.items():
        held = [t.split("{")[0] for i, t in enumerate(templates) if i % 5 == 4]
        train = [e.text for e in examples if e.kind == kind and not e.held_out]
        assert not any(x.startswith(h) for h in held if len(h) > 12 for x in train)
    assert sum(e.held_out for e in examples if e.label == 1) == 20 // 5 + 10 // 5


@pytest.mark.parametrize("values, message", [
    ({"search": "sparse"}, "search"), ({"alpha": -1}, "alpha"), ({"k": 60}, "k"),
    ({"M": 3, "k": 4}, "k=4 is more than M=3")])
def test_bad_config_names_the_field(values, message):
    with pytest.raises(ConfigError, match=message):
        make_config("best", values)


@pytest.mark.slow
def test_summariser_keeps_the_closest_sentences_within_budget(shared_models):
    from engine.models.loading import load_bi_encoder
    from engine.stages.summarise import ExtractiveSummariser
    from engine.text import count_tokens

    passages = (
        Candidate(Unit("p1", "Budapest", "Budapest is the capital of Hungary. The Danube "
                       "flows through Budapest. It has many baths.", ("Budapest",),
                       "passages"), 0.9, 1, ("Budapest",)),
        Candidate(Unit("p2", "Paul Signac", "Paul Signac was a French painter.",
                       ("Paul Signac",), "passages"), 0.5, 2, ("Paul Signac",)))
    out = ExtractiveSummariser(load_bi_encoder("minilm"), max_tokens=12).run(
        QUESTION.text, passages, 2)
    kept = [s for s in out.details.sentences if s.kept]
    assert "The Danube flows through Budapest." in [s.text for s in kept]
    assert out.details.tokens == sum(count_tokens(s.text) for s in kept) <= 12
    assert [c.unit.id for c in out.candidates] == ["p1"]  # Signac kept nothing: dropped
    assert out.candidates[0].parents == ("Budapest",) and out.candidates[0].rank == 1
    assert "Danube flows through Budapest." in out.candidates[0].unit.text
    assert len(out.details.sentences) == 4


@pytest.mark.slow
def test_best_end_to_end_without_and_with_hyde(tiny_corpus, shared_models):
    trace = make_paradigm("best", tiny_corpus, BEST).run(QUESTION)
    assert [s.name for s in trace.stages] == ["hybrid", "reranker", "summary"]
    found, reranked, summary = trace.stages
    assert len(found.candidates) == 6 and "x BM25 + dense" in found.details.note
    assert len(reranked.candidates) == 2
    assert summary.details.tokens <= 20 < summary.details.tokens_in
    assert [s.purpose for s in trace.llm_steps] == ["answer"] and trace.answer
    assert "AR@summary" in trace.metrics and "EM" in trace.metrics

    hyde = make_paradigm("best", tiny_corpus, {**BEST, "hyde": True, "summarise": False,
                                               "reranker": "bi-encoder"}).run(QUESTION)
    assert [s.name for s in hyde.stages] == ["hybrid", "reranker"]
    pseudo, read = hyde.llm_steps
    assert pseudo.purpose == "hyde" and pseudo.output.strip() and read.purpose == "answer"
    assert hyde.stages[0].details.note and len(hyde.stages[1].candidates) == 2


@pytest.mark.slow
def test_query_classification_can_skip_retrieval(tiny_corpus, shared_models,
                                                 tiny_classifier_base, tmp_path):
    never = tmp_path / "never"
    shutil.copytree(tiny_classifier_base, never)
    (never / "training_report.json").write_text(json.dumps({"threshold": 1.01}))
    trace = make_paradigm("best", tiny_corpus, {**BEST, "classify": True,
                                                "classifier": str(never)}).run(QUESTION)
    (routed,) = trace.stages
    assert routed.granularity == "query" and routed.candidates == ()
    assert routed.details.decision.retrieve is False
    assert "without retrieval" in routed.details.note
    assert [s.purpose for s in trace.llm_steps] == ["answer"]
    assert trace.metrics["AR@4"] == 0.0 and "AR@classify" not in trace.metrics

    always = tmp_path / "always"
    shutil.copytree(tiny_classifier_base, always)
    (always / "training_report.json").write_text(json.dumps({"threshold": 0.0}))
    trace = make_paradigm("best", tiny_corpus, {**BEST, "classify": True,
                                                "classifier": str(always)}).run(QUESTION)
    assert [s.name for s in trace.stages] == ["classify", "hybrid", "reranker", "summary"]


@pytest.mark.slow
def test_before_the_query_classifier_is_trained_every_request_retrieves(tiny_corpus,
                                                                        shared_models):
    from engine.models.query_classifier import STAND_IN, shared_query_classifier

    assert shared_query_classifier("trained").name == STAND_IN  # none trained here
    config = {**BEST, "classify": True}
    trace = make_paradigm("best", tiny_corpus, config, retrieval_only=True).run(QUESTION)
    routed, *rest = trace.stages
    assert routed.settings["model"] == STAND_IN and routed.details.decision.retrieve
    assert "no query classifier is trained yet" in routed.details.note
    assert [s.name for s in rest] == ["hybrid", "reranker", "summary"]


@pytest.mark.slow
def test_query_classifier_trains_reports_and_is_cached(tiny_classifier_base, shared_models):
    from engine.models.query_classifier import (
        QueryClassifierConfig,
        cached_query_classifier,
        load_query_classifier,
    )
    from engine.train.fit_query_classifier import summary, train_query_classifier

    config = QueryClassifierConfig(epochs=1, max_length=48, base_model=str(tiny_classifier_base))
    assert cached_query_classifier(config) is None
    folder = train_query_classifier(config)
    report = json.loads((folder / "training_report.json").read_text())
    assert report["heldout_examples"] > 100 and 0.0 <= report["heldout_accuracy"] <= 1.0
    assert set(report["heldout_accuracy_by_kind"]) >= set(TEMPLATES)
    assert cached_query_classifier(config) == folder == train_query_classifier(config)
    lines = summary(folder)  # what `python -m engine train query-classifier` prints
    assert lines[0] == f"query classifier  {folder}"
    assert f"held apart  accuracy {report['heldout_accuracy']:.3f}" in lines
    loaded = load_query_classifier(str(folder))
    assert loaded.max_length == 48  # it reads requests at the length it was trained at
    p = loaded.probabilities(["What is 2 plus 2?", "Hi!"])
    assert len(p) == 2 and all(0.0 <= x <= 1.0 for x in p)


def test_needs_follow_the_modules_switched_on():
    from engine.paradigms.registry import spec

    def needs(values):
        return [n.label for n in spec("best").needs(make_config("best", values))]

    default = needs({})
    assert any(label.startswith("dense index") for label in default)
    assert any(label.startswith("BM25 over") for label in default)
    assert "query classifier 'trained'" in default
    # BM25 search with summarisation: the sentences are encoded, no dense index is built
    lexical = needs({"search": "bm25", "classify": False, "reranker": "none"})
    assert not any(label.startswith("dense index") for label in lexical)
    assert not any(label.startswith("query classifier") for label in lexical)
    # dense search alone builds no BM25 index of its own: only the passages' one, which
    # stands in while the dense index is built (and the documents' one the stand-in
    # document scores read)
    assert [label for label in needs({"search": "dense"}) if label.startswith("BM25")] == [
        "BM25 over 100-token passages", "BM25 over documents"]
