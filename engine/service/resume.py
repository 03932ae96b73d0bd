"""Resuming an evaluation that ended before every question ran (interrupted by a crash or a
kill, cancelled, or failed): the same paradigms, configs and corpus, over the questions it
lacks.

An evaluation keeps its plan (engine.store.evaluations, migration 7): the questions it chose
with their positions in the QA file, a sweep's paradigm kinds, a ceiling evaluation's cuts,
whether it stopped before the reader. A resume is refused, with the reason, when there is
nothing to resume (it is done or running), when it was imported (no code here runs its
pipeline), when it was stored before plans were kept, or when the corpus by its name is no
longer the corpus it searched (another fingerprint: its runs would not compare).
"""

from __future__ import annotations

from dataclasses import asdict, fields

from engine.documents import Corpus, Question, question_from_dict
from engine.errors import ConfigError
from engine.service.evaluation_request import EvaluationRequest
from engine.store.evaluations import IMPORTED, RESUMABLE, EvaluationStore, StoredEvaluation

_QUESTION_FIELDS = {f.name for f in fields(Question)}


def plan_of(chosen: list[tuple[int, Question]], kinds: dict, cuts: dict,
            retrieval_only: bool, chosen_by: dict | None = None) -> dict:
    """What a resume needs of an evaluation about to run `chosen` ((position, question)),
    and how they were chosen (`chosen_by`: {limit, sample, seed}, what Evaluate's form
    shows again when the evaluation is opened)."""
    return {"questions": [[position, asdict(question)] for position, question in chosen],
            "kinds": dict(kinds), "cuts": dict(cuts), "retrieval_only": retrieval_only,
            "chosen_by": dict(chosen_by or {})}


def planned_questions(plan: dict) -> list[tuple[int, Question]]:
    """(position, question) of every question a plan chose."""
    return [(int(position), question_from_dict({k: v for k, v in question.items()
                                                 if k in _QUESTION_FIELDS}))
            for position, question in plan["questions"]]


def resumable(evaluations: EvaluationStore, stored: StoredEvaluation,
              corpus: Corpus | None) -> tuple[dict, list[tuple[int, Question]]]:
    """(plan, the (position, question) it lacks) of evaluation `stored`, to run over
    `corpus`; refused with the reason when it cannot be resumed."""
    plan = resumable_plan(evaluations, stored)
    if corpus is None:
        raise ConfigError(f"Corpus {stored.corpus!r}, which evaluation {stored.id} searched, "
                          "is still loading; resume it once the status says it is ready.")
    if corpus.fingerprint != stored.corpus_fingerprint:
        raise ConfigError(
            f"Evaluation {stored.id} searched corpus {stored.corpus!r} with fingerprint "
            f"{stored.corpus_fingerprint[:12]}; the corpus by that name now has fingerprint "
            f"{corpus.fingerprint[:12]} (its documents or units changed), so new runs would "
            "not compare with the stored ones. Start a new evaluation instead.")
    stored_positions = evaluations.positions(stored.id)
    return plan, [(p, q) for p, q in planned_questions(plan) if p not in stored_positions]


def resumable_plan(evaluations: EvaluationStore, stored: StoredEvaluation) -> dict:
    """The plan of evaluation `stored`, refused with the reason when it is no evaluation to
    resume whatever the corpus (imported, done or running, stored before plans)."""
    which = f"Evaluation {stored.id}"
    if stored.code_version == IMPORTED:
        raise ConfigError(f"{which} was imported from another pipeline's files: nothing here "
                          "can run that pipeline again. Remove it and import the files "
                          "again (an import is stored whole).")
    if stored.state not in RESUMABLE:
        raise ConfigError(f"{which} is {stored.state}: only an interrupted, cancelled or "
                          "failed evaluation resumes.")
    plan = evaluations.plan(stored.id)
    if plan is None:
        raise ConfigError(f"{which} was stored before evaluations kept which questions they "
                          "chose, so its missing ones are unknown: start it again.")
    return plan


def resume_request(stored: StoredEvaluation, plan: dict,
                   missing: list[tuple[int, Question]]) -> EvaluationRequest:
    """The EvaluationRequest of the questions evaluation `stored` lacks (`missing`), as it
    first ran them: its paradigms, configs, name, sweep kinds, ceiling cuts, here."""
    return EvaluationRequest(
        stored.dataset, tuple(q for _, q in missing), stored.paradigms, dict(stored.configs),
        name=stored.name, kinds=dict(plan.get("kinds") or {}),
        retrieval_only=bool(plan.get("retrieval_only")), baseline=stored.baseline,
        cuts=dict(plan.get("cuts") or {}), positions=tuple(p for p, _ in missing))


def finish_whole(evaluations: EvaluationStore, stored: StoredEvaluation) -> None:
    """Mark done an evaluation that lacks no question (its process died after storing the
    last one, before it finished), its summary of every stored run."""
    from engine.eval.summary import summarise

    evaluations.finish(stored.id, "done", summarise(evaluations.rows(stored.id)))
