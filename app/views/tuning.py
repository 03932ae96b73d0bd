"""What the Tune view shows of a search (engine.service.tuning.Tuning.tune_status): where it
is, every trial as its measure against its cost with the front drawn, the trials, each
option's importance and the picks against the defaults on held-out questions."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.figures import failsafe, text_figure
from app.views.trace import esc
from engine.service.tuning import TuneStatus
from engine.tune.search import TrialRow
from engine.tune.space import Dimension

TRIAL_COLUMNS = ["#", "paradigm", "settings", "state", "questions", "measure", "cost", "note"]
IMPORTANCE_COLUMNS = ["paradigm", "option", "share of the measure's variance",
                      "share of the cost's variance"]
HELD_OUT_COLUMNS = ["paradigm", "pick", "pick's measure", "default's measure", "difference",
                    "95% interval", "p", "p (Holm)", "test", "cost: pick / default",
                    "verdict"]


def _cost(value: float | None, cost: str) -> str:
    if value is None:
        return ""
    return f"{value * 1000:,.1f} ms" if cost == "seconds" else f"{value:,.0f} tokens"


def _settings(trial: TrialRow) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in trial.params.items())


def progress_html(status: TuneStatus) -> str:
    """One line of where search `status` is, and its outcome once it ended."""
    plan, trials = status.plan, status.trials
    counted = [t for t in trials if t.state != "refused"]
    states = {s: sum(t.state == s for t in trials)
              for s in ("complete", "stopped", "failed", "refused")}
    head = (f"Search {status.id} ({esc(status.dataset)} over {esc(status.corpus)}, "
            f"{status.questions.search} questions searched, "
            f"{status.questions.held_out} held out): <b>{esc(status.state)}</b>. "
            f"{len(counted)} of {plan.trials} trials: {states['complete']} finished, "
            f"{states['stopped']} stopped early, {states['failed']} failed"
            + (f", {states['refused']} setting{'s' if states['refused'] != 1 else ''} "
               "refused (not counted)" if states["refused"] else "") + ".")
    search = status.search
    current = search.current if search is not None else None
    if status.state == "running":
        if status.phase and status.phase != "searching":
            head += f" Now: {esc(status.phase)}."
        elif current:
            head += (f" Now: trial {current.number + 1}, {esc(current.label)}, "
                     f"{current.questions} questions.")
        if search is not None and search.left is not None:
            head += f" About {search.left / 60:.0f} min left."
    if status.error:
        head += f" <span class='fe-error'>{esc(status.error)}</span>"
    result = status.result or {}
    winner = result.get("winner")
    if winner:
        check = winner.get("held_out") or {}
        head += (f"<br>Winner: <b>{esc(winner['label'])}</b>"
                 f" ({plan.measure} {_measure(winner['measure'])}, "
                 f"{_cost(winner['cost'], plan.cost)} on the search questions). "
                 f"On the held-out questions: {esc(check.get('verdict', 'not checked'))}.")
        if status.preset and status.state == "done":
            head += (f" Saved as preset <b>{esc(status.preset)}</b>: pick it in Explore's "
                     "Preset, or run <code>funnel-engine ask --preset "
                     f"{esc(status.preset)}</code>.")
    elif status.state == "done" and result.get("note"):
        head += f"<br><span class='fe-error'>{esc(result['note'])}</span>"
    elif status.state == "done":
        head += "<br>No finished trial is within the cost ceiling: raise it, or search longer."
    # a search that failed or was stopped never reads as a success
    kind = {"done": "fe-kept", "running": "fe-progress"}.get(status.state, "fe-error")
    return f"<div class='{kind}'>{head}</div>"


def _measure(value: float | None) -> str:
    """A measure's value as shown: '-' where it is missing (a search stored before a trial
    without the measure could be a winner)."""
    return "-" if value is None else f"{value:.3f}"


def trial_rows(status: TuneStatus) -> list[list]:
    cost = status.plan.cost
    front = set(status.front)
    return [[t.number + 1, t.paradigm, _settings(t),
             t.state + (" (front)" if t.number in front else ""), t.questions,
             None if t.measure is None else round(t.measure, 3),
             _cost(t.cost, cost), t.note] for t in status.trials]


def importance_rows(status: TuneStatus) -> list[list]:
    result = status.result or {}
    rows = []
    for paradigm, found in (result.get("importance") or {}).items():
        measure, cost = found.get("measure") or {}, found.get("cost") or {}
        if not measure and not cost:
            rows.append([paradigm, "", found.get("note", ""), ""])
        for option in dict.fromkeys([*measure, *cost]):
            rows.append([paradigm, option, measure.get(option), cost.get(option)])
    return rows


def held_out_rows(status: TuneStatus) -> list[list]:
    result = status.result or {}
    cost = status.plan.cost
    return [[c["paradigm"], c["label"], c["pick"], c["default"], c["diff"],
             f"{c['ci'][0]:+.3f} to {c['ci'][1]:+.3f}", c["p"], c.get("p_holm"), c["test"],
             f"{_cost(c['cost']['pick'], cost)} / {_cost(c['cost']['default'], cost)}",
             c["verdict"]] if c.get("measured", True) else
            [c["paradigm"], c["label"], *([None] * 8), c["verdict"]]
            for c in result.get("held_out") or []]


@failsafe
def front_figure(status: TuneStatus) -> go.Figure:
    """Every trial that ran as its measure against its cost, a colour per paradigm; those
    stopped early hollow (measured on their first questions only); the front drawn."""
    plan, cost = status.plan, status.plan.cost
    ran = [t for t in status.trials if t.measure is not None and t.cost is not None]
    if not ran:
        return text_figure("No trial has finished a question yet.")
    scale = 1000.0 if cost == "seconds" else 1.0
    fig = go.Figure()
    for paradigm in dict.fromkeys(t.paradigm for t in ran):
        for finished in (True, False):
            own = [t for t in ran if t.paradigm == paradigm
                   and (t.state == "complete") == finished]
            if not own:
                continue
            fig.add_trace(go.Scatter(
                x=[t.cost * scale for t in own], y=[t.measure for t in own],
                mode="markers", name=paradigm + ("" if finished else " (stopped early)"),
                marker={"size": 10 if finished else 8,
                        "symbol": "circle" if finished else "circle-open"},
                text=[f"trial {t.number + 1}: {esc(_settings(t))}<br>{t.questions} "
                      f"questions, {t.state}" for t in own],
                hovertemplate="%{text}<br>%{x:.3g}, %{y:.3f}<extra></extra>"))
    by_number = {t.number: t for t in ran}
    on = sorted((by_number[n] for n in status.front if n in by_number),
                key=lambda t: t.cost)
    fig.add_trace(go.Scatter(x=[t.cost * scale for t in on], y=[t.measure for t in on],
                             mode="lines", name="front", hoverinfo="skip",
                             line={"dash": "dot", "color": "#333"}))
    if plan.ceiling:
        fig.add_vline(x=plan.ceiling * scale, line={"dash": "dash", "color": "#b00"},
                      annotation_text="ceiling")
    unit = "ms per question (median)" if cost == "seconds" else "reader tokens per question"
    fig.update_layout(title=f"{plan.measure} against cost: every trial, and the front",
                      xaxis_title=unit, yaxis_title=plan.measure, height=420,
                      yaxis_range=[0, 1.05],  # every measure searched lies in [0, 1]
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


def space_html(dimensions: list[Dimension]) -> str:
    """The options a search varies, as a short list per paradigm."""
    if not dimensions:
        return "<div class='fe-kept'>Pick at least one paradigm.</div>"
    by_paradigm: dict[str, list[str]] = {}
    for d in dimensions:
        shown = (" | ".join(map(str, d.choices)) if d.kind == "choice" else
                 f"{d.low:g} to {d.high:g}" + (" (log)" if d.log else ""))
        by_paradigm.setdefault(d.paradigm, []).append(f"{esc(d.option)}: {esc(shown)}")
    return "<div class='fe-kept'>Searched by default: " + "; ".join(
        f"<b>{esc(p)}</b> {', '.join(opts)}" for p, opts in by_paradigm.items()) + \
        ". Options that need an index built are left out: name them under Options.</div>"
