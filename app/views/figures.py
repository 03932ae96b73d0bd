"""Plotly figures of run traces: pure `RunTrace -> go.Figure` functions.

Every figure function is wrapped in `failsafe`: an exception becomes a small figure that
says what went wrong, so one bad figure never breaks the page or its callback.
"""

from __future__ import annotations

import functools
import html
import logging
import textwrap
from collections.abc import Callable, Sequence

import plotly.colors as pc
import plotly.graph_objects as go

from app.views.gold import gold_counts, series_colour
from engine.eval.traces import searched_in
from engine.service.annotation import ClassifierStatus
from engine.stages.classify import QUERY
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

HEIGHT = 320
STAGE = "#4c78a8"
LEGEND_ROW, LEGEND_PER_ROW = 24, 5  # a horizontal legend's row height and entries a row
# 24 colours, so the ~16 steps of five paradigms' runs do not share a colour (plotly's
# default ten repeat: clusters and classify were one blue)
MANY_COLOURS = pc.qualitative.Dark24
# pixels: plotly's toolbar (and the panel's label) over the figure's top, a title's line
TOOLBAR, TITLE_LINE, TITLE_PAD = 36, 22, 8


def text_figure(message: str, width: int = 100) -> go.Figure:
    """A blank figure holding one message, in lines of at most `width` characters (a
    plotly annotation does not wrap)."""
    fig = go.Figure()
    lines = textwrap.wrap(message, width) or [""]
    fig.add_annotation(text="<br>".join(html.escape(line) for line in lines),
                       showarrow=False, x=0.5, y=0.5,
                       xref="paper", yref="paper", font={"size": 14})
    fig.update_layout(xaxis={"visible": False}, yaxis={"visible": False}, height=HEIGHT)
    return fig


def clear_of_toolbar(fig: go.Figure) -> go.Figure:
    """`fig` with its title just above the plot area and the top margin grown so that the
    title starts under plotly's toolbar (which covers the top TOOLBAR pixels on hover, the
    right end of a title before) and the panel's label (the top left corner)."""
    title = fig.layout.title
    if not title.text:
        return fig
    lines = title.text.count("<br>") + 1 + (1 if title.subtitle.text else 0)
    needed = TOOLBAR + TITLE_LINE * lines + TITLE_PAD
    fig.update_layout(margin_t=max(fig.layout.margin.t or 0, needed), title_yref="paper",
                      title_y=1, title_yanchor="bottom", title_pad_b=TITLE_PAD)
    return fig


def failsafe(make: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """`make` whose failure becomes a figure saying so, its title clear of the toolbar."""
    @functools.wraps(make)
    def wrapper(*args, **kwargs) -> go.Figure:
        try:
            return clear_of_toolbar(make(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - a figure must never break the page
            logger.exception("figure %s failed", make.__name__)
            return text_figure(f"{make.__name__} could not be drawn: {err}")
    return wrapper


@failsafe
def funnel_figure(trace: RunTrace) -> go.Figure:
    """Candidates into and out of every stage, and how many of those out hold the gold
    answer or a gold supporting document."""
    ranking = [i for i, s in enumerate(trace.stages) if s.granularity != QUERY]
    if not ranking:
        return text_figure("No retrieval stage ran." if trace.stages else "No stages ran.")
    stages = [trace.stages[i] for i in ranking]
    labels = [f"{s.name} ({s.granularity})" for s in stages]
    fig = go.Figure()
    # an imported stage whose trace does not say how many it searched has no "in" bar
    series = [("candidates in", [searched_in(s) for s in stages], "#c7d4e8"),
              ("kept", [len(s.candidates) for s in stages], STAGE)]
    series += [(name, [counts[i] for i in ranking], series_colour(name))
               for name, counts in gold_counts(trace).items()]
    for name, counts, color in series:
        fig.add_bar(y=labels, x=counts, name=name, orientation="h", marker_color=color,
                    text=["? (not in the trace)" if n is None else f"{n:,}" for n in counts],
                    textposition="outside", cliponaxis=False)
    # the title sits right of the panel's own label (which covers the top left corner), the
    # note as plotly's subtitle on a line of its own under it (set inline as <sub>, it ran
    # into the title), and the legend below the axis, where however many series there are
    # it cannot crowd it
    note = {} if trace.gold else {"subtitle": {"text": "gold bars come with a dataset "
                                                       "question"}}
    fig.update_layout(barmode="group", height=HEIGHT + 60,
                      title={"text": "Candidates per stage", **note, "x": 0.98,
                             "xanchor": "right"},
                      yaxis={"autorange": "reversed"},
                      xaxis={"type": "log", "dtick": 1, "title": "candidates (log scale)"},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.22,
                              "xanchor": "left", "x": 0},
                      margin={"l": 10, "r": 30, "t": 60, "b": 10})
    return fig


@failsafe
def waterfall_figure(trace: RunTrace) -> go.Figure:
    """Seconds per stage, then answer decoding, adding up to the total."""
    names = [s.name for s in trace.stages] + [step.purpose for step in trace.llm_steps]
    seconds = [s.seconds for s in trace.stages] + [step.seconds for step in trace.llm_steps]
    fig = go.Figure(go.Waterfall(
        x=[*names, "total"], y=[*seconds, 0.0], measure=["relative"] * len(names) + ["total"],
        text=[f"{s:.2f} s" for s in seconds] + [f"{sum(seconds):.2f} s"],
        textposition="outside", connector={"line": {"color": "#999"}}))
    top = max(sum(seconds), 1e-3) * 1.15  # room for the labels above the bars
    fig.update_layout(title="Where the time went", height=HEIGHT, showlegend=False,
                      yaxis={"title": "seconds", "range": [0, top]}, margin={"l": 10, "r": 10})
    return fig


@failsafe
def compare_figure(traces: Sequence[RunTrace]) -> go.Figure:
    """Seconds per stage of several runs side by side (stacked per run)."""
    if not traces:
        return text_figure("Nothing to compare yet.")
    fig = go.Figure()
    names = [f"{t.paradigm} #{i + 1}" if [x.paradigm for x in traces].count(t.paradigm) > 1
             else t.paradigm for i, t in enumerate(traces)]
    steps = list(dict.fromkeys([*(s.name for t in traces for s in t.stages),
                                *(f"LLM: {c.purpose}" for t in traces for c in t.llm_steps)]))
    for step in steps:
        fig.add_bar(x=names, y=[_step_seconds(t, step) for t in traces], name=step)
    # the legend runs across under the bars, as many rows as the steps need (five
    # paradigms have about 16): beside them it was cut to the plot's height and scrolled
    rows = -(-len(steps) // LEGEND_PER_ROW)
    fig.update_layout(barmode="stack", title="Seconds per stage", colorway=MANY_COLOURS,
                      height=HEIGHT + LEGEND_ROW * rows, yaxis={"title": "seconds"},
                      legend={"orientation": "h", "traceorder": "normal", "yanchor": "top",
                              "y": -0.12, "xanchor": "left", "x": 0},
                      margin={"l": 10, "r": 10})
    return fig


def compare_funnel_figure(traces: Sequence[RunTrace]) -> go.Figure:
    """Candidates kept by every cut of several runs side by side."""
    if not traces:
        return text_figure("Nothing to compare yet.")
    fig = go.Figure()
    for i, trace in enumerate(traces):
        stages = [s for s in trace.stages if s.granularity != QUERY]
        fig.add_bar(x=[f"cut {n}" for n in range(1, len(stages) + 1)],
                    y=[len(s.candidates) for s in stages], name=f"#{i + 1} {trace.paradigm}",
                    text=[f"{s.name}: {len(s.candidates):,}" for s in stages],
                    textposition="outside", cliponaxis=False)
    fig.update_layout(barmode="group", title="Candidates kept per cut", height=HEIGHT,
                      yaxis={"title": "kept", "rangemode": "tozero"},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
                      margin={"l": 10, "r": 10})
    return fig


def _step_seconds(trace: RunTrace, name: str) -> float:
    """Seconds of the stages called `name`, or of the LLM calls named "LLM: <purpose>"."""
    return sum(s.seconds for s in trace.stages if s.name == name) + sum(
        c.seconds for c in trace.llm_steps if f"LLM: {c.purpose}" == name)


def precision_recall(scores: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """(recall, precision) points of "P >= t" over every threshold t in `scores`, a list of
    [probability, label] pairs, from the strictest threshold to the loosest."""
    ranked = sorted(scores, key=lambda s: -s[0])
    positives = sum(int(y) for _, y in ranked)
    recall, precision, hits = [], [], 0
    for n, (_, y) in enumerate(ranked, start=1):
        hits += int(y)
        recall.append(hits / positives if positives else 0.0)
        precision.append(hits / n)
    return recall, precision


@failsafe
def precision_recall_figure(status: ClassifierStatus) -> go.Figure:
    """Held-out precision/recall of the last retrain's versions before and after, both
    measured on the same held-out pairs (else the two newest versions, each on its own),
    one labelled curve each with its chosen threshold marked in the curve's colour."""
    compared = status.retrain.get("compared") or {}
    labels = {v["id"]: v["labels"] for v in status.versions}
    if compared.get("after"):
        shown = [(f"{role}: ", entry) for role, entry in (("before", compared.get("before")),
                                                          ("after", compared["after"]))
                 if entry and entry.get("heldout_scores")]
        title = (f"The same {compared.get('pairs', 0)} held-out pairs, before and after: "
                 "precision against recall")
    else:
        shown = [("", version) for version in status.versions[-2:]]
        title = "Held-out pairs: precision against recall"
    if not shown:
        return text_figure("No classifier trained yet.")
    fig = go.Figure()
    # the older grey and dashed (visible where the newer runs over it), the newer in colour
    styles = (("#9e9e9e", "dash"), (STAGE, "solid"))[-len(shown):]
    for (role, version), (colour, dash) in zip(shown, styles, strict=True):
        recall, precision = precision_recall(version.get("heldout_scores") or [])
        auc = version.get("heldout_auc")
        name = (f"{role}{version['id'][:8]} ({labels.get(version['id'], 0)} labels"
                f"{'' if auc is None else f', AUC {auc:.3f}'})")
        fig.add_trace(go.Scatter(x=recall, y=precision, mode="lines", name=name,
                                 line={"color": colour, "dash": dash}))
        m = version["heldout"]
        fig.add_trace(go.Scatter(x=[m.get("recall", 0)], y=[m.get("precision", 0)],
                                 mode="markers", marker={"size": 10, "color": colour},
                                 showlegend=False,
                                 hovertext=f"{name}: threshold {version['threshold']:.3f}"))
    fig.update_layout(title=f"{title} (dot: each version's threshold)",
                      xaxis_title="recall", yaxis_title="precision", height=HEIGHT,
                      xaxis={"range": [0, 1.02]}, yaxis={"range": [0, 1.02]},
                      legend={"orientation": "h", "y": -0.25})
    return fig
