"""Explore's "what if": re-answer the run shown with other evidence; only the reader runs.

Untick passages the reader read, add any candidate an earlier stage had, or (a dataset
question) add its gold supporting paragraphs, then re-answer. The new answer shows beside
the old with both heatmaps and EM/F1 where gold is known; the re-answered run is a trace of
its own (its `reanswer` stage records what changed) and can be saved.
"""

from __future__ import annotations

from functools import partial

import gradio as gr

from app.errors import refusing
from app.tabs.base import PRIVATE
from app.tabs.picker import shorten
from app.views import heatmap
from app.views.trace import error_box, esc
from engine.documents import Candidate
from engine.paradigms.reanswer import REANSWER, candidates_of
from engine.service.explorer import Explorer
from engine.trace import RunTrace


def _label(prefix: str, c: Candidate) -> str:
    return f"{prefix} {c.unit.title}: {shorten(c.unit.text, 70)}"


def choices(trace_json: str) -> tuple:
    """(read passages, earlier candidates, oracle box, panel) for the run shown."""
    if not trace_json:
        return gr.skip(), gr.skip(), gr.skip(), gr.Accordion(visible=False)
    trace = RunTrace.from_json(trace_json)
    read = trace.read
    read_ids = {c.unit.id for c in read}
    stage_of = {c.unit.id: s.name for s in trace.stages for c in s.candidates}
    earlier = [(_label(f"[{stage_of[u]}]", c), u) for u, c in candidates_of(trace).items()
               if u not in read_ids]
    has_gold = bool(trace.gold and trace.gold.supporting_titles)
    return (gr.CheckboxGroup([(_label(f"#{c.rank}", c), c.unit.id) for c in read],
                             value=[c.unit.id for c in read]),
            gr.Dropdown(earlier, value=None),
            gr.Checkbox(value=False, interactive=has_gold,
                        info=None if has_gold else "Only a dataset question names its gold "
                                                   "supporting paragraphs."),
            # an imported pipeline's run has no reader here to answer again, and a test
            # collection's question has no answer to find
            gr.Accordion(visible=bool(trace.stages) and "imported" not in trace.config
                         and not (trace.gold is not None and trace.gold.judged_only)))


def _answer(trace: RunTrace, head: str) -> str:
    m = trace.metrics
    scores = f"<br>EM {m['EM']:.0f} · F1 {m['F1']:.2f}" if "EM" in m else ""
    read = (f"{len(trace.read)} units read, {trace.reader_input_tokens:,} tokens"
            if trace.answered else "no reader ran")
    return (f"<div class='fe-final-column'><b>{head}</b><div class='fe-answer-box'>"
            f"{esc(trace.answer or '(none)')}{scores}<br><small>{read}</small></div></div>")


@refusing(outputs=4)
def reanswer(explorer: Explorer, trace_json: str, keep, add, oracle) -> tuple:
    """(both answers, heatmap as run, heatmap re-answered, the new trace JSON)."""
    if not trace_json:
        return error_box("Run a question first."), gr.skip(), gr.skip(), gr.skip()
    before = RunTrace.from_json(trace_json)
    after = explorer.runs.reanswer(before, [*(keep or []), *(add or [])], bool(oracle))
    changed = after.stage(REANSWER).details.note
    both = (f"<div class='fe-final-columns'>{_answer(before, 'As run')}"
            f"{_answer(after, f'Re-answered ({esc(changed)})')}</div>")
    return (both, heatmap.heatmap_figure(before), heatmap.heatmap_figure(after),
            after.to_json())


@refusing()
def save(explorer: Explorer, trace_json: str, name: str) -> str:
    if not trace_json:
        return error_box("Re-answer first; there is nothing to save yet.")
    run_id = explorer.runs.save_run(RunTrace.from_json(trace_json), name or "re-answered")
    return f"<div class='fe-kept'>Saved the re-answered run as run {run_id}.</div>"


def build(explorer: Explorer, trace_state: gr.State) -> None:
    """The panel under Explore's tables, following the run in `trace_state`."""
    with gr.Accordion("What would the reader say with other passages?", open=False,
                      visible=False, elem_id="fe-reanswer") as panel:
        keep = gr.CheckboxGroup([], label="Passages the reader read (untick to leave out)",
                                elem_id="fe-reanswer-keep")
        add = gr.Dropdown([], multiselect=True, label="Add candidates an earlier stage had",
                          elem_id="fe-reanswer-add")
        oracle = gr.Checkbox(label="Add the gold supporting paragraphs (oracle), ranked first: "
                             "read next to the question",
                             elem_id="fe-reanswer-oracle")
        go = gr.Button("Re-answer", variant="primary", elem_id="fe-reanswer-go")
        answers = gr.HTML(elem_id="fe-reanswer-answers")
        with gr.Row():
            before = gr.Plot(label="Reader attention as run", elem_id="fe-reanswer-before")
            after = gr.Plot(label="Reader attention re-answered", elem_id="fe-reanswer-after")
        with gr.Row():
            name = gr.Textbox(label="Run name", value="re-answered", scale=3,
                              elem_id="fe-reanswer-name")
            keep_it = gr.Button("Save the re-answered run", scale=1, elem_id="fe-reanswer-save")
        saved = gr.HTML(elem_id="fe-reanswer-saved")
    again = gr.State("")
    trace_state.change(choices, trace_state, [keep, add, oracle, panel], **PRIVATE)
    go.click(partial(reanswer, explorer), [trace_state, keep, add, oracle],
             [answers, before, after, again], **PRIVATE)
    keep_it.click(partial(save, explorer), [again, name], saved, **PRIVATE)
