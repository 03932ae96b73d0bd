"""Classifier labels in DuckDB (store, replace, survive a reopen, export and import, bad
files refused whole) and the Annotate service (judged pairs in order, labelling, retrain)."""

from __future__ import annotations

import json

import pytest

from engine.errors import ConfigError, DataFormatError
from engine.records import ClassifierCall, StageDetails
from engine.service.annotation import Annotation, judged_pairs
from engine.store.labels import Label, LabelStore
from engine.store.sessions import SessionStore
from engine.trace import RunTrace, StageResult
from engine.types import Question


def _label(question="Which river flows through Budapest?", d2="Danube", value=1, **kw):
    return Label(question, "Budapest", "Budapest", "Budapest is a city.", d2, d2,
                 f"{d2} text.", value, **kw)


def test_labels_are_stored_replaced_and_survive_a_reopen(tmp_path):
    path = tmp_path / "runs.duckdb"
    store = SessionStore(path)
    labels = LabelStore(store)
    first = labels.add(_label(annotator="ana"))
    labels.add(_label(d2="Vienna", value=0))
    again = labels.add(_label(value=0, annotator="bo"))  # the same pair, labelled again
    assert again == first and labels.count() == 2
    store.close()
    reopened = LabelStore(SessionStore(path))
    stored = {x.d2_id: x for x in reopened.list()}
    assert stored["Danube"].label == 0 and stored["Danube"].annotator == "bo"
    assert stored["Vienna"].source == "human" and stored["Vienna"].created
    assert stored["Danube"].texts_fingerprint == _label().texts_fingerprint
    assert [x.d2_id for x in reopened.list("another question")] == []


def test_export_then_import_into_another_database(tmp_path):
    source = LabelStore(SessionStore(tmp_path / "a.duckdb"))
    source.add(_label())
    source.add(_label(d2="Vienna", value=0, source="gold"))
    text = source.export_jsonl()
    assert len(text.splitlines()) == 2 and json.loads(text.splitlines()[0])["d2_id"] == "Danube"
    target = LabelStore(SessionStore(tmp_path / "b.duckdb"))
    target.add(_label(value=0))  # already there: left alone
    assert target.import_jsonl(text) == (1, 1)
    got = {x.d2_id: (x.label, x.source) for x in target.list()}
    assert got == {"Danube": (0, "human"), "Vienna": (0, "gold")}


@pytest.mark.parametrize("line, where", [
    ("not json", "line 2: not JSON"),
    ('{"question": "q", "d1_id": "a", "d1_text": "x", "d2_id": "b", "d2_text": "y"}',
     "line 2: field 'label': missing"),
    ('{"question": "q", "d1_id": "a", "d1_text": "x", "d2_id": "b", "d2_text": "y", '
     '"label": "yes"}', "line 2: field 'label': 'yes' is not a label"),
    ('{"question": "q", "d1_id": "a", "d1_text": 5, "d2_id": "b", "d2_text": "y", '
     '"label": 1}', "line 2: field 'd1_text': must be a string"),
    ('{"question": " ", "d1_id": "a", "d1_text": "x", "d2_id": "b", "d2_text": "y", '
     '"label": 1}', "line 2: A label needs its question"),
])
def test_a_bad_labels_file_is_refused_whole_naming_file_line_and_field(tmp_path, line, where):
    labels = LabelStore(SessionStore(tmp_path / "runs.duckdb"))
    labels.add(_label())
    good = json.dumps(_label(d2="Vienna").record())
    with pytest.raises(DataFormatError, match=f"mine.jsonl, {where}"):
        labels.import_jsonl(f"{good}\n{line}\n", "mine.jsonl")
    assert [x.d2_id for x in labels.list()] == ["Danube"]  # nothing added, nothing lost


def _trace(question: Question | None = None) -> RunTrace:
    calls = (ClassifierCall("Budapest", "Budapest", "Vienna", "Vienna", 0.55, 0.5, True),
             ClassifierCall("Budapest", "Budapest", "Danube", "Danube", 0.2, 0.5, False),
             ClassifierCall("Budapest", "Budapest", "Photosynthesis", "Photosynthesis", 0.05,
                            0.5, False))
    stage = StageResult("cis", "documents", 3, (), 0.1, StageDetails(calls=calls))
    trace = RunTrace(question="Which river flows through Budapest?", paradigm="drrag",
                     config={}, stages=(stage,))
    return trace if question is None else RunTrace(**{**trace.__dict__, "gold": question})


def test_judged_pairs_put_disagreements_first_then_the_least_certain(tiny_corpus):
    plain = judged_pairs(_trace(), tiny_corpus)
    assert [p.d2_id for p in plain] == ["Vienna", "Danube", "Photosynthesis"]  # |p - 0.5|
    gold = Question("q", "Which river flows through Budapest?", ("Danube",),
                    ("Budapest", "Danube"))
    pairs = judged_pairs(_trace(gold), tiny_corpus)
    # kept Vienna (gold says no) and dropped Danube (gold says yes) are the disagreements
    assert [(p.d2_id, p.gold, p.disagrees) for p in pairs] == [
        ("Vienna", 0, True), ("Danube", 1, True), ("Photosynthesis", 0, False)]
    labelled = judged_pairs(_trace(gold), tiny_corpus, [_label(d2="Vienna", value=1)])
    # a stored label overrides the gold: Vienna now agrees and leaves the front
    assert [(p.d2_id, p.label, p.disagrees) for p in labelled] == [
        ("Danube", None, True), ("Vienna", 1, False), ("Photosynthesis", None, False)]
    assert pairs[0].d1_text == tiny_corpus.by_id["Budapest"].text


def test_labelling_checks_ids_and_values(tiny_corpus, tmp_path):
    annotation = Annotation(lambda name: tiny_corpus, SessionStore(tmp_path / "runs.duckdb"))
    stored = annotation.label("Which river?", "Budapest", "Danube", 1, annotator="me")
    assert stored.id > 0 and stored.d2_text == tiny_corpus.by_id["Danube"].text
    with pytest.raises(ConfigError, match="d2_id='Nile' is not a document of corpus 'tiny'"):
        annotation.label("Which river?", "Budapest", "Nile", 1)
    with pytest.raises(ConfigError, match="label='maybe'"):
        annotation.label("Which river?", "Budapest", "Danube", "maybe")
    with pytest.raises(ConfigError, match="label=2"):
        annotation.label("Which river?", "Budapest", "Danube", 2)
    assert annotation.labels.count() == 1


def test_a_retrain_with_no_label_that_can_train_is_refused(tiny_corpus, tmp_path):
    from engine.train.fit_selection_classifier import ClassifierConfig, held_out_questions

    annotation = Annotation(lambda name: tiny_corpus, SessionStore(tmp_path / "runs.duckdb"))
    with pytest.raises(ConfigError, match="no labels to retrain on"):
        annotation.retrain()
    held_out = held_out_questions(ClassifierConfig())[0].query
    annotation.label(held_out, "Budapest", "Danube", 1)
    with pytest.raises(ConfigError, match="None of the 1 stored labels can train"):
        annotation.retrain()
    assert annotation.status()["retrain"]["state"] != "running"
    assert annotation.labels.count() == 1  # nothing lost


def test_retrain_adds_a_version_reports_both_and_can_switch_back(tiny_corpus, tmp_path,
                                                                  tiny_classifier_base):
    from engine.train.fit_selection_classifier import ClassifierConfig, train_classifier

    base = train_classifier(ClassifierConfig(base_model=str(tiny_classifier_base), epochs=1,
                                             max_length=64))
    annotation = Annotation(lambda name: tiny_corpus, SessionStore(tmp_path / "runs.duckdb"))
    annotation.label("Who devised pointillism?", "Georges Seurat", "Pointillism", 1)
    status = annotation.retrain(wait=True)
    job = status["retrain"]
    assert job["state"] == "done" and job["before"] == base.name and job["after"] != base.name
    assert job["done"] == job["total"] > 0 and job["labels"] == 1
    assert status["active"] == job["after"]
    by_id = {v["id"]: v for v in status["versions"]}
    assert by_id[job["after"]]["labels"] == 1 and by_id[base.name]["labels"] == 0
    from engine.models.selection_classifier import versions_dir
    from engine.train.fit_selection_classifier import training_report

    after = training_report(versions_dir() / job["after"])
    assert after["config"] == training_report(base)["config"]  # the recipe it improved on
    assert set(by_id[base.name]["heldout"]) >= {"accuracy", "precision", "recall"}
    assert annotation.activate(base.name)["active"] == base.name
