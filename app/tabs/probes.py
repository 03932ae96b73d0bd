"""What Diagnose computes on demand about the evaluation open, each a view of its own: each
stage's ceiling (every cut made perfect in turn, a ceiling evaluation followed as it runs),
the questions the corpus does not cover (one map of the stored vectors) and whether
attention points at what the answer came from (against leave-one-out ablation). Each view
starts empty and is cleared when another evaluation is picked; app.tabs.diagnose lays them
out."""

from __future__ import annotations

from functools import partial

import gradio as gr

from app.errors import refusing
from app.tabs.base import PRIVATE
from app.views.probes import (
    agreement_table,
    ceiling_figure,
    ceiling_table,
    coverage_figure,
    coverage_table,
)
from engine.errors import EngineError
from engine.eval.coverage import CoverageMap
from engine.service.explorer import Explorer

POLL_SECONDS = 2.0
OPEN_FIRST = "Open an evaluation first (pick one and press Diagnose)."


@refusing(outputs=4)
def start_ceilings(explorer: Explorer, evaluation_id) -> tuple:
    """(message, plot, ceiling evaluation id, poll timer) once the ceilings of the
    evaluation open have started."""
    if evaluation_id is None:
        raise EngineError(OPEN_FIRST)
    started = explorer.evaluations.ceilings(evaluation_id)
    return (f"<div class='fe-progress'>Ceiling evaluation {started} started: every cut of "
            f"evaluation {evaluation_id} made perfect in turn. Its table shows here as "
            "questions finish; it is listed with the other evaluations.</div>",
            gr.Plot(visible=False), started, gr.Timer(active=True))


@refusing(outputs=4)
def show_ceilings(explorer: Explorer, evaluation_id) -> tuple:
    """The newest ceilings of the evaluation open (or the evaluation itself, if it holds
    ceilings), as for `follow_ceilings`."""
    if evaluation_id is None:
        raise EngineError(OPEN_FIRST)
    if explorer.evaluations.evaluation(evaluation_id).baseline is not None:
        return follow_ceilings(explorer, evaluation_id)
    found = next((e.id for e in explorer.evaluations.list_evaluations()
                  if e.baseline == evaluation_id), None)
    if found is None:
        raise EngineError(f"No ceilings of evaluation {evaluation_id} yet: press \"Compute "
                          "each stage's ceiling\".")
    return follow_ceilings(explorer, found)


def follow_ceilings(explorer: Explorer, ceiling_id) -> tuple:
    """(table, plot, ceiling evaluation id, poll timer: on while it runs)."""
    if ceiling_id is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False)
    state = explorer.evaluations.evaluation_status(ceiling_id).state
    running = state == "running"
    if not explorer.evaluations.evaluation_rows(ceiling_id):
        return (f"<div class='fe-progress'>Ceiling evaluation {ceiling_id} is {state}; no "
                "question is finished yet.</div>", gr.Plot(visible=False), ceiling_id,
                gr.Timer(active=running))
    found = explorer.diagnoses.ceiling_table(ceiling_id)
    return (ceiling_table(found), gr.Plot(ceiling_figure(found), visible=True), ceiling_id,
            gr.Timer(active=running))


@refusing(outputs=4)
def map_coverage(explorer: Explorer, evaluation_id) -> tuple:
    """(far groups, map, the colouring paradigm's picker, the map's data) of the evaluation
    open (computed once, then cached)."""
    if evaluation_id is None:
        raise EngineError(OPEN_FIRST)
    found = explorer.diagnoses.coverage(evaluation_id)
    names = found.paradigms()
    first = names[0] if names else ""
    return (coverage_table(found), gr.Plot(coverage_figure(found, first), visible=True),
            gr.Dropdown(names, value=first or None), found)


def recolour(found: CoverageMap | None, paradigm) -> object:
    return coverage_figure(found, paradigm or "") if found else gr.skip()


@refusing()
def ablation_agreement(explorer: Explorer, evaluation_id) -> str:
    """Attention against leave-one-out attribution, per paradigm of the evaluation open."""
    if evaluation_id is None:
        raise EngineError(OPEN_FIRST)
    return agreement_table(explorer.diagnoses.ablation_agreement(evaluation_id))


# --- layout: one function per view, each given the evaluation open (`current`) and its
# picker (`ids`), whose change clears what the view shows ----------------------------------


def ceiling_views(explorer: Explorer, current: gr.State, ids: gr.Dropdown) -> None:
    gr.Markdown("Which stage's improvement pays most? Each cut made perfect in turn (the "
                "gold supporting paragraphs first, or a test collection's documents judged "
                "relevant, the higher grade first; added where the stage was not given "
                "them), the later stages and the reader run as usual: a ceiling evaluation "
                "of its own, paired with this one.")
    with gr.Row():
        start = gr.Button("Compute each stage's ceiling", scale=1,
                          elem_id="fe-diag-ceilings-go")
        show = gr.Button("Show the ceilings", scale=1, elem_id="fe-diag-ceilings-show")
    ceilings = gr.HTML(elem_id="fe-diag-ceilings")
    ceilings_plot = gr.Plot(label="Ceiling minus as run", visible=False,
                            elem_id="fe-diag-ceilings-plot")
    ceiling_id, poll = gr.State(None), gr.Timer(POLL_SECONDS, active=False)
    shown = [ceilings, ceilings_plot, ceiling_id, poll]
    start.click(partial(start_ceilings, explorer), current, shown, **PRIVATE)
    show.click(partial(show_ceilings, explorer), current, shown, **PRIVATE)
    poll.tick(partial(follow_ceilings, explorer), ceiling_id, shown, show_progress="hidden",
              **PRIVATE)
    ids.input(lambda: ("", gr.Plot(visible=False), None, gr.Timer(active=False)), None,
              shown, **PRIVATE)


def coverage_views(explorer: Explorer, current: gr.State, ids: gr.Dropdown) -> None:
    gr.Markdown("The evaluation's questions among the corpus's passages, in one map of "
                "their stored vectors; groups of questions far from every passage are "
                "flagged with the passages nearest them.")
    with gr.Row():
        draw = gr.Button("Map questions and passages", scale=1, elem_id="fe-diag-map-go")
        colour = gr.Dropdown([], label="Colour questions by the outcome of", scale=1,
                             elem_id="fe-diag-map-paradigm")
    mapped = gr.State(None)
    map_plot = gr.Plot(label="Coverage map", visible=False, elem_id="fe-diag-map")
    far_groups = gr.HTML(elem_id="fe-diag-far")
    shown = [far_groups, map_plot, colour, mapped]
    draw.click(partial(map_coverage, explorer), current, shown, **PRIVATE)
    colour.input(recolour, [mapped, colour], map_plot, **PRIVATE)
    ids.input(lambda: ("", gr.Plot(visible=False), gr.Dropdown([]), None), None, shown,
              **PRIVATE)


def agreement_views(explorer: Explorer, current: gr.State, ids: gr.Dropdown) -> None:
    gr.Markdown("Does attention point at what the answer came from? Per paradigm, over the "
                "runs evaluated with the reader's leave-one-out ablation: attention against "
                "what leaving each passage out does to the answer.")
    compare = gr.Button("Compare attention with ablation", elem_id="fe-diag-ablation-go")
    agreement = gr.HTML(elem_id="fe-diag-ablation")
    compare.click(partial(ablation_agreement, explorer), current, agreement, **PRIVATE)
    ids.input(lambda: "", None, agreement, **PRIVATE)
