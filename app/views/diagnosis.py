"""What the Diagnose tab shows: where each paradigm lost the answer over an evaluation (a
stacked bar per paradigm, a flow per paradigm), the questions of one outcome, and paired
differences with their intervals. HTML and plotly only; the numbers come from
engine.eval.outcomes and engine.eval.paired."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.figures import failsafe, text_figure
from app.views.trace import esc
from engine.eval import outcomes as oc

LOST = ("#f58518", "#e45756", "#ff9d45", "#b279a2", "#ffbf79", "#9d755d")
COLORS = {oc.SKIPPED: "#79706e", oc.NOT_RETRIEVED: "#b2182b", oc.REACHED: "#4c78a8",
          oc.READ_WRONG: "#eeca3b", oc.RIGHT: "#54a24b", oc.NO_SPAN: "#bab0ac"}
SEPARATOR = " · "
THIS_EVALUATION = "(none: B from this evaluation)"
METRIC_LABELS = {"gold_doc_recall": "gold-document recall (read)",
                 "nDCG@10": "nDCG@10 (sent to the reader)", "MRR": "MRR (sent to the reader)",
                 "seconds": "seconds per question (median)"}


def color(outcome: str, cuts: list[str]) -> str:
    if outcome in COLORS:
        return COLORS[outcome]
    cut = outcome.removeprefix("lost at ")
    return LOST[(cuts.index(cut) if cut in cuts else 0) % len(LOST)]


def _all_cuts(attribution: dict[str, dict]) -> list[str]:
    return list(dict.fromkeys(c for found in attribution.values() for c in found["cuts"]))


@failsafe
def outcome_bars(attribution: dict[str, dict], track: str = "answer") -> go.Figure:
    """One stacked bar per paradigm: its questions by outcome, earliest loss at the bottom."""
    if not attribution:
        return text_figure("Open an evaluation to see where each paradigm loses the answer.")
    names, cuts = list(attribution), _all_cuts(attribution)
    order = oc.in_funnel_order(o for found in attribution.values() for o in found["counts"])
    fig = go.Figure([go.Bar(
        x=names, y=[attribution[n]["counts"].get(o, 0) for n in names], name=o,
        marker_color=color(o, cuts), text=[attribution[n]["counts"].get(o) or "" for n in names],
        customdata=[segment_value(n, o) for n in names],  # what a click on it opens
        textposition="inside",
        hovertemplate=f"%{{x}}: %{{y}} questions {esc(o)} (click to list them)<extra></extra>")
        for o in order])
    what = "the gold answer" if track == "answer" else "all supporting documents"
    fig.update_layout(barmode="stack", title=f"Where each paradigm loses {what}",
                      yaxis_title="questions", height=380, legend={"traceorder": "normal"},
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


@failsafe
def outcome_flow(paradigm: str, found: dict | None) -> go.Figure:
    """A Sankey of one paradigm: all questions -> retrieved -> kept by each later cut ->
    answered right, with each loss leaving the flow where it happened."""
    if not found or not found["counts"]:
        return text_figure("Pick a paradigm of the evaluation to see its flow.")
    cuts, counts = found["cuts"], found["counts"]
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
    for o in (oc.NO_SPAN, oc.SKIPPED, oc.NOT_RETRIEVED):
        if counts.get(o):
            links.append((current, node(f"{o} ({counts[o]})", COLORS[o]), counts[o]))
    if cuts and beyond(0):
        links.append((current, kept := node(f"retrieved ({beyond(0)})", "#4c78a8"), beyond(0)))
        current = kept
        for i, cut in enumerate(cuts[1:], start=1):
            lost = counts.get(oc.lost_at(cut), 0)
            if lost:
                links.append((current, node(f"lost at {cut} ({lost})", color(oc.lost_at(cut),
                                                                              cuts)), lost))
            if beyond(i):
                links.append((current, kept := node(f"kept by {cut} ({beyond(i)})", "#4c78a8"),
                              beyond(i)))
                current = kept
        for o in (oc.REACHED, oc.READ_WRONG, oc.RIGHT):
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


def _rank(outcome: str, cuts: list[str]) -> int:
    """How many cuts an outcome passed: -1 before the first, len(cuts) past all."""
    if outcome in (oc.NO_SPAN, oc.SKIPPED, oc.NOT_RETRIEVED):
        return -1
    cut = outcome.removeprefix("lost at ")
    if cut != outcome and cut in cuts:
        return cuts.index(cut)
    return len(cuts)


def segment_value(paradigm: str, outcome: str) -> str:
    """The value naming one (paradigm, outcome) segment: "flat · lost at reranker"."""
    return f"{paradigm}{SEPARATOR}{outcome}"


def segment_choices(attribution: dict[str, dict]) -> list[tuple[str, str]]:
    """(label, value) per (paradigm, outcome) segment, as the Dropdown takes them."""
    return [(f"{segment_value(paradigm, o)} ({n})", segment_value(paradigm, o))
            for paradigm, found in attribution.items() for o, n in found["counts"].items()]


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


def segment_positions(attribution: dict[str, dict], segment: str) -> tuple[str, list]:
    """(paradigm, question positions) of a segment value from `segment_choices`."""
    paradigm, _, o = (segment or "").partition(SEPARATOR)
    return paradigm, attribution.get(paradigm, {}).get("questions", {}).get(o, [])


def _number(value: float, metric: str) -> str:
    return f"{value:+.3f}" if metric != "seconds" else f"{value:+.2f}"


def paired_table(result: dict) -> str:
    """A minus B per metric: both values, the difference, its 95% interval, the McNemar p
    and whether it is within noise."""
    rows = []
    corrected = any("p_holm" in d for d in result["differences"])
    for d in result["differences"]:
        metric = d["metric"]
        low, high = d["ci"]
        more = "slower" if metric == "seconds" else "higher"
        verdict = ("within noise" if d["within_noise"] else
                   f"{'A' if d['diff'] > 0 else 'B'} {more}")
        p = "" if d["p"] is None else f"{d['p']:.3g}"
        holm = f"<td>{d['p_holm']:.3g}</td>" if "p_holm" in d else (
            "<td></td>" if corrected else "")
        rows.append(f"<tr class='{'fe-noise' if d['within_noise'] else 'fe-real'}'>"
                    f"<td>{esc(METRIC_LABELS.get(metric, metric))}</td>"
                    f"<td>{d['a']:.3f}</td><td>{d['b']:.3f}</td>"
                    f"<td>{_number(d['diff'], metric)}</td>"
                    f"<td>[{_number(low, metric)}, {_number(high, metric)}]</td>"
                    f"<td>{p}</td>{holm}<td>{verdict}</td><td>{d['n']}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "metric", "A", "B", "A − B", "95% interval", "McNemar p",
        *(["Holm p"] if corrected else []), "", "questions"))
    shared = result["shared"]
    only = ""
    if shared < max(result["a_questions"], result["b_questions"]):
        only = (f" (A has {result['a_questions']}, B {result['b_questions']}: only the "
                "shared ones are compared)")
    caption = (f"A = {esc(result['a'])}, B = {esc(result['b'])}: paired over {shared} "
               f"shared questions{only}; 95% intervals from {result['resamples']:,} paired "
               f"bootstrap resamples (seed {result['seed']})."
               + (" Several comparisons are shown: Holm p corrects McNemar's p for their "
                  "number." if corrected else ""))
    a_corpus, b_corpus = result.get("a_corpus"), result.get("b_corpus")
    if a_corpus and b_corpus and a_corpus != b_corpus:
        caption += (f"</p><p class='fe-error'>A searched {esc(a_corpus)}, B searched "
                    f"{esc(b_corpus)}: the difference is as much the corpora's as the "
                    "pipelines'. For a fair pair, evaluate B over a corpus that holds the "
                    "dataset's paragraphs (pooled holds dev500's).")
    return (f"<div class='fe-paired'><p>{caption}</p><table class='fe-table'><thead><tr>"
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def frontier_columns(metric: str) -> list[str]:
    return ["point", metric, "ms per question (median)", "on the frontier"]


def milliseconds(seconds: float) -> float:
    """Seconds as milliseconds to 0.1 ms, all the precision a summary keeps (its seconds
    are rounded to 4 decimals): points a few ms apart no longer all read 0.085 s."""
    return round(seconds * 1000, 1)


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
        return f" All {len(points)} points tie on time ({ms:,.1f} ms per question)."
    return " Tied on time: " + "; ".join(f"{', '.join(labels)} ({ms:,.1f} ms)"
                                         for ms, labels in tied.items()) + "."


def frontier_points(summaries: dict[str, dict], metric: str) -> list[tuple[str, float, float]]:
    """(label, median seconds, metric) of every point that has both."""
    return [(label, s["seconds_total_median"], s[metric]) for label, s in summaries.items()
            if metric in s and "seconds_total_median" in s]


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


def agreement_table(found: dict[str, dict]) -> str:
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
        f"<tr><td>{esc(p)}</td><td>{s['runs']}</td><td>{share(s['same_top'])} "
        f"<small>of {s['compared']}</small></td><td>{number(s['spearman_mean'])} / "
        f"{number(s['spearman_median'])}</td><td>{share(s['answer_changes'])}</td>"
        f"<td>{s['passages']:.1f}</td><td>{s['ablation_seconds']:.2f} s <small>"
        f"({s['cost_ratio']:.2f}× the answer's {s['answer_seconds']:.2f} s)</small></td></tr>"
        for p, s in found.items())
    return ("<table class='fe-table'><thead><tr><th>paradigm</th><th>runs</th>"
            "<th>attention's top passage = the one the answer depends on most</th>"
            "<th>Spearman, mean / median</th><th>runs where leaving one passage out changes "
            "the answer</th><th>passages read</th><th>ablation per run</th></tr></thead>"
            f"<tbody>{rows}</tbody></table><small>Leave-one-out: the answer's log-probability "
            "with each passage read left out; attention: the reader's at the answer's first "
            "token (eq3), over the same passages.</small>")


CEILING_SHOWN = ("AR@4", "EM", "F1")  # the end metrics the chart plots


def ceiling_table(found: dict) -> str:
    """Per paradigm: the actual run's means, then each cut made perfect: its means and the
    difference from the actual run with its 95% interval and (Holm-corrected) McNemar p;
    the cut that pays most on each metric in bold."""
    parts = []
    for paradigm, entry in found["paradigms"].items():
        metrics = [m for m in ("AR@4", "EM", "F1", "gold_doc_recall") if m in entry["actual"]]
        best = entry.get("pays_most", {})
        head = "".join(f"<th>{esc(METRIC_LABELS.get(m, m))}</th>" for m in metrics)
        rows = [f"<tr><td>as run</td>{''.join(_mean(entry['actual'], m) for m in metrics)}"
                f"<td>{entry['actual']['runs']}</td></tr>"]
        for cut in entry["cuts"]:
            diffs = {d["metric"]: d for d in cut["differences"]}
            cells = "".join(_ceiling_cell(cut["means"], diffs.get(m), m,
                                          best.get(m) == cut["label"]) for m in metrics)
            name = cut["label"].split(": ", 1)[-1]
            rows.append(f"<tr><td>{esc(name)}</td>{cells}<td>{cut['means']['runs']}</td></tr>")
        parts.append(f"<div class='fe-stage'><b>{esc(paradigm)}</b></div><table class='fe-table "
                     f"fe-ceilings'><thead><tr><th>made perfect</th>{head}<th>runs</th></tr>"
                     f"</thead><tbody>{''.join(rows)}</tbody></table>")
    state = "" if found["state"] == "done" else (
        f" It is {found['state']}: {found['done']} of {found['questions']} questions so far.")
    return (_gold_missing(found.get("gold"))
            + f"<div class='fe-kept'>Ceiling evaluation {found['id']} of evaluation "
            f"{found['baseline']}: each cut made perfect in turn (the gold supporting "
            "paragraphs first, added where the stage was not given them), the later stages "
            "and the reader run as usual. Each cell: the mean, and its difference from the "
            "run as it was with a 95% paired-bootstrap interval and McNemar p (Holm-corrected "
            "over every cut shown); bold: the cut that pays most. A cut whose ceiling is "
            "+0.000 throughout had its gold cut again by a later stage, which scores what it "
            "is given by its own scores and keeps its top few: improving that cut alone "
            f"pays nothing.{state}</div>"
            + "".join(parts))


def _gold_missing(gold: dict | None) -> str:
    """A warning when the evaluation's corpus lacks some questions' gold documents: a
    perfect cut adds only what the corpus holds, so their ceilings stay low."""
    if not gold or not gold["lacking"]:
        return ""
    offer = " or ".join(f"'{esc(name)}'" for name in gold["holds_it"])
    offer = (f" To measure their ceilings, evaluate over {offer}, which hold"
             f"{'s' if len(gold['holds_it']) == 1 else ''} them, and compute the ceilings "
             "of that evaluation." if offer else "")
    return (f"<div class='fe-error'>The corpus '{esc(gold['corpus'])}' lacks gold supporting "
            f"documents of {gold['lacking']} of the {gold['questions']} questions with "
            f"supporting documents ({gold['none']} have none of theirs there): a perfect cut "
            "can add only the gold the corpus holds, so their ceilings stay as low as the "
            f"run.{offer}</div>")


def _mean(means: dict, metric: str) -> str:
    return f"<td>{means[metric]:.3f}</td>" if metric in means else "<td>–</td>"


def _ceiling_cell(means: dict, d: dict | None, metric: str, best: bool) -> str:
    if d is None or metric not in means:
        return _mean(means, metric)
    low, high = d["ci"]
    p = d.get("p_holm", d.get("p"))
    test = f", p {p:.2g}" if p is not None else ""
    value = f"{means[metric]:.3f} ({d['diff']:+.3f} [{low:+.3f}, {high:+.3f}]{test})"
    return f"<td>{'<b>' + value + '</b>' if best else value}</td>"


@failsafe
def ceiling_figure(found: dict) -> go.Figure:
    """Ceiling minus actual per cut made perfect, per paradigm, on AR@4, EM and F1, with
    95% intervals: which stage's improvement pays most."""
    if not found or not found.get("paradigms"):
        return text_figure("No ceilings yet.")
    x = [[], []]
    values: dict[str, list] = {m: [] for m in CEILING_SHOWN}
    for paradigm, entry in found["paradigms"].items():
        for cut in entry["cuts"]:
            x[0].append(paradigm)
            x[1].append(cut["label"].split(": perfect ", 1)[-1])
            diffs = {d["metric"]: d for d in cut["differences"]}
            for metric in CEILING_SHOWN:
                values[metric].append(diffs.get(metric))
    fig = go.Figure()
    for metric, found_diffs in values.items():
        if not any(found_diffs):
            continue
        diff = [d["diff"] if d else None for d in found_diffs]
        fig.add_bar(x=x, y=diff, name=metric, error_y={
            "type": "data", "symmetric": False,
            "array": [d["ci"][1] - d["diff"] if d else 0 for d in found_diffs],
            "arrayminus": [d["diff"] - d["ci"][0] if d else 0 for d in found_diffs]})
    fig.update_layout(barmode="group", title="Ceiling minus as run, per cut made perfect "
                      "(95% paired intervals)", yaxis_title="difference", height=420,
                      margin={"l": 50, "r": 20, "t": 50, "b": 60})
    return fig


FAR_NOTE = "<br>in a group far from the corpus"


@failsafe
def coverage_figure(found: dict, paradigm: str = "") -> go.Figure:
    """The coverage map: a sample of the corpus's passages in grey, the questions coloured
    by `paradigm`'s outcome (the first paradigm's by default), the questions of groups far
    from the corpus ringed in red."""
    questions = found.get("questions") or []
    if not questions:
        return text_figure("No questions to map.")
    paradigm = paradigm or next(iter(questions[0]["outcomes"]), "")
    far = {p for g in found["groups"] if g["far"] for p in g["positions"]}
    fig = go.Figure()
    passages = found["passages"]
    fig.add_scattergl(x=[p["x"] for p in passages], y=[p["y"] for p in passages],
                      mode="markers", name="passages (a sample)",
                      marker={"size": 3, "color": "#c7c7c7"},
                      text=[esc(p["title"]) for p in passages],
                      hovertemplate="passage: %{text}<extra></extra>")
    outcomes = [q["outcomes"].get(paradigm, "") for q in questions]
    cuts = [o.removeprefix("lost at ") for o in outcomes if o.startswith("lost at ")]
    for outcome in oc.in_funnel_order(set(outcomes)):
        shown = [q for q, o in zip(questions, outcomes, strict=True) if o == outcome]
        fig.add_scattergl(
            x=[q["x"] for q in shown], y=[q["y"] for q in shown], mode="markers",
            name=outcome or "no outcome",
            marker={"size": 9, "color": color(outcome, cuts) if outcome else "#4c78a8",
                    "line": {"width": [3 if q["position"] in far else 0 for q in shown],
                             "color": "#d62728"}},
            text=[f"#{q['position']} {esc(q['question'][:90])}<br>nearest passage: "
                  f"{esc(q['nearest'][0]['title'] if q['nearest'] else '-')} (cosine "
                  f"{q['cover']:.2f}){FAR_NOTE if q['position'] in far else ''}"
                  for q in shown],
            hovertemplate="%{text}<extra>" + esc(outcome) + "</extra>")
    fitted = found["fitted_on"]
    share = sum(found["explained"])
    fig.update_layout(
        title={"text": f"Questions ({esc(paradigm)}'s outcome) among the corpus's passages",
               "subtitle": {"text": f"2 principal components of the stored vectors ({share:.0%} "
                                    f"of their variance), fitted on {fitted['questions']} "
                                    f"questions and {fitted['passages']:,} of "
                                    f"{fitted['corpus_passages']:,} passages; red rings: "
                                    "groups far from every passage"}},
        height=560, xaxis={"title": "component 1"}, yaxis={"title": "component 2"},
        legend={"orientation": "h", "y": -0.15}, margin={"l": 50, "r": 20, "t": 80, "b": 40})
    return fig


def coverage_table(found: dict) -> str:
    """The groups of questions far from the corpus, each with the passages nearest it."""
    far = [g for g in found["groups"] if g["far"]]
    by_position = {q["position"]: q for q in found["questions"]}
    head = (f"<div class='fe-kept'>{len(found['questions'])} questions in "
            f"{len(found['groups'])} groups; a group is far from the corpus when its "
            f"questions' median nearest-passage cosine is below {found['far_below']:.3f}, "
            "the lower quartile over all questions.</div>")
    if not far:
        return head + "<div class='fe-progress'>No group of questions is far from the corpus."
    rows = []
    for g in far:
        asked = "<br>".join(f"#{p} {esc(by_position[p]['question'][:120])}"
                            for p in g["positions"][:5])
        more = f"<br><small>and {len(g['positions']) - 5} more</small>" \
            if len(g["positions"]) > 5 else ""
        near = "<br>".join(f"<b>{esc(n['title'])}</b> ({n['cosine']:.2f}): "
                           f"{esc(n['text'][:140])}" for n in g["nearest"])
        rows.append(f"<tr><td>{g['size']}</td><td>{g['median_cover']:.3f}</td>"
                    f"<td>{asked}{more}</td><td>{near}</td></tr>")
    return (head + "<table class='fe-table fe-coverage'><thead><tr><th>questions</th>"
            "<th>median cosine to the nearest passage</th><th>which</th><th>the passages "
            f"nearest the group</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
