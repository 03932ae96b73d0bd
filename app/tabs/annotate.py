"""Annotate: label the pairs DR-RAG's selection classifier judged, then retrain it.

Pick a dataset question (its gold marks each pair) or type one; "Find pairs" runs drrag and
lists the classifier's calls, disagreements with the gold (or a stored label) first, then
the least certain. The current pair is shown in full; y / n / s (or the buttons) label it
positive, negative or skip it. Labels live in the sessions database and survive restarts;
they export and import as JSONL. "Retrain" trains a new classifier version on the training
pairs plus the labels in the background and shows the held-out figures before and after;
any version can be made active again.
"""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import asdict
from pathlib import Path

import gradio as gr

from app import figures
from app.errors import refused_box
from app.formatting import error_box, esc
from app.tabs.picker import clip_question, question_picker, target
from engine.errors import EngineError
from engine.paradigms.drrag import DRRAGParadigm
from engine.service.annotation import JudgedPair
from engine.service.explorer import Explorer
from engine.service.readiness import duration
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
    const ids = {y: 'fe-label-yes', n: 'fe-label-no', s: 'fe-label-skip'};
    const button = document.getElementById(ids[event.key]);
    if (button && button.offsetParent !== null) { button.click(); event.preventDefault(); }
  });
}
"""


def _truth(value: int | None) -> str:
    return {1: "positive", 0: "negative"}.get(value, "")


def pair_card(question: str, pairs: list[dict], current: int) -> str:
    """The pair being labelled, both documents in full."""
    if not pairs:
        return ""
    if current >= len(pairs):
        return ("<div class='fe-kept'>Every pair of this question is labelled or skipped. "
                "Find pairs for another question, or retrain.</div>")
    p = JudgedPair(**pairs[current])
    facts = [f"P = {p.probability:.3f} (threshold {p.threshold:.3f}): "
             f"{'kept' if p.kept else 'dropped'}"]
    if p.gold is not None:
        facts.append(f"gold: {_truth(p.gold)}")
    if p.label is not None:
        facts.append(f"your label: {_truth(p.label)}")
    return (f"<div class='fe-card'><b>Pair {current + 1} of {len(pairs)}</b> · "
            f"{esc(' · '.join(facts))}<br><b>Question:</b> {esc(question)}"
            "<div style='display:flex; gap:16px'>"
            f"<div style='flex:1'><b>d1: {esc(p.d1_title)}</b><br>{esc(p.d1_text)}</div>"
            f"<div style='flex:1'><b>d2: {esc(p.d2_title)}</b><br>{esc(p.d2_text)}</div>"
            "</div><small>Do the two documents together answer the question? "
            "y = positive, n = negative, s = skip</small></div>")


def pairs_table(pairs: list[dict], current: int) -> str:
    rows = []
    for n, raw in enumerate(pairs):
        p = JudgedPair(**raw)
        style = " style='background:#eef'" if n == current else ""
        flag = " ⚠" if p.disagrees else ""
        rows.append(f"<tr{style}><td>{n + 1}{flag}</td><td>{esc(p.d1_title)}</td>"
                    f"<td>{esc(p.d2_title)}</td><td>{p.probability:.3f}</td>"
                    f"<td>{'kept' if p.kept else 'dropped'}</td><td>{_truth(p.gold)}</td>"
                    f"<td>{_truth(p.label)}</td></tr>")
    return ("<table class='fe-table' id='fe-pairs-table'><thead><tr><th>#</th><th>d1</th>"
            "<th>d2</th><th>P</th><th>classifier</th><th>gold</th><th>label</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table><small>⚠ the classifier disagrees with "
            "the gold or your label</small>")


def labels_table(explorer: Explorer, limit: int = 50) -> str:
    labels = explorer.annotation.labels.list()
    rows = "".join(
        f"<tr><td>{x.id}</td><td>{esc(x.question)}</td><td>{esc(x.d1_title)}</td>"
        f"<td>{esc(x.d2_title)}</td><td>{_truth(x.label)}</td><td>{esc(x.source)}</td>"
        f"<td>{esc(x.annotator)}</td><td>{esc(x.created)}</td></tr>" for x in labels[:limit])
    more = f" (the newest {limit} shown)" if len(labels) > limit else ""
    return (f"<div class='fe-stage'><b>{len(labels)}</b> stored labels{more}</div>"
            "<table class='fe-table' id='fe-labels-table'><thead><tr><th>id</th>"
            "<th>question</th><th>d1</th><th>d2</th><th>label</th><th>source</th><th>by</th>"
            f"<th>when</th></tr></thead><tbody>{rows}</tbody></table>")


SET_ASIDE = ("*Labels on HotpotQA dev500 questions and on the training questions held out "
             "for the classifier's figures are stored but set aside when retraining, so the "
             "held-out figures stay comparable and evaluation stays clean: to teach the "
             "classifier, label pairs of other questions (typed ones, or the other "
             "datasets').*")


def plural(n: int, noun: str) -> str:
    """"1 label", "3 labels"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def classifier_html(status: dict) -> str:
    """The active version, every version's held-out figures, and the retrain's progress."""
    job = status["retrain"]
    lines = []
    if job["state"] == "running":
        part, left = "", ""
        if job["total"]:
            part = f": {job['done']:,}/{job['total']:,} steps"
            if job["done"] and job["seconds"]:
                rate = job["done"] / job["seconds"]
                left = f", about {duration((job['total'] - job['done']) / rate)} left"
        lines.append(f"<div class='fe-progress'>Retraining on {plural(job['labels'], 'label')}"
                     f"{part}, {job['seconds']:.0f} s so far{left}…</div>")
    elif job["state"] == "failed":
        lines.append(error_box(f"The retrain failed: {job['error']}"))
    elif job["state"] == "done":
        lines.append(f"<div class='fe-kept'>Retrained in {job['seconds']:.0f} s on "
                     f"{plural(job['labels'], 'label')}: version {esc(job['after'])} is now active "
                     f"(before: {esc(job['before'] or 'none')}).</div>")
    rows = []
    for v in reversed(status["versions"]):
        m = v["heldout"]
        mark = " <b>(active)</b>" if v["active"] else ""
        aside = f" ({v['labels_set_aside']} set aside)" if v.get("labels_set_aside") else ""
        rows.append(f"<tr><td>{esc(v['id'])}{mark}</td><td>{esc(v['created'])}</td>"
                    f"<td>{v['labels']}{aside}</td><td>{v['threshold']:.3f}</td>"
                    f"<td>{_auc(v)}</td><td>{m.get('accuracy', 0):.3f}</td>"
                    f"<td>{m.get('precision', 0):.3f}</td>"
                    f"<td>{m.get('recall', 0):.3f}</td><td>{m.get('pairs', 0)}</td></tr>")
    if not rows:
        lines.append("<div>No classifier is trained yet: the app trains one in the "
                     "background on its first start, or press Retrain.</div>")
    lines.append("<small>Labels on held-out or HotpotQA dev500 questions are kept but set "
                 "aside when retraining, so held-out figures stay comparable and evaluation "
                 "stays clean.</small>")
    return ("".join(lines) + "<table class='fe-table' id='fe-versions-table'><thead><tr>"
            "<th>version</th><th>trained</th><th>labels</th><th>threshold</th>"
            "<th>AUC</th><th>accuracy</th><th>precision</th><th>recall</th>"
            "<th>held-out pairs</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _auc(version: dict) -> str:
    auc = version.get("heldout_auc")
    return "" if auc is None else f"{auc:.3f}"


def _version_choices(status: dict) -> gr.Dropdown:
    ids = [v["id"] for v in reversed(status["versions"])]
    return gr.Dropdown(choices=ids, value=status["active"] if status["active"] in ids else None)


def build(explorer: Explorer) -> dict:
    """The Annotate tab's widgets and events; returns what the tab's select event refreshes."""
    gr.Markdown("Label the pairs DR-RAG's selection classifier judged: do the two documents "
                "together answer the question? Keys: **y** positive, **n** negative, "
                "**s** skip.")
    picker = question_picker(explorer, "fe-annotate", lambda: gr.Radio(
        STRATEGIES, value="cis", label="Pairs from", scale=1, elem_id="fe-annotate-strategy"))
    question, strategy = picker.question, picker.beside
    gr.Markdown(SET_ASIDE, elem_id="fe-annotate-set-aside")
    with gr.Row():
        k = gr.Slider(2, 8, value=4, step=1, label="k: documents whose pairs are judged")
        annotator = gr.Textbox(label="Your name (stored with each label)",
                               elem_id="fe-annotator")
    find = gr.Button("Find pairs", variant="primary", elem_id="fe-annotate-run")
    notice = gr.HTML(elem_id="fe-annotate-notice")
    pairs_state, current, asked = gr.State([]), gr.State(0), gr.State(["", ""])
    card = gr.HTML(elem_id="fe-annotate-card")
    with gr.Row():
        yes = gr.Button("Positive (y)", elem_id="fe-label-yes")
        no = gr.Button("Negative (n)", elem_id="fe-label-no")
        skip = gr.Button("Skip (s)", elem_id="fe-label-skip")
    table = gr.HTML(elem_id="fe-annotate-pairs")
    gr.Markdown("### Stored labels")
    stored = gr.HTML(labels_table(explorer), elem_id="fe-labels")
    with gr.Row():
        export = gr.Button("Export labels (JSONL)", elem_id="fe-labels-export")
        upload = gr.UploadButton("Import labels (JSONL)", file_types=[".jsonl", ".txt"],
                                 elem_id="fe-labels-import")
        download = gr.File(label="Exported labels", interactive=False, height=90)
    gr.Markdown("### The classifier")
    status = explorer.annotation.status()
    info = gr.HTML(classifier_html(status), elem_id="fe-classifier")
    with gr.Row():
        retrain = gr.Button("Retrain with the labels", variant="primary", elem_id="fe-retrain")
        versions = gr.Dropdown([v["id"] for v in status["versions"]], value=status["active"],
                               label="Versions", elem_id="fe-versions")
        activate = gr.Button("Make active", elem_id="fe-activate")
    curves = gr.Plot(figures.precision_recall_figure(status), label="Held-out pairs",
                     elem_id="fe-pr")
    poll = gr.Timer(POLL_SECONDS, active=False)

    def find_pairs(text, gold, how, k_value):
        text, cut = clip_question(text)
        config = {"selection": how, "k": int(k_value), "k1": max(1, int(k_value) // 2)}
        try:
            trace: RunTrace = explorer.run(target(text, gold), DRRAGParadigm.name,
                                           json.dumps(config))
            pairs = [asdict(p) for p in explorer.annotation.pairs(trace)]
        except EngineError as err:
            return refused_box(err), [], 0, ["", ""], "", ""
        except Exception as err:  # noqa: BLE001 - the page must stay usable
            logger.exception("finding pairs failed")
            return error_box(f"The run failed: {err}"), [], 0, ["", ""], "", ""
        message = error_box(cut) if cut else ""
        if not pairs:
            message += error_box("The classifier judged no pair for this question (too few "
                                 "documents found). Raise k or pick another question.")
        qid = trace.gold.id if trace.gold else ""
        return (message, pairs, 0, [trace.question, qid], pair_card(trace.question, pairs, 0),
                pairs_table(pairs, 0))

    def label(value, pairs, at, question_and_id, who):
        question_text, qid = question_and_id
        if not pairs or at >= len(pairs):
            return (error_box("Find pairs first; there is no pair to label."), pairs, at,
                    gr.skip(), gr.skip(), gr.skip())
        if value is not None:
            p = pairs[at]
            try:
                explorer.annotation.label(question_text, p["d1_id"], p["d2_id"], value,
                                          question_id=qid, annotator=who or "")
            except EngineError as err:
                return refused_box(err), pairs, at, gr.skip(), gr.skip(), gr.skip()
            pairs = [*pairs[:at], {**p, "label": value}, *pairs[at + 1:]]
        at += 1
        return ("", pairs, at, pair_card(question_text, pairs, at), pairs_table(pairs, at),
                labels_table(explorer))

    def export_labels():
        folder = Path(tempfile.mkdtemp(prefix="fe-labels-"))
        path = folder / "labels.jsonl"
        path.write_text(explorer.annotation.labels.export_jsonl(), encoding="utf-8")
        return str(path)

    def import_labels(file):
        path = Path(file if isinstance(file, str) else file.name)
        try:
            added, known = explorer.annotation.labels.import_jsonl(
                path.read_text(encoding="utf-8"), path.name)
        except (EngineError, UnicodeDecodeError) as err:
            return refused_box(err), labels_table(explorer)
        return (f"<div class='fe-kept'>Imported {added} labels from {esc(path.name)}; "
                f"{known} were already stored.</div>", labels_table(explorer))

    def refresh():
        status = explorer.annotation.status()
        running = status["retrain"]["state"] == "running"
        return (classifier_html(status), _version_choices(status),
                figures.precision_recall_figure(status), gr.Timer(active=running))

    def start_retrain():
        try:
            explorer.annotation.retrain()
        except EngineError as err:
            status = explorer.annotation.status()
            return (refused_box(err) + classifier_html(status), gr.skip(), gr.skip(),
                    gr.skip())
        return refresh()

    def make_active(version):
        try:
            explorer.annotation.activate(version or "")
        except EngineError as err:
            status = explorer.annotation.status()
            return (refused_box(err) + classifier_html(status), gr.skip(), gr.skip(),
                    gr.skip())
        return refresh()

    private = {"api_visibility": "private"}
    outputs = [notice, pairs_state, current, asked, card, table]
    for trigger in (find.click, question.submit):
        trigger(find_pairs, [question, picker.gold, strategy, k], outputs, **private)
    label_out = [notice, pairs_state, current, card, table, stored]
    for button, value in ((yes, 1), (no, 0), (skip, None)):
        button.click(lambda p, a, q, w, v=value: label(v, p, a, q, w),
                     [pairs_state, current, asked, annotator], label_out, **private)
    export.click(export_labels, None, download, **private)
    upload.upload(import_labels, upload, [notice, stored], **private)
    classifier_outputs = [info, versions, curves, poll]
    retrain.click(start_retrain, None, classifier_outputs, **private)
    poll.tick(refresh, None, classifier_outputs, **private)
    activate.click(make_active, versions, classifier_outputs, **private)
    return {"refresh": lambda: (labels_table(explorer), *refresh()),
            "outputs": [stored, *classifier_outputs]}
