"""Diagnose's "Assessors" view: two assessors of an evaluation's question set side by side
(engine.service.judging.Judging.compared): their agreement on what both judged (weighted
Cohen's kappa with its interval, and the 4x4 grades matrix), each paradigm's nDCG@10 under
each one's grades alone, and whether the paradigms rank the same (Kendall's tau); under
them, every two people who judged a document in common, with their kappa.
"""

from __future__ import annotations

import math
from functools import partial

import gradio as gr

from app.errors import refusing
from app.tabs.base import PRIVATE, Refresh
from app.views.annotation import agreement_table
from app.views.trace import esc
from engine.errors import EngineError
from engine.judging.measures import is_person
from engine.service.explorer import Explorer
from engine.service.judging import AssessorComparison
from engine.store.judgments import GRADES

OPEN_FIRST = "Diagnose an evaluation of a question set first (its questions judged)."


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def compared_html(found: AssessorComparison) -> str:
    """The two assessors' agreement, grades matrix and the paradigms' scores and order."""
    agreed, first, second = found.agreement, esc(found.first), esc(found.second)
    head = "".join(f"<th>{g} {esc(label)}</th>" for g, label in GRADES.items())
    matrix = "".join(f"<tr><th>{g} {esc(GRADES[g])}</th>"
                     + "".join(f"<td>{n}</td>" for n in row) + "</tr>"
                     for g, row in enumerate(agreed.matrix))
    scores = "".join(f"<tr><td>{esc(p)}</td><td>{_number(a)}</td><td>{_number(b)}</td></tr>"
                     for p, (a, b) in found.scores.items())
    tau = found.tau
    order = ("fewer than two paradigms are scored under both" if tau is None else
             "the same order" if _number(tau) == "1.000" else
             "the order changes" if tau < 1 else "")
    measure = esc(found.measure)
    return (f"<div class='fe-kept' id='fe-diag-assessors-summary'>{agreed.pairs} documents "
            f"judged by both {first} and {second}: exact agreement {_number(agreed.exact)}, "
            f"linear-weighted kappa {agreed.weighted_said()}, kappa {_number(agreed.kappa)}. "
            f"Paradigms by {measure}: Kendall's tau {_number(tau)} (p {_number(found.p)}): "
            f"{order}.</div>"
            f"<table class='fe-table' id='fe-diag-assessors-matrix'><caption>Grades (rows: "
            f"{first}, columns: {second})</caption><tr><th></th>{head}</tr>{matrix}</table>"
            f"<table class='fe-table' id='fe-diag-assessors-scores'><caption>{measure} at "
            f"each paradigm's last cut, under each one's grades alone, over the "
            f"{found.questions} questions both judged</caption><tr><th>"
            f"paradigm</th><th>{first}</th><th>{second}</th></tr>{scores}</table>")


@refusing(outputs=2)
def choices(explorer: Explorer, evaluation_id) -> tuple:
    """The assessors of the evaluation's question set: the busiest person first, then a
    judge."""
    if evaluation_id is None:
        return gr.Dropdown([]), gr.Dropdown([])
    dataset = explorer.evaluations.evaluation(evaluation_id).dataset
    found = list(explorer.judging.assessors(dataset)) \
        if explorer.catalog.dataset_corpus(dataset) else []
    judges = [a for a in found if not is_person(a)]
    people = [a for a in found if a not in judges]
    first = (people or found or [None])[0]
    second = next((a for a in judges + people if a != first), None)
    return gr.Dropdown(found, value=first), gr.Dropdown(found, value=second)


@refusing()
def compare(explorer: Explorer, evaluation_id, first, second) -> str:
    if evaluation_id is None:
        raise EngineError(OPEN_FIRST)
    dataset = explorer.evaluations.evaluation(int(evaluation_id)).dataset
    if explorer.catalog.dataset_corpus(dataset) is None:
        raise EngineError(f"Evaluation {evaluation_id} is of {dataset}, whose gold comes with "
                          "it: no one judges it here. This view compares the assessors of a "
                          "question set judged in the Judge tab.")
    if not first or not second or first == second:
        raise EngineError("Pick two different assessors of the question set: a person "
                          "and the LLM judge, say.")
    return (compared_html(explorer.judging.compared(int(evaluation_id), first, second))
            + agreement_table(explorer.judging.pairwise_agreement(dataset),
                              "documents both judged"))


def assessor_views(explorer: Explorer, current: gr.State, ids: gr.Dropdown) -> Refresh:
    """The view's widgets and events; returns what lists the evaluation's assessors (run
    after each diagnosis)."""
    gr.Markdown("Where two assessors judged the same documents of this evaluation's "
                "question set (a person and the LLM judge, or two people): how far they "
                "agree, and whether the paradigms rank the same under each one's grades.")
    with gr.Row():
        first = gr.Dropdown([], label="Assessor", elem_id="fe-diag-assessor-a", scale=2)
        second = gr.Dropdown([], label="against", elem_id="fe-diag-assessor-b", scale=2)
        go = gr.Button("Compare the assessors", scale=1, elem_id="fe-diag-assessors-go")
    shown = gr.HTML(elem_id="fe-diag-assessors")
    go.click(partial(compare, explorer), [current, first, second], shown, **PRIVATE)
    ids.input(lambda: "", None, shown, **PRIVATE)
    return Refresh(partial(choices, explorer), [first, second], inputs=[current])
