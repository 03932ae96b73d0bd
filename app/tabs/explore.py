"""Explore: one question through one paradigm, every stage shown as it finishes."""

from __future__ import annotations

import logging

import gradio as gr

from app.errors import refused_box
from app.params import config_json, param_panels, show_panels
from app.tabs import reread
from app.tabs.corpora import corpus_choice
from app.tabs.picker import question_picker, target
from app.views import figures
from app.views.formatting import (
    answer_box,
    error_box,
    esc,
    gold_banner,
    llm_steps_table,
    stage_table,
)
from engine.errors import EngineError
from engine.paradigms.base import clip_question
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer
from engine.trace import RunTrace
from engine.types import Question

logger = logging.getLogger(__name__)


def trace_views(trace: RunTrace, heat_by: str = "layers") -> tuple:
    """(banner, answer, funnel, waterfall, heatmap, tables) of a (partial) trace."""
    tables = "".join(stage_table(trace, i) for i in range(len(trace.stages)))
    tables += llm_steps_table(trace)
    return (gold_banner(trace), answer_box(trace) if trace.answer else "",
            figures.funnel_figure(trace), figures.waterfall_figure(trace),
            figures.heatmap_figure(trace, heat_by), tables)


def build(explorer: Explorer) -> dict:
    """The Explore tab's widgets and events; returns what other tabs show a run in:
    `question`, `paradigm` and `outputs` (notice, the trace views, the trace JSON)."""
    first = next(iter(PARADIGMS))
    picker = question_picker(explorer, "fe", lambda: gr.Radio(
        [(spec.label, name) for name, spec in PARADIGMS.items()], value=first,
        label="Paradigm", scale=1, elem_id="fe-paradigm"))
    question, paradigm = picker.question, picker.beside
    trace_state = gr.State("")  # the last finished run, as trace JSON
    params = param_panels("fe", {first})
    with gr.Row():
        corpus = corpus_choice(explorer, "fe-corpus")
        run = gr.Button("Run", variant="primary", elem_id="fe-run", scale=2)
    notice = gr.HTML(elem_id="fe-notice")
    banner = gr.HTML(elem_id="fe-banner")
    answer = gr.HTML(elem_id="fe-answer")
    with gr.Row():
        funnel_plot = gr.Plot(label="Funnel", elem_id="fe-funnel")
        waterfall_plot = gr.Plot(label="Timing", elem_id="fe-waterfall")
    heat_by = gr.Radio(["layers", "heads"], value="layers", label="Heatmap columns")
    heatmap = gr.Plot(label="Reader attention", elem_id="fe-heatmap")
    tables = gr.HTML(elem_id="fe-tables")
    with gr.Row():
        save_name = gr.Textbox(label="Run name", scale=2, elem_id="fe-save-name")
        save_notes = gr.Textbox(label="Notes", scale=3)
        save = gr.Button("Save run", scale=1, elem_id="fe-save")
    saved = gr.HTML(elem_id="fe-saved")
    reread.build(explorer, trace_state)

    def ask(text, gold: Question | None, name, heat, searched, *widgets):
        text, cut = clip_question(text)
        notice_html = error_box(cut) if cut else ""
        # a refused or failed run leaves the last run's results on the page
        kept = (gr.skip(),) * 7
        try:
            config = config_json(name, params.keys(), list(widgets))
            for trace in explorer.stream(target(text, gold), name, config, searched or ""):
                yield (notice_html, *trace_views(trace, heat), "")
            yield (notice_html, *trace_views(trace, heat), trace.to_json())
        except EngineError as err:
            yield (refused_box(err), *kept)
        except Exception as err:  # noqa: BLE001 - the page must stay usable
            logger.exception("run failed")
            yield (error_box(f"The run failed: {err}"), *kept)

    def redraw_heatmap(trace_json, heat):
        if not trace_json:
            return None
        return figures.heatmap_figure(RunTrace.from_json(trace_json), heat)

    def save_current(trace_json, name, notes):
        if not trace_json:
            return error_box("Run a question first; there is nothing to save yet.")
        try:
            run_id = explorer.save_run(RunTrace.from_json(trace_json), name, notes)
        except EngineError as err:
            return refused_box(err)
        return f"<div class='fe-kept'>Saved as run {run_id}.</div>"

    outputs = [notice, banner, answer, funnel_plot, waterfall_plot, heatmap, tables,
               trace_state]
    inputs = [question, picker.gold, paradigm, heat_by, corpus, *params.inputs()]
    for trigger in (run.click, question.submit):
        trigger(ask, inputs, outputs, api_visibility="private")
    paradigm.change(lambda name: show_panels(params, name), paradigm,
                    list(params.groups.values()), api_visibility="private")
    heat_by.change(redraw_heatmap, [trace_state, heat_by], heatmap, api_visibility="private")
    save.click(save_current, [trace_state, save_name, save_notes], saved, api_visibility="private")
    return {"question": question, "paradigm": paradigm, "outputs": outputs, "corpus": corpus}


def open_evaluation_run(explorer: Explorer, outputs: int, evaluation_id, row: list | None) -> tuple:
    """A per-question row opened in Explore: (notice, its trace views, trace JSON,
    question, paradigm, the selected tab), `outputs` values in all."""
    if evaluation_id is None or not row:
        return (gr.skip(),) * outputs
    position, paradigm = row[0], row[2]
    try:
        trace = explorer.evaluation_trace(evaluation_id, int(position), paradigm)
    except EngineError as err:
        return (refused_box(err), *(gr.skip(),) * (outputs - 1))
    notice = (f"<div class='fe-kept'>Evaluation {evaluation_id}, question {position}, "
              f"through {esc(paradigm)}: its stored trace (Run runs it again with the "
              "options shown).</div>")
    return (notice, *trace_views(trace), trace.to_json(), trace.question, trace.paradigm,
            gr.Tabs(selected="explore"))
