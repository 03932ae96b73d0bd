"""Diagnose's A against B: whether the difference between two paradigms, or two evaluations
on their shared questions, is beyond noise (paired intervals and McNemar's p), and which
questions B answered better, worse or alike, each opening both runs side by side from the
first cut where they part. Two of Diagnose's views (app.tabs.diagnose lays them out)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from textwrap import shorten

import gradio as gr

from app.errors import refused_box, refusing
from app.tabs.base import PRIVATE
from app.tabs.sessions import parse_ids
from app.views.diagnosis import THIS_EVALUATION, paired_table
from app.views.labels import metric_labels
from app.views.trace import compare_table, esc
from engine.errors import EngineError
from engine.eval.paired import METRICS
from engine.eval.regressions import CHANGES, REGRESSED, first_divergence
from engine.service.diagnosis import Regressions, corrected_across
from engine.service.explorer import Explorer

CHANGE_COLUMNS = ["change", "question", "A", "B", "# in A", "# in B", "question id"]
QUESTION_CHARS = 300  # a question's start, in a row


@refusing()
def pair(explorer: Explorer, evaluation_id, a, b, other) -> str:
    """Paired differences of paradigm A against B, of this evaluation or of B in the
    evaluation picked in `other` (its id; "" for this one)."""
    if evaluation_id is None:
        return refused_box("Open an evaluation first (pick one and press Diagnose).")
    return paired_table(explorer.diagnoses.paired(evaluation_id, a or "", b or "",
                                                  _other_id(other)))


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
        names = list(explorer.evaluations.evaluation(source).paradigms)
    except EngineError:  # deleted meanwhile: Pair says so
        return gr.skip()
    return gr.Dropdown(names, value=b if b in names else names[0])


def picked(a, b, other) -> str:
    """Which A and B the changed questions compare, said where they are listed (the
    pickers are in the view before)."""
    if not a and not b:
        return ("<div class='fe-progress'>Open an evaluation first (pick one and press "
                "Diagnose); A and B are picked in “Is the difference real?”.</div>")
    source = f"evaluation {esc(other)}" if str(other or "").strip() else "this evaluation"
    return (f"<div class='fe-progress'>B = {esc(b)} of {source} against A = {esc(a)} of "
            "this evaluation, as picked in “Is the difference real?”.</div>")


@refusing(outputs=3)
def list_changes(explorer: Explorer, evaluation_id, a, b, other, metric, which) -> tuple:
    """(message, the questions B changed on `metric` against A, as rows; the result kept
    for a row's click), only those of change `which` ("" for all)."""
    if evaluation_id is None:
        raise EngineError("Open an evaluation first (pick one and press Diagnose).")
    other_id = _other_id(other)
    if a and a == b and other_id in (None, evaluation_id):
        raise EngineError(f"A and B are both {a!r} of this evaluation: pick two different "
                          "paradigms in “Is the difference real?”, or B from another "
                          "evaluation.")
    metric = metric or "EM"
    found = explorer.diagnoses.regressions(evaluation_id, a or "", b or "", other_id, metric)
    shown = [q for q in found.questions if not which or q.change == which]
    counts = ", ".join(f"{n} {change}" for change, n in found.counts.items())
    none = f" None {esc(which)}." if which and not shown else ""
    message = (f"<div class='fe-kept'>B = {esc(_side(found, 'b'))} against A = "
               f"{esc(_side(found, 'a'))} on {esc(metric)}, over the "
               f"{sum(found.counts.values())} questions both ran: {esc(counts)}."
               f"{none} Click a question to see both runs side by side.</div>")
    # a test collection's questions can be whole arguments: the row shows their start
    rows = [[q.change, shorten(q.question, QUESTION_CHARS), round(q.a, 3), round(q.b, 3),
             q.position_a, q.position_b, q.question_id] for q in shown]
    headers = ["change", "question", f"A's {metric}", f"B's {metric}", "# in A", "# in B",
               "question id"]
    return message, gr.Dataframe(rows, headers=headers), found


def metric_choices(explorer: Explorer, evaluation_id, metric) -> object:
    """"On metric" for the evaluation opened: the metrics its questions have (a test
    collection's: ranking measures, no EM), `metric` kept where it has it, else EM, else
    nDCG@10."""
    if evaluation_id is None:
        return gr.skip()
    have = explorer.diagnoses.measured(evaluation_id)
    if not have:
        return gr.skip()
    value = next(m for m in (metric, "EM", "nDCG@10", have[0]) if m in have)
    labels = metric_labels("EM" not in have)
    return gr.Dropdown([(labels.get(m, m), m) for m in have], value=value)


def _side(found: Regressions, side: str) -> str:
    """"flat (evaluation 3)"."""
    if side == "a":
        return f"{found.a_paradigm} (evaluation {found.a_evaluation})"
    return f"{found.b_paradigm} (evaluation {found.b_evaluation})"


def both_runs(explorer: Explorer, found: Regressions | None, row: list | None) -> str:
    """Both runs of a changed question side by side, from the first cut where their
    candidates part."""
    if not found or not row:
        return ""
    position_a, position_b = row[4], row[5]
    stored = explorer.evaluations
    run_a = stored.evaluation_trace(found.a_evaluation, int(position_a), found.a_paradigm)
    run_b = stored.evaluation_trace(found.b_evaluation, int(position_b), found.b_paradigm)
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


def _cut_name(run, index: int) -> str:
    return run.stages[index].name if index < len(run.stages) else "nothing"


def relist(explorer: Explorer, found, *asked) -> tuple:
    """The list again when its metric or filter changes, once it has been listed."""
    if not found:
        return gr.skip(), gr.skip(), gr.skip()
    return list_changes(explorer, *asked)


def paired_tables(explorer: Explorer, a, b) -> str:
    """Per paradigm both evaluations ran: b minus a on their shared questions, with
    intervals (the difference column's sign)."""
    results, refusals = [], []
    for paradigm in (p for p in a.paradigms if p in b.paradigms):
        try:
            results.append(explorer.diagnoses.paired(b.id, paradigm, paradigm, a.id))
        except EngineError as err:
            refusals.append(refused_box(err))
    # several paradigms compared: Holm-corrected p beside the raw
    parts = [*map(paired_table, corrected_across(results)), *refusals]
    return "<h4>Is the difference real?</h4>" + "".join(parts) if parts else ""


# --- layout -------------------------------------------------------------------------------


@dataclass
class Pickers:
    """A, B and B's evaluation, picked in "Is the difference real?" and read by "Which
    questions changed"."""

    a: gr.Dropdown
    b: gr.Dropdown
    other: gr.Dropdown
    pair: gr.Button
    paired: gr.HTML


def pair_views() -> Pickers:
    """"Is the difference real?": A and B, where B comes from, and their paired table."""
    gr.Markdown("Paradigm A against B over the questions both ran (a failed run left out), "
                "metric by metric: the difference with its 95% paired-bootstrap interval "
                "and, for pass/fail measures (EM, AR@k), McNemar's p; greyed where it is "
                "within noise.")
    with gr.Row():
        a = gr.Dropdown([], label="A: paradigm", scale=1, elem_id="fe-diag-a")
        b = gr.Dropdown([], label="B: paradigm", scale=1, elem_id="fe-diag-b")
        other = gr.Dropdown([(THIS_EVALUATION, "")], value="", scale=2,
                            label="B from another evaluation (pairs the questions both "
                                  "ran)", elem_id="fe-diag-other")
        pairing = gr.Button("Pair A with B", scale=1, elem_id="fe-diag-pair")
    return Pickers(a, b, other, pairing, gr.HTML(elem_id="fe-diag-paired"))


def change_views(explorer: Explorer, current: gr.State, pickers: Pickers,
                 ids: gr.Dropdown) -> gr.HTML:
    """"Which questions changed": B against A as picked in the view before, on one metric;
    a question's click shows both runs. Lists nothing until asked; what was listed goes
    when the evaluation, A or B changes. Returns the line saying which A and B are picked,
    which the user's picks update here and a diagnosis's after it reset them (`picked`
    over A, B and B's evaluation, read once the pickers hold their new choices: a change
    event read B's old value against its new choices, and Gradio refused it)."""
    shown_pick = gr.HTML(picked("", "", ""), elem_id="fe-diag-changes-pick")
    with gr.Row():
        metric = gr.Dropdown([(metric_labels(False).get(m, m), m) for m in METRICS], value="EM",
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
    ab = [pickers.a, pickers.b, pickers.other]
    for picker in ab[:2]:  # B's evaluation changes B's choices: app.tabs.diagnose
        picker.input(picked, ab, shown_pick, show_progress="hidden", **PRIVATE)
    current.change(partial(metric_choices, explorer), [current, metric], metric, **PRIVATE)
    changed = gr.State(None)
    asked = [current, *ab, metric, which]
    told = [changes_message, changes_rows, changed]
    listing.click(partial(list_changes, explorer), asked, told, **PRIVATE)
    for picker in (metric, which):  # a listed choice is read again at once
        picker.input(partial(relist, explorer), [changed, *asked], told, **PRIVATE)
    for picker in (*ab, ids):  # what was listed no longer holds
        picker.input(lambda: ("", [], None, ""), None, [*told, side_by_side], **PRIVATE)

    def open_both(found, evt: gr.SelectData):
        return both_runs(explorer, found, evt.row_value)

    changes_rows.select(open_both, changed, side_by_side, **PRIVATE)
    return shown_pick
