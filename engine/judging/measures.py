"""Judgments into measures: which assessor's grades a collection is measured by, and stored
runs measured again under other judgments without running them again.

A collection's published judgments are, per (question, document), a person's latest grade;
where no person judged it, the grade of the generated question's source passage
("generated:<backend>"); the LLM judge's ("llm:...") only where asked for. Any stored run
(an evaluation's traces keep every cut) is measured again by `annotate` against a question
judged so, which is what Evaluate and Diagnose read; `remeasured` gives each paradigm's
mean of a measure under one assessor's grades, the scores `agreement.same_order` compares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.documents import with_judgments
from engine.metrics import at_stage
from engine.paradigms.base import annotate
from engine.trace import RunTrace

GENERATED, LLM = "generated:", "llm:"


def is_person(assessor: str) -> bool:
    return not assessor.startswith((GENERATED, LLM))


def judge_name(kind: str, model: str, endpoint: str = "") -> str:
    """The assessor name of a model's judgments: `kind` (GENERATED or LLM), then whether it
    ran here or behind an endpoint, then the model ("llm:endpoint:smollm2-gguf")."""
    return f"{kind}{'endpoint' if endpoint else 'local'}:{model}"


def published(judgments: Iterable, with_llm: bool = False) -> dict[str, dict[str, int]]:
    """{question id: {document id: grade}} from `judgments` (engine.store.judgments, oldest
    first): a person's latest grade, else a generated question's source, else (`with_llm`)
    the LLM judge's latest."""
    rank = {"person": 3, "generated": 2, "llm": 1}
    found: dict[tuple[str, str], tuple[int, int]] = {}  # (q, doc): (precedence, grade)
    for j in judgments:
        kind = "person" if is_person(j.assessor) else \
            "generated" if j.assessor.startswith(GENERATED) else "llm"
        if kind == "llm" and not with_llm:
            continue
        key = (j.question_id, j.document_id)
        if key not in found or rank[kind] >= found[key][0]:
            found[key] = (rank[kind], j.grade)
    grades: dict[str, dict[str, int]] = {}
    for (question, document), (_, grade) in found.items():
        grades.setdefault(question, {})[document] = grade
    return grades


def remeasured(traces: Iterable[RunTrace], grades: Mapping[str, Mapping[str, int]],
               measure: str = "nDCG@10") -> dict[str, float]:
    """{paradigm: mean of `measure` at its last cut} of stored runs (each with its gold),
    measured against `grades` instead; questions `grades` judges nothing of are left out,
    and a run that ranked nothing for a question with relevant documents counts 0."""
    sums: dict[str, list[float]] = {}
    for trace in traces:
        if trace.gold is None or not grades.get(trace.gold.id):
            continue
        again = annotate(trace, with_judgments(trace.gold, dict(grades[trace.gold.id])))
        cut = next((s.name for s in reversed(again.stages)
                    if at_stage(measure, s.name) in again.metrics), None)
        if cut is not None:
            sums.setdefault(trace.paradigm, []).append(again.metrics[at_stage(measure, cut)])
        elif not trace.error and again.gold.supporting_titles:  # ranked nothing (its
            sums.setdefault(trace.paradigm, []).append(0.0)  # classifier skipped): 0
    return {paradigm: sum(values) / len(values) for paradigm, values in sums.items()}
