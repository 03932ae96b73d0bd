"""Annotate: label the pairs DR-RAG's selection classifier judged, then retrain it.

Pick a dataset question (its gold marks each pair) or type one; "Find pairs" runs drrag and
lists the classifier's calls, disagreements with the gold (or a stored label) first, then
the least certain. The current pair is shown in full; y / n / s (or the buttons) label it
positive, negative or skip it. Labels live in the sessions database and survive restarts;
they export and import as JSONL. "Retrain" trains a new classifier version on the training
pairs plus the labels in the background, after saying what it waits for (the first-start
training of the classifier, another long build), and shows both versions' held-out figures
and curves on the same pairs. The new version becomes active only if its held-out AUC is
not below the active one's; otherwise it is kept and preselected under Versions, where any
version can be made active.
"""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import asdict
from functools import partial
from pathlib import Path

import gradio as gr

from app.errors import refusing
from app.tabs.base import PRIVATE, Refresh, Tab
from app.tabs.contents import contents
from app.tabs.corpora import corpus_choice
from app.tabs.picker import question_picker, target
from app.views import figures
from app.views.annotation import (
    agreement_table,
    classifier_html,
    labels_table,
    pair_card,
    pairs_table,
)
from app.views.trace import error_box, esc
from engine.paradigms.drrag import DRRAGParadigm
from engine.service.annotation import ClassifierStatus
from engine.service.explorer import Explorer
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

POLL_SECONDS = 2.0
STRATEGIES = [("every pair of the top k (inverse selection)", "cis"),
              ("static documents with their QDC documents (forward selection)", "cfs")]
# y / n / s click the label buttons while the Annotate tab is shown (not while typing)
KEYS_JS = """
() => {
  document.addEventListener('keydown', (event) => {
    const tag = (event.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || event.ctrlKey || event.metaKey) return;
    // Annotate's keys, and Judge's (app.tabs.judge.KEYS): the shown tab's button is pressed
    const ids = {y: ['fe-label-yes'], n: ['fe-label-no'], s: ['fe-label-skip', 'fe-judge-skip'],
                 u: ['fe-judge-undo'], 0: ['fe-judge-0'], 1: ['fe-judge-1'], 2: ['fe-judge-2'],
                 3: ['fe-judge-3']};
    const button = (ids[event.key] || []).map((id) => document.getElementById(id))
      .find((b) => b && b.offsetParent !== null);
    if (button) { button.click(); event.preventDefault(); }
  });
}
"""


def _version_choices(status: ClassifierStatus) -> gr.Dropdown:
    """Every version, newest first; chosen: a retrained version kept inactive because it
    is worse (one press of Make active uses it anyway), else the active one."""
    ids = [v["id"] for v in reversed(status.versions)]
    job = status.retrain
    kept = job["state"] == "done" and not job.get("activated", True) \
        and job["after"] != status.active
    chosen = job["after"] if kept else status.active
    return gr.Dropdown(choices=ids, value=chosen if chosen in ids else None)


# the contents line's links (app.tabs.contents): pairs, labels and classifier fill two screens
VIEWS = [("Find pairs", "fe-annotate-dataset"), ("Label them", "fe-annotate-notice"),
         ("Stored labels", "fe-labels-head"), ("The classifier", "fe-classifier-head")]


def build(explorer: Explorer) -> Tab:
    """The Annotate tab's widgets and events; returns its corpus choice and what is read
    again when the tab is shown (the stored labels, the classifier)."""
    contents(VIEWS, "fe-annotate-contents")
    gr.Markdown("Label the pairs DR-RAG's selection classifier judged: do the two documents "
                "together answer the question? Keys: **y** positive, **n** negative, "
                "**s** skip.")
    # the datasets whose labels train first; beside the picker, whether the chosen one's do
    picker = question_picker(explorer, "fe-annotate", lambda: gr.Radio(
        STRATEGIES, value="cis", label="Pairs from", scale=1, elem_id="fe-annotate-strategy"),
        labelling=True)
    question, strategy = picker.question, picker.beside
    with gr.Row():
        k = gr.Slider(2, 8, value=4, step=1, label="k: documents whose pairs are judged")
        annotator = gr.Textbox(label="Your name (stored with each label)",
                               elem_id="fe-annotator")
    with gr.Row():
        corpus = corpus_choice(explorer, "fe-annotate-corpus")
        find = gr.Button("Find pairs", variant="primary", elem_id="fe-annotate-run")
    picker.follow(explorer, corpus)
    notice = gr.HTML(elem_id="fe-annotate-notice")
    pairs_state, current, asked = gr.State([]), gr.State(0), gr.State(["", ""])
    card = gr.HTML(elem_id="fe-annotate-card")
    with gr.Row():
        yes = gr.Button("Positive (y)", elem_id="fe-label-yes")
        no = gr.Button("Negative (n)", elem_id="fe-label-no")
        skip = gr.Button("Skip (s)", elem_id="fe-label-skip")
    table = gr.HTML(elem_id="fe-annotate-pairs")
    with gr.Row():
        gr.Markdown("### Stored labels", elem_id="fe-labels-head")
        whose = gr.Dropdown([("everyone", "")], value="", label="Labelled by", scale=0,
                            min_width=160, elem_id="fe-labels-whose")
    stored = gr.HTML(labels_view(explorer), elem_id="fe-labels")
    with gr.Row():
        export = gr.Button("Export labels (JSONL)", elem_id="fe-labels-export")
        upload = gr.UploadButton("Import labels (JSONL)", file_types=[".jsonl", ".txt"],
                                 elem_id="fe-labels-import")
        download = gr.File(label="Exported labels", interactive=False, height=90)
    gr.Markdown("### The classifier", elem_id="fe-classifier-head")
    status = explorer.annotation.classifier_status()
    info = gr.HTML(classifier_html(status), elem_id="fe-classifier")
    with gr.Row():
        retrain = gr.Button("Retrain with the labels", variant="primary", elem_id="fe-retrain")
        versions = gr.Dropdown([v["id"] for v in status.versions], value=status.active,
                               label="Versions", elem_id="fe-versions")
        activate = gr.Button("Make active", elem_id="fe-activate")
    curves = gr.Plot(figures.precision_recall_figure(status), label="Held-out pairs",
                     elem_id="fe-pr")
    poll = gr.Timer(POLL_SECONDS, active=False)

    outputs = [notice, pairs_state, current, asked, card, table]
    for trigger in (find.click, question.submit):
        trigger(partial(find_pairs, explorer), [question, picker.gold, strategy, k, corpus],
                outputs, **PRIVATE)
    label_out = [notice, pairs_state, current, card, table, stored]
    whose.input(partial(labels_view, explorer), whose, stored, **PRIVATE)
    for button, value in ((yes, 1), (no, 0), (skip, None)):
        button.click(lambda p, a, q, w, v=value: label(explorer, v, p, a, q, w),
                     [pairs_state, current, asked, annotator], label_out, **PRIVATE)
    export.click(partial(export_labels, explorer), None, download, **PRIVATE)
    upload.upload(partial(import_labels, explorer), upload, [notice, stored], **PRIVATE)
    classifier_outputs = [info, versions, curves, poll]
    retrain.click(partial(start_retrain, explorer), None, classifier_outputs, **PRIVATE)
    poll.tick(partial(refresh, explorer), None, classifier_outputs, **PRIVATE)
    activate.click(partial(make_active, explorer), versions, classifier_outputs, **PRIVATE)
    return Tab(corpus=corpus, refresh=Refresh(
        lambda who: (*labels_listing(explorer, who), *refresh(explorer)),
        [stored, whose, *classifier_outputs], [whose]))


def labels_view(explorer: Explorer, whose: str = "") -> str:
    """The stored labels (by `whose` only, if given) and every two annotators'
    agreement on the pairs both labelled."""
    labels = [x for x in explorer.annotation.labels() if not whose or x.annotator == whose]
    return labels_table(labels) + agreement_table(explorer.annotation.label_agreement())


def labels_listing(explorer: Explorer, whose: str = "") -> tuple:
    """(labels_view, the "Labelled by" filter offering everyone who labelled)."""
    people = sorted({x.annotator for x in explorer.annotation.labels() if x.annotator})
    whose = whose if whose in people else ""
    return labels_view(explorer, whose), gr.Dropdown(
        choices=[("everyone", ""), *((p, p) for p in people)], value=whose)


# --- callbacks ----------------------------------------------------------------------------


def _no_pairs(box: str, *_) -> tuple:
    """No pairs to label after a refused or failed search (the last ones were another
    question's): (notice, pairs, current, [question, id], card, table)."""
    return box, [], 0, ["", ""], "", ""


def find_pairs(explorer: Explorer, text, gold, how, k_value, corpus="") -> tuple:
    """Run drrag on the question over `corpus`: (notice, pairs, current, [question, id,
    corpus], card, table)."""
    try:
        return _pairs_found(explorer, text, gold, how, k_value, corpus)
    except Exception as err:  # noqa: BLE001 - the page must stay usable
        logger.exception("finding pairs failed")
        return _no_pairs(error_box(f"The run failed: {err}"))


@refusing(shape=_no_pairs)
def _pairs_found(explorer: Explorer, text, gold, how, k_value, corpus) -> tuple:
    config = {"selection": how, "k": int(k_value), "k1": max(1, int(k_value) // 2)}
    trace: RunTrace = explorer.runs.run(target(text, gold), DRRAGParadigm.name,
                                        json.dumps(config), corpus or "")
    pairs = [asdict(p) for p in explorer.annotation.judged_pairs(trace)]
    message = ""
    if not pairs:
        message += error_box("The classifier judged no pair for this question (too few "
                             "documents found). Raise k or pick another question.")
    qid = trace.gold.id if trace.gold else ""
    return (message, pairs, 0, [trace.question, qid, corpus or ""],
            pair_card(trace.question, pairs, 0), pairs_table(pairs, 0))


@refusing(outputs=6)  # the pairs and the pair shown stay
def label(explorer: Explorer, value, pairs, at, question_and_id, who) -> tuple:
    """Store `value` for the current pair (None: skip) and move on: (notice, pairs,
    current, card, table, stored labels)."""
    question_text, qid, *searched = question_and_id  # the corpus since it was stored
    if not pairs or at >= len(pairs):
        return (error_box("Find pairs first; there is no pair to label."), pairs, at,
                gr.skip(), gr.skip(), gr.skip())
    if value is not None:
        p = pairs[at]
        explorer.annotation.add_label(question_text, p["d1_id"], p["d2_id"], value,
                                      question_id=qid, annotator=who or "",
                                      corpus=searched[0] if searched else "")
        pairs = [*pairs[:at], {**p, "label": value}, *pairs[at + 1:]]
    at += 1
    return ("", pairs, at, pair_card(question_text, pairs, at), pairs_table(pairs, at),
            labels_view(explorer))

def export_labels(explorer: Explorer) -> str:
    folder = Path(tempfile.mkdtemp(prefix="fe-labels-"))
    path = folder / "labels.jsonl"
    path.write_text(explorer.annotation.export_labels(), encoding="utf-8")
    return str(path)


@refusing(shape=lambda box, explorer, *_: (box, labels_view(explorer)),
          also=(UnicodeDecodeError,))  # not a text file
def import_labels(explorer: Explorer, file) -> tuple:
    path = Path(file if isinstance(file, str) else file.name)
    added, known = explorer.annotation.import_labels(path.read_text(encoding="utf-8"), path.name)
    return (f"<div class='fe-kept'>Imported {added} labels from {esc(path.name)}; "
            f"{known} were already stored.</div>", labels_view(explorer))

def refresh(explorer: Explorer) -> tuple:
    """(classifier HTML, versions, precision-recall figure, poll timer)."""
    status = explorer.annotation.classifier_status()
    running = status.retrain["state"] in ("waiting", "running")
    return (classifier_html(status), _version_choices(status),
            figures.precision_recall_figure(status), gr.Timer(active=running))


def _refused_classifier(box: str, explorer: Explorer, *_) -> tuple:
    """A refused Retrain or Make active: the box over the classifier as it is, the
    versions, curves and poll as they were."""
    return (box + classifier_html(explorer.annotation.classifier_status()), gr.skip(), gr.skip(),
            gr.skip())


@refusing(shape=_refused_classifier)
def start_retrain(explorer: Explorer) -> tuple:
    explorer.annotation.retrain_classifier()
    return refresh(explorer)


@refusing(shape=_refused_classifier)
def make_active(explorer: Explorer, version) -> tuple:
    explorer.annotation.activate_classifier(version or "")
    return refresh(explorer)
