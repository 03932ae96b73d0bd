"""Diagnose: what a stored evaluation says about each paradigm.

Where each paradigm lost the gold answer (or its supporting documents) question by
question, as one stacked bar per paradigm and a flow per paradigm; the questions of any
outcome, each opening its stored run in Explore; and whether the difference between two
paradigms, or two evaluations on their shared questions, is beyond noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from textwrap import shorten

import gradio as gr

from app.errors import refused_box, refusing
from app.tabs.base import Refresh, Tab
from app.tabs.explore import ExploreTab, open_evaluation_run
from app.tabs.sessions import parse_ids
from app.views.diagnosis import (
    METRIC_LABELS,
    THIS_EVALUATION,
    agreement_table,
    ceiling_figure,
    ceiling_table,
    coverage_figure,
    coverage_table,
    evaluation_choices,
    outcome_bars,
    outcome_flow,
    paired_table,
    segment_choices,
    segment_positions,
)
from app.views.evaluation import ROW_COLUMNS, ROW_WIDTHS, question_rows
from app.views.figures import text_figure
from app.views.trace import compare_table, esc
from engine.errors import EngineError
from engine.eval.paired import METRICS, correct_across
from engine.eval.regressions import CHANGES, REGRESSED, first_divergence
from engine.service.explorer import Explorer

TRACKS = [("the gold answer", "answer"), ("all supporting documents", "support")]
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


@refusing(outputs=10)
def diagnose(explorer: Explorer, text, track) -> tuple:
    """(message, bars, flow choice, flow, segment choice, segment rows, pair A, pair B,
    attribution, evaluation id) of the evaluation picked (its id)."""
    if not str(text or "").strip():
        if not explorer.evaluations():
            return ("<div class='fe-progress'>No stored evaluation yet: start one in the "
                    "Evaluate tab, then come back here.</div>", *(gr.skip(),) * 9)
        raise EngineError("Pick an evaluation from the list.")
    (evaluation_id,) = parse_ids(text, "evaluation")[:1]
    evaluation = explorer.evaluation(evaluation_id)
    found = explorer.attribution(evaluation_id, track or "answer")
    if not found:
        raise EngineError(f"Evaluation {evaluation_id} has no stored question yet.")
    names = list(found)
    untraced = sum(f["total"] - f["traced"] for f in found.values())
    skipped = "" if not untraced else (
        f" {untraced} runs are left out: failed runs, and questions without gold"
        + (" or naming no supporting documents." if track == "support" else "."))
    message = (f"<div class='fe-kept'>Evaluation {evaluation.id} ({evaluation.done} of "
               f"{evaluation.questions} questions, {evaluation.state}): each question counted "
               f"once per paradigm, by the first cut after which the gold stayed lost."
               f"{skipped}</div>")
    segments = segment_choices(found)
    lost = next((v for _, v in segments if " · lost at " in v), segments[0][1])
    paradigm, positions = segment_positions(found, lost)
    return (message, outcome_bars(found, track), gr.Dropdown(names, value=names[0]),
            outcome_flow(names[0], found[names[0]]), gr.Dropdown(segments, value=lost),
            _segment_rows(explorer, evaluation_id, paradigm, positions),
            gr.Dropdown(names, value=names[0]),
            gr.Dropdown(names, value=names[1] if len(names) > 1 else names[0]),
            found, evaluation_id)


def _segment_rows(explorer: Explorer, evaluation_id: int, paradigm: str,
                  positions: list) -> list[list]:
    wanted = set(positions)
    return question_rows([r for r in explorer.evaluation_rows(evaluation_id)
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


@refusing()
def pair(explorer: Explorer, evaluation_id, a, b, other) -> str:
    """Paired differences of paradigm A against B, of this evaluation or of B in the
    evaluation picked in `other` (its id; "" for this one)."""
    if evaluation_id is None:
        return refused_box("Open an evaluation first (pick one and press Diagnose).")
    return paired_table(explorer.paired(evaluation_id, a or "", b or "", _other_id(other)))


def _other_id(other) -> int | None:
    """The evaluation B comes from, as its picker says ("" for the one diagnosed)."""
    return parse_ids(other, "evaluation")[0] if str(other or "").strip() else None


def b_choices(explorer: Explorer, evaluation_id, other, b) -> object:
    """B's paradigm picker: the paradigms of the evaluation B comes from (the one
    diagnosed while no other is picked), B kept where that one ran it."""
    try:
        source = _other_id(other) or evaluation_id
        if source is None:
            return gr.skip()
        names = list(explorer.evaluation(source).paradigms)
    except EngineError:  # deleted meanwhile: Pair says so
        return gr.skip()
    return gr.Dropdown(names, value=b if b in names else names[0])


@refusing(outputs=3)
def list_changes(explorer: Explorer, evaluation_id, a, b, other, metric, which) -> tuple:
    """(message, the questions B changed on `metric` against A, as rows; the result kept
    for a row's click), only those of change `which` ("" for all)."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    other_id = _other_id(other)
    if a and a == b and other_id in (None, evaluation_id):
        raise EngineError(f"A and B are both {a!r} of this evaluation: pick two different "
                          "paradigms above, or B from another evaluation.")
    metric = metric or "EM"
    found = explorer.regressions(evaluation_id, a or "", b or "", other_id, metric)
    shown = [q for q in found["questions"] if not which or q["change"] == which]
    counts = ", ".join(f"{n} {change}" for change, n in found["counts"].items())
    none = f" None {esc(which)}." if which and not shown else ""
    message = (f"<div class='fe-kept'>B = {esc(_side(found, 'b'))} against A = "
               f"{esc(_side(found, 'a'))} on {esc(metric)}, over the "
               f"{sum(found['counts'].values())} questions both answered: {esc(counts)}."
               f"{none} Click a question to see both runs side by side.</div>")
    rows = [[q["change"], q["question"], round(q["a"], 3), round(q["b"], 3),
             q["position_a"], q["position_b"], q["question_id"]] for q in shown]
    headers = ["change", "question", f"A's {metric}", f"B's {metric}", "# in A", "# in B",
               "question id"]
    return message, gr.Dataframe(rows, headers=headers), found


def _side(found: dict, side: str) -> str:
    """"flat (evaluation 3)"."""
    return f"{found[side + '_paradigm']} (evaluation {found[side + '_evaluation']})"


def both_runs(explorer: Explorer, found: dict | None, row: list | None) -> str:
    """Both runs of a changed question side by side, from the first cut where their
    candidates part."""
    if not found or not row:
        return ""
    position_a, position_b = row[4], row[5]
    run_a = explorer.evaluation_trace(found["a_evaluation"], int(position_a),
                                      found["a_paradigm"])
    run_b = explorer.evaluation_trace(found["b_evaluation"], int(position_b),
                                      found["b_paradigm"])
    cut = first_divergence(run_a, run_b)
    if cut is not None:
        where = (f"They part at cut {cut + 1} ({esc(_cut_name(run_a, cut))} against "
                 f"{esc(_cut_name(run_b, cut))}).")
    elif run_a.answer == run_b.answer:
        where = "Every cut kept the same candidates, and both answered alike."
    else:
        where = "Every cut kept the same candidates: only the reader differs."
    gold = run_a.gold or run_b.gold
    said = f" Gold: {esc(' | '.join(gold.answers))}." if gold and gold.answers else ""
    heads = [f"A = {esc(_side(found, 'a'))}", f"B = {esc(_side(found, 'b'))}"]
    return (f"<div class='fe-kept'>{esc(shorten(str(row[1]), 200))} — {where}{said}</div>"
            + compare_table([run_a, run_b], heads))


POLL_SECONDS = 2.0


@refusing(outputs=4)
def start_ceilings(explorer: Explorer, evaluation_id) -> tuple:
    """(message, plot, ceiling evaluation id, poll timer) once the ceilings of the
    evaluation open have started."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    started = explorer.ceilings(evaluation_id)
    return (f"<div class='fe-progress'>Ceiling evaluation {started} started: every cut of "
            f"evaluation {evaluation_id} made perfect in turn. Its table shows here as "
            "questions finish; it is listed with the other evaluations.</div>",
            gr.Plot(visible=False), started, gr.Timer(active=True))


@refusing(outputs=4)
def show_ceilings(explorer: Explorer, evaluation_id) -> tuple:
    """The newest ceilings of the evaluation open (or the evaluation itself, if it holds
    ceilings), as for `follow_ceilings`."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    if explorer.evaluation(evaluation_id).baseline is not None:
        return follow_ceilings(explorer, evaluation_id)
    found = next((e.id for e in explorer.evaluations() if e.baseline == evaluation_id), None)
    if found is None:
        raise EngineError(f"No ceilings of evaluation {evaluation_id} yet: press \"Compute "
                          "each stage's ceiling\".")
    return follow_ceilings(explorer, found)


def follow_ceilings(explorer: Explorer, ceiling_id) -> tuple:
    """(table, plot, ceiling evaluation id, poll timer: on while it runs)."""
    if ceiling_id is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False)
    state = explorer.evaluation_status(ceiling_id)["state"]
    running = state == "running"
    if not explorer.evaluation_rows(ceiling_id):
        return (f"<div class='fe-progress'>Ceiling evaluation {ceiling_id} is {state}; no "
                "question is finished yet.</div>", gr.Plot(visible=False), ceiling_id,
                gr.Timer(active=running))
    found = explorer.ceiling_table(ceiling_id)
    return (ceiling_table(found), gr.Plot(ceiling_figure(found), visible=True), ceiling_id,
            gr.Timer(active=running))


@refusing(outputs=4)
def map_coverage(explorer: Explorer, evaluation_id) -> tuple:
    """(far groups, map, the colouring paradigm's picker, the map's data) of the evaluation
    open (computed once, then cached)."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    found = explorer.coverage(evaluation_id)
    names = list(dict.fromkeys(p for q in found["questions"] for p in q["outcomes"]))
    first = names[0] if names else ""
    return (coverage_table(found), gr.Plot(coverage_figure(found, first), visible=True),
            gr.Dropdown(names, value=first or None), found)


def recolour(found: dict | None, paradigm) -> object:
    return coverage_figure(found, paradigm or "") if found else gr.skip()


@refusing()
def ablation_agreement(explorer: Explorer, evaluation_id) -> str:
    """Attention against leave-one-out attribution, per paradigm of the evaluation open."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    return agreement_table(explorer.ablation_agreement(evaluation_id))


def relist(explorer: Explorer, found, *asked) -> tuple:
    """The list again when its metric or filter changes, once it has been listed."""
    if not found:
        return gr.skip(), gr.skip(), gr.skip()
    return list_changes(explorer, *asked)


CHANGE_COLUMNS = ["change", "question", "A", "B", "# in A", "# in B", "question id"]


def _cut_name(run, index: int) -> str:
    return run.stages[index].name if index < len(run.stages) else "nothing"


def newest(explorer: Explorer, current) -> str:
    """The evaluation picked when the tab opens: the one picked before while it is still
    stored, else the newest with a stored question (an evaluation's ceilings only when
    nothing else is stored: they are read beside the evaluation they came from)."""
    stored = explorer.evaluations()
    if str(current or "").strip() in {str(e.id) for e in stored}:
        return str(current)
    done = [e for e in stored if e.done]
    return next((str(e.id) for e in done if e.baseline is None),
                str(done[0].id) if done else "")


def pickers(explorer: Explorer, current, other) -> tuple:
    """Both evaluation pickers when the tab opens, listing every stored evaluation newest
    first: (the evaluation diagnosed, B's evaluation for "Is the difference real?")."""
    stored = explorer.evaluations()
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


def paired_tables(explorer: Explorer, a, b) -> str:
    """Per paradigm both evaluations ran: b minus a on their shared questions, with
    intervals (the difference column's sign)."""
    results, refusals = [], []
    for paradigm in (p for p in a.paradigms if p in b.paradigms):
        try:
            results.append(explorer.paired(b.id, paradigm, paradigm, a.id))
        except EngineError as err:
            refusals.append(refused_box(err))
    correct_across(results)  # several paradigms compared: Holm-corrected p beside the raw
    parts = [*map(paired_table, results), *refusals]
    return "<h4>Is the difference real?</h4>" + "".join(parts) if parts else ""


# --- layout -------------------------------------------------------------------------------


@dataclass
class Views:
    message: gr.HTML
    bars: gr.Plot
    segment: gr.Dropdown
    rows: gr.Dataframe
    flow_choice: gr.Dropdown
    flow: gr.Plot
    a: gr.Dropdown
    b: gr.Dropdown
    other: gr.Dropdown
    pair: gr.Button
    paired: gr.HTML
    clicks: gr.HTML


def views() -> Views:
    """The tab's views, the questions of an outcome right under the bars whose clicks pick
    it."""
    message = gr.HTML(elem_id="fe-diag-message")
    bars = gr.Plot(label="Outcomes per paradigm (click a bar to list its questions)",
                   elem_id="fe-diag-bars")
    # a gr.Plot has only a change event in Gradio 6: a plotly click reaches Python through
    # this hidden element, which listens on the bars' plot and triggers its own click
    clicks = gr.HTML(js_on_load=BAR_CLICKS_JS, visible="hidden", elem_id="fe-diag-clicks")
    segment = gr.Dropdown([], label="Questions with outcome", elem_id="fe-diag-segment")
    rows = gr.Dataframe(headers=ROW_COLUMNS, interactive=False, wrap=True, max_height=360,
                        column_widths=ROW_WIDTHS,
                        label="Click a row to open its stored run in Explore",
                        elem_id="fe-diag-rows")
    flow_choice = gr.Dropdown([], label="Flow of", elem_id="fe-diag-flow-of")
    flow = gr.Plot(label="Flow", elem_id="fe-diag-flow")  # full width: its labels need it
    gr.Markdown("### Is the difference real?")
    with gr.Row():
        a = gr.Dropdown([], label="A: paradigm", scale=1, elem_id="fe-diag-a")
        b = gr.Dropdown([], label="B: paradigm", scale=1, elem_id="fe-diag-b")
        other = gr.Dropdown([(THIS_EVALUATION, "")], value="", scale=2,
                            label="B from another evaluation (pairs the questions both "
                                  "answered)", elem_id="fe-diag-other")
        pairing = gr.Button("Pair A with B", scale=1, elem_id="fe-diag-pair")
    return Views(message, bars, segment, rows, flow_choice, flow, a, b, other, pairing,
                 gr.HTML(elem_id="fe-diag-paired"), clicks)


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
    shown = views()
    found, current = gr.State(None), gr.State(None)

    private = {"api_visibility": "private"}
    outputs = [shown.message, shown.bars, shown.flow_choice, shown.flow, shown.segment,
               shown.rows, shown.a, shown.b, found, current]
    # B's choices follow the evaluation B comes from, after a diagnosis reset them
    choose_b = Refresh(partial(b_choices, explorer), [shown.b],
                       inputs=[current, shown.other, shown.b])
    for event in (go.click, ids.input, track.change):
        choose_b.wire(event(partial(diagnose, explorer), [ids, track], outputs,
                            **private).then)
    choose_b.wire(shown.other.change)
    shown.flow_choice.change(show_flow, [found, shown.flow_choice], shown.flow, **private)
    shown.segment.change(partial(show_segment, explorer), [current, found, shown.segment],
                         shown.rows, **private)
    shown.clicks.click(pick_bar, found, shown.segment, **private)
    shown.pair.click(partial(pair, explorer), [current, shown.a, shown.b, shown.other],
                     shown.paired, **private)
    gr.Markdown("### Which questions changed\nB against A, as picked above: the questions "
                "B answered better, worse or alike on one metric.")
    with gr.Row():
        metric = gr.Dropdown([(METRIC_LABELS.get(m, m), m) for m in METRICS], value="EM",
                             label="On metric", scale=1, elem_id="fe-diag-change-metric")
        which = gr.Dropdown([("every question", ""), *((c, c) for c in CHANGES)],
                            value=REGRESSED, label="Show", scale=1,
                            elem_id="fe-diag-change-which")
        listing = gr.Button("List the questions", scale=1, elem_id="fe-diag-changes")
    changes_message = gr.HTML(elem_id="fe-diag-changes-message")
    changes_rows = gr.Dataframe(headers=CHANGE_COLUMNS, interactive=False, wrap=True,
                                max_height=360, label="Questions (click one for both runs)",
                                column_widths=["11%", "49%", "8%", "8%", "7%", "7%", "10%"],
                                elem_id="fe-diag-changes-rows")
    side_by_side = gr.HTML(elem_id="fe-diag-both")
    gr.Markdown("### Which stage's improvement pays most?\nEach cut made perfect in turn "
                "(the gold supporting paragraphs first, added where the stage was not given "
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
    shown_ceilings = [ceilings, ceilings_plot, ceiling_id, poll]
    start.click(partial(start_ceilings, explorer), current, shown_ceilings, **private)
    show.click(partial(show_ceilings, explorer), current, shown_ceilings, **private)
    poll.tick(partial(follow_ceilings, explorer), ceiling_id, shown_ceilings,
              show_progress="hidden", **private)
    ids.input(lambda: ("", gr.Plot(visible=False), None, gr.Timer(active=False)), None,
              shown_ceilings, **private)
    gr.Markdown("### Questions the corpus does not cover\nThe evaluation's questions among "
                "the corpus's passages, in one map of their stored vectors; groups of "
                "questions far from every passage are flagged with the passages nearest "
                "them.")
    with gr.Row():
        draw = gr.Button("Map questions and passages", scale=1, elem_id="fe-diag-map-go")
        colour = gr.Dropdown([], label="Colour questions by the outcome of", scale=1,
                             elem_id="fe-diag-map-paradigm")
    mapped = gr.State(None)
    map_plot = gr.Plot(label="Coverage map", visible=False, elem_id="fe-diag-map")
    far_groups = gr.HTML(elem_id="fe-diag-far")
    map_views = [far_groups, map_plot, colour, mapped]
    draw.click(partial(map_coverage, explorer), current, map_views, **private)
    colour.input(recolour, [mapped, colour], map_plot, **private)
    ids.input(lambda: ("", gr.Plot(visible=False), gr.Dropdown([]), None), None, map_views,
              **private)
    gr.Markdown("### Does attention point at what the answer came from?\nPer paradigm, over "
                "the runs evaluated with the reader's leave-one-out ablation: attention "
                "against what leaving each passage out does to the answer.")
    compare = gr.Button("Compare attention with ablation", elem_id="fe-diag-ablation-go")
    agreement = gr.HTML(elem_id="fe-diag-ablation")
    compare.click(partial(ablation_agreement, explorer), current, agreement, **private)
    changed = gr.State(None)
    asked = [current, shown.a, shown.b, shown.other, metric, which]
    told = [changes_message, changes_rows, changed]
    listing.click(partial(list_changes, explorer), asked, told, **private)
    for picker in (metric, which):  # a listed choice is read again at once
        picker.input(partial(relist, explorer), [changed, *asked], told, **private)
    for picker in (shown.a, shown.b, shown.other, ids):  # what was listed no longer holds
        picker.input(lambda: ("", [], None, ""), None, [*told, side_by_side], **private)
    ids.input(lambda: "", None, agreement, **private)

    def open_both(found, evt: gr.SelectData):
        return both_runs(explorer, found, evt.row_value)

    changes_rows.select(open_both, changed, side_by_side, **private)
    opened = exploring.opened(tabs)

    def open_row(evaluation_id, evt: gr.SelectData):
        return open_evaluation_run(explorer, len(opened), evaluation_id, evt.row_value)

    shown.rows.select(open_row, current, opened, **private)
    return Tab(refresh=Refresh(partial(pickers, explorer), [ids, shown.other],
                               inputs=[ids, shown.other],
                               then=Refresh(partial(diagnose, explorer), outputs,
                                            inputs=[ids, track], then=choose_b)))
