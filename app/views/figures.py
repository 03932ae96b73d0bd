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
from plotly.subplots import make_subplots

from app.views.gold import gold_counts, series_colour
from engine.eval.traces import searched_in
from engine.readers.ablation import agreement, reading_step
from engine.stages.classify import QUERY
from engine.trace import RunTrace
from engine.trace_details import Ablation, ReaderAttention

logger = logging.getLogger(__name__)

HEIGHT = 320
STAGE = "#4c78a8"
LEGEND_ROW, LEGEND_PER_ROW = 24, 5  # a horizontal legend's row height and entries a row
# 24 colours, so the ~16 steps of five paradigms' runs do not share a colour (plotly's
# default ten repeat: clusters and classify were one blue)
MANY_COLOURS = pc.qualitative.Dark24


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


def failsafe(make: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    @functools.wraps(make)
    def wrapper(*args, **kwargs) -> go.Figure:
        try:
            return make(*args, **kwargs)
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
                             "xanchor": "right", "y": 0.97, "yanchor": "top"},
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


def reader_attention(trace: RunTrace) -> tuple[ReaderAttention, str] | None:
    """The reader attention of this run and where it comes from: a post-ranking stage's
    (over every passage it scored) first, else the answer step's (over the passages it
    read)."""
    for stage in trace.stages:
        if stage.details.attention is not None:
            return stage.details.attention, "the post-ranker's reader pass"
    for step in trace.llm_steps:
        if step.attention is not None:
            return step.attention, "the reader, at the answer's first token"
    return None


def _reader_backend(reader: dict) -> str:
    """The backend a stored run's reader config resolves to (as given, where it no longer
    parses)."""
    from engine.config import config_from_dict
    from engine.errors import EngineError
    from engine.readers.reader import ReaderConfig

    try:
        return config_from_dict(ReaderConfig, reader).backend_of().name
    except (EngineError, TypeError, ValueError):
        return str(reader.get("backend", "auto"))


@failsafe
def heatmap_figure(trace: RunTrace, by: str = "layers") -> go.Figure:
    """Reader attention (first decoded token) per passage x layer or head; hover shows the
    passage's representative tokens."""
    import numpy as np

    found = reader_attention(trace)
    if found is None and trace.llm_steps and not any(s.candidates for s in trace.stages):
        return text_figure("The reader read no passages, so there is no attention over them "
                           "(no stage retrieved anything for this run).")
    if found is None and "imported" in trace.config:
        return text_figure(f"This run was imported from {trace.paradigm}'s traces, which "
                           "carry no reader attention: a heatmap comes with our paradigms' "
                           "in-process reader.")
    if found is None and trace.llm_steps:
        backend = _reader_backend(trace.config.get("reader") or {})
        if backend == "onnx":
            return text_figure("The reader answered through ONNX Runtime (backend onnx, or "
                               "auto with reader.attention off, as evaluations and sweeps "
                               "read), which gives no attention weights, so there is no "
                               "heatmap for this run. Run it again with backend auto and "
                               "reader.attention on, or attribute it (leave each passage "
                               "out), to read it through torch with its attention.")
        return text_figure(f"The reader's backend ({backend}) gave no attention weights, so "
                           "there is no heatmap for this run (the transformers backend "
                           "gives them; a server or a backend without attention does not).")
    if found is None and trace.gold is not None and trace.gold.judged_only:
        return text_figure("No reader ran: a test collection's question has no answer to "
                           "find, so its run stops after the last cut and is measured by "
                           "its judgments. Type it as a question of your own to have the "
                           "reader answer it.")
    if found is None:
        return text_figure("This run has no reader attention yet (it comes with the "
                           "reader's step).")
    read, source = found
    attn = np.asarray(read.cells, dtype=float)  # [passage, layer, head]
    axis = {"layers": 2, "heads": 1}[by]
    cells = attn.mean(axis=axis)
    passages = read.passages or [str(i) for i in range(len(cells))]
    tokens = read.top_tokens or [[] for _ in passages]
    kept = set(read.answered_from)
    if kept >= set(passages):  # the answer read them all: a star would mark nothing
        kept = set()
    labels = [f"{'* ' if p in kept else ''}{html.escape(label)}"
              for p, label in zip(passages, row_labels(trace, passages), strict=True)]
    titles = {c.unit.id: c.unit.title for s in trace.stages for c in s.candidates}
    named = [html.escape(p if titles.get(p, p) in p else f"{titles[p]} ({p})")
             for p in passages]
    hover = [[f"{name}<br>{by[:-1]} {j}<br>tokens: {html.escape(' | '.join(t))}"
              for j in range(cells.shape[1])] for name, t in zip(named, tokens, strict=False)]
    heat = go.Heatmap(z=cells, y=labels, text=hover, colorscale="Viridis",
                      hovertemplate="%{text}<br>attention %{z:.4f}<extra></extra>",
                      colorbar={"title": "attention"})
    star = " (* = answered from)" if kept else ""
    title = f"Attention per passage x {by[:-1]}: {source}{star}"
    step = reading_step(trace)
    if step is None:
        fig = go.Figure(heat)
    else:  # leave-one-out bars beside the heatmap, row for row
        fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.66, 0.34],
                            horizontal_spacing=0.12)
        heat.colorbar.update(x=0.58, thickness=12)
        fig.add_trace(heat, row=1, col=1)
        fig.add_trace(_ablation_bars(step.ablation, dict(zip(passages, labels, strict=True))),
                      row=1, col=2)
        fig.update_xaxes(title="answer log-prob lost without it", zeroline=True,
                         range=_padded(step.ablation.effects), row=1, col=2)
        title += "<br><sub>" + _agreement_line(step) + "</sub>"
    fig.update_layout(title=title, yaxis={"autorange": "reversed"}, showlegend=False,
                      height=max(HEIGHT, 28 * len(labels) + 140), margin={"l": 10, "r": 10})
    fig.update_xaxes(title=by[:-1], row=1, col=1) if step else fig.update_xaxes(title=by[:-1])
    return fig


CHANGED, KEPT = "#e45756", "#9ca3af"


def _ablation_bars(ablation: Ablation, labels: dict[str, str]) -> go.Bar:
    """One bar per passage left out: how much less likely the answer is without it, red
    where the reader then says something else."""
    shown = [i for i, p in enumerate(ablation.passages) if p in labels]
    changed, effects = ablation.changed, ablation.effects
    said = [html.escape(f"“{a}”" if a else "nothing", quote=False)
            for a in ablation.answers_without]
    hover = [f"{labels[ablation.passages[i]]}<br>without it the reader says {said[i]}"
             f"{' (another answer)' if changed[i] else ' (the same answer)'}<br>"
             f"log-prob of “{html.escape(ablation.answer, quote=False)}”: "
             f"{ablation.logprob:.2f} with it, {ablation.without[i]:.2f} without"
             for i in shown]
    return go.Bar(y=[labels[ablation.passages[i]] for i in shown],
                  x=[effects[i] for i in shown], orientation="h",
                  text=[f"{effects[i]:+.2f}" for i in shown], textposition="outside",
                  cliponaxis=False,
                  hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                  marker_color=[CHANGED if changed[i] else KEPT for i in shown])


def _padded(values: Sequence[float]) -> list[float]:
    """An axis range holding 0 and `values` with room for a label outside each bar."""
    low, high = min(0.0, *values), max(0.0, *values)
    room = 0.35 * ((high - low) or 1.0)
    return [low - room if low < 0 else low - room / 4, high + room]


def _agreement_line(step) -> str:
    """The subtitle over the bars: what leaving passages out did, and whether attention
    ranks them as ablation does."""
    ablation = step.ablation
    n = sum(ablation.changed)
    said = (f"leaving out {n} of {len(ablation.passages)} passages changes the answer (red)"
            if n else f"no single passage left out changes the answer "
                      f"({len(ablation.passages)} tried)")
    agreed = agreement(step.attention, ablation) if step.attention is not None else None
    if agreed is None:
        return f"Leave-one-out: {said}."
    rho = f"Spearman {agreed.spearman:+.2f}" if agreed.spearman is not None else \
        "too few passages for a rank correlation"
    top = ("attention's top passage is the one the answer depends on most"
           if agreed.same_top else "attention's top passage is not the one the answer "
                                   "depends on most")
    return f"Leave-one-out: {said}; against the reader's attention: {rho}, {top}."


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


def row_labels(trace: RunTrace, passages: Sequence[str]) -> list[str]:
    """The heatmap's row labels, one per passage and never two alike: plotly draws rows
    with equal labels as one, and two passages of a long-titled document shortened to the
    same text once showed as one row (4 read, 3 shown). Each is labelled by its rank in
    the last stage that listed it (as the stage tables show it; else its place in the
    reading order), its id shortened and its passage number."""
    ranks = {c.unit.id: c.rank for stage in trace.stages for c in stage.candidates}
    labels = [row_label(ranks.get(p, n), p) for n, p in enumerate(passages, start=1)]
    if len(set(labels)) < len(labels):  # ranks of two stages, ids alike when shortened
        labels = [f"{label} [{n}]" for n, label in enumerate(labels, start=1)]
    return labels


def row_label(rank: int, unit_id: str, width: int = 34) -> str:
    """A heatmap row's label: a rank, the unit id shortened and the passage number
    ("#2 Along the River During the Qin… (p3)"); the full id is in the hover."""
    base, sep, number = unit_id.rpartition("#")
    if sep and base and number.isdigit():
        return f"#{rank} {_short(base, width)} (p{number})"
    return f"#{rank} {_short(unit_id, width)}"


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


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
def precision_recall_figure(status: dict) -> go.Figure:
    """Held-out precision/recall of the last retrain's versions before and after, both
    measured on the same held-out pairs (else the two newest versions, each on its own),
    one labelled curve each with its chosen threshold marked in the curve's colour."""
    compared = status["retrain"].get("compared") or {}
    labels = {v["id"]: v["labels"] for v in status["versions"]}
    if compared.get("after"):
        shown = [(f"{role}: ", entry) for role, entry in (("before", compared.get("before")),
                                                          ("after", compared["after"]))
                 if entry and entry.get("heldout_scores")]
        title = (f"The same {compared.get('pairs', 0)} held-out pairs, before and after: "
                 "precision against recall")
    else:
        shown = [("", version) for version in status["versions"][-2:]]
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
