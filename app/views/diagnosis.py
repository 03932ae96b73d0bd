"""What the Diagnose tab shows: where each paradigm lost the answer over an evaluation (a
stacked bar per paradigm, a flow per paradigm), the questions of one outcome, and paired
differences with their intervals (what it computes on demand: app.views.probes). HTML and
plotly only; the numbers come from engine.eval.outcomes and engine.eval.paired."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.figures import failsafe, text_figure
from app.views.labels import metric_labels, track_label
from app.views.trace import esc
from engine.eval import outcomes as oc
from engine.service.diagnosis import PairedComparison

LOST = ("#f58518", "#e45756", "#b279a2", "#9d755d", "#ffbf79", "#843c39", "#ff9da6",
        "#7b4173", "#d6616b", "#bcbd22")  # a colour per cut lost at, in funnel order
COLORS = {oc.SKIPPED: "#79706e", oc.NOT_RETRIEVED: "#b2182b", oc.REACHED: "#4c78a8",
          oc.READ_WRONG: "#eeca3b", oc.RIGHT: "#54a24b", oc.NO_SPAN: "#bab0ac",
          oc.NO_RELEVANT: "#b2182b", oc.RELEVANT_REACHED: "#4c78a8",
          oc.RELEVANT_READ: "#54a24b"}
BEFORE = (oc.NO_SPAN, oc.SKIPPED, oc.NOT_RETRIEVED, oc.NO_RELEVANT)  # outcomes at no cut
AFTER = (oc.REACHED, oc.READ_WRONG, oc.RIGHT, oc.RELEVANT_REACHED, oc.RELEVANT_READ)


def lost_cut(outcome: str) -> str | None:
    """The cut a "lost at <cut>" outcome (of any track) names; None for another."""
    for prefix in ("relevant lost at ", "lost at "):
        if outcome.startswith(prefix):
            return outcome.removeprefix(prefix)
    return None
SEPARATOR = " · "
THIS_EVALUATION = "(none: B from this evaluation)"


def color(outcome: str, cuts: list[str]) -> str:
    """An outcome's colour; a "lost at" one's by its cut's place in `cuts` (`lost_cuts`
    of the outcomes drawn together: no two of them share a colour)."""
    if outcome in COLORS:
        return COLORS[outcome]
    cut = lost_cut(outcome)
    return LOST[(cuts.index(cut) if cut in cuts else 0) % len(LOST)]


def lost_cuts(outcomes) -> list[str]:
    """The cuts the "lost at" ones among `outcomes` name, once each, in funnel order."""
    return list(dict.fromkeys(cut for o in oc.in_funnel_order(outcomes)
                              if (cut := lost_cut(o)) is not None))


@failsafe
def outcome_bars(attribution: dict[str, oc.Attribution], track: str = "answer",
                 judged: bool = False) -> go.Figure:
    """One stacked bar per paradigm: its questions by outcome, earliest loss at the bottom."""
    if not attribution:
        return text_figure("Open an evaluation to see where each paradigm loses the answer.")
    names = list(attribution)
    order = oc.in_funnel_order(o for found in attribution.values() for o in found.counts)
    cuts = lost_cuts(order)
    fig = go.Figure([go.Bar(
        x=names, y=[attribution[n].counts.get(o, 0) for n in names], name=o,
        marker_color=color(o, cuts), text=[attribution[n].counts.get(o) or "" for n in names],
        customdata=[segment_value(n, o) for n in names],  # what a click on it opens
        textposition="inside",
        hovertemplate=f"%{{x}}: %{{y}} questions {esc(o)} (click to list them)<extra></extra>")
        for o in order])
    fig.update_layout(barmode="stack",
                      title=f"Where each paradigm loses {track_label(track, judged)}",
                      yaxis_title="questions", height=380, legend={"traceorder": "normal"},
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


@failsafe
def outcome_flow(paradigm: str, found: oc.Attribution | None) -> go.Figure:
    """A Sankey of one paradigm: all questions -> retrieved -> kept by each later cut ->
    answered right, with each loss leaving the flow where it happened."""
    if found is None or not found.counts:
        return text_figure("Pick a paradigm of the evaluation to see its flow.")
    cuts, counts = found.cuts, found.counts
    labels: list[str] = []
    colors: list[str] = []
    links: list[tuple[int, int, int]] = []

    def node(text: str, tint: str) -> int:
        labels.append(text)
        colors.append(tint)
        return len(labels) - 1

    def beyond(i: int) -> int:  # questions that passed cut i
        return sum(n for o, n in counts.items() if _rank(o, cuts) > i)

    current = node(f"questions ({sum(counts.values())})", "#4c78a8")
    lost_names = {lost_cut(o): o for o in counts if lost_cut(o) is not None}
    for o in BEFORE:
        if counts.get(o):
            links.append((current, node(f"{o} ({counts[o]})", COLORS[o]), counts[o]))
    if cuts and beyond(0):
        links.append((current, kept := node(f"retrieved ({beyond(0)})", "#4c78a8"), beyond(0)))
        current = kept
        for i, cut in enumerate(cuts[1:], start=1):
            named = lost_names.get(cut, oc.lost_at(cut))
            lost = counts.get(named, 0)
            if lost:
                links.append((current, node(f"{named} ({lost})", color(named, lost_cuts(counts))),
                              lost))
            if beyond(i):
                links.append((current, kept := node(f"kept by {cut} ({beyond(i)})", "#4c78a8"),
                              beyond(i)))
                current = kept
        for o in AFTER:
            if counts.get(o):
                links.append((current, node(f"{o} ({counts[o]})", COLORS[o]), counts[o]))
    source, target, value = zip(*links, strict=True) if links else ((), (), ())
    fig = go.Figure(go.Sankey(
        arrangement="snap", node={"label": labels, "color": colors, "pad": 14},
        link={"source": source, "target": target, "value": value,
              "color": "rgba(160,160,160,0.35)"}))
    fig.update_layout(title=f"{paradigm}: every question through each cut", height=380,
                      margin={"l": 20, "r": 20, "t": 50, "b": 20})
    return fig


def _rank(outcome: str, cuts: tuple[str, ...]) -> int:
    """How many cuts an outcome passed: -1 before the first, len(cuts) past all."""
    if outcome in BEFORE:
        return -1
    cut = lost_cut(outcome)
    if cut is not None and cut in cuts:
        return cuts.index(cut)
    return len(cuts)


def segment_value(paradigm: str, outcome: str) -> str:
    """The value naming one (paradigm, outcome) segment: "flat · lost at reranker"."""
    return f"{paradigm}{SEPARATOR}{outcome}"


def segment_choices(attribution: dict[str, oc.Attribution]) -> list[tuple[str, str]]:
    """(label, value) per (paradigm, outcome) segment, as the Dropdown takes them."""
    return [(f"{segment_value(paradigm, o)} ({n})", segment_value(paradigm, o))
            for paradigm, found in attribution.items() for o, n in found.counts.items()]


def evaluation_label(evaluation) -> str:
    """How a stored evaluation is offered in a picker: its id, name, dataset (unless the
    name starts with it, as a default name does), when it was started and how far it got."""
    dataset = "" if evaluation.name.startswith(evaluation.dataset) else \
        f" · {evaluation.dataset}"
    return (f"{evaluation.id}: {evaluation.name}{dataset} · {evaluation.created[:16]} · "
            f"{evaluation.state}, {evaluation.done} of {evaluation.questions} questions")


def evaluation_choices(evaluations) -> list[tuple[str, str]]:
    """(label, id as text) of each stored evaluation, in the order given (newest first)."""
    return [(evaluation_label(e), str(e.id)) for e in evaluations]


def segment_positions(attribution: dict[str, oc.Attribution],
                      segment: str) -> tuple[str, list]:
    """(paradigm, question positions) of a segment value from `segment_choices`."""
    paradigm, _, o = (segment or "").partition(SEPARATOR)
    found = attribution.get(paradigm)
    return paradigm, found.questions.get(o, []) if found is not None else []


def _number(value: float, metric: str) -> str:
    return f"{value:+.3f}" if metric != "seconds" else f"{value:+.2f}"


def paired_table(result: PairedComparison) -> str:
    """A minus B per metric: both values, the difference, its 95% interval, the McNemar p
    and whether it is within noise."""
    rows = []
    corrected = any(d.p_holm is not None for d in result.differences)
    # judged questions without answers (no EM): their gold documents are those judged relevant
    labels = metric_labels(not any(d.metric == "EM" for d in result.differences))
    for d in result.differences:
        low, high = d.ci
        more = "slower" if d.metric == "seconds" else "higher"
        verdict = "within noise" if d.within_noise else f"{'A' if d.diff > 0 else 'B'} {more}"
        p = "" if d.p is None else f"{d.p:.3g}"
        holm = f"<td>{d.p_holm:.3g}</td>" if d.p_holm is not None else (
            "<td></td>" if corrected else "")
        rows.append(f"<tr class='{'fe-noise' if d.within_noise else 'fe-real'}'>"
                    f"<td>{esc(labels.get(d.metric, d.metric))}</td>"
                    f"<td>{d.a:.3f}</td><td>{d.b:.3f}</td>"
                    f"<td>{_number(d.diff, d.metric)}</td>"
                    f"<td>[{_number(low, d.metric)}, {_number(high, d.metric)}]</td>"
                    f"<td>{p}</td>{holm}<td>{verdict}</td><td>{d.n}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "metric", "A", "B", "A − B", "95% interval", "McNemar p (pass/fail measures)",
        *(["Holm p"] if corrected else []), "", "questions"))
    shared = result.shared
    only = ""
    if shared < max(result.a_questions, result.b_questions):
        only = (f" (A has {result.a_questions}, B {result.b_questions}: only the "
                "shared ones are compared)")
    caption = (f"A = {esc(result.a)}, B = {esc(result.b)}: paired over {shared} "
               f"shared questions{only}; 95% intervals from {result.resamples:,} paired "
               f"bootstrap resamples (seed {result.seed})."
               + (" Several comparisons are shown: Holm p corrects McNemar's p for their "
                  "number." if corrected else ""))
    a_corpus, b_corpus = result.a_corpus, result.b_corpus
    if a_corpus and b_corpus and a_corpus != b_corpus:
        caption += (f"</p><p class='fe-error'>A searched {esc(a_corpus)}, B searched "
                    f"{esc(b_corpus)}: the difference is as much the corpora's as the "
                    "pipelines'. For a fair pair, evaluate B over a corpus that holds the "
                    "dataset's paragraphs (pooled holds dev500's).")
    return (f"<div class='fe-paired'><p>{caption}</p><table class='fe-table'><thead><tr>"
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
