"""What the Sweep tab shows: each point of a sweep as its metric against median seconds per
question, the Pareto frontier drawn through the points nothing beats, and the table of
points (telling apart, or saying so, points that tie on time)."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.figures import failsafe, text_figure
from engine.metrics import at_stage


def frontier_columns(metric: str) -> list[str]:
    return ["point", metric, "ms per question (median)", "on the frontier"]


def milliseconds(seconds: float) -> float:
    """Seconds as milliseconds to 0.1 ms, all the precision a summary keeps (its seconds
    are rounded to 4 decimals): points a few ms apart no longer all read 0.085 s."""
    return round(seconds * 1000, 1)


# why points tie: a sweep reuses stages across its grid (engine.stages.base.reusing_stages)
SHARED = (" A stage whose smaller cut is the head of its larger one (a search, a re-ranker "
          "over the same candidates) ran once per question, and each point it served carries "
          "that run's time: a search for the top 10 costs what one for the top 100 does.")


def tie_note(points: list[tuple[str, float, float]]) -> str:
    """Which points take the same median time, to the 0.1 ms kept ("" when none do): the
    frontier cannot tell them apart by speed, only by the metric."""
    by_time: dict[float, list[str]] = {}
    for label, seconds, _ in sorted(points, key=lambda p: p[1]):
        by_time.setdefault(milliseconds(seconds), []).append(label)
    tied = {ms: labels for ms, labels in by_time.items() if len(labels) > 1}
    if not tied:
        return ""
    if len(by_time) == 1:
        ((ms, _),) = tied.items()
        return f" All {len(points)} points tie on time ({ms:,.1f} ms per question).{SHARED}"
    return " Tied on time: " + "; ".join(f"{', '.join(labels)} ({ms:,.1f} ms)"
                                         for ms, labels in tied.items()) + "." + SHARED


# trec_eval's measures of the last cut (what the reader is sent, if one runs), as a sweep's
# frontier offers them: a test collection's points have these and no answer measures
LAST_CUT = {"nDCG@10": "nDCG@10", "MAP": "AP", "MRR": "RR"}


def frontier_points(summaries: dict[str, dict], metric: str) -> list[tuple[str, float, float]]:
    """(label, median seconds, metric) of every point that has both."""
    values = {label: last_cut(s, LAST_CUT[metric]) if metric in LAST_CUT else s.get(metric)
              for label, s in summaries.items()}
    return [(label, s["seconds_total_median"], values[label])
            for label, s in summaries.items()
            if values[label] is not None and "seconds_total_median" in s]


def last_cut(summary: dict, measure: str) -> float | None:
    """`measure` of the last stage that has it (stages in run order, as the summary keeps
    their seconds), None if none does."""
    return next((summary[at_stage(measure, stage)] for stage in reversed(_stages(summary))
                 if at_stage(measure, stage) in summary), None)


def first_cut(summary: dict, measure: str) -> float | None:
    """`measure` of the first stage that has it (the retrieval's ranking), None if none
    does."""
    return next((summary[at_stage(measure, stage)] for stage in _stages(summary)
                 if at_stage(measure, stage) in summary), None)


def _stages(summary: dict) -> list[str]:
    """A summary's stages in run order, as it keeps their seconds."""
    return [k.removeprefix("seconds_").removesuffix("_median") for k in summary
            if k.startswith("seconds_") and k.endswith("_median")]


def frontier_rows(points: list[tuple[str, float, float]], front: list[str]) -> list[list]:
    return [[label, round(value, 3), milliseconds(seconds), "yes" if label in front else ""]
            for label, seconds, value in sorted(points, key=lambda p: p[1])]


@failsafe
def frontier_figure(points: list[tuple[str, float, float]], front: list[str],
                    metric: str) -> go.Figure:
    """Every point as metric against median seconds, the Pareto frontier drawn through
    the points nothing beats; one colour per paradigm."""
    if not points:
        return text_figure(f"No point with {metric} and seconds: a retrieval-only sweep has "
                           "AR@k and gold-document recall, not EM.")
    kinds = list(dict.fromkeys(label.split(" ")[0] for label, _, _ in points))
    fig = go.Figure([go.Scatter(
        x=[s for label, s, _ in points if label.split(" ")[0] == kind],
        y=[v for label, _, v in points if label.split(" ")[0] == kind],
        text=[label for label, _, _ in points if label.split(" ")[0] == kind],
        mode="markers", name=kind, marker={"size": 10},
        hovertemplate="%{text}<br>%{x:.4f} s, %{y:.3f}<extra></extra>") for kind in kinds])
    on = sorted((p for p in points if p[0] in front), key=lambda p: p[1])
    fig.add_trace(go.Scatter(x=[p[1] for p in on], y=[p[2] for p in on], mode="lines+text",
                             text=[p[0] for p in on], textposition="top center",
                             name="frontier", line={"dash": "dot", "color": "#333"},
                             hoverinfo="skip"))
    fig.update_xaxes(autorange=True, automargin=True)
    fig.update_layout(title=f"{metric} against seconds per question: the Pareto frontier",
                      xaxis_title="seconds per question (median)", yaxis_title=metric,
                      yaxis_range=[0, 1.05], height=420,
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig
