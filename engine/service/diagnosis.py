"""Diagnosis of stored evaluations: where each paradigm lost the answer, and whether the
difference between two paradigms (or two evaluations) is beyond noise.

Rows stored before rows carried outcomes get them from their stored traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.documents import Corpus, Dataset
from engine.errors import ConfigError
from engine.eval.outcomes import attribution, row_outcomes
from engine.eval.paired import RESAMPLES, SEED, correct_across, paired, question_values
from engine.eval.regressions import changes
from engine.eval.summary import read_gold_doc_recall
from engine.store.evaluations import EvaluationStore, StoredEvaluation
from engine.trace import FAILED


def diagnosed_rows(evaluations: EvaluationStore, evaluation_id: int) -> list[dict]:
    """The evaluation's rows, each with its outcomes, cuts and read gold-document recall."""
    rows = evaluations.rows(evaluation_id)
    if all("outcome" in r for r in rows):
        return rows
    traces = evaluations.traces(evaluation_id)  # same order: position, then paradigm
    return [r if "outcome" in r else
            {**r, **row_outcomes(t), "gold_doc_recall": read_gold_doc_recall(t)}
            for r, t in zip(rows, traces, strict=True)]


def outcomes_of(evaluations: EvaluationStore, evaluation_id: int,
                track: str = "answer") -> dict[str, dict]:
    """engine.eval.outcomes.attribution of a stored evaluation, its paradigms in the
    order it ran them."""
    found = attribution(diagnosed_rows(evaluations, evaluation_id), track)
    ran = [p for p in evaluations.get(evaluation_id).paradigms if p in found]
    return {p: found[p] for p in [*ran, *(p for p in found if p not in ran)]}


def paired_of(evaluations: EvaluationStore, evaluation_id: int, a: str = "", b: str = "",
              other_id: int | None = None, *, resamples: int = RESAMPLES,
              seed: int = SEED) -> dict:
    """A minus B over their shared questions: paradigms `a` and `b` of one evaluation, or
    `a` of `evaluation_id` and `b` of `other_id` (each may be left empty when its
    evaluation ran one paradigm, or the other names one both ran)."""
    pair = _paired_rows(evaluations, evaluation_id, a, b, other_id)
    ids_a = {r["question_id"] for r in pair.rows_a if r.get("status") != FAILED}
    ids_b = {r["question_id"] for r in pair.rows_b if r.get("status") != FAILED}
    if not ids_a & ids_b:
        raise ConfigError(f"Evaluations {pair.first.id} and {pair.second.id} share no "
                          f"question id ({len(ids_a)} and {len(ids_b)} questions), so "
                          "nothing can be paired; compare evaluations of the same dataset.")
    return {"a": f"{pair.first.id}: {pair.a}", "b": f"{pair.second.id}: {pair.b}",
            "a_corpus": pair.first.corpus, "b_corpus": pair.second.corpus,
            "shared": len(ids_a & ids_b), "a_questions": len(ids_a),
            "b_questions": len(ids_b), "resamples": resamples, "seed": seed,
            "differences": [d.to_dict() for d in paired(pair.rows_a, pair.rows_b,
                                                        resamples=resamples, seed=seed)]}


def regressions_of(evaluations: EvaluationStore, evaluation_id: int, a: str = "",
                   b: str = "", other_id: int | None = None, metric: str = "EM") -> dict:
    """The questions B improved, regressed or left as A had them on `metric` (A and B as
    `paired_of` takes them): engine.eval.regressions.changes, with both sides named."""
    pair = _paired_rows(evaluations, evaluation_id, a, b, other_id)
    return {"a": f"{pair.first.id}: {pair.a}", "b": f"{pair.second.id}: {pair.b}",
            "a_evaluation": pair.first.id, "b_evaluation": pair.second.id,
            "a_paradigm": pair.a, "b_paradigm": pair.b,
            **changes(pair.rows_a, pair.rows_b, metric)}


@dataclass(frozen=True)
class PairedRows:
    first: StoredEvaluation
    second: StoredEvaluation
    a: str
    b: str
    rows_a: list[dict]
    rows_b: list[dict]


def _paired_rows(evaluations: EvaluationStore, evaluation_id: int, a: str, b: str,
                 other_id: int | None) -> PairedRows:
    """A's and B's rows, each paradigm named or the one its evaluation ran."""
    first = evaluations.get(evaluation_id)
    second = evaluations.get(other_id) if other_id is not None else first
    if second is first:
        if not a or not b:
            names = list(first.paradigms)
            if len(names) != 2 or a or b:
                raise ConfigError(f"Name the two paradigms of evaluation {first.id} to pair "
                                  f"(it ran {', '.join(names)}), e.g. a={names[0]!r}.")
            a, b = names
        if a == b:
            raise ConfigError(f"a and b are both {a!r}: pair two different paradigms, or "
                              "give a second evaluation id.")
    a = a or _only(first, b)
    b = b or _only(second, a)
    for evaluation, name in ((first, a), (second, b)):
        if name not in evaluation.paradigms:
            raise ConfigError(f"Evaluation {evaluation.id} has no paradigm {name!r}; it ran "
                              f"{', '.join(evaluation.paradigms)}.")
    rows_a = [r for r in diagnosed_rows(evaluations, first.id) if r["paradigm"] == a]
    rows_b = [r for r in diagnosed_rows(evaluations, second.id) if r["paradigm"] == b]
    return PairedRows(first, second, a, b, rows_a, rows_b)


def _only(evaluation, fallback: str) -> str:
    """The evaluation's one paradigm, else `fallback` (the other side's name)."""
    if len(evaluation.paradigms) == 1:
        return evaluation.paradigms[0]
    if fallback in evaluation.paradigms:
        return fallback
    raise ConfigError(f"Evaluation {evaluation.id} ran {', '.join(evaluation.paradigms)}; "
                      "name the paradigm to pair from it.")


CEILING_METRICS = ("AR@4", "EM", "F1", "gold_doc_recall")


def ceilings_of(evaluations: EvaluationStore, ceiling_id: int,
                metrics: Sequence[str] = CEILING_METRICS) -> dict:
    """A ceiling evaluation against its baseline: per paradigm, the baseline's means and,
    per cut made perfect, its means and the paired differences (ceiling minus actual, 95%
    bootstrap interval, McNemar p, Holm-corrected across every cut shown) on `metrics`,
    the cut that pays most on each metric named."""
    ceiling = evaluations.get(ceiling_id)
    if ceiling.baseline is None:
        raise ConfigError(f"Evaluation {ceiling_id} is no ceiling evaluation; compute the "
                          "ceilings of an evaluation first (Diagnose, or the API's "
                          "ceilings), then read them by the id it returns.")
    baseline = evaluations.get(ceiling.baseline)
    rows = evaluations.rows(ceiling_id)
    actual = evaluations.rows(baseline.id)
    out: dict[str, dict] = {}
    compared = []
    for label in ceiling.paradigms:
        paradigm = label.split(":", 1)[0]  # engine.eval.ceilings.label
        mine = [r for r in rows if r["paradigm"] == label]
        theirs = [r for r in actual if r["paradigm"] == paradigm]
        found = {d.metric: d.to_dict() for d in paired(mine, theirs) if d.metric in metrics}
        entry = out.setdefault(paradigm, {"actual": _means(theirs, metrics), "cuts": []})
        result = {"label": label, "means": _means(mine, metrics),
                  "differences": [found[m] for m in metrics if m in found]}
        entry["cuts"].append(result)
        compared.append(result)
    correct_across(compared)
    for entry in out.values():
        entry["pays_most"] = _pays_most(entry["cuts"], metrics)
    return {"id": ceiling.id, "baseline": baseline.id, "state": ceiling.state,
            "done": ceiling.done, "questions": ceiling.questions, "paradigms": out}


def _pays_most(cuts: list[dict], metrics: Sequence[str]) -> dict[str, str]:
    """Per metric, the cut whose ceiling gains most over the run as it was (none where no
    cut gains)."""
    best = {}
    for metric in metrics:
        gains = [(d["diff"], cut["label"]) for cut in cuts for d in cut["differences"]
                 if d["metric"] == metric and d["diff"] > 0]
        if gains:
            best[metric] = max(gains)[1]
    return best


def _means(rows: list[dict], metrics: Sequence[str]) -> dict:
    """Mean of each metric over the rows that have it (failed runs left out)."""
    answered = [question_values(r) for r in rows if r.get("status") != FAILED]
    means = {}
    for metric in metrics:
        values = [v[metric] for v in answered if metric in v]
        if values:
            means[metric] = round(sum(values) / len(values), 4)
    return {**means, "runs": len(answered)}


def gold_coverage(evaluations: EvaluationStore, evaluation_id: int, corpus: Corpus,
                  dataset: Dataset, label: str) -> dict:
    """How many of the evaluation's questions with supporting documents have some of them
    missing from `corpus` (`lacking`; `none`: not one of them there), and the corpora that
    would hold them: the corpus plus the dataset's paragraphs (what an evaluation searches
    now: engine.data.corpus.with_paragraphs) and, for a listed dataset, `pooled`. A
    perfect cut can add only the gold the corpus holds, so these questions' ceilings stay
    low whatever the stages do."""
    from engine.data.corpus import grown_name, lacking
    from engine.qa_data import dataset_path

    asked = {r["question_id"] for r in evaluations.rows(evaluation_id)}
    golds = [q for q in dataset.questions if q.id in asked and q.supporting_titles]
    there = [sum(t in corpus.by_id for t in set(q.supporting_titles)) for q in golds]
    short = sum(n < len(set(q.supporting_titles)) for n, q in zip(there, golds, strict=True))
    holds = []
    if short:
        holds = [grown_name(corpus.name, label)] if lacking(corpus, dataset) else []
        if dataset_path(label) is not None and corpus.name != "pooled":
            holds.append("pooled")
    return {"corpus": corpus.name, "questions": len(golds), "lacking": short,
            "none": sum(n == 0 for n in there), "holds_it": holds}
