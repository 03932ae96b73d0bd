"""The reader-attention heatmap of a run: its first decoded token's attention per passage
read (or, after a sentence cut, per sentence read) x layer or head, with the leave-one-out
bars beside it where the run was attributed. A pure `RunTrace -> go.Figure` function,
wrapped in `failsafe` as every figure is (app.views.figures).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views.figures import HEIGHT, failsafe, text_figure
from engine.readers.ablation import agreement, reading_step
from engine.trace import RunTrace
from engine.trace_details import Ablation, ReaderAttention


def reader_attention(trace: RunTrace) -> tuple[ReaderAttention, str] | None:
    """The reader attention of this run and where it comes from: a post-ranking stage's
    (over every passage it scored) first, else the answer step's (over the passages it
    read)."""
    for step in trace.llm_steps:  # after a sentence cut, the sentences read come first
        if step.attention is not None and step.attention.sentence_cells:
            return step.attention, "the reader, at the answer's first token"
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
    step = reading_step(trace)
    if read.sentence_cells and step is None:  # after a sentence cut: a row per sentence read
        return _sentence_heatmap(trace, read, source, by)
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


def _sentence_heatmap(trace: RunTrace, read: ReaderAttention, source: str,
                      by: str) -> go.Figure:
    """The heatmap over the sentences a sentence cut left, grouped by passage in the
    prompt's order: each row is labelled by its passage's row label and the sentence's
    opening words, and its hover holds the whole sentence."""
    import numpy as np

    cells = np.asarray(read.sentence_cells, dtype=float).mean(axis={"layers": 2, "heads": 1}[by])
    passages = dict(zip(read.passages, row_labels(trace, read.passages), strict=True))
    labels, hover = [], []
    for n, (passage, text) in enumerate(zip(read.sentence_passages, read.sentence_texts,
                                            strict=True), start=1):
        labels.append(html.escape(f"{passages.get(passage, passage)} · s{n} {_short(text, 28)}",
                                  quote=False))
        hover.append([f"{html.escape(passage)}<br>{html.escape(text)}<br>{by[:-1]} {j}"
                      for j in range(cells.shape[1])])
    heat = go.Heatmap(z=cells, y=labels, text=hover, colorscale="Viridis",
                      hovertemplate="%{text}<br>attention %{z:.4f}<extra></extra>",
                      colorbar={"title": "attention"})
    fig = go.Figure(heat)
    fig.update_layout(title=f"Attention per sentence read x {by[:-1]}: {source} "
                            f"(the sentence cut kept {len(labels)}, grouped by passage)",
                      yaxis={"autorange": "reversed"}, showlegend=False,
                      height=max(HEIGHT, 24 * len(labels) + 140), margin={"l": 10, "r": 10})
    fig.update_xaxes(title=by[:-1])
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
