"""Evaluate: a QA file's questions through paradigms, in the background, then paper-style.

Pick a listed dataset or upload a QA file, the first N questions or a seeded sample, the
paradigms and their options, and start. Progress shows questions done, time left and the
running means; Cancel stops after the question in flight. A finished (or stopped)
evaluation shows the paper-style table, recall@k and recall-against-latency plots and one
row per question and paradigm; clicking a row opens that run's stored trace in Explore.
Evaluations are stored: pick one or two from the list to reopen, compare metric by metric,
or export. One that ended before every question ran (interrupted by a crash or a kill,
cancelled, failed) shows its stored questions' table marked partial, in the warning style,
with Resume (the questions it lacks, same paradigms, configs and corpus) and Remove. A
config that needs a long index build says which and how long, and waits for "Build and
start".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import gradio as gr

from app.downloads import download
from app.errors import refused_box, refusing
from app.params import ParamPanels, config_json, panel_values, param_panels, show_panels
from app.tabs.base import PRIVATE, Refresh, Tab, place_choice
from app.tabs.contents import contents, scroll_to
from app.tabs.corpora import corpus_choice, uploaded_path
from app.tabs.difference import paired_tables
from app.tabs.explore import ExploreTab, open_evaluation_run
from app.tabs.picker import corpus_follows, dataset_dropdown
from app.tabs.sessions import parse_ids, pick_id
from app.views.evaluation import (
    ROW_COLUMNS,
    ROW_WIDTHS,
    difference_table,
    paper_table,
    partial_note,
    progress_html,
    question_rows,
    recall_at_k_figure,
    recall_latency_figure,
)
from app.views.trace import esc
from engine.data.ingest import shown_as
from engine.errors import EngineError
from engine.eval.exports import FILE_FORMATS
from engine.paradigms.registry import PARADIGMS
from engine.service.evaluation_jobs import EvaluationStatus
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.store.evaluations import RESUMABLE

POLL_SECONDS = 2.0
LIST_COLUMNS = ["id", "name", "dataset", "paradigms", "questions", "state", "corpus",
                "code", "created"]
FIRST = ("flat", "funnel")


def listing(explorer: Explorer) -> list[list]:
    return [[e.id, e.name, e.dataset, ", ".join(e.paradigms), f"{e.done} of {e.questions}",
             e.state, e.corpus, e.code_version, e.created]
            for e in explorer.evaluations.list_evaluations()]


def results(explorer: Explorer, status: EvaluationStatus) -> tuple:
    """(table, recall plot, latency plot, per-question rows) of an evaluation, from its
    status: a running one's means so far, or a stored one's summary; one that ended before
    every question ran (interrupted, cancelled, failed) marked partial above its table and
    in its plots' titles."""
    summary = status.means
    note = (f"partial: {status.done} of {status.total} questions "
            f"({status.state})" if status.partial else "")
    return (partial_note(status) + paper_table(summary), recall_at_k_figure(summary, note),
            recall_latency_figure(summary, note),
            question_rows(explorer.evaluations.evaluation_rows(status.id)))


def actions(explorer: Explorer, evaluation_id) -> tuple:
    """(Resume, Remove) of the evaluation shown: Resume for one that ended before every
    question ran (not an import), Remove for any that is not running."""
    if evaluation_id is None:
        return gr.Button(visible=False), gr.Button(visible=False)
    try:
        status = explorer.evaluations.evaluation_status(evaluation_id)
    except EngineError:  # removed meanwhile
        return gr.Button(visible=False), gr.Button(visible=False)
    ended = status.state != "running"
    return (gr.Button(visible=ended and status.state in RESUMABLE and not status.imported),
            gr.Button(visible=ended))


def resume_one(explorer: Explorer, evaluation_id) -> tuple:
    """Resume the evaluation shown: (progress, timer, Resume, Remove). A config's long
    build, confirmed when it first started, is built again if it is gone."""
    if evaluation_id is None:
        return refused_box("Open an evaluation first."), gr.skip(), gr.skip(), gr.skip()
    try:
        explorer.evaluations.resume_evaluation(evaluation_id, build=True)
    except EngineError as err:
        return refused_box(err), gr.skip(), gr.skip(), gr.skip()
    return (progress_html(explorer.evaluations.evaluation_status(evaluation_id)),
            gr.Timer(active=True), gr.Button(visible=False), gr.Button(visible=False))


def remove_one(explorer: Explorer, evaluation_id, pending) -> tuple:
    """Remove the evaluation shown, on a second click: (progress, followed id, pending,
    Resume, Remove, the four result views, the stored list)."""
    keep = (gr.skip(),) * 7
    if evaluation_id is None:
        return refused_box("Open an evaluation first."), gr.skip(), None, *keep
    if pending != evaluation_id:
        stored = explorer.evaluations.evaluation(evaluation_id)
        return (f"<div class='fe-error'>Press Remove again to delete evaluation "
                f"{evaluation_id} ({esc(stored.name)}) and its {stored.done} stored "
                "questions' runs for good.</div>", gr.skip(), evaluation_id, *keep)
    try:
        explorer.evaluations.remove_evaluation(evaluation_id)
    except EngineError as err:
        return refused_box(err), gr.skip(), None, *keep
    return (f"<div class='fe-kept'>Removed evaluation {evaluation_id}.</div>", None, None,
            gr.Button(visible=False), gr.Button(visible=False), "", None, None, [],
            listing(explorer))


def upload_notice(uploaded) -> dict:
    """The Dataset dropdown's update after an upload: the upload is what Start evaluates."""
    path = uploaded_path(uploaded)
    if path is None:
        return gr.update(info=None)
    return gr.update(info=f"Start evaluates the uploaded file {Path(path).name}, not this "
                          "dataset; clear the upload to use it.")


def begin(explorer: Explorer, params: ParamPanels, build_first: bool, path, uploaded, n, k,
          s, names, presets, title, address, corpus, *widgets) -> tuple:
    """Start an evaluation: (progress, followed id, poll timer, "Build and start" button,
    the four result views, the stored list)."""
    upload = uploaded_path(uploaded)
    # its own except, not @refusing: the refusal names an upload by its file name, and
    # one that needs a build first shows "Build and start"
    try:
        configs = {p: json.loads(config_json(p, params.keys(), list(widgets)))
                   for p in names or []}
        evaluation_id = explorer.evaluations.evaluate(
            upload or path or "", [*(names or []), *(presets or [])], configs,
            limit=int(n or 0),
            sample=int(k or 0), seed=int(s or 0), name=title or "", build=build_first,
            ray=address or "", dataset_name=f"{Path(upload).name} (uploaded)" if upload else "",
            corpus=corpus or "")
    except EngineError as err:
        message = shown_as(err, Path(upload), Path(upload).name) if upload else err
        return (refused_box(message), gr.skip(), gr.skip(),
                gr.Button(visible=isinstance(err, BuildNeeded)), *(gr.skip(),) * 5)
    status = explorer.evaluations.evaluation_status(evaluation_id)
    return (progress_html(status), evaluation_id, gr.Timer(active=True),
            gr.Button(visible=False), "", None, None, [], listing(explorer))


def follow(explorer: Explorer, evaluation_id) -> tuple:
    """A poll: (progress, timer, the four result views, the stored list)."""
    if evaluation_id is None:
        return gr.skip(), gr.Timer(active=False), *(gr.skip(),) * 5
    status = explorer.evaluations.evaluation_status(evaluation_id)
    return (progress_html(status), gr.Timer(active=status.state == "running"),
            *results(explorer, status), listing(explorer))


@refusing()
def stop(explorer: Explorer, evaluation_id) -> str:
    if evaluation_id is None:
        return refused_box("No evaluation is running from this page.")
    explorer.evaluations.cancel_evaluation(evaluation_id)
    return "<div class='fe-kept'>Cancelling after the question in flight…</div>"


@refusing(outputs=6)  # the evaluation followed stays
def open_one(explorer: Explorer, text) -> tuple:
    """(progress, followed id, the four result views) of the stored evaluation typed."""
    (evaluation_id,) = parse_ids(text, "evaluation")[:1]
    status = explorer.evaluations.evaluation_status(evaluation_id)
    views = results(explorer, status)
    return (progress_html(status), evaluation_id, *views)


def restore_form(explorer: Explorer, entry: Form, evaluation_id) -> list:
    """The form's updates to what started the evaluation opened (`Form.restored` order),
    so Start runs it again or a variant of it; left as it is for a sweep, ceilings or an
    import, which the form does not start."""
    form = (explorer.evaluations.evaluation_form(evaluation_id)
            if evaluation_id is not None else None)
    if form is None:
        return [gr.skip()] * len(entry.restored())
    return [gr.update(value=form.dataset) if form.dataset else gr.skip(),
            gr.update(value=None),  # an upload is not kept: its dataset is named above
            form.limit, form.sample, form.seed, form.paradigms, form.name,
            gr.update(value=form.corpus), *panel_values(entry.params, form.configs)]


@refusing(outputs=3)
def compare_two(explorer: Explorer, text) -> tuple:
    """(difference table, recall plot, latency plot) of the two evaluations typed."""
    chosen_ids = parse_ids(text, "evaluation")
    if len(chosen_ids) < 2:
        raise EngineError("Give two evaluation ids to compare, like 3, 5.")
    a, b = (explorer.evaluations.evaluation(i) for i in chosen_ids[:2])
    both = {f"{e.id}: {paradigm}": metrics for e in (a, b)
            for paradigm, metrics in e.summary.items()}
    return (difference_table(f"{a.id}: {a.name}", a.summary, f"{b.id}: {b.name}", b.summary)
            + paired_tables(explorer, a, b), recall_at_k_figure(both),
            recall_latency_figure(both))


@refusing(shape=lambda box, *_: (gr.File(visible=False), box))
def export_one(explorer: Explorer, text, kind) -> tuple:
    """(the exported file, a message) of the evaluation typed, in format `kind`."""
    (evaluation_id,) = parse_ids(text, "evaluation")[:1]
    files, note = explorer.evaluations.export_evaluation_files(evaluation_id, kind)
    path, what = download(files, f"evaluation_{evaluation_id}_{kind}")
    corpus = explorer.evaluations.evaluation(evaluation_id).corpus
    return (gr.File(str(path), visible=True),
            f"<div class='fe-kept'>Exported evaluation {evaluation_id} as {kind} ({what}"
            f"{'; ' + esc(note) if note else ''}; its runs searched corpus "
            f"'{esc(corpus)}').</div>")


# --- layout -------------------------------------------------------------------------------


@dataclass
class Form:
    """What an evaluation is started from."""

    dataset: gr.Dropdown
    upload: gr.File
    limit: gr.Number
    sample: gr.Number
    seed: gr.Number
    paradigms: gr.CheckboxGroup
    presets: gr.Dropdown
    name: gr.Textbox
    ray: gr.Textbox
    corpus: gr.Dropdown
    params: ParamPanels

    def inputs(self) -> list:
        return [self.dataset, self.upload, self.limit, self.sample, self.seed, self.paradigms,
                self.presets, self.name, self.ray, self.corpus, *self.params.inputs()]

    def restored(self) -> list:
        """What opening a stored evaluation sets again (`restore_form`)."""
        return [self.dataset, self.upload, self.limit, self.sample, self.seed, self.paradigms,
                self.name, self.corpus, *self.params.inputs()]


def form(explorer: Explorer) -> Form:
    with gr.Row():
        # the upload box at its own height (the dataset and how many questions beside it):
        # squeezed to a fixed height it clipped its "Click to Upload"
        with gr.Column(scale=1):
            dataset = dataset_dropdown(explorer, "Dataset", first=True,
                                       elem_id="fe-eval-dataset")
            with gr.Row():
                limit = gr.Number(20, label="First N questions (0: all)", precision=0,
                                  elem_id="fe-eval-limit")
                sample = gr.Number(0, label="…or a random sample of", precision=0,
                                   elem_id="fe-eval-sample")
                seed = gr.Number(0, label="Seed", precision=0, elem_id="fe-eval-seed")
        upload = gr.File(label="…or a QA file (JSONL of {question, answer}, HotpotQA, "
                               "MuSiQue, 2Wiki, SQuAD, NQ-open, judged JSONL; a test "
                               "collection: add it in Corpora)",
                         file_types=[".json", ".jsonl"], scale=1,
                         elem_id="fe-eval-upload")
    chosen = gr.CheckboxGroup([(spec.label, name) for name, spec in PARADIGMS.items()],
                              value=[n for n in FIRST if n in PARADIGMS], label="Paradigms",
                              elem_id="fe-eval-paradigms")
    presets = gr.Dropdown([], value=[], multiselect=True, label="Presets beside them",
                          info="saved paradigms with their options, each listed by its name",
                          elem_id="fe-eval-presets")
    presets.focus(lambda: gr.update(choices=[p.name for p in explorer.presets.list_presets()]),
                  None, presets, **PRIVATE)
    with gr.Row():
        name = gr.Textbox(label="Evaluation name (optional)", scale=2, elem_id="fe-eval-name")
        ray = place_choice("ray", "Ray", "fe-eval-ray", "none: in this process",
                           (("local: two workers here", "local"),), scale=2,
                           info="the questions run as Ray tasks: on two local workers, or "
                                "a cluster the operator allowed (sharing this data folder)")
        corpus = corpus_choice(explorer, "fe-eval-corpus")
    corpus_follows(explorer, dataset, corpus)
    return Form(dataset, upload, limit, sample, seed, chosen, presets, name, ray, corpus,
                # an evaluation shows no heatmap: its reader answers through ONNX Runtime
                # unless attention is ticked (engine.paradigms.registry.unattended)
                param_panels("fe-eval", set(FIRST), {"reader.attention": False}))


def result_views() -> list:
    """(paper table, recall@k plot, recall-latency plot, per-question rows)."""
    table = gr.HTML(elem_id="fe-eval-table")
    with gr.Row():
        recall_plot = gr.Plot(label="Recall at k", elem_id="fe-eval-recall")
        latency_plot = gr.Plot(label="Against latency", elem_id="fe-eval-latency")
    per_question = gr.Dataframe(headers=ROW_COLUMNS, interactive=False, wrap=True,
                                max_height=360, column_widths=ROW_WIDTHS,
                                label="Per question (click a row to open its run in Explore)",
                                elem_id="fe-eval-rows")
    return [table, recall_plot, latency_plot, per_question]


# the contents line's links (app.tabs.contents): an evaluation open fills four screens
VIEWS = [("New evaluation", "fe-eval-dataset"), ("Progress", "fe-eval-progress"),
         ("Table", "fe-eval-table"), ("Recall plots", "fe-eval-recall"),
         ("Per question", "fe-eval-rows"), ("Stored evaluations", "fe-eval-stored")]


def build(explorer: Explorer, exploring: ExploreTab, tabs: gr.Tabs) -> Tab:
    """The Evaluate tab's widgets and events; returns its stored list, read again on every
    page load and when it is shown. A per-question row opens in the Explore tab's views
    (`exploring`)."""
    contents(VIEWS, "fe-eval-contents")
    entry = form(explorer)
    with gr.Row():
        start = gr.Button("Start", variant="primary", elem_id="fe-eval-start")
        confirm = gr.Button("Build and start", visible=False, elem_id="fe-eval-build")
        cancel = gr.Button("Cancel", variant="stop", elem_id="fe-eval-cancel")
        # for the evaluation shown, once it ended (Resume: before every question ran)
        resume = gr.Button("Resume", visible=False, elem_id="fe-eval-resume")
        remove = gr.Button("Remove", variant="stop", visible=False, elem_id="fe-eval-remove")
    current = gr.State(None)  # the evaluation being followed
    progress = gr.HTML(elem_id="fe-eval-progress")
    poll = gr.Timer(POLL_SECONDS, active=False)
    views = result_views()
    gr.Markdown("### Stored evaluations", elem_id="fe-eval-stored")
    stored = gr.Dataframe(headers=LIST_COLUMNS,  # filled on page load (app.ui)
                          interactive=False, wrap=True, max_height=300,
                          elem_id="fe-eval-list")
    with gr.Row():
        ids = gr.Textbox(label="Evaluation id(s)", placeholder="3   or   3, 5", scale=2,
                         elem_id="fe-eval-ids")
        reopen = gr.Button("Open", scale=1, elem_id="fe-eval-open")
        compare = gr.Button("Compare two", scale=1, elem_id="fe-eval-compare")
        fmt = gr.Dropdown(list(FILE_FORMATS), value=FILE_FORMATS[0], label="Export as", scale=1,
                          elem_id="fe-eval-format")
        export = gr.Button("Export", scale=1, elem_id="fe-eval-export")
    download = gr.File(label="Export", interactive=False, visible=False,
                       elem_id="fe-eval-file")
    message = gr.HTML(elem_id="fe-eval-message")

    params = entry.params
    entry.paradigms.change(lambda names: show_panels(params, names), entry.paradigms,
                           list(params.groups.values()), **PRIVATE)
    entry.upload.change(upload_notice, entry.upload, entry.dataset, **PRIVATE)
    started = [progress, current, poll, confirm, *views, stored]
    start.click(partial(begin, explorer, params, False), entry.inputs(), started, **PRIVATE)
    confirm.click(partial(begin, explorer, params, True), entry.inputs(), started, **PRIVATE)
    buttons = [resume, remove]
    shown = partial(actions, explorer)
    poll.tick(partial(follow, explorer), current, [progress, poll, *views, stored],
              **PRIVATE).then(shown, current, buttons, **PRIVATE)
    # in the progress line, which the next poll replaces with how the evaluation ended
    cancel.click(partial(stop, explorer), current, progress, **PRIVATE)
    # Open and Compare two are under the list, what they show at the top: it is brought up
    reopen.click(partial(open_one, explorer), ids, [progress, current, *views],
                 **PRIVATE).then(shown, current, buttons, **PRIVATE).then(
        partial(restore_form, explorer, entry), current, entry.restored(), **PRIVATE).then(
        None, js=scroll_to("fe-eval-progress"), **PRIVATE)
    resume.click(partial(resume_one, explorer), current, [progress, poll, *buttons], **PRIVATE)
    pending = gr.State(None)  # the evaluation a first Remove click asked to confirm
    remove.click(partial(remove_one, explorer), [current, pending],
                 [progress, current, pending, *buttons, *views, stored], **PRIVATE)
    compare.click(partial(compare_two, explorer), ids, views[:3], **PRIVATE).then(
        None, js=scroll_to("fe-eval-table"), **PRIVATE)
    export.click(partial(export_one, explorer), [ids, fmt], [download, message], **PRIVATE)
    opened = exploring.opened(tabs)

    def open_row(evaluation_id, evt: gr.SelectData):
        return open_evaluation_run(explorer, len(opened), evaluation_id, evt.row_value)

    views[3].select(open_row, current, opened, **PRIVATE)
    stored.select(pick, ids, ids, **PRIVATE)
    return Tab(corpus=entry.corpus, refresh=Refresh(lambda: listing(explorer), [stored]),
               on_load=True)


def pick(current_ids, evt: gr.SelectData):
    return pick_id(current_ids, evt.row_value[0]) if evt.row_value else current_ids
