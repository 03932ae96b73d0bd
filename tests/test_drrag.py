"""DR-RAG: query-document concatenation, the two selections, the classifier's input, its
training data, threshold and versions, and the paradigm end to end.

Selection logic runs against a scripted classifier (which pairs it accepts is the test's
input); the classifier's own code trains and loads a tiny random BERT; the paradigm end to
end uses the real packaged MiniLM index and SmolLM2 reader on the tiny corpus.
"""

from __future__ import annotations

import random
import re

import pytest

from engine.documents import Candidate, Question
from engine.index.bm25 import bm25_index
from engine.stages.base import run_stage
from engine.stages.retrieve import DocumentRetriever
from engine.stages.select import ForwardSelection, InverseSelection, QueryDocumentConcatenation
from engine.units.build import UnitConfig
from engine.units.lazy import document_unit
from tests.conftest import torch_single_thread

single_thread = pytest.fixture(autouse=True)(torch_single_thread)


class ScriptedClassifier:
    """Accepts exactly the (title1, title2) pairs it is given; records what it was asked."""

    threshold = 0.5

    def __init__(self, accept: set[tuple[str, str]]) -> None:
        self.accept, self.asked = accept, []

    def probabilities(self, query, pairs):
        titles = [(a.split("\n")[0], b.split("\n")[0]) for a, b in pairs]
        self.asked += titles
        return [0.9 if t in self.accept else 0.1 for t in titles]


def _docs(corpus, *titles, parent=None):
    return tuple(Candidate(document_unit(corpus.by_id[t]), 1.0, i,
                           parents=(parent,) if parent else ())
                 for i, t in enumerate(titles, start=1))


def test_document_retriever_collapses_passages_to_documents(tiny_corpus):
    from engine.units.chunking import Chunker

    index = bm25_index(tiny_corpus, UnitConfig("passages", chunker=Chunker(8)))
    stage = DocumentRetriever(index, tiny_corpus)
    result = run_stage(stage, "Seurat painter pointillism", (), 3)
    ids = [c.unit.id for c in result.candidates]
    assert len(ids) == len(set(ids)) == 3  # several passages of a document: one document
    assert all(c.unit.granularity == "documents"
               and c.unit.text == tiny_corpus.by_id[c.unit.id].text for c in result.candidates)
    assert result.n_in == len(tiny_corpus)  # the haystack is documents, not passages
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)


def test_qdc_finds_the_second_hop_with_the_static_document(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    retriever = DocumentRetriever(index, tiny_corpus)
    question = "Which country has the capital Vienna?"
    static = run_stage(retriever, question, (), 1).candidates
    assert [c.unit.id for c in static] == ["Vienna"]
    out = run_stage(QueryDocumentConcatenation(retriever, per_document=2), question, static, 3)
    ids = [c.unit.id for c in out.candidates]
    assert ids[0] == "Vienna" and "Danube" in ids  # found through "... on the Danube."
    assert len(ids) == len(set(ids)) == 3
    assert [c.parents for c in out.candidates] == [(), ("Vienna",), ("Vienna",)]
    assert [c.rank for c in out.candidates] == [1, 2, 3]


def test_qdc_interleaves_each_static_documents_best_first(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    retriever = DocumentRetriever(index, tiny_corpus)
    static = _docs(tiny_corpus, "Budapest", "Georges Seurat")
    out = QueryDocumentConcatenation(retriever, per_document=2).run("q", static, 4)
    parents = [c.parents for c in out.candidates]
    assert parents == [(), (), ("Budapest",), ("Georges Seurat",)]  # round-robin, cut to 4


def test_forward_selection_keeps_each_static_documents_first_accepted(tiny_corpus):
    static = _docs(tiny_corpus, "Budapest", "Georges Seurat")
    dynamic = (_docs(tiny_corpus, "Vienna", "Danube", parent="Budapest")
               + _docs(tiny_corpus, "Paul Signac", "Pointillism", parent="Georges Seurat"))
    classifier = ScriptedClassifier({("Budapest", "Danube"), ("Georges Seurat", "Paul Signac"),
                                     ("Georges Seurat", "Pointillism")})
    out = ForwardSelection(classifier, 0.5).run("q", static + dynamic, 10)
    assert [c.unit.id for c in out.candidates] == ["Budapest", "Georges Seurat", "Danube",
                                                   "Paul Signac"]
    calls = [(c.d1, c.d2, c.kept) for c in out.details.calls]
    # the walk stops at the first accepted document: Pointillism is never recorded
    assert calls == [("Budapest", "Vienna", False), ("Budapest", "Danube", True),
                     ("Georges Seurat", "Paul Signac", True)]
    assert all(c.threshold == 0.5 and 0 <= c.probability <= 1 for c in out.details.calls)


def test_forward_selection_with_nothing_accepted_sends_the_static_documents(tiny_corpus):
    static = _docs(tiny_corpus, "Budapest")
    dynamic = _docs(tiny_corpus, "Vienna", "Danube", parent="Budapest")
    out = ForwardSelection(ScriptedClassifier(set()), 0.5).run("q", static + dynamic, 4)
    assert [c.unit.id for c in out.candidates] == ["Budapest"]
    assert len(out.details.calls) == 2 and not any(c.kept for c in out.details.calls)


def test_inverse_selection_drops_documents_in_no_accepted_pair(tiny_corpus):
    candidates = _docs(tiny_corpus, "Budapest", "Photosynthesis", "Danube", "Vienna")
    classifier = ScriptedClassifier({("Budapest", "Danube"), ("Danube", "Vienna")})
    out = InverseSelection(classifier, 0.5).run("q", candidates, 4)
    assert [c.unit.id for c in out.candidates] == ["Budapest", "Danube", "Vienna"]
    assert [c.rank for c in out.candidates] == [1, 2, 3]
    assert len(out.details.calls) == 6  # every pair of four, better-ranked first
    assert classifier.asked[0] == ("Budapest", "Photosynthesis")
    lonely = InverseSelection(ScriptedClassifier(set()), 0.5).run("q", candidates, 4)
    assert [c.unit.id for c in lonely.candidates] == ["Budapest"]  # the reader gets one
    assert "no pair accepted" in lonely.details.note


# --- the classifier ----------------------------------------------------------------------


def test_pair_input_keeps_both_documents_when_they_are_long():
    from transformers import AutoTokenizer

    from engine.models.packaged import minilm_path
    from engine.models.selection_classifier import encode_pairs

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()))
    first = "alpha " * 400 + "ENDONE"
    second = "omega " * 400 + "ENDTWO"
    inputs = encode_pairs(tokenizer, "which one?", [(first, second), ("short", second)], 64)
    assert inputs["input_ids"].shape == (2, 64)
    long_pair, short_pair = (tokenizer.decode(ids) for ids in inputs["input_ids"])
    assert long_pair.count("alpha") > 20 and long_pair.count("omega") > 20  # both kept
    assert short_pair.count("omega") > long_pair.count("omega")  # unused room goes to d2
    assert long_pair.count("[SEP]") == 3


def test_segment_cosines_average_each_segment_between_its_separators():
    torch = pytest.importorskip("torch")
    from engine.models.pair_model import segment_cosines

    sep = 9
    # [CLS] q q [SEP] d1 [SEP] d2 d2 [SEP] [PAD]
    ids = torch.tensor([[1, 5, 5, sep, 6, sep, 7, 7, sep, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 1, 0]])
    x, y = [1.0, 0.0], [0.0, 1.0]
    junk = [5.0, 5.0]  # [CLS], the separators and padding must not count
    hidden = torch.tensor([[junk, x, x, junk, y, junk, x, y, junk, junk]])
    cosines = segment_cosines(hidden, ids, mask, sep)[0].tolist()
    half = 2 ** -0.5  # d2's mean is (0.5, 0.5)
    assert cosines == pytest.approx([0.0, half, half])


def test_pair_model_starts_as_the_bi_encoders_view_and_loads_as_a_sequence_classifier(
        tiny_classifier_base, tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForSequenceClassification

    from engine.models.pair_model import (
        INITIAL_SCALE,
        model_classes,
        new_pair_model,
        segment_cosines,
    )

    _, model_class = model_classes()
    _, model = new_pair_model(str(tiny_classifier_base))  # MiniLM's tokenizer: [SEP] is 102
    model.eval()
    ids = torch.tensor([[101, 2054, 102, 3000, 3001, 102, 4000, 102]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        logit = model(input_ids=ids, attention_mask=mask).logits
        hidden = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
    q_d1, q_d2, _ = segment_cosines(hidden, ids, mask, 102)[0].tolist()
    assert logit.shape == (1, 1)
    assert logit.item() == pytest.approx(INITIAL_SCALE * (q_d1 + q_d2 - 1), abs=1e-4)
    model.save_pretrained(str(tmp_path))
    again = AutoModelForSequenceClassification.from_pretrained(str(tmp_path)).eval()
    assert type(again) is model_class and again.config.sep_token_id == 102
    with torch.no_grad():
        assert again(input_ids=ids, attention_mask=mask).logits.item() == pytest.approx(
            logit.item(), abs=1e-5)


def test_training_pairs_follow_the_paper_and_are_balanced():
    from engine.train.preranker_pairs import QuestionGroup
    from engine.train.selection_pairs import question_pairs

    paragraphs = tuple((t, f"{t}\ntext of {t}", t in ("A", "B", "C"))
                       for t in "ABCDEFGH")
    group = QuestionGroup("q1", "a question", paragraphs, ("A", "B", "C"))
    pairs = question_pairs(group, random.Random(0))
    positives = [(p.first[0], p.second[0]) for p in pairs if p.label == 1]
    negatives = [(p.first[0], p.second[0]) for p in pairs if p.label == 0]
    assert sorted(positives) == sorted((a, b) for a in "ABC" for b in "ABC" if a != b)
    assert len(negatives) == len(positives) == 6  # 1:1
    gold = set("ABC")
    mixed = [n for n in negatives if len(gold & set(n)) == 1]
    assert len(mixed) == 3 and len(negatives) - len(mixed) == 3  # half with one gold
    assert not any(set(n) <= gold for n in negatives)
    again = question_pairs(group, random.Random(0))
    assert again == pairs  # seeded


def test_threshold_is_the_best_accuracy_on_held_out_pairs():
    from engine.train.selection_pairs import choose_threshold, pair_metrics, roc_auc

    probs = [0.9, 0.8, 0.7, 0.4, 0.3, 0.2]
    labels = [1, 1, 0, 1, 0, 0]
    m = pair_metrics(probs, labels, 0.5)
    assert (m["accuracy"], m["precision"], m["recall"]) == (round(4 / 6, 4), round(2 / 3, 4),
                                                            round(2 / 3, 4))
    # 0.4 and 0.8 both get 5 of 6 right; the tie goes to the one nearer 0.5
    assert choose_threshold(probs, labels) == 0.4
    assert pair_metrics(probs, labels, 0.4)["accuracy"] == round(5 / 6, 4)
    assert roc_auc(probs, labels) == round(8 / 9, 4)  # one of nine pos/neg pairs misordered
    assert roc_auc([0.5, 0.5], [1, 0]) == 0.5


@pytest.fixture
def tiny_config(tiny_classifier_base):
    from engine.train.fit_selection_classifier import ClassifierConfig

    return ClassifierConfig(base_model=str(tiny_classifier_base), epochs=1, max_length=64)


@pytest.mark.training
def test_train_retrain_and_switch_back(tiny_config, data_dir):
    from engine.models.kinds import SELECTION_CLASSIFIER
    from engine.models.selection_classifier import (
        active_version,
        set_active,
        shared_classifier,
        versions,
    )
    from engine.models.trained import model_location
    from engine.train.fit_selection_classifier import (
        cached_classifier,
        summary,
        train_classifier,
        training_report,
    )
    from engine.train.preranker_pairs import DEV_SOURCE
    from engine.train.selection_pairs import PairExample

    steps = []
    base = train_classifier(tiny_config, progress=lambda done, total: steps.append(total))
    report = training_report(base)
    assert steps and report["train_pairs"] > 500 and report["labels"] == 0
    assert 0 < report["threshold"] < 1
    assert set(report["heldout"]) == {"accuracy", "precision", "recall", "f1", "pairs"}
    assert len(report["heldout_scores"]) == report["heldout"]["pairs"] > 50
    assert active_version() == base.name
    assert model_location("trained", SELECTION_CLASSIFIER) == str(base)
    assert cached_classifier(tiny_config) == base
    lines = summary(base)  # what `python -m engine train classifier` prints
    assert lines[0] == f"classifier  {base} (now the active version)"
    assert f"threshold   {report['threshold']:.3f} (best accuracy on the held-out pairs)" in lines
    probs = shared_classifier().probabilities("q?", [("a\nb", "c\nd")] * 2)
    assert len(probs) == 2 and probs[0] == probs[1] and 0 < probs[0] < 1

    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    dev_question = read_dataset(shared_data_dir() / DEV_SOURCE).questions[0].text
    labels = [PairExample("Who is new here?", "A\nx", "B\ny", 1, "human"),
              PairExample(dev_question, "A\nx", "B\ny", 1, "human")]
    again = train_classifier(tiny_config, labels=labels)
    assert again != base and active_version() == again.name
    assert cached_classifier(tiny_config) == base  # the labels make another entry
    report = training_report(again)
    assert (report["labels"], report["labels_set_aside"]) == (1, 1)  # dev500: never trained on
    assert [v["id"] for v in versions()] == [base.name, again.name]
    set_active(base.name)  # the previous version stays and can be made active again
    assert active_version() == base.name
    with pytest.raises(Exception, match="Unknown classifier version 'nope'"):
        set_active("nope")


def test_an_unknown_classifier_names_what_loads(data_dir):
    from engine.errors import ResourceMissingError
    from engine.models.selection_classifier import shared_classifier

    with pytest.raises(ResourceMissingError, match=re.escape(
            "Cannot load model 'no-such-classifier': it is neither an alias nor a local "
            "folder, and no model hub is reachable. Use an alias (trained: the active "
            "version) or a local model folder.")):
        shared_classifier("no-such-classifier")


def test_a_diverged_classifier_is_refused_not_saved(tiny_classifier_base):
    torch = pytest.importorskip("torch")
    from engine.errors import TrainingError
    from engine.models.pair_model import new_pair_model
    from engine.train.fit_selection_classifier import _check_finite

    _, model = new_pair_model(str(tiny_classifier_base))
    _check_finite(model)  # a fresh model passes
    with torch.no_grad():
        model.head.bias.fill_(float("nan"))
    with pytest.raises(TrainingError, match="Nothing was saved; the active version is "
                                            "unchanged"):
        _check_finite(model)


def test_untrained_classifier_names_the_command(data_dir):
    from engine.errors import ResourceMissingError
    from engine.models.kinds import SELECTION_CLASSIFIER
    from engine.models.trained import model_location

    with pytest.raises(ResourceMissingError, match="python -m engine train classifier"):
        model_location("trained", SELECTION_CLASSIFIER)


@pytest.mark.slow  # the packaged bi-encoder loaded and run
def test_before_any_training_the_stand_in_decides_and_the_run_says_so(tiny_corpus, data_dir):
    from engine.models.selection_classifier import STAND_IN, shared_classifier
    from engine.service.store import make_paradigm

    stand_in = shared_classifier("trained")  # nothing trained in this data directory
    assert stand_in.stand_in and stand_in.location == STAND_IN and stand_in.threshold == 0.5
    assert shared_classifier(STAND_IN) is stand_in  # also a classifier a config can name
    question = "Which river flows through Vienna?"
    # P = 0.5 where cos(q, d1) + cos(q, d2) = 1.65: the question twice over is accepted,
    # two strangers are not
    same, strangers = stand_in.probabilities(question, [(question, question), (
        "Seurat painted with dots.", "Bananas are yellow.")])
    assert same > 0.5 > strangers
    config = {"selection": "cfs", "k": 3, "k1": 1, "k2": 2}
    trace = make_paradigm("drrag", tiny_corpus, config, retrieval_only=True).run(question)
    cfs = trace.stages[-1]
    assert cfs.name == "cfs" and cfs.settings["model"] == STAND_IN
    assert "untrained stand-in" in cfs.details.note and cfs.details.calls


@pytest.mark.slow
def test_drrag_end_to_end_with_any_sequence_classifier_folder(tiny_corpus, tiny_classifier_base,
                                                              shared_models):
    from engine.service.store import make_paradigm

    question = Question("q", "Which country has the capital Vienna?", answers=("Austria",),
                        supporting_titles=("Vienna", "Danube"))
    config = {"retriever": "bm25", "selection": "cis", "k": 3, "k1": 1, "k2": 2,
              "classifier": str(tiny_classifier_base), "threshold": 0.01,
              "reader": {"max_answer_tokens": 6}}
    trace = make_paradigm("drrag", tiny_corpus, config).run(question)
    assert [s.name for s in trace.stages] == ["bm25", "qdc", "cis"]
    bm25, qdc, cis = trace.stages
    assert [c.unit.id for c in bm25.candidates] == ["Vienna"]
    assert len(qdc.candidates) == 3 and qdc.candidates[1].parents == ("Vienna",)
    calls = cis.details.calls
    assert len(calls) == 3 and all(c.threshold == 0.01 for c in calls)
    assert all(c.kept == (c.probability >= 0.01) for c in calls)
    (step,) = trace.llm_steps  # exactly one LLM call
    assert step.purpose == "answer" and trace.llm_calls == 1
    assert trace.metrics["gold_doc_recall@qdc"] == 1.0
    sm = make_paradigm("drrag", tiny_corpus, {**config, "selection": "sm"}).run(question)
    assert [s.name for s in sm.stages] == ["bm25"] and len(sm.stages[0].candidates) == 3


@pytest.mark.parametrize("values, message", [
    ({"selection": "magic"}, "Unknown selection 'magic'"),
    ({"k": 2, "k1": 3}, "k1=3 is more than k=2"),
    ({"threshold": 1.5}, "threshold=1.5 is out of range"),
    ({"k2": "three"}, "k2"),
])
def test_drrag_config_errors_name_the_value(values, message):
    from engine.errors import ConfigError
    from engine.paradigms.registry import make_config

    with pytest.raises(ConfigError, match=message):
        make_config("drrag", values)


def test_qdc_reports_the_corpus_it_searched_as_its_input(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    retriever = DocumentRetriever(index, tiny_corpus)
    static = run_stage(retriever, "capital Vienna", (), 1)
    qdc = run_stage(QueryDocumentConcatenation(retriever, 2), "capital Vienna",
                    static.candidates, 3)
    assert qdc.n_in == len(tiny_corpus) and len(qdc.candidates) == 3


# --- hybrid similarity matching ---------------------------------------------------------


def _static_ids(corpus, options: dict, question: str, k: int = 3) -> list[str]:
    from engine.service.store import make_paradigm

    paradigm = make_paradigm("drrag", corpus, {**options, "selection": "sm", "k": k},
                             retrieval_only=True)
    (stage,) = paradigm.run(question).stages
    return [c.unit.id for c in stage.candidates]


@pytest.mark.slow  # MiniLM loaded and the tiny corpus's dense index built
def test_hybrid_weight_runs_from_bm25_to_dense(tiny_corpus):
    question = "Which artist put tiny coloured points on canvas?"
    bm25 = _static_ids(tiny_corpus, {"retriever": "bm25"}, question)
    dense = _static_ids(tiny_corpus, {"retriever": "dense"}, question)
    assert bm25 != dense  # the question tells the two apart, so the ends below are seen
    assert _static_ids(tiny_corpus, {"retriever": "hybrid", "hybrid_weight": 0.0},
                       question) == bm25
    assert _static_ids(tiny_corpus, {"retriever": "hybrid", "hybrid_weight": 1.0},
                       question) == dense


def test_hybrid_similarity_matching_reads_the_funnels_document_scores(tiny_corpus):
    from engine.service.store import make_paradigm, process_store

    question = "Which river flows through Vienna?"
    config = {"retriever": "hybrid", "hybrid_weight": 0.5, "selection": "qdc", "k": 3,
              "k1": 1, "k2": 2}
    paradigm = make_paradigm("drrag", tiny_corpus, config, retrieval_only=True)
    static, qdc = paradigm.run(question).stages
    assert static.name == "hybrid" and static.granularity == "documents"
    assert static.settings == {"document_scores": "hybrid", "hybrid_weight": 0.5}
    # the same scorer object the funnel's first stage would read: one score, one copy
    scorer = process_store().documents(tiny_corpus, "hybrid", 0.5, paradigm.config.units())
    scores = scorer.scores(question)
    best = int(scores.argmax())
    (found,) = static.candidates
    assert found.unit.id == tiny_corpus.documents[best].id
    assert found.score == pytest.approx(float(scores[best]))
    # q + d searches the same scores, the static document left out
    assert [c.parents for c in qdc.candidates] == [(), (found.unit.id,), (found.unit.id,)]
    ids = [c.unit.id for c in qdc.candidates]
    assert len(set(ids)) == 3
    expected = scorer.scores(f"{question} {found.unit.text}")
    dynamic = [tiny_corpus.index_of[i] for i in ids[1:]]
    assert list(expected[dynamic]) == sorted(expected[dynamic], reverse=True)
    assert all(expected[dynamic].min() >= expected[i] for i in range(len(tiny_corpus))
               if tiny_corpus.documents[i].id not in ids)


def test_hybrid_similarity_matching_says_when_bm25_stands_in(tiny_corpus, monkeypatch):
    from engine.paradigms.registry import make_config
    from engine.service.store import make_paradigm, process_store

    store = process_store()
    monkeypatch.setattr(store, "_promised", {})
    config = {"retriever": "hybrid", "selection": "qdc", "k": 2, "k1": 1, "k2": 1}
    store.promise_dense(tiny_corpus, make_config("drrag", config).units())
    # a paradigm is handed what it uses when it is made: the stand-in, while the build runs
    paradigm = make_paradigm("drrag", tiny_corpus, config, retrieval_only=True)
    static, qdc = paradigm.run("Which river flows through Vienna?").stages
    for stage in (static, qdc):
        assert "documents score by BM25 alone" in stage.details.note
        assert stage.settings["stand_in"] == "bm25"
    assert static.settings["document_scores"] == "bm25"


def test_a_hybrid_weight_out_of_range_is_refused_by_name():
    from engine.errors import ConfigError
    from engine.paradigms.registry import make_config

    with pytest.raises(ConfigError, match="hybrid_weight=1.5 is out of range"):
        make_config("drrag", {"retriever": "hybrid", "hybrid_weight": 1.5})
    with pytest.raises(ConfigError, match="Unknown retriever 'sparse'"):
        make_config("drrag", {"retriever": "sparse"})


# --- the typed single-hop questions (bench/drrag_first_stage.py) -------------------------


def test_the_typed_questions_load_and_each_answer_is_in_its_wiki_document():
    import json

    from bench.drrag_first_stage import TYPED, typed_questions
    from engine.data.corpus import load_corpus
    from engine.data.loaders import read_dataset
    from engine.metrics import answer_in

    dataset = read_dataset(TYPED)
    assert dataset.format == "nq-open" and len(dataset.questions) >= 40
    questions, titles = typed_questions()
    assert len({q.id for q in questions}) == len(questions) == len(titles)
    assert all(q.text.endswith("?") and q.answers for q in questions)
    wiki = load_corpus("wiki")
    missing = [(q.text, title) for q, (title,) in zip(questions, titles, strict=True)
               if title not in wiki.by_id or not answer_in([wiki.by_id[title].text],
                                                           q.answers)]
    assert not missing
    assert json.loads(TYPED.read_text().splitlines()[0])["question"] == (
        "Which planet is known as the Red Planet?")  # the case issue 35 reported
