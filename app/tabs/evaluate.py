"""Evaluate: a QA file's questions through paradigms, in the background, then paper-style.

Pick a listed dataset or upload a QA file, the first N questions or a seeded sample, the
paradigms and their options, and start. Progress shows questions done, time left and the
running means; Cancel stops after the question in flight. A finished (or stopped)
evaluation shows the paper-style table, recall@k and recall-against-latency plots and one
row per question and paradigm; clicking a row opens that run's stored trace in Explore.
Evaluations are stored: pick one or two from the list to reopen, compare metric by metric,
or export. A config that needs a long index build says which and how long, and waits for
"Build and start".
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import gradio as gr

from app.errors import refused_box
from app.evaluation_views import (
    ROW_COLUMNS,
    difference_table,
    paper_table,
    question_rows,
    recall_at_k_figure,
    recall_latency_figure,
)
from app.formatting import esc
from app.params import config_json, param_panels, show_panels
from app.tabs.explore import trace_views
from app.tabs.sessions import parse_ids, pick_id
from engine.errors import EngineError
from engine.eval.exports import FORMATS, SUFFIXES
from engine.eval.exports import export as export_runs
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import BuildNeeded, Explorer

POLL_SECONDS = 2.0
LIST_COLUMNS = ["id", "name", "dataset", "paradigms", "questions", "state", "corpus",
                "code", "created"]
FIRST = ("flat", "funnel")
ROW_WIDTHS = ["4%", "15%", "7%", "34%", "20%", "5%", "5%", "5%", "5%"]


def listing(explorer: Explorer) -> list[list]:
    return [[e.id, e.name, e.dataset, ", ".join(e.paradigms), f"{e.done} of {e.questions}",
             e.state, e.corpus, e.code_version, e.created]
            for e in explorer.evaluations.list()]


def progress_html(status: dict) -> str:
    """Questions done, time so far and left, and the state, as one line."""
    done, total = status["done"], status["total"]
    phase = f" ({esc(status['phase'])})" if status.get("phase") else ""
    left = status.get("seconds_left")
    pace = f", about {left:,.0f} s left" if left is not None and status["state"] == "running" \
        else ""
    spent = f" in {status['seconds']:,.0f} s" if status.get("seconds") is not None else ""
    error = f": {esc(status['error'])}" if status.get("error") else ""
    kind = "fe-error" if status["state"] == "failed" else "fe-kept"
    return (f"<div class='{kind}'>Evaluation {status['id']}: {esc(status['state'])}, "
            f"{done} of {total} questions{phase}{spent}{pace}{error}</div>")


def build(explorer: Explorer, exploring: dict, tabs: gr.Tabs) -> dict:
    """The Evaluate tab's widgets and events; returns what the app refreshes on select.
    A per-question row opens in the Explore tab's views (`exploring`, from explore.build)."""
    datasets = explorer.datasets()
    with gr.Row():
        dataset = gr.Dropdown([(label, path) for path, label in datasets.items()],
                              value=next(iter(datasets), None), label="Dataset", scale=2,
                              elem_id="fe-eval-dataset")
        upload = gr.File(label="…or a QA file (HotpotQA, MuSiQue, 2Wiki, SQuAD, NQ-open "
                               "formats)", file_types=[".json", ".jsonl"], scale=2,
                         height=90, elem_id="fe-eval-upload")
    with gr.Row():
        limit = gr.Number(20, label="First N questions (0: all)", precision=0,
                          elem_id="fe-eval-limit")
        sample = gr.Number(0, label="…or a random sample of", precision=0,
                           elem_id="fe-eval-sample")
        seed = gr.Number(0, label="Seed", precision=0, elem_id="fe-eval-seed")
        chosen = gr.CheckboxGroup([(spec.label, name) for name, spec in PARADIGMS.items()],
                                  value=[n for n in FIRST if n in PARADIGMS],
                                  label="Paradigms", scale=3, elem_id="fe-eval-paradigms")
    with gr.Row():
        name = gr.Textbox(label="Evaluation name (optional)", scale=2, elem_id="fe-eval-name")
        ray = gr.Textbox(label="Ray address (optional): 'local' for two workers here, or "
                               "host:port of a cluster sharing this data folder", scale=2,
                         elem_id="fe-eval-ray")
    params = param_panels("fe-eval", set(FIRST))
    with gr.Row():
        start = gr.Button("Start", variant="primary", elem_id="fe-eval-start")
        confirm = gr.Button("Build and start", visible=False, elem_id="fe-eval-build")
        cancel = gr.Button("Cancel", variant="stop", elem_id="fe-eval-cancel")
    current = gr.State(None)  # the evaluation being followed
    progress = gr.HTML(elem_id="fe-eval-progress")
    poll = gr.Timer(POLL_SECONDS, active=False)
    table = gr.HTML(elem_id="fe-eval-table")
    with gr.Row():
        recall_plot = gr.Plot(label="Recall at k", elem_id="fe-eval-recall")
        latency_plot = gr.Plot(label="Recall against latency", elem_id="fe-eval-latency")
    per_question = gr.Dataframe(headers=ROW_COLUMNS, interactive=False, wrap=True,
                                max_height=360, column_widths=ROW_WIDTHS,
                                label="Per question (click a row to open its run in Explore)",
                                elem_id="fe-eval-rows")
    gr.Markdown("### Stored evaluations")
    stored = gr.Dataframe(headers=LIST_COLUMNS, value=lambda: listing(explorer),
                          interactive=False, wrap=True, max_height=300,
                          elem_id="fe-eval-list")
    with gr.Row():
        ids = gr.Textbox(label="Evaluation id(s)", placeholder="3   or   3, 5", scale=2,
                         elem_id="fe-eval-ids")
        reopen = gr.Button("Open", scale=1, elem_id="fe-eval-open")
        compare = gr.Button("Compare two", scale=1, elem_id="fe-eval-compare")
        fmt = gr.Dropdown(list(FORMATS), value=FORMATS[0], label="Export as", scale=1,
                          elem_id="fe-eval-format")
        export = gr.Button("Export", scale=1, elem_id="fe-eval-export")
    download = gr.File(label="Export", interactive=False, visible=False,
                       elem_id="fe-eval-file")
    message = gr.HTML(elem_id="fe-eval-message")

    def results(status):
        """(table, recall plot, latency plot, per-question rows) of an evaluation, from its
        status: a running one's means so far, or a stored one's summary."""
        summary = status["means"]
        return (paper_table(summary), recall_at_k_figure(summary),
                recall_latency_figure(summary),
                question_rows(explorer.evaluations.rows(status["id"])))

    def begin(build_first, path, uploaded, n, k, s, names, title, address, *widgets):
        source = (uploaded if isinstance(uploaded, str) else getattr(uploaded, "name", None)) \
            or path
        try:
            configs = {p: json.loads(config_json(p, params.keys(), list(widgets)))
                       for p in names or []}
            evaluation_id = explorer.evaluate(source or "", list(names or []), configs,
                                              limit=int(n or 0), sample=int(k or 0),
                                              seed=int(s or 0), name=title or "",
                                              build=build_first, ray=address or "")
        except BuildNeeded as err:
            return (refused_box(err), gr.skip(), gr.skip(), gr.Button(visible=True),
                    *(gr.skip(),) * 5)
        except EngineError as err:
            return (refused_box(err), gr.skip(), gr.skip(), gr.Button(visible=False),
                    *(gr.skip(),) * 5)
        status = explorer.evaluation_status(evaluation_id)
        return (progress_html(status), evaluation_id, gr.Timer(active=True),
                gr.Button(visible=False), "", None, None, [], listing(explorer))

    def follow(evaluation_id):
        if evaluation_id is None:
            return gr.skip(), gr.Timer(active=False), gr.skip(), gr.skip(), gr.skip(), \
                gr.skip(), gr.skip()
        status = explorer.evaluation_status(evaluation_id)
        running = status["state"] == "running"
        views = results(status)
        return (progress_html(status), gr.Timer(active=running), *views, listing(explorer))

    def stop(evaluation_id):
        try:
            explorer.cancel_evaluation(evaluation_id)
        except (EngineError, TypeError) as err:
            return refused_box(err if isinstance(err, EngineError)
                               else "No evaluation is running from this page.")
        return "<div class='fe-kept'>Cancelling after the question in flight…</div>"

    def open_one(text):
        try:
            (evaluation_id,) = parse_ids(text, "evaluation")[:1]
            status = explorer.evaluation_status(evaluation_id)
            views = results(status)
        except EngineError as err:
            return (refused_box(err), *(gr.skip(),) * 5)  # the followed one stays
        return (progress_html(status), evaluation_id, *views)

    def compare_two(text):
        try:
            chosen_ids = parse_ids(text, "evaluation")
            if len(chosen_ids) < 2:
                raise EngineError("Give two evaluation ids to compare, like 3, 5.")
            a, b = (explorer.evaluations.get(i) for i in chosen_ids[:2])
        except EngineError as err:
            return refused_box(err), gr.skip(), gr.skip()
        both = {f"{e.id}: {paradigm}": metrics for e in (a, b)
                for paradigm, metrics in e.summary.items()}
        return (difference_table(f"{a.id}: {a.name}", a.summary, f"{b.id}: {b.name}",
                                 b.summary),
                recall_at_k_figure(both), recall_latency_figure(both))

    def export_one(text, kind):
        try:
            (evaluation_id,) = parse_ids(text, "evaluation")[:1]
            body = export_runs(explorer.evaluations.traces(evaluation_id), kind)
        except EngineError as err:
            return gr.File(visible=False), refused_box(err)
        folder = Path(tempfile.mkdtemp(prefix="funnel-evaluation-"))
        path = folder / f"evaluation_{evaluation_id}_{kind}.{SUFFIXES[kind]}"
        path.write_text(body, encoding="utf-8")
        return (gr.File(str(path), visible=True),
                f"<div class='fe-kept'>Exported evaluation {evaluation_id} as {kind}.</div>")

    def open_run(evaluation_id, evt: gr.SelectData):
        shown = [*exploring["outputs"], exploring["question"], exploring["paradigm"], tabs]
        if evaluation_id is None or not evt.row_value:
            return (gr.skip(),) * len(shown)
        position, paradigm = evt.row_value[0], evt.row_value[2]
        try:
            trace = explorer.evaluations.trace(evaluation_id, int(position), paradigm)
        except EngineError as err:
            return (refused_box(err), *(gr.skip(),) * (len(shown) - 1))
        notice = (f"<div class='fe-kept'>Evaluation {evaluation_id}, question {position}, "
                  f"through {esc(paradigm)}: its stored trace (Run runs it again with the "
                  "options shown).</div>")
        return (notice, *trace_views(trace), trace.to_json(), trace.question, paradigm,
                gr.Tabs(selected="explore"))

    views = [table, recall_plot, latency_plot, per_question]
    inputs = [dataset, upload, limit, sample, seed, chosen, name, ray, *params.inputs()]
    chosen.change(lambda names: show_panels(params, names), chosen,
                  list(params.groups.values()), api_visibility="private")
    started = [progress, current, poll, confirm, *views, stored]
    start.click(lambda *a: begin(False, *a), inputs, started, api_visibility="private")
    confirm.click(lambda *a: begin(True, *a), inputs, started, api_visibility="private")
    poll.tick(follow, current, [progress, poll, *views, stored], api_visibility="private")
    cancel.click(stop, current, message, api_visibility="private")
    reopen.click(open_one, ids, [progress, current, *views], api_visibility="private")
    compare.click(compare_two, ids, [table, recall_plot, latency_plot],
                  api_visibility="private")
    export.click(export_one, [ids, fmt], [download, message], api_visibility="private")
    per_question.select(open_run, current, [*exploring["outputs"], exploring["question"],
                                            exploring["paradigm"], tabs],
                        api_visibility="private")
    def pick(current_ids, evt: gr.SelectData):
        return pick_id(current_ids, evt.row_value[0]) if evt.row_value else current_ids

    stored.select(pick, ids, ids, api_visibility="private")
    return {"table": stored, "refresh": lambda: listing(explorer)}
