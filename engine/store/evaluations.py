"""Evaluations in the sessions database: a QA file's questions through paradigms, stored.

An evaluation keeps what it was (dataset, questions, paradigms and their configs, the
corpus and its fingerprint, the code version), how far it got (running, done, cancelled,
failed, or interrupted when the process died mid-run) and, per question and paradigm, the
eval row (engine.eval.summary.row) and the full trace, so any question's run reopens in
Explore exactly. A question's runs are stored in one transaction as they finish: a crash
loses at most the question in flight.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.store.sessions import SessionStore
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

STATES = ("running", "done", "cancelled", "failed", "interrupted")
MAX_NAME_CHARS = 200
_COLUMNS = ("id", "name", "dataset", "questions", "paradigms", "configs", "corpus",
            "corpus_fingerprint", "code_version", "state", "summary", "error", "baseline")


@dataclass(frozen=True)
class StoredEvaluation:
    """One evaluation's description and state (its runs stay in the database)."""

    id: int
    name: str
    dataset: str
    questions: int  # planned
    paradigms: tuple[str, ...]
    configs: dict
    corpus: str
    corpus_fingerprint: str
    code_version: str
    state: str
    summary: dict
    error: str
    done: int  # questions stored so far
    created: str
    seconds: float | None = None  # from start to finish; None while it runs
    # a ceiling evaluation (engine/eval/ceilings.py): the evaluation its runs improve on
    baseline: int | None = None


class EvaluationStore:
    """Evaluations and their runs, in the tables migration 5 of SessionStore made."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def create(self, *, dataset: str, questions: int, paradigms: Sequence[str],
               configs: dict, corpus: str, corpus_fingerprint: str, code_version: str,
               name: str = "", baseline: int | None = None) -> int:
        """A new evaluation, state "running"; returns its id. `baseline`: the evaluation a
        ceiling evaluation's runs are paired against."""
        name = (name or "").strip() or f"{dataset}: {', '.join(paradigms)}"
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"The evaluation name has {len(name)} characters; the limit is "
                              f"{MAX_NAME_CHARS}. Shorten it.")
        ((evaluation_id,),) = self.store.execute(
            "INSERT INTO evaluations (name, dataset, questions, paradigms, configs, corpus, "
            "corpus_fingerprint, code_version, state, baseline) VALUES (?, ?, ?, ?, ?, ?, ?, "
            "?, 'running', ?) RETURNING id",
            [name, dataset, questions, json.dumps(list(paradigms)), json.dumps(configs),
             corpus, corpus_fingerprint, code_version, baseline])
        return int(evaluation_id)

    def add(self, evaluation_id: int, position: int, traces: Sequence[RunTrace],
            rows: Sequence[dict]) -> None:
        """One question's runs (a trace and its eval row per paradigm), all or none; each
        is stored under its row's paradigm (a sweep's grid point label)."""
        insert = ("INSERT INTO evaluation_runs (evaluation_id, position, paradigm, "
                  "question_id, row, trace) VALUES (?, ?, ?, ?, ?, ?)")
        self.store.transaction([
            (insert, [evaluation_id, position, row.get("paradigm", trace.paradigm),
                      row.get("question_id", ""),
                      json.dumps(row), trace.to_json()])
            for trace, row in zip(traces, rows, strict=True)])

    def finish(self, evaluation_id: int, state: str, summary: dict, error: str = "") -> None:
        if state not in STATES[1:]:
            raise ConfigError(f"state={state!r}: an evaluation finishes as one of "
                              f"{', '.join(STATES[1:])}.")
        self.store.execute("UPDATE evaluations SET state = ?, summary = ?, error = ?, "
                           "finished = current_timestamp WHERE id = ?",
                           [state, json.dumps(summary), error, self._known(evaluation_id)])

    def mark_interrupted(self) -> int:
        """Evaluations left "running" by a process that died; returns how many."""
        found = self.store.execute(
            "UPDATE evaluations e SET state = 'interrupted', error = 'interrupted: the app "
            "stopped while it ran, after ' || (SELECT count(DISTINCT position) FROM "
            "evaluation_runs r WHERE r.evaluation_id = e.id) || ' of ' || e.questions || "
            "' questions (each stored whole); start it again to run every question' "
            "WHERE state = 'running' RETURNING id")
        if found:
            logger.info("evaluations: %d left running by an earlier process marked "
                        "interrupted", len(found))
        return len(found)

    def list(self) -> list[StoredEvaluation]:
        """Every evaluation, newest first."""
        return [self._evaluation(r) for r in self.store.execute(self._select() +
                                                                " ORDER BY e.id DESC")]

    def get(self, evaluation_id: int) -> StoredEvaluation:
        found = self.store.execute(self._select() + " WHERE e.id = ?",
                                   [self._id(evaluation_id)])
        if not found:
            raise ConfigError(f"No evaluation with id {evaluation_id}. Stored ids: "
                              f"{self._ids_hint()}.")
        return self._evaluation(found[0])

    def rows(self, evaluation_id: int) -> list[dict]:
        """The eval rows in question order, each with its `position`."""
        self._known(evaluation_id)
        return [{**json.loads(row), "position": position} for position, row in
                self.store.execute("SELECT position, row FROM evaluation_runs WHERE "
                                   "evaluation_id = ? ORDER BY position, paradigm",
                                   [evaluation_id])]

    def trace(self, evaluation_id: int, position: int, paradigm: str) -> RunTrace:
        """One question's run, exactly as stored."""
        found = self.store.execute("SELECT trace FROM evaluation_runs WHERE evaluation_id = ? "
                                   "AND position = ? AND paradigm = ?",
                                   [self._known(evaluation_id), position, paradigm])
        if not found:
            ((low, high, names),) = self.store.execute(
                "SELECT min(position), max(position), list(DISTINCT paradigm ORDER BY "
                "paradigm) FROM evaluation_runs WHERE evaluation_id = ?", [evaluation_id])
            held = (f"its questions are at positions {low} to {high}, run by "
                    f"{', '.join(names)}" if names else "it has no stored run yet")
            raise ConfigError(f"Evaluation {evaluation_id} has no run of question "
                              f"{position} by {paradigm!r}: {held}.")
        return RunTrace.from_json(found[0][0])

    def traces(self, evaluation_id: int) -> list[RunTrace]:
        """Every stored run, in question order."""
        return [RunTrace.from_json(t) for (t,) in self.store.execute(
            "SELECT trace FROM evaluation_runs WHERE evaluation_id = ? "
            "ORDER BY position, paradigm", [self._known(evaluation_id)])]

    def delete(self, evaluation_id: int) -> None:
        evaluation_id = self._known(evaluation_id)
        self.store.transaction([
            ("DELETE FROM evaluation_runs WHERE evaluation_id = ?", [evaluation_id]),
            ("DELETE FROM evaluations WHERE id = ?", [evaluation_id])])

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _select() -> str:
        columns = ", ".join(f"e.{c}" for c in _COLUMNS)
        return (f"SELECT {columns}, (SELECT count(DISTINCT position) FROM evaluation_runs r "
                "WHERE r.evaluation_id = e.id), strftime(e.created, '%Y-%m-%d %H:%M:%S'), "
                "date_diff('millisecond', e.created, e.finished) / 1000.0 FROM evaluations e")

    @staticmethod
    def _evaluation(r: tuple) -> StoredEvaluation:
        return StoredEvaluation(
            id=int(r[0]), name=r[1], dataset=r[2], questions=int(r[3]),
            paradigms=tuple(json.loads(r[4])), configs=json.loads(r[5]), corpus=r[6],
            corpus_fingerprint=r[7], code_version=r[8], state=r[9],
            summary=json.loads(r[10]) if r[10] else {}, error=r[11] or "",
            baseline=None if r[12] is None else int(r[12]), done=int(r[13]),
            created=r[14], seconds=None if r[15] is None else round(float(r[15]), 1))

    def _known(self, evaluation_id: int) -> int:
        evaluation_id = self._id(evaluation_id)
        if not self.store.execute("SELECT 1 FROM evaluations WHERE id = ?", [evaluation_id]):
            raise ConfigError(f"No evaluation with id {evaluation_id}. Stored ids: "
                              f"{self._ids_hint()}.")
        return evaluation_id

    @staticmethod
    def _id(evaluation_id: object) -> int:
        try:
            return int(evaluation_id)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ConfigError(f"Evaluation ids are numbers; got {evaluation_id!r}.") from None

    def _ids_hint(self) -> str:
        ids = [str(i) for (i,) in self.store.execute(
            "SELECT id FROM evaluations ORDER BY id DESC LIMIT 20")]
        return ", ".join(ids) or "none yet"
