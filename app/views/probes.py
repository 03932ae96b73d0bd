"""What Diagnose computes on demand about an evaluation, as HTML and plotly: each stage's
ceiling (every cut made perfect in turn, engine.eval.ceilings), the corpus's coverage of
its questions (one map of the stored vectors, engine.eval.coverage) and attention against
leave-one-out attribution (engine.eval.ablations)."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.diagnosis import color, lost_cuts
from app.views.figures import failsafe, text_figure
from app.views.labels import metric_labels
from app.views.trace import esc
from engine.eval import outcomes as oc
from engine.eval.ablations import AblationAgreement
from engine.eval.coverage import CoverageMap
from engine.eval.paired import PairedDifference
from engine.service.diagnosis import CEILING_METRICS, CeilingTable, GoldCoverage


def agreement_table(found: dict[str, AblationAgreement]) -> str:
    """Per paradigm: attention against leave-one-out attribution over the runs that carry
    an ablation (engine.eval.ablations), or how to get such runs."""
    if not found:
        return ("<div class='fe-progress'>No run of this evaluation has a leave-one-out "
                "attribution. Evaluate with the reader option <b>ablation</b> ticked (in "
                "each paradigm's reader options). Explore's \"Attribute the answer\" "
                "attributes the one run it shows, not the stored evaluation.</div>")

    def share(value) -> str:
        return "–" if value is None else f"{value:.0%}"

    def number(value, digits: int = 2) -> str:
        return "–" if value is None else f"{value:+.{digits}f}"

    rows = "".join(
        f"<tr><td>{esc(p)}</td><td>{s.runs}</td><td>{share(s.same_top)} "
        f"<small>of {s.compared}</small></td><td>{number(s.spearman_mean)} / "
        f"{number(s.spearman_median)}</td><td>{share(s.answer_changes)}</td>"
        f"<td>{s.passages:.1f}</td><td>{s.ablation_seconds:.2f} s <small>"
        f"({_ratio(s.cost_ratio)} the answer's {s.answer_seconds:.2f} s)</small></td></tr>"
        for p, s in found.items())
    return ("<table class='fe-table'><thead><tr><th>paradigm</th><th>runs</th>"
            "<th>attention's top passage = the one the answer depends on most</th>"
            "<th>Spearman, mean / median</th><th>runs where leaving one passage out changes "
            "the answer</th><th>passages read</th><th>ablation per run</th></tr></thead>"
            f"<tbody>{rows}</tbody></table><small>Leave-one-out: the answer's log-probability "
            "with each passage read left out; attention: the reader's at the answer's first "
            "token (eq3), over the same passages.</small>")


def _ratio(value: float | None) -> str:
    """"2.50×", or "–" where the answer took no measurable time."""
    return "–" if value is None else f"{value:.2f}×"


CEILING_SHOWN = ("AR@4", "EM", "F1", "nDCG@10")  # the end metrics the chart plots


def _judged(found: CeilingTable) -> bool:
    """Whether a ceiling table's evaluation is of judged questions without answers (a
    test collection's): no answer measure anywhere."""
    return not any(m in entry.actual for entry in found.paradigms.values()
                   for m in ("AR@4", "EM"))


def ceiling_table(found: CeilingTable) -> str:
    """Per paradigm: the actual run's means, then each cut made perfect: its means and the
    difference from the actual run with its 95% interval and (Holm-corrected) McNemar p;
    the cut that pays most on each metric in bold."""
    parts = []
    judged = _judged(found)
    labels = metric_labels(judged)
    for paradigm, entry in found.paradigms.items():
        metrics = [m for m in CEILING_METRICS if m in entry.actual]
        head = "".join(f"<th>{esc(labels.get(m, m))}</th>" for m in metrics)
        rows = [f"<tr><td>as run</td>{''.join(_mean(entry.actual, m) for m in metrics)}"
                f"<td>{entry.actual['runs']}</td></tr>"]
        for cut in entry.cuts:
            diffs = {d.metric: d for d in cut.differences}
            cells = "".join(_ceiling_cell(cut.means, diffs.get(m), m,
                                          entry.pays_most.get(m) == cut.label)
                            for m in metrics)
            name = cut.label.split(": ", 1)[-1]
            rows.append(f"<tr><td>{esc(name)}</td>{cells}<td>{cut.means['runs']}</td></tr>")
        parts.append(f"<div class='fe-stage'><b>{esc(paradigm)}</b></div><table class='fe-table "
                     f"fe-ceilings'><thead><tr><th>made perfect</th>{head}<th>runs</th></tr>"
                     f"</thead><tbody>{''.join(rows)}</tbody></table>")
    state = "" if found.state == "done" else (
        f" It is {found.state}: {found.done} of {found.questions} questions so far.")
    return (_gold_missing(found.gold)
            + f"<div class='fe-kept'>Ceiling evaluation {found.id} of evaluation "
            f"{found.baseline}: each cut made perfect in turn "
            + ("(the documents judged relevant first, the higher grade first, added where "
               "the stage was not given them), the later stages run as usual (no reader: "
               "the questions have no answers). " if judged else
               "(the gold supporting paragraphs first, added where the stage was not given "
               "them), the later stages and the reader run as usual. ")
            + "Each cell: the mean, and its difference from the "
            "run as it was with a 95% paired-bootstrap interval and, for pass/fail measures "
            "(AR@4, EM), McNemar p (Holm-corrected over every cut shown); bold: the cut "
            "that pays most. A cut whose ceiling is "
            "+0.000 throughout had its gold cut again by a later stage, which scores what it "
            "is given by its own scores and keeps its top few: improving that cut alone "
            f"pays nothing.{state}</div>"
            + "".join(parts))


def _gold_missing(gold: GoldCoverage | None) -> str:
    """A warning when the evaluation's corpus lacks some questions' gold documents: a
    perfect cut adds only what the corpus holds, so their ceilings stay low."""
    if gold is None or not gold.lacking:
        return ""
    offer = " or ".join(f"'{esc(name)}'" for name in gold.holds_it)
    offer = (f" To measure their ceilings, evaluate over {offer}, which hold"
             f"{'s' if len(gold.holds_it) == 1 else ''} them, and compute the ceilings "
             "of that evaluation." if offer else "")
    return (f"<div class='fe-error'>The corpus '{esc(gold.corpus)}' lacks gold supporting "
            f"documents of {gold.lacking} of the {gold.questions} questions with "
            f"supporting documents ({gold.none} have none of theirs there): a perfect cut "
            "can add only the gold the corpus holds, so their ceilings stay as low as the "
            f"run.{offer}</div>")


def _mean(means: dict, metric: str) -> str:
    return f"<td>{means[metric]:.3f}</td>" if metric in means else "<td>–</td>"


def _ceiling_cell(means: dict, d: PairedDifference | None, metric: str, best: bool) -> str:
    if d is None or metric not in means:
        return _mean(means, metric)
    low, high = d.ci
    p = d.p_holm if d.p_holm is not None else d.p
    test = f", p {p:.2g}" if p is not None else ""
    value = f"{means[metric]:.3f} ({d.diff:+.3f} [{low:+.3f}, {high:+.3f}]{test})"
    return f"<td>{'<b>' + value + '</b>' if best else value}</td>"


@failsafe
def ceiling_figure(found: CeilingTable | None) -> go.Figure:
    """Ceiling minus actual per cut made perfect, per paradigm, on AR@4, EM, F1 and
    nDCG@10 (those the run has: a judged evaluation's, nDCG@10 alone), with 95% intervals:
    which stage's improvement pays most."""
    if found is None or not found.paradigms:
        return text_figure("No ceilings yet.")
    x = [[], []]
    values: dict[str, list] = {m: [] for m in CEILING_SHOWN}
    for paradigm, entry in found.paradigms.items():
        for cut in entry.cuts:
            x[0].append(paradigm)
            x[1].append(cut.label.split(": perfect ", 1)[-1])
            diffs = {d.metric: d for d in cut.differences}
            for metric in CEILING_SHOWN:
                values[metric].append(diffs.get(metric))
    fig = go.Figure()
    for metric, found_diffs in values.items():
        if not any(found_diffs):
            continue
        diff = [d.diff if d else None for d in found_diffs]
        fig.add_bar(x=x, y=diff, name=metric, error_y={
            "type": "data", "symmetric": False,
            "array": [d.ci[1] - d.diff if d else 0 for d in found_diffs],
            "arrayminus": [d.diff - d.ci[0] if d else 0 for d in found_diffs]})
    fig.update_layout(barmode="group", title="Ceiling minus as run, per cut made perfect "
                      "(95% paired intervals)", yaxis_title="difference", height=420,
                      showlegend=True,  # names the measure, a judged evaluation's one too
                      margin={"l": 50, "r": 20, "t": 50, "b": 60})
    return fig


FAR_NOTE = "<br>in a group far from the corpus"


@failsafe
def coverage_figure(found: CoverageMap, paradigm: str = "") -> go.Figure:
    """The coverage map: a sample of the corpus's passages in grey, the questions coloured
    by `paradigm`'s outcome (the first paradigm's by default), the questions of groups far
    from the corpus ringed in red."""
    questions = found.questions
    if not questions:
        return text_figure("No questions to map.")
    paradigm = paradigm or next(iter(questions[0].outcomes), "")
    far = found.far_positions()
    fig = go.Figure()
    passages = found.passages
    fig.add_scattergl(x=[p.x for p in passages], y=[p.y for p in passages],
                      mode="markers", name="passages (a sample)",
                      marker={"size": 3, "color": "#c7c7c7"},
                      text=[esc(p.title) for p in passages],
                      hovertemplate="passage: %{text}<extra></extra>")
    outcomes = [q.outcomes.get(paradigm) or "" for q in questions]  # None: no outcome
    cuts = lost_cuts(o for o in outcomes if o)
    for outcome in oc.in_funnel_order(set(outcomes)):
        shown = [q for q, o in zip(questions, outcomes, strict=True) if o == outcome]
        fig.add_scattergl(
            x=[q.x for q in shown], y=[q.y for q in shown], mode="markers",
            name=outcome or "no outcome",
            marker={"size": 9, "color": color(outcome, cuts) if outcome else "#4c78a8",
                    "line": {"width": [3 if q.position in far else 0 for q in shown],
                             "color": "#d62728"}},
            text=[f"#{q.position} {esc(q.question[:90])}<br>nearest passage: "
                  f"{esc(q.nearest[0].title if q.nearest else '-')} (cosine "
                  f"{q.cover:.2f}){FAR_NOTE if q.position in far else ''}"
                  for q in shown],
            hovertemplate="%{text}<extra>" + esc(outcome) + "</extra>")
    fitted = found.fitted_on
    share = sum(found.explained)
    fig.update_layout(
        title={"text": f"Questions ({esc(paradigm)}'s outcome) among the corpus's passages",
               "subtitle": {"text": f"2 principal components of the stored vectors ({share:.0%} "
                                    f"of their variance), fitted on {fitted.questions} "
                                    f"questions and {fitted.passages:,} of "
                                    f"{fitted.corpus_passages:,} passages; red rings: "
                                    "groups far from every passage"}},
        height=560, xaxis={"title": "component 1"}, yaxis={"title": "component 2"},
        legend={"orientation": "h", "y": -0.15}, margin={"l": 50, "r": 20, "t": 80, "b": 40})
    return fig


def coverage_table(found: CoverageMap) -> str:
    """The groups of questions far from the corpus, each with the passages nearest it."""
    far = [g for g in found.groups if g.far]
    by_position = {q.position: q for q in found.questions}
    head = (f"<div class='fe-kept'>{len(found.questions)} questions in "
            f"{len(found.groups)} groups; a group is far from the corpus when its "
            f"questions' median nearest-passage cosine is below {found.far_below:.3f}, "
            "the lower quartile over all questions.</div>")
    if not far:
        return head + "<div class='fe-progress'>No group of questions is far from the corpus."
    rows = []
    for g in far:
        asked = "<br>".join(f"#{p} {esc(by_position[p].question[:120])}"
                            for p in g.positions[:5])
        more = f"<br><small>and {len(g.positions) - 5} more</small>" \
            if len(g.positions) > 5 else ""
        near = "<br>".join(f"<b>{esc(n.title)}</b> ({n.cosine:.2f}): "
                           f"{esc(n.text[:140])}" for n in g.nearest)
        rows.append(f"<tr><td>{g.size}</td><td>{g.median_cover:.3f}</td>"
                    f"<td>{asked}{more}</td><td>{near}</td></tr>")
    return (head + "<table class='fe-table fe-coverage'><thead><tr><th>questions</th>"
            "<th>median cosine to the nearest passage</th><th>which</th><th>the passages "
            f"nearest the group</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
