"""What the Evaluate tab shows of an evaluation: the paper-style table, two stored
evaluations side by side with per-metric differences, the per-question rows, and its
plots (recall@k, recall against latency). HTML and plotly only; numbers come from
engine.eval.summary.summarise."""

from __future__ import annotations

from textwrap import shorten

import plotly.colors
import plotly.graph_objects as go

from app.views.figures import failsafe, text_figure
from app.views.frontier import first_cut, last_cut
from app.views.labels import final_cut, gold_documents
from app.views.trace import esc
from engine.eval.paired import question_values
from engine.metrics import IR_MEASURES, JUDGED_MEASURES, at_stage, measure_of
from engine.service.evaluation_jobs import EvaluationStatus
from engine.service.labelled import PREFIX as LABELLED

KS = (1, 2, 3, 4)
JUDGED_KS = (4, 10, 100)  # engine.metrics.IR_MEASURES' recall cut-offs
HEAD = ("questions", "failed", "no candidates", *(f"AR@{k}" for k in KS))
ANSWER = ("EM", "F1", "refined_EM", "reader_tokens", "llm_calls", "docs_to_reader",
          "seconds_total_median")
LABELS = {"questions": "questions", "failed": "failed (not in the means)",
          "no candidates": "found no candidates", "refined_EM": "refined EM",
          "reader_tokens": "reader tokens", "llm_calls": "LLM calls",
          "docs_to_reader": "documents read",
          "seconds_total_median": "seconds per question (median)",
          "AR@read": "answer recall of all the reader read"}
MEASURES = (*IR_MEASURES, *JUDGED_MEASURES)  # trec_eval's, of each cut's documents
MEASURE_LABELS = {"RR": "MRR", "AP": "MAP", "Judged@10": "Judged@10 (share of the top 10 "
                  "judged)", "nDCG'@10": "nDCG'@10 (condensed: unjudged left out)"}
NO_ANSWERS = "answer measures (AR@k, EM, F1)"
# nDCG@10: of the last cut (what the reader is sent; a test collection's questions have it
# and no EM, F1, AR@4 or reader)
ROW_COLUMNS = ["#", "question id", "paradigm", "question", "answer", "EM", "F1", "AR@4",
               "nDCG@10", "seconds"]
ROW_WIDTHS = ["4%", "12%", "8%", "30%", "16%", "5%", "5%", "6%", "7%", "7%"]  # "seconds" unbroken


def stage_order(summary: dict[str, dict]) -> list[str]:
    """Every stage (and LLM step) in an order every paradigm runs them in: a summary's
    seconds come in its trace's order (engine.eval.summary), while its metrics come sorted
    by name. A step several paradigms share (the reader's "answer") comes after each one's
    stages before it, not where the first paradigm has it; otherwise stages keep the order
    they are first met in, paradigm after paradigm."""
    runs = [[k[len("seconds_"):-len("_median")] for k in s
             if k.startswith("seconds_") and k.endswith("_median")
             and k != "seconds_total_median"] for s in summary.values()]
    first = list(dict.fromkeys(stage for run in runs for stage in run))
    before = {stage: set() for stage in first}  # what must come before each stage
    for run in runs:
        for i, stage in enumerate(run):
            before[stage].update(run[:i])
    order: list[str] = []
    while len(order) < len(first):
        placed = set(order)
        # the first stage met whose predecessors are all placed (or, in a cycle, the first)
        ready = [s for s in first if s not in placed and before[s] <= placed]
        order.append(ready[0] if ready else next(s for s in first if s not in placed))
    return order


def metric_order(summary: dict[str, dict], ranking: bool = True) -> list[str]:
    """The table's rows: AR@1..4, answer recall at every cut in funnel order (then of all
    the reader read), gold-document recall at every cut, nDCG@10, MRR, R@4, R@10 and P@4
    of every cut (engine.metrics.IR_MEASURES; not with `ranking` False: `ranking_table`
    lays them out), the answer metrics and costs, then each stage's median and p95
    seconds, stages in funnel order."""
    keys = list(dict.fromkeys(k for s in summary.values() for k in s))
    stages = stage_order(summary)
    cuts = [*(at_stage("AR", s) for s in stages), at_stage("AR", "read"),
            *(at_stage("gold_doc_recall", s) for s in stages)]
    if ranking:
        cuts += [*(at_stage(m, s) for s in stages for m in MEASURES),  # trec_eval's, per cut
                 *(LABELLED + at_stage(m, s) for s in stages for m in IR_MEASURES)]  # Annotate's
    cuts = [k for k in cuts if k in keys]
    cuts += [k for k in keys if k.startswith(("gold_doc_recall@", "AR@")) and k not in HEAD
             and k not in cuts]  # a cut without seconds (none today): after the known ones
    seconds = [f"seconds_{s}_{which}" for s in stages for which in ("median", "p95")]
    return [*(k for k in HEAD if k in keys), *cuts, *(k for k in ANSWER if k in keys),
            *(k for k in seconds if k in keys)]


def label(key: str, judged: bool = False) -> str:
    """A metric key's row label; `judged`: of judged questions without answers, whose
    gold documents are those judged relevant."""
    if key == "docs_to_reader" and judged:  # no reader ran
        return f"documents {final_cut(judged)}"
    if key in LABELS:
        return LABELS[key]
    if key.startswith(LABELLED):
        return f"{label(key.removeprefix(LABELLED), judged)} (Annotate's labels)"
    measure, stage = measure_of(key)
    if stage is not None and measure in MEASURES:  # the mean of RR is MRR, of AP MAP
        return f"{MEASURE_LABELS.get(measure, measure)} at {stage}"
    if stage is not None and measure == "gold_doc_recall":
        return f"{gold_documents(judged)} recall at {stage}"
    if stage is not None and measure == "AR":  # not AR@k of the final passages (HEAD)
        return f"answer recall at {stage}"
    if key.startswith("seconds_"):
        stage, _, which = key[len("seconds_"):].rpartition("_")
        return f"{stage} seconds ({which})"
    return key


COUNTS = ("llm_calls", "docs_to_reader", "reader_tokens")  # means of counts: "1", "1.5"


def _cell(value, key: str = "") -> str:
    if isinstance(value, float) and key in COUNTS:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return esc(str(value)) if value is not None else ""


def paper_table(summary: dict[str, dict]) -> str:
    """One column per paradigm, one row per metric (see `metric_order`), then the ranking
    measures of every cut (`ranking_table`)."""
    if not summary:
        return ""
    names = list(summary)
    head = "".join(f"<th>{esc(n)}</th>" for n in names)
    order = metric_order(summary, ranking=False)
    judged = not answered(summary)
    rows = [f"<tr><td>{esc(label(k, judged))}</td>"
            + "".join(f"<td>{_cell(summary[n].get(k), k)}</td>" for n in names) + "</tr>"
            for k in order]
    if judged:  # a test collection's: judged, not answered
        rows.insert(sum(k in HEAD for k in order),
                    f"<tr class='fe-no-answers'><td>{NO_ANSWERS}</td>"
                    + "<td>no answers</td>" * len(names) + "</tr>")
    rows = "".join(rows)
    return (f"<table class='fe-table fe-eval'><thead><tr><th></th>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>{ranking_table(summary)}{judged_note(summary)}")


# the ranking table's column heads: the mean of RR over questions is MRR, of AP MAP
SHORT = {"RR": "MRR", "AP": "MAP"}


def ranking_table(summary: dict[str, dict]) -> str:
    """trec_eval's measures of every cut laid out as IR papers do: a row per paradigm and
    cut (in funnel order; a cut measured against Annotate's labels too has a second row),
    a column per measure ("" when no cut has one)."""
    stages = stage_order(summary)
    kinds = (("", ""), (LABELLED, " (Annotate's labels)"))
    measures = [m for m in MEASURES if any(prefix + at_stage(m, stage) in values
                                           for values in summary.values()
                                           for prefix, _ in kinds for stage in stages)]
    if not measures:
        return ""
    rows = []
    for name, values in summary.items():
        first = True
        for prefix, what in kinds:
            for stage in stages:
                cells = [values.get(prefix + at_stage(m, stage)) for m in measures]
                if all(c is None for c in cells):
                    continue
                rows.append(f"<tr><td>{esc(name) if first else ''}</td>"
                            f"<td>{esc(stage)}{what}</td>"
                            + "".join(f"<td>{_cell(c)}</td>" for c in cells) + "</tr>")
                first = False
    head = "".join(f"<th title='{esc(MEASURE_LABELS.get(m, m))}'>{esc(SHORT.get(m, m))}</th>"
                   for m in measures)
    return ("<div class='fe-note'>Ranking measures of every cut: the documents each cut "
            "kept, in order, measured by ir_measures (trec_eval's code).</div>"
            "<table class='fe-table fe-eval-ranking'><thead><tr><th>paradigm</th>"
            f"<th>cut</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def judged_note(summary: dict[str, dict]) -> str:
    """Beside a judged evaluation's figures: how partial its judgments are, and the
    measure that leaves the unjudged out."""
    judged = {k: v for s in summary.values() for k, v in s.items() if k.startswith("Judged@")}
    if not judged or min(judged.values()) >= 1:
        return ""
    cut = min(judged, key=judged.get).removeprefix("Judged@10@")
    return (f"<div class='fe-note fe-judged-note'>Judgments are partial: as little as "
            f"{min(judged.values()):.0%} of a cut's top 10 is judged (at {esc(cut)}), and an "
            "unjudged document counts as not relevant. nDCG'@10 measures the condensed list "
            "(unjudged documents left out before measuring); where a collection judges only "
            "relevant documents (ArguAna), that list holds nothing else, so nDCG'@10 is 1 "
            "whenever one of them is retrieved. Judged@10 of a cut that keeps fewer than 10 "
            "documents is the share of those it kept (ir_measures divides by the list's "
            "length).</div>")


def answered(summary: dict[str, dict]) -> bool:
    """Whether the evaluation's questions had answers to measure (a test collection's have
    judgments only: its answer measures are "no answers", never zeros)."""
    return any(k == "EM" or k.startswith("AR@") for s in summary.values() for k in s) \
        or not any(k.startswith("nDCG@10@") for s in summary.values() for k in s)


def difference_table(a_name: str, a: dict[str, dict], b_name: str,
                     b: dict[str, dict]) -> str:
    """Two evaluations' summaries per paradigm they share: each metric, and b - a."""
    shared = [p for p in a if p in b]
    if not shared:
        return ("<div class='fe-error'>These evaluations share no paradigm: nothing to "
                "compare metric by metric. To pair two different pipelines on their shared "
                "questions, use Diagnose's \"B from another evaluation\".</div>")
    parts = []
    for paradigm in shared:
        rows = []
        judged = not answered({"a": a[paradigm], "b": b[paradigm]})
        for key in metric_order({"a": a[paradigm], "b": b[paradigm]}):
            x, y = a[paradigm].get(key), b[paradigm].get(key)
            diff = (f"{y - x:+,.3f}" if isinstance(x, int | float)
                    and isinstance(y, int | float) else "")
            rows.append(f"<tr><td>{esc(label(key, judged))}</td><td>{_cell(x)}</td>"
                        f"<td>{_cell(y)}</td>"
                        f"<td>{diff}</td></tr>")
        parts.append(f"<div class='fe-stage'><b>{esc(paradigm)}</b></div>"
                     f"<table class='fe-table fe-eval-diff'><thead><tr><th></th>"
                     f"<th>{esc(a_name)}</th><th>{esc(b_name)}</th><th>difference</th></tr>"
                     f"</thead><tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)


def question_rows(rows: list[dict]) -> list[list]:
    """The per-question table: one line per question and paradigm, questions numbered
    from 1 (`position_of` reads a row's number back as its stored position)."""
    out = []
    for r in rows:
        m = r.get("metrics", {})
        answer = (f"failed: {r['error']}" if r.get("status") == "failed" else
                  "(found no candidates) " + r["answer"] if r.get("status") == "no candidates"
                  else r["answer"])
        position = r.get("position")
        out.append(["" if position is None else position + 1,  # counted from 1, as people do
                    r.get("question_id", ""), r["paradigm"],
                    shorten(r["question"], 300), shorten(answer, 300), m.get("EM", ""),
                    round(m["F1"], 3) if "F1" in m else "", m.get("AR@4", ""),
                    round(ndcg, 3) if (ndcg := question_values(r).get("nDCG@10")) is not None
                    else "", round(sum(r.get("seconds", {}).values()), 2)])
    return out


def position_of(number) -> int:
    """The stored position of the per-question row numbered `number` (from 1)."""
    return int(number) - 1


@failsafe
def recall_at_k_figure(summary: dict[str, dict], note: str = "") -> go.Figure:
    """AR@1..4 per paradigm, as lines; `note` under the title ("partial: ..."). Judged
    questions (no answers): the recall of relevant documents at 4, 10 and 100 of the first
    cut (what retrieval found, dashed) and of the last (where the run stops: no reader
    runs on them; it holds no more than its few documents, so it is flat past them)."""
    if not summary:
        return text_figure("No evaluation yet.")
    judged = not answered(summary)
    ks = JUDGED_KS if judged else KS
    palette = plotly.colors.qualitative.Plotly  # a paradigm's lines share its colour
    if judged:
        lines = [(f"{name}, {which}", [cut(s, f"R@{k}") for k in ks], i, dash)
                 for i, (name, s) in enumerate(summary.items())
                 for which, cut, dash in (("retrieved", first_cut, "dash"),
                                          ("last cut", last_cut, "solid"))]
    else:
        lines = [(name, [s.get(f"AR@{k}") for k in ks], i, "solid")
                 for i, (name, s) in enumerate(summary.items())]
    fig = go.Figure([go.Scatter(x=list(map(str, ks)), y=y, mode="lines+markers", name=name,
                                line={"dash": dash, "color": palette[i % len(palette)]})
                     for name, y, i, dash in lines])
    title = ("Recall of the judged-relevant documents at k: retrieved, and at the last cut"
             if judged else "Answer recall of what the reader read, at k")
    fig.update_layout(title=_titled(title, note),
                      xaxis_title="k", yaxis_title="R@k" if judged else "AR@k",
                      yaxis_range=[0, 1], height=340,
                      margin={"l": 50, "r": 20, "t": 70 if note else 50, "b": 40})
    return fig


def _titled(title: str, note: str) -> dict:
    return {"text": title, **({"subtitle": {"text": note}} if note else {})}


@failsafe
def recall_latency_figure(summary: dict[str, dict], note: str = "") -> go.Figure:
    """Each paradigm as a point: median seconds per question against AR@4 (judged
    questions: nDCG@10 of the last cut); `note` under the title."""
    if not summary:
        return text_figure("No evaluation yet.")
    judged = not answered(summary)
    ys = {name: last_cut(s, "nDCG@10") if judged else s.get("AR@4")
          for name, s in summary.items()}
    # a name above a point near the top was clipped by the plot's edge: it goes below it
    fig = go.Figure([go.Scatter(x=[s.get("seconds_total_median")], y=[ys[name]],
                                mode="markers+text", text=[name], cliponaxis=False,
                                textposition="bottom center" if (ys[name] or 0) > 0.85
                                else "top center", name=name, marker={"size": 12})
                     for name, s in summary.items()])
    fig.update_layout(title=_titled("nDCG@10 against latency" if judged
                                    else "Recall against latency", note),
                      xaxis_title="seconds per question (median)",
                      yaxis_title=f"nDCG@10 ({final_cut(judged)})" if judged else "AR@4",
                      yaxis_range=[0, 1], showlegend=False,
                      height=340, margin={"l": 50, "r": 20, "t": 70 if note else 50, "b": 40})
    return fig


def progress_html(status: EvaluationStatus) -> str:
    """Questions done, time so far and left, and the state, as one line."""
    done, total = status.done, status.total
    phase = f" ({esc(status.phase)})" if status.phase else ""
    left = status.seconds_left
    pace = f", about {left:,.0f} s left" if left is not None and status.state == "running" \
        else ""
    spent = f" in {status.seconds:,.0f} s" if status.seconds is not None else ""
    if status.imported:  # stored at once: its own time is in its runs' seconds
        spent = ", imported from another pipeline's files"
    error = f": {esc(status.error)}" if status.error else ""
    # an evaluation that ended before every question ran is a warning, never a success
    kind = {"running": "fe-progress", "done": "fe-kept"}.get(status.state, "fe-error")
    means = list((status.means or {}).values())
    counts = [(sum(int(m.get(key, 0)) for m in means), "run", said)
              for key, said in (("failed", "failed"), ("no candidates", "found no "
                                                                        "candidates"))]
    if status.state != "running" and done < total:
        counts.append((total - done, "question", "not run"))
    said = "".join(f"; {n} {what}{'s' if n != 1 else ''} {verb}"
                   for n, what, verb in counts if n)
    corpus = f" over corpus '{esc(status.corpus)}'" if status.corpus else ""
    return (f"<div class='{kind}'>Evaluation {status.id}: {esc(status.state)}, "
            f"{done} of {total} questions{corpus}{phase}{spent}{pace}{said}{error}</div>")


def partial_note(status: EvaluationStatus) -> str:
    """What the table and plots of an evaluation that ended before every question ran
    stand for (empty for any other): the questions stored, and how to go on."""
    if not status.partial:
        return ""
    done, total = status.done, status.total
    way = ("Remove it and import the files again" if status.imported else
           f"Resume runs the {total - done} it lacks; Remove deletes it")
    return (f"<div class='fe-error fe-partial'>Partial: {esc(status.state)} after {done} "
            f"of {total} questions; the figures below are of those {done} only. {way}."
            "</div>")
