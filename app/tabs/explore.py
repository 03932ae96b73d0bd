"""Explore: one question through one paradigm, every stage shown as it finishes."""

from __future__ import annotations

import logging

import gradio as gr

from app import figures
from app.formatting import answer_box, error_box, esc, gold_banner, stage_table
from app.params import config_json, param_widgets
from engine.errors import EngineError
from engine.paradigms import MAX_QUESTION_CHARS, PARADIGMS
from engine.service import Explorer
from engine.trace import RunTrace
from engine.types import Question

logger = logging.getLogger(__name__)

EXAMPLE = "Who painted A Sunday Afternoon on the Island of La Grande Jatte?"


def trace_views(trace: RunTrace, heat_by: str = "layers") -> tuple:
    """(banner, answer, funnel, waterfall, heatmap, tables) of a (partial) trace."""
    tables = "".join(stage_table(trace, i) for i in range(len(trace.stages)))
    return (gold_banner(trace), answer_box(trace) if trace.answer else "",
            figures.funnel_figure(trace), figures.waterfall_figure(trace),
            figures.heatmap_figure(trace, heat_by), tables)


def clip_question(text: str) -> tuple[str, str]:
    """(question, notice): an over-long question is cut to the limit with a notice."""
    text = (text or "").strip()
    if len(text) <= MAX_QUESTION_CHARS:
        return text, ""
    return (text[:MAX_QUESTION_CHARS],
            f"The question had {len(text):,} characters; only the first "
            f"{MAX_QUESTION_CHARS:,} were used.")


def build(explorer: Explorer) -> dict:
    """The Explore tab's widgets and events; returns the components other tabs use."""
    datasets = explorer.datasets()
    gold_state = gr.State(None)  # the picked dataset Question, if any
    trace_state = gr.State("")  # the last finished run, as trace JSON
    with gr.Row():
        dataset = gr.Dropdown([(label, path) for path, label in datasets.items()],
                              value=None, label="Dataset (optional)", scale=1)
        picked = gr.Dropdown([], label="Question from the dataset", scale=3)
    gold_info = gr.Markdown()
    with gr.Row():
        question = gr.Textbox(label="Question", value=EXAMPLE, scale=4, lines=1,
                              max_length=4 * MAX_QUESTION_CHARS, elem_id="fe-question")
        paradigm = gr.Radio(list(PARADIGMS), value="funnel", label="Paradigm", scale=1)
    params = param_widgets()
    run = gr.Button("Run", variant="primary", elem_id="fe-run")
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

    def load_dataset(path):
        if not path:
            return gr.update(choices=[], value=None)
        try:
            qs = explorer.questions(path)
        except EngineError as err:
            raise gr.Error(str(err)) from None
        return gr.update(choices=[(f"{q.id}: {q.text[:90]}", q.id) for q in qs], value=None)

    def pick(path, qid):
        if not path or not qid:
            return gr.update(), None, ""
        q = next((q for q in explorer.questions(path) if q.id == qid), None)
        if q is None:
            return gr.update(), None, ""
        info = (f"**Gold answers:** {esc(' | '.join(q.answers)) or '(none)'}  \n"
                f"**Supporting titles:** {esc(' | '.join(q.supporting_titles)) or '(none)'}")
        return q.text, q, info

    def ask(text, gold: Question | None, name, heat, *widgets):
        text, cut = clip_question(text)
        notice_html = error_box(cut) if cut else ""
        target = gold if gold is not None and gold.text == text else text
        empty = ("", "", None, None, None, "")
        try:
            config = config_json(name, *widgets)
            for trace in explorer.stream(target, name, config):
                yield (notice_html, *trace_views(trace, heat), "")
            yield (notice_html, *trace_views(trace, heat), trace.to_json())
        except EngineError as err:
            yield (error_box(str(err)), *empty, "")
        except Exception as err:  # noqa: BLE001 - the page must stay usable
            logger.exception("run failed")
            yield (error_box(f"The run failed: {err}"), *empty, "")

    def redraw_heatmap(trace_json, heat):
        if not trace_json:
            return None
        return figures.heatmap_figure(RunTrace.from_json(trace_json), heat)

    def save_current(trace_json, name, notes):
        if not trace_json:
            return error_box("Run a question first; there is nothing to save yet.")
        try:
            run_id = explorer.store.save(RunTrace.from_json(trace_json), name, notes)
        except EngineError as err:
            return error_box(str(err))
        return f"<div class='fe-kept'>Saved as run {run_id}.</div>"

    dataset.change(load_dataset, dataset, picked, api_visibility="private")
    picked.change(pick, [dataset, picked], [question, gold_state, gold_info],
                  api_visibility="private")
    outputs = [notice, banner, answer, funnel_plot, waterfall_plot, heatmap, tables,
               trace_state]
    inputs = [question, gold_state, paradigm, heat_by, *params.inputs()]
    for trigger in (run.click, question.submit):
        trigger(ask, inputs, outputs, api_visibility="private")
    heat_by.change(redraw_heatmap, [trace_state, heat_by], heatmap, api_visibility="private")
    save.click(save_current, [trace_state, save_name, save_notes], saved, api_visibility="private")
    return {"trace_state": trace_state, "gold_state": gold_state, "question": question}
