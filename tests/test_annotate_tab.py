"""The Annotate tab's labelling callbacks without a browser: a real Explorer over the tiny
corpus and a real DuckDB file. Finding pairs runs drrag's real classifier and is covered by
the browser test."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.tabs import annotate
from engine.service.annotation import ClassifierStatus, JudgedPair


def judged(corpus, first: int, second: int) -> dict:
    d1, d2 = corpus.documents[first], corpus.documents[second]
    return asdict(JudgedPair(d1.id, d1.title, d1.text, d2.id, d2.title, d2.text,
                             probability=0.7, threshold=0.5, kept=True, gold=0))


def test_labelling_moves_on_stores_and_exports_and_a_reimport_adds_nothing(
        explorer, tiny_corpus):
    question = ["Who painted A Sunday Afternoon?", "q1"]
    pairs = [judged(tiny_corpus, 0, 1), judged(tiny_corpus, 1, 2)]
    notice, pairs, at, card, table, stored = annotate.label(explorer, 1, pairs, 0, question,
                                                            "ann")
    assert notice == "" and at == 1 and pairs[0]["label"] == 1 and "Pair 2 of 2" in card
    assert "<b>1</b> stored labels" in stored and "⚠" in table  # gold 0, kept: disagrees
    *_, at, card, _, stored = annotate.label(explorer, None, pairs, at, question, "ann")
    assert at == 2 and "Every pair of this question is labelled or skipped" in card
    assert "<b>1</b> stored labels" in stored  # a skip stores nothing

    (label,) = explorer.annotation.labels()
    assert (label.d1_id, label.label, label.annotator, label.question_id) == \
        (tiny_corpus.documents[0].id, 1, "ann", "q1")
    exported = Path(annotate.export_labels(explorer))
    message, _ = annotate.import_labels(explorer, str(exported))
    assert "Imported 0 labels from labels.jsonl; 1 were already stored" in message


def test_labelling_before_finding_pairs_or_a_bad_import_is_refused(explorer, tmp_path):
    notice, *_ = annotate.label(explorer, 1, [], 0, ["", ""], "")
    assert "Find pairs first" in notice
    bad = tmp_path / "mine.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    message, _ = annotate.import_labels(explorer, str(bad))
    assert message.startswith("<div class='fe-error'>") and "mine.jsonl" in message
    assert explorer.annotation.labels() == []


# --- the classifier panel after a retrain (views over the service's status) --------------


def _entry(version: str, auc: float, scores: list) -> dict:
    """A version's held-out figures as the retrain compares them."""
    return {"id": version, "rescored": False, "threshold": 0.5, "heldout_auc": auc,
            "heldout": {"accuracy": 0.7, "precision": 0.8, "recall": 0.6, "pairs": len(scores)},
            "heldout_scores": scores}


def _status(active: str, **job) -> ClassifierStatus:
    """classifier_status as the service returns it: two versions and a retrain `job`."""
    from engine.service.retrain_job import RetrainJob

    versions = [{"id": v, "created": c, "threshold": 0.5, "labels": n, "heldout": {},
                 "heldout_auc": auc, "heldout_scores": [], "active": v == active}
                for v, c, n, auc in (("first", "2025-01-01", 0, 0.766),
                                     ("retrained", "2025-01-02", 3, 0.758))]
    return ClassifierStatus(active=active, versions=versions, labels=3,
                            retrain=RetrainJob(**job).describe())


WORSE = {"state": "done", "before": "first", "after": "retrained", "labels": 3,
         "seconds": 700.0, "waited": 95.0, "activated": False,
         "compared": {"pairs": 4,
                      "before": _entry("first", 0.766, [[0.9, 1], [0.6, 0], [0.4, 1], [0.1, 0]]),
                      "after": _entry("retrained", 0.758,
                                      [[0.8, 1], [0.7, 1], [0.6, 0], [0.2, 0]])}}


def test_a_worse_retrain_says_it_was_kept_and_one_press_makes_it_active():
    """Seen: AUC .758 made active over .766 without a word, and "(before: none)"."""
    from app.views.annotation import classifier_html

    status = _status("first", **WORSE)
    html = classifier_html(status)
    assert "version retrained is kept but <b>not made active</b>" in html
    assert "held-out AUC 0.758 is below version first's 0.766, which stays active" in html
    assert "press Make active to use it anyway" in html and "fe-error" in html
    assert "after waiting 2 min for its turn" in html
    assert "becomes active only if its held-out AUC (to 3 decimals" in html  # the rule
    compared = html[html.index("fe-retrain-compared"):]
    assert "the same 4 held-out pairs" in compared
    assert compared.index("<td>before</td><td>first") < compared.index(
        "<td>after</td><td>retrained")
    assert annotate._version_choices(status).value == "retrained"  # preselected

    made_active = _status("retrained", **WORSE)
    assert "You have made it active since." in classifier_html(made_active)
    assert annotate._version_choices(made_active).value == "retrained"


def test_a_better_retrain_names_the_version_it_replaced_with_both_figures():
    from app.views.annotation import classifier_html

    better = {**WORSE, "activated": True, "compared": {
        "pairs": 4, "before": WORSE["compared"]["after"], "after": WORSE["compared"]["before"]}}
    status = _status("retrained", **better)
    html = classifier_html(status)
    assert ("version retrained is now active, replacing version first: its held-out AUC "
            "0.766 is not below 0.758") in html
    assert "before: none" not in html and "fe-kept" in html
    assert annotate._version_choices(status).value == "retrained"
    first = classifier_html(_status("retrained", **{**better, "before": ""}))
    assert "before: no trained version; the untrained stand-in decided" in first


def test_before_and_after_curves_are_both_drawn_on_the_same_pairs_labelled():
    """Seen: one precision/recall curve where both were promised."""
    from app.views import figures

    fig = figures.precision_recall_figure(_status("first", **WORSE))
    lines = [t for t in fig.data if t.mode == "lines"]
    dots = [t for t in fig.data if t.mode == "markers"]
    assert [t.name for t in lines] == ["before: first (0 labels, AUC 0.766)",
                                       "after: retraine (3 labels, AUC 0.758)"]
    assert [t.line.color for t in lines] == [t.marker.color for t in dots]
    assert (lines[0].line.dash, lines[1].line.dash) == ("dash", "solid")  # both visible
    assert lines[0].line.color != lines[1].line.color
    assert list(lines[0].x) == figures.precision_recall(WORSE["compared"]["before"][
        "heldout_scores"])[0]
    assert "The same 4 held-out pairs, before and after" in fig.layout.title.text


def test_a_waiting_retrain_says_what_it_waits_for_and_keeps_polling():
    from app.views.annotation import classifier_html

    waiting_for = ("the first-start training of this classifier (the version a retrain "
                   "improves on and is compared with): training <C>: 3/10 (30%)")
    waiting = _status("first", state="waiting", labels=3, set_aside=2)
    status = replace(waiting, retrain={**waiting.retrain, "waiting_for": waiting_for,
                                       "starts_in": 1_200.0})
    html = classifier_html(status)
    # the whole wait up front: until it starts, then its own training; the labels counted
    # as the versions table counts them
    assert ("Retrain on 3 labels (2 more set aside: on held-out or dev500 questions): "
            "<b>about 33 min in all: about 20 min until it starts, then about 13 min of "
            "training</b>") in html
    assert "starts by itself when that ends" in html
    unknown = replace(status, retrain={**status.retrain, "starts_in": float("inf")})
    assert "it starts when the builds before it end (how long they take is not known yet)" \
        in classifier_html(unknown)
    assert "training &lt;C&gt;: 3/10" in html  # escaped

    class Annotation:
        def classifier_status(self):
            return status

    *_, timer = annotate.refresh(SimpleNamespace(annotation=Annotation()))
    assert timer.active


@pytest.mark.parametrize(("first", "said"), [
    ({"state": "running", "line": "training the selection classifier: 65%"},
     "the first-start training is under way (training the selection classifier: 65%)"),
    ({"state": "failed", "line": "FAILED - no training data: hotpotqa/train100.json"},
     "the first-start training failed (FAILED - no training data: hotpotqa/train100.json)"),
    ({"state": "", "line": ""}, "label pairs below and press Retrain")])
def test_without_a_version_the_panel_says_what_makes_one(first, said):
    """Seen: "the app trains one in the background on its first start, or press Retrain"
    at 65% of that training, with no labels to retrain on, and again after it failed."""
    from app.views.annotation import classifier_html

    status = replace(_status("", state="idle"), versions=[], first_training=first)
    assert said in classifier_html(status)


def test_annotate_lists_training_questions_first_and_says_whose_labels_train(explorer):
    """Seen: HotpotQA dev500 offered first, its labels never training, learnt only after
    Retrain; and 300 of its 500 questions listed without a word."""
    from app.tabs import picker
    from engine.service.annotation import labelling_order, trainable
    from engine.service.datasets import dataset_questions

    dev, train = "hotpotqa/dev500_contexts.jsonl", "hotpotqa/train100.json"
    if not {dev, train} <= set(explorer.catalog.datasets()):
        pytest.skip("the QA data is not here (funnel-engine data fetch)")
    offered = [path for _, path in picker.dataset_choices(explorer,
                                                          order=labelling_order)["choices"]]
    assert offered[:2] == [train, "musique/train100.json"] and offered[-1] == dev
    listed, note = picker.questions_update(explorer, dev, labelling=True)
    assert "Labels on HotpotQA dev500 questions never train" in note
    assert listed["info"].startswith("The first 300 of its 500 questions, in the file's order")
    listed, note = picker.questions_update(explorer, train, labelling=True)
    trains = trainable(dataset_questions(train))
    assert 0 < len(trains) < 100
    assert (f"Labels on {len(trains)} of its 100 questions train the classifier; the other "
            f"{100 - len(trains)} are held out") in note
    held = [q for label, q in listed["choices"] if label.endswith(" · held out")]
    assert len(held) == 100 - len(trains) and not set(held) & trains
    assert listed["info"].startswith("All its 100 questions")
    # Explore's and Compare's picker: no note on labels, no marks
    listed, note = picker.questions_update(explorer, train)
    assert note == "" and not any("held out" in label for label, _ in listed["choices"])
