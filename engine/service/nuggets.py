"""Nuggets and the answers judged by them, as the app, the API and the command line see it.

A dataset's nuggets (engine.store.nuggets) are written by people, imported from a TREC RAG
nugget file, or, for a QA file with gold answers, its gold answers stored as vital nuggets
(`gold_nuggets`), so nugget scores can be set beside EM and F1. A stored evaluation's
answers are then assigned each nugget of their question, one answer at a time
(`to_assign`, `assign`, `undo_assignment`), and scored the TREC RAG way per answer and per
paradigm (`nugget_scores`; engine.judging.nuggets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.judging.nuggets import (
    SCORE_NAMES,
    NuggetScores,
    assignment_file,
    gold_nuggets,
    nugget_file,
    nugget_scores,
    read_nugget_file,
)
from engine.service.datasets import dataset_label, dataset_of
from engine.service.door import Door, guarded
from engine.service.judging import person
from engine.store.evaluations import EvaluationStore
from engine.store.nuggets import Assignment, Nugget, NuggetStore
from engine.store.sessions import SessionStore


@dataclass(frozen=True)
class Answer:
    """One stored answer of an evaluation: a question's run by one paradigm."""

    evaluation_id: int
    position: int
    question_id: str
    paradigm: str
    question: str
    answer: str


@dataclass(frozen=True)
class ToAssign:
    """The next answer an assessor has to assign, with its question's nuggets."""

    answer: Answer | None  # None: every answer with nuggets is assigned
    nuggets: tuple[Nugget, ...]
    assigned: dict[int, str]  # {nugget id: assignment} the assessor gave this answer
    done: int  # answers the assessor assigned every nugget of
    answers: int  # answers whose question has nuggets


@dataclass(frozen=True)
class EvaluationNuggetScores:
    """An evaluation's answers scored by their questions' nuggets, by one assessor's view."""

    evaluation_id: int
    dataset: str
    assessor: str  # "" for everyone's latest
    per_answer: tuple[tuple[Answer, NuggetScores], ...]
    per_paradigm: dict[str, dict[str, float | None]]  # {paradigm: {score name: mean}}
    unassigned: int  # (answer, nugget) pairs no one assigned, counted as not supported


@guarded
class Nuggets:
    """A dataset's nuggets and an evaluation's answers assigned them."""

    def __init__(self, store: SessionStore, door: Door | None = None) -> None:
        self.store = NuggetStore(store)
        self.door = door or Door()
        self._evaluations = EvaluationStore(store)

    # --- a dataset's nuggets ------------------------------------------------------------

    def nuggets(self, dataset: str, question_id: str | None = None) -> list[Nugget]:
        """Dataset `dataset`'s current nuggets (of `question_id` only, if given)."""
        return self.store.nuggets(dataset_label(dataset), question_id or None)

    def add_nugget(self, dataset: str, question_id: str, text: str, importance: str = "vital",
                   author: str = "", sources: Sequence[str] = ()) -> int:
        """A nugget `author` wrote for question `question_id` of `dataset`; its id."""
        label, questions = self._questions(dataset)
        if question_id not in questions:
            raise ConfigError(f"Question {question_id!r} is not one of {label}: a nugget "
                              "belongs to a question of the set it is written for.")
        return self.store.add(Nugget(label, question_id, " ".join(str(text).split()),
                                     importance, self._author(author), tuple(sources)))

    def edit_nugget(self, nugget_id: int, author: str, text: str | None = None,
                    importance: str | None = None) -> int:
        """Nugget `nugget_id` replaced by one with the new text or importance; its id."""
        return self.store.edit(int(nugget_id), self._author(author),
                               None if text is None else " ".join(str(text).split()),
                               importance)

    def merge_nuggets(self, nugget_ids: Sequence[int], text: str, importance: str,
                      author: str) -> int:
        return self.store.merge([int(i) for i in nugget_ids], " ".join(str(text).split()),
                                importance, self._author(author))

    def remove_nugget(self, nugget_id: int, author: str) -> Nugget:
        self._author(author)
        return self.store.remove(int(nugget_id))

    def add_gold_nuggets(self, dataset: str) -> int:
        """Each gold answer of `dataset` stored as a vital nugget of its question, for the
        questions that have no nugget yet; returns how many were stored."""
        label, questions = self._questions(dataset)
        have = {n.question_id for n in self.store.nuggets(label)}
        answers = {q.id: q.answers for q in questions.values() if q.answers and q.id not in have}
        if not any(q.answers for q in questions.values()):
            raise ConfigError(f"{label} has no gold answers to make nuggets of: write its "
                              "nuggets, or import a TREC RAG nugget file.")
        return self.store.add_all(gold_nuggets(label, answers))

    def export_nuggets(self, dataset: str) -> str:
        """Dataset `dataset`'s current nuggets as a TREC RAG nugget file."""
        label, questions = self._questions(dataset)
        return nugget_file(self.store.nuggets(label),
                           {q.id: q.text for q in questions.values()})

    def import_nuggets(self, dataset: str, text: str, filename: str, author: str) -> int:
        """The nuggets of a TREC RAG nugget file, as `author`'s, stored whole or not at
        all; returns how many."""
        label, questions = self._questions(dataset)
        found = read_nugget_file(text, filename, label, set(questions), self._author(author))
        return self.store.add_all(found)

    # --- an evaluation's answers --------------------------------------------------------

    def stored_answers(self, evaluation_id: int) -> list[Answer]:
        """Evaluation `evaluation_id`'s stored answers (each run a reader answered), in
        question order."""
        evaluation_id = int(evaluation_id)
        found = [Answer(evaluation_id, position, trace.gold.id, row["paradigm"],
                        trace.question, trace.answer)  # a preset's run under its own name
                 for position, row, trace in self._evaluations.stored_runs(evaluation_id)
                 if trace.answered and trace.gold is not None]
        if not found:
            raise ConfigError(f"Evaluation {evaluation_id} has no stored answers to judge: "
                              "it ran retrieval only. Evaluate with the reader on.")
        return found

    def to_assign(self, evaluation_id: int, assessor: str,
                  skipped: tuple[int, ...] = ()) -> ToAssign:
        """The first answer (not at a `skipped` position) with a nugget `assessor` has not
        assigned, and the progress."""
        assessor = self._author(assessor, "Assessor")
        answers, nuggets = self._with_nuggets(int(evaluation_id))
        labels = self.store.labels(int(evaluation_id), assessor)
        done = [a for a in answers if set(labels.get((a.question_id, a.paradigm), {}))
                >= {n.id for n in nuggets[a.question_id]}]
        todo = [a for a in answers if a not in done and a.position not in skipped]
        first = todo[0] if todo else None
        return ToAssign(first, tuple(nuggets[first.question_id]) if first else (),
                        dict(labels.get((first.question_id, first.paradigm), {}))
                        if first else {}, len(done), len(answers))

    def assign(self, evaluation_id: int, question_id: str, paradigm: str, nugget_id: int,
               assignment: str, assessor: str, seconds: float | None = None) -> int:
        """Record `assessor`'s assignment of nugget `nugget_id` to one answer; its id."""
        answers = {(a.question_id, a.paradigm) for a in self.stored_answers(evaluation_id)}
        if (question_id, paradigm) not in answers:
            raise ConfigError(f"Evaluation {int(evaluation_id)} has no answer of question "
                              f"{question_id!r} by {paradigm!r}.")
        return self.store.assign(Assignment(int(nugget_id), int(evaluation_id), question_id,
                                            paradigm, assignment,
                                            self._author(assessor, "Assessor"), seconds))

    def undo_assignment(self, evaluation_id: int, assessor: str) -> Assignment | None:
        """Take back `assessor`'s last assignment in evaluation `evaluation_id`."""
        return self.store.undo(self._author(assessor, "Assessor"), int(evaluation_id))

    def nugget_scores(self, evaluation_id: int, assessor: str = "") -> EvaluationNuggetScores:
        """Each answer's nugget scores (by `assessor`'s assignments, or everyone's latest),
        and their means per paradigm; a nugget no one assigned counts as not supported."""
        evaluation_id = int(evaluation_id)
        answers, nuggets = self._with_nuggets(evaluation_id)
        labels = self.store.labels(evaluation_id, assessor or None)
        per_answer, unassigned = [], 0
        for answer in answers:
            given = labels.get((answer.question_id, answer.paradigm), {})
            judged = [(n.importance, given.get(n.id, "not_support"))
                      for n in nuggets[answer.question_id]]
            unassigned += sum(n.id not in given for n in nuggets[answer.question_id])
            per_answer.append((answer, nugget_scores(judged)))
        return EvaluationNuggetScores(
            evaluation_id, self._evaluations.get(evaluation_id).dataset, assessor,
            tuple(per_answer), _means(per_answer), unassigned)

    def export_assignments(self, evaluation_id: int, assessor: str = "") -> str:
        """Evaluation `evaluation_id`'s assignments (`assessor`'s, or everyone's latest) as
        a TREC RAG assignment file, each paradigm a run."""
        evaluation_id = int(evaluation_id)
        answers, nuggets = self._with_nuggets(evaluation_id)
        labels = self.store.labels(evaluation_id, assessor or None)
        return assignment_file(
            [(a.question_id, a.paradigm, a.answer,
              [(n, labels.get((a.question_id, a.paradigm), {}).get(n.id, "not_support"))
               for n in nuggets[a.question_id]]) for a in answers],
            {a.question_id: a.question for a in answers})

    # --- helpers ------------------------------------------------------------------------

    def _questions(self, dataset: str) -> tuple[str, dict]:
        """(the dataset's label, {question id: question})."""
        return dataset_label(dataset), {q.id: q for q in dataset_of(dataset).questions}

    def _with_nuggets(self, evaluation_id: int) -> tuple[list[Answer], dict[str, list[Nugget]]]:
        """(the evaluation's answers whose question has nuggets, {question id: nuggets})."""
        answers = self.stored_answers(evaluation_id)
        dataset = self._evaluations.get(evaluation_id).dataset
        nuggets: dict[str, list[Nugget]] = {}
        for nugget in self.store.nuggets(dataset):
            nuggets.setdefault(nugget.question_id, []).append(nugget)
        held = [a for a in answers if a.question_id in nuggets]
        if not held:
            raise ConfigError(f"No question of evaluation {evaluation_id} has nuggets yet: "
                              f"write them for {dataset} first, or store its gold answers "
                              "as nuggets.")
        return held, nuggets

    def _author(self, name: str, box: str = "Author") -> str:
        """Who writes or assigns, as a judgment's assessor is named (a person's)."""
        return person(self.door, name, box)


def _means(per_answer: Sequence[tuple[Answer, NuggetScores]]) -> dict[str, dict]:
    by_paradigm: dict[str, list[NuggetScores]] = {}
    for answer, scores in per_answer:
        by_paradigm.setdefault(answer.paradigm, []).append(scores)
    means = {}
    for paradigm, found in by_paradigm.items():
        means[paradigm] = {}
        for name in SCORE_NAMES:
            values = [getattr(s, name) for s in found if getattr(s, name) is not None]
            means[paradigm][name] = sum(values) / len(values) if values else None
        means[paradigm]["answers"] = len(found)
    return means
