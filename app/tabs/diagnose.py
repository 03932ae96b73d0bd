"""Diagnose: what a stored evaluation says about each paradigm, in views read in turn.

Pick an evaluation (newest first) and what to follow (the gold answer or all supporting
documents); the views, one screen each, go from what was lost to why:

1. Where it is lost: one stacked bar per paradigm, each question counted once by the first
   cut after which the gold stayed lost; the questions of any outcome (a click on a bar
   lists them), each opening its stored run in Explore.
2. Flow: one paradigm's questions through each cut.
3. Stage ceilings: what each cut made perfect would pay (app.tabs.probes).
4. Is the difference real?: paradigm A against B, or two evaluations on their shared
   questions, with paired intervals (app.tabs.difference).
5. Which questions changed: the questions B answered better or worse, both runs side by
   side.
6. Corpus coverage and 7. attention against ablation: why (app.tabs.probes).
8. Assessors: two assessors of a question set's judgments, their agreement and whether the
   paradigms rank the same under each (app.tabs.assessors).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from app.errors import refusing
from app.tabs import assessors, difference, probes
from app.tabs.base import PRIVATE, Refresh, Tab
from app.tabs.explore import ExploreTab, open_evaluation_run
from app.tabs.sessions import parse_ids
from app.views.diagnosis import (
    THIS_EVALUATION,
    evaluation_choices,
    outcome_bars,
    outcome_flow,
    segment_choices,
    segment_positions,
)
from app.views.evaluation import ROW_COLUMNS, ROW_WIDTHS, question_rows
from app.views.figures import text_figure
from app.views.labels import lost_after, track_label
from engine.errors import EngineError
from engine.eval import outcomes
from engine.eval.outcomes import followed
from engine.service.explorer import Explorer

TRACKS = [(track_label(t), t) for t in outcomes.TRACKS]
# Binds a click on the bars' plotly plot (re-drawn in place by each new figure, so bound
# once per plot element) to this element's click event, carrying the clicked segment, which
# each bar segment holds as its customdata (views.diagnosis.outcome_bars)
BAR_CLICKS_JS = """
const bind = () => {
  const plot = document.querySelector('#fe-diag-bars .js-plotly-plot');
  if (!plot || !plot.on || plot.dataset.feClicks) return;
  plot.dataset.feClicks = 'bound';
  plot.on('plotly_click', (data) => {
    const point = data && data.points && data.points[0];
    if (point && point.customdata) trigger('click', {segment: point.customdata});
  });
};
new MutationObserver(bind).observe(document.body, {childList: true, subtree: true});
bind();
"""


@refusing(outputs=11)
def diagnose(explorer: Explorer, text, track) -> tuple:
    """(message, bars, flow choice, flow, segment choice, segment rows, pair A, pair B,
    attribution, evaluation id, track followed) of the evaluation picked (its id). An
    evaluation whose questions have no answers (a test collection's) is followed on a
    relevant document when the gold answer is asked for."""
    if not str(text or "").strip():
        if not explorer.evaluations.list_evaluations():
            return ("<div class='fe-progress'>No stored evaluation yet: start one in the "
                    "Evaluate tab, then come back here.</div>", *(gr.skip(),) * 10)
        raise EngineError("Pick an evaluation from the list.")
    (evaluation_id,) = parse_ids(text, "evaluation")[:1]
    evaluation = explorer.evaluations.evaluation(evaluation_id)
    tracks = explorer.diagnoses.tracks(evaluation_id)
    asked, track = track or "answer", followed(tracks, track or "answer")
    found = explorer.diagnoses.attribution(evaluation_id, track)
    judged = "answer" not in tracks and bool(tracks)  # only what can be followed is offered
    why = ""
    if judged:
        why = (" Its questions have no answers (they are judged): each is followed "
               f"on {track_label(track, judged)}"
               + (f", not on {track_label(asked)}." if asked != track else "."))
    if not found:
        raise EngineError(f"Evaluation {evaluation_id} has no stored question yet.")
    names = list(found)
    untraced = sum(f.total - f.traced for f in found.values())
    skipped = "" if not untraced else (
        f" {untraced} runs are left out: failed runs, and questions without gold"
        + (" or naming no supporting documents." if track != "answer" else "."))
    message = (f"<div class='fe-kept'>Evaluation {evaluation.id} ({evaluation.done} of "
               f"{evaluation.questions} questions, {evaluation.state}): each question counted "
               f"once per paradigm, by the first cut after which "
               f"{lost_after(track, judged)}.{why}{skipped}</div>")
    segments = segment_choices(found)
    if not segments:
        raise EngineError(f"Evaluation {evaluation_id} has no question to follow: its runs "
                          "failed, or its questions have no gold.")
    lost = next((v for _, v in segments if " lost at " in v), segments[0][1])
    paradigm, positions = segment_positions(found, lost)
    return (message, outcome_bars(found, track, judged), gr.Dropdown(names, value=names[0]),
            outcome_flow(names[0], found[names[0]]), gr.Dropdown(segments, value=lost),
            _segment_rows(explorer, evaluation_id, paradigm, positions),
            gr.Dropdown(names, value=names[0]),
            gr.Dropdown(names, value=names[1] if len(names) > 1 else names[0]),
            found, evaluation_id,
            gr.Radio([(track_label(t, judged), t) for _, t in TRACKS
                      if t in tracks or t == track], value=track))


def _segment_rows(explorer: Explorer, evaluation_id: int, paradigm: str,
                  positions: list) -> list[list]:
    wanted = set(positions)
    return question_rows([r for r in explorer.evaluations.evaluation_rows(evaluation_id)
                          if r["paradigm"] == paradigm and r["position"] in wanted])


def show_flow(found: dict | None, paradigm) -> object:
    if not found:
        return text_figure("Open an evaluation first.")
    return outcome_flow(paradigm, found.get(paradigm))


def show_segment(explorer: Explorer, evaluation_id, found: dict | None, segment) -> list:
    if evaluation_id is None or not found:
        return []
    paradigm, positions = segment_positions(found, segment)
    return _segment_rows(explorer, evaluation_id, paradigm, positions)


def newest(explorer: Explorer, current) -> str:
    """The evaluation picked when the tab opens: the one picked before while it is still
    stored, else the newest with a stored question (an evaluation's ceilings only when
    nothing else is stored: they are read beside the evaluation they came from)."""
    stored = explorer.evaluations.list_evaluations()
    if str(current or "").strip() in {str(e.id) for e in stored}:
        return str(current)
    done = [e for e in stored if e.done]
    return next((str(e.id) for e in done if e.baseline is None),
                str(done[0].id) if done else "")


def pickers(explorer: Explorer, current, other) -> tuple:
    """Both evaluation pickers when the tab opens, listing every stored evaluation newest
    first: (the evaluation diagnosed, B's evaluation for "Is the difference real?")."""
    stored = explorer.evaluations.list_evaluations()
    choices = evaluation_choices(stored)
    kept = str(other or "") if str(other or "") in {str(e.id) for e in stored} else ""
    return (gr.Dropdown(choices, value=newest(explorer, current) or None),
            gr.Dropdown([(THIS_EVALUATION, ""), *choices], value=kept))


def pick_bar(found: dict | None, evt: gr.EventData) -> object:
    """The outcome picker after a click on a bar of the stacked chart: that bar's segment
    (paradigm and outcome), whose questions the picker's change lists, as picking it in
    the list does. A click on anything else changes nothing."""
    segment = (getattr(evt, "_data", None) or {}).get("segment")
    if not found or segment not in {value for _, value in segment_choices(found)}:
        return gr.skip()
    return gr.update(value=segment)  # the choices stay: a Dropdown without them warns


# --- layout -------------------------------------------------------------------------------

# the views in the order they are read: (label, id); each one's tab is elem_id
# fe-diag-tab-<id>, its button fe-diag-tab-<id>-button
VIEWS = (("Where it is lost", "lost"), ("Flow", "flow"), ("Stage ceilings", "ceilings"),
         ("Is the difference real?", "paired"), ("Which questions changed", "changed"),
         ("Corpus coverage", "coverage"), ("Attention vs. ablation", "attention"),
         ("Assessors", "assessors"))


@dataclass
class Outcomes:
    """"Where it is lost": the bars and the questions of the outcome picked."""

    bars: gr.Plot
    clicks: gr.HTML
    segment: gr.Dropdown
    rows: gr.Dataframe


def outcome_views() -> Outcomes:
    """The bars, and right under them the questions of the outcome whose bar was
    clicked."""
    bars = gr.Plot(label="Outcomes per paradigm (click a bar to list its questions)",
                   elem_id="fe-diag-bars")
    # a gr.Plot has only a change event in Gradio 6: a plotly click reaches Python through
    # this hidden element, which listens on the bars' plot and triggers its own click
    clicks = gr.HTML(js_on_load=BAR_CLICKS_JS, visible="hidden", elem_id="fe-diag-clicks")
    segment = gr.Dropdown([], label="Questions with outcome", elem_id="fe-diag-segment")
    rows = gr.Dataframe(headers=ROW_COLUMNS, interactive=False, wrap=True, max_height=300,
                        column_widths=ROW_WIDTHS,
                        label="Click a row to open its stored run in Explore",
                        elem_id="fe-diag-rows")
    return Outcomes(bars, clicks, segment, rows)


def build(explorer: Explorer, exploring: ExploreTab, tabs: gr.Tabs) -> Tab:
    """The Diagnose tab's widgets and events; returns what the app runs when the tab is
    selected: the evaluation pickers read again, then the diagnosis of the one picked. A
    question's row opens in the Explore tab's views (`exploring`)."""
    with gr.Row():
        ids = gr.Dropdown([], label="Evaluation (newest first)", scale=3,
                          elem_id="fe-diag-id")
        track = gr.Radio(TRACKS, value="answer", label="Follow", scale=2,
                         elem_id="fe-diag-track")
        go = gr.Button("Diagnose", variant="primary", scale=1, elem_id="fe-diag-go")
    message = gr.HTML(elem_id="fe-diag-message")
    found, current = gr.State(None), gr.State(None)
    view = {key: label for label, key in VIEWS}
    with gr.Tabs(elem_id="fe-diag-views"):
        with gr.Tab(view["lost"], id="lost", elem_id="fe-diag-tab-lost"):
            shown = outcome_views()
        with gr.Tab(view["flow"], id="flow", elem_id="fe-diag-tab-flow"):
            flow_choice = gr.Dropdown([], label="Flow of", elem_id="fe-diag-flow-of")
            flow = gr.Plot(label="Flow", elem_id="fe-diag-flow")  # full width: its labels
        with gr.Tab(view["ceilings"], id="ceilings", elem_id="fe-diag-tab-ceilings"):
            probes.ceiling_views(explorer, current, ids)
        with gr.Tab(view["paired"], id="paired", elem_id="fe-diag-tab-paired"):
            pair = difference.pair_views()
        with gr.Tab(view["changed"], id="changed", elem_id="fe-diag-tab-changed"):
            pick_line = difference.change_views(explorer, current, pair, ids)
        with gr.Tab(view["coverage"], id="coverage", elem_id="fe-diag-tab-coverage"):
            probes.coverage_views(explorer, current, ids)
        with gr.Tab(view["attention"], id="attention", elem_id="fe-diag-tab-attention"):
            probes.agreement_views(explorer, current, ids)
        with gr.Tab(view["assessors"], id="assessors", elem_id="fe-diag-tab-assessors"):
            listed = assessors.assessor_views(explorer, current, ids)

    outputs = [message, shown.bars, flow_choice, flow, shown.segment,
               shown.rows, pair.a, pair.b, found, current, track]
    # B's choices follow the evaluation B comes from, after a diagnosis reset them; then
    # "Which questions changed" says which A and B are picked
    said = Refresh(difference.picked, [pick_line], inputs=[pair.a, pair.b, pair.other],
                   then=listed)  # and the evaluation's assessors listed
    choose_b = Refresh(partial(difference.b_choices, explorer), [pair.b],
                       inputs=[current, pair.other, pair.b], then=said)
    for event in (go.click, ids.input, track.input):  # not .change: diagnose may set it
        choose_b.wire(event(partial(diagnose, explorer), [ids, track], outputs,
                            **PRIVATE).then)
    choose_b.wire(pair.other.change)
    flow_choice.change(show_flow, [found, flow_choice], flow, **PRIVATE)
    shown.segment.change(partial(show_segment, explorer), [current, found, shown.segment],
                         shown.rows, **PRIVATE)
    shown.clicks.click(pick_bar, found, shown.segment, **PRIVATE)
    pair.pair.click(partial(difference.pair, explorer), [current, pair.a, pair.b, pair.other],
                    pair.paired, **PRIVATE)
    # another evaluation's pair no longer holds (a pick of A or B leaves the table, which
    # names both, until Pair: a clear on their pick could land after a quick Pair's table)
    ids.input(lambda: "", None, pair.paired, **PRIVATE)
    opened = exploring.opened(tabs)

    def open_row(evaluation_id, evt: gr.SelectData):
        return open_evaluation_run(explorer, len(opened), evaluation_id, evt.row_value)

    shown.rows.select(open_row, current, opened, **PRIVATE)
    return Tab(refresh=Refresh(partial(pickers, explorer), [ids, pair.other],
                               inputs=[ids, pair.other],
                               then=Refresh(partial(diagnose, explorer), outputs,
                                            inputs=[ids, track], then=choose_b)))
