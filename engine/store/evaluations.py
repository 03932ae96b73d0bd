"""Evaluations in the sessions database: a QA file's questions through paradigms, stored.

An evaluation keeps what it was (dataset, questions, paradigms and their configs, the
corpus and its fingerprint, the code version), how far it got (running, done, cancelled,
failed, or interrupted when the process died mid-run) and, per question and paradigm, the
eval row (engine.eval.summary.row) and the full trace, so any question's run reopens in
Explore exactly. A question's runs are stored in one transaction as they finish: a crash
loses at most the question in flight, and the evaluation, marked interrupted at the next
start, resumes from the questions it lacks (its `plan` says which it meant to run). An
import is stored whole (`store_whole`): its row and every run in one transaction.
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
RESUMABLE = ("cancelled", "failed", "interrupted")  # ended before every question ran
IMPORTED = "imported"  # the code version of an evaluation imported from files
MAX_NAME_CHARS = 200
_COLUMNS = ("id", "name", "dataset", "questions", "paradigms", "configs", "corpus",
            "corpus_fingerprint", "code_version", "state", "summary", "error", "baseline",
            "owner")
_INSERT_RUN = ("INSERT INTO evaluation_runs (evaluation_id, position, paradigm, question_id, "
               "row, trace) VALUES (?, ?, ?, ?, ?, ?)")


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
    owner: str = ""  # the user who started or imported it; "" without logins or before them


class EvaluationStore:
    """Evaluations and their runs, in the tables migration 5 of SessionStore made."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def create(self, *, dataset: str, questions: int, paradigms: Sequence[str],
               configs: dict, corpus: str, corpus_fingerprint: str, code_version: str,
               name: str = "", baseline: int | None = None, plan: dict | None = None) -> int:
        """A new evaluation, state "running"; returns its id. `baseline`: the evaluation a
        ceiling evaluation's runs are paired against; `plan`: what a resume needs to run
        the questions it lacks (engine.service.evaluation_jobs)."""
        sql, params = self._insert(dataset, questions, paradigms, configs, corpus,
                                   corpus_fingerprint, code_version, name, baseline, plan)
        ((evaluation_id,),) = self.store.execute(sql + " RETURNING id", params)
        return int(evaluation_id)

    def store_whole(self, runs: Sequence[tuple[int, RunTrace, dict]], summary: dict, *,
                    dataset: str, paradigms: Sequence[str], configs: dict, corpus: str,
                    corpus_fingerprint: str, code_version: str, name: str = "") -> int:
        """An evaluation stored finished, with every run ((position, trace, eval row)), in
        one transaction: all or nothing, whatever fails or kills the process meanwhile (an
        import); returns its id. Two runs of one question by one paradigm break the runs'
        key, so nothing is stored (engine.service.imports refuses them first, by name)."""
        ((evaluation_id,),) = self.store.execute("SELECT nextval('evaluation_ids')")
        statements = [
            self._insert(dataset, len({p for p, _, _ in runs}), paradigms, configs, corpus,
                         corpus_fingerprint, code_version, name, None, None, state="done",
                         sql={"finished": "current_timestamp"}, id=int(evaluation_id),
                         summary=json.dumps(summary))]
        statements += [(_INSERT_RUN, [evaluation_id, position,
                                      row.get("paradigm", trace.paradigm),
                                      row.get("question_id", ""), json.dumps(row),
                                      trace.to_json()]) for position, trace, row in runs]
        self.store.transaction(statements)
        logger.info("evaluation %d stored whole: %d runs", evaluation_id, len(runs))
        return int(evaluation_id)

    @staticmethod
    def _insert(dataset: str, questions: int, paradigms: Sequence[str], configs: dict,
                corpus: str, corpus_fingerprint: str, code_version: str, name: str,
                baseline: int | None, plan: dict | None, state: str = "running",
                sql: dict[str, str] | None = None, **more: object) -> tuple[str, list]:
        """The INSERT of an evaluation's row in `state`; `more`: other columns' values and
        `sql` other columns' SQL expressions (an import stored whole gives its id, summary
        and finished time)."""
        name = (name or "").strip() or f"{dataset}: {', '.join(paradigms)}"
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"The evaluation name has {len(name)} characters; the limit is "
                              f"{MAX_NAME_CHARS}. Shorten it.")
        columns = {"name": name, "dataset": dataset, "questions": questions,
                   "paradigms": json.dumps(list(paradigms)), "configs": json.dumps(configs),
                   "corpus": corpus, "corpus_fingerprint": corpus_fingerprint,
                   "code_version": code_version, "state": state, "baseline": baseline,
                   "plan": None if plan is None else json.dumps(plan), **more}
        sql = sql or {}
        return (f"INSERT INTO evaluations ({', '.join([*columns, *sql])}) VALUES "
                f"({', '.join(['?'] * len(columns) + list(sql.values()))})",
                list(columns.values()))

    def add(self, evaluation_id: int, position: int, traces: Sequence[RunTrace],
            rows: Sequence[dict]) -> None:
        """One question's runs (a trace and its eval row per paradigm), all or none; each
        is stored under its row's paradigm (a sweep's grid point label)."""
        self.store.transaction([
            (_INSERT_RUN, [evaluation_id, position, row.get("paradigm", trace.paradigm),
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
        """Evaluations left "running" by a process that died (or was killed); returns how
        many. Each says how far it got and the way on: an evaluation resumes from the
        questions it lacks, an import (stored whole since, never left half) is removed and
        imported again."""
        found = self.store.execute(
            "UPDATE evaluations e SET state = 'interrupted', error = 'interrupted: the "
            "process stopped while it ran, after ' || (SELECT count(DISTINCT position) FROM "
            "evaluation_runs r WHERE r.evaluation_id = e.id) || ' of ' || e.questions || "
            "' questions (each stored whole); ' || CASE WHEN e.code_version = ? THEN "
            "'remove it and import the files again' ELSE 'resume it to run the questions it "
            "lacks, or remove it' END WHERE state = 'running' RETURNING id", [IMPORTED])
        if found:
            logger.info("evaluations: %d left running by an earlier process marked "
                        "interrupted", len(found))
        return len(found)

    def plan(self, evaluation_id: int) -> dict | None:
        """What evaluation `evaluation_id` planned to run (None: stored before plans were
        kept, or an import)."""
        ((plan,),) = self.store.execute("SELECT plan FROM evaluations WHERE id = ?",
                                        [self._known(evaluation_id)])
        return None if plan is None else json.loads(plan)

    def positions(self, evaluation_id: int) -> set[int]:
        """The positions of the questions stored so far."""
        return {int(p) for (p,) in self.store.execute(
            "SELECT DISTINCT position FROM evaluation_runs WHERE evaluation_id = ?",
            [self._known(evaluation_id)])}

    def reopen(self, evaluation_id: int) -> None:
        """An ended evaluation running again (a resume): state "running", its error and
        end cleared; its stored runs stay."""
        self.store.execute("UPDATE evaluations SET state = 'running', error = '', "
                           "summary = NULL, finished = NULL WHERE id = ?",
                           [self._known(evaluation_id)])

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

    def stored_runs(self, evaluation_id: int) -> list[tuple[int, dict, RunTrace]]:
        """(position, eval row, trace) of every stored run in one read, in question order."""
        return [(int(position), {**json.loads(row), "paradigm": paradigm},
                 RunTrace.from_json(trace)) for position, paradigm, row, trace in
                self.store.execute("SELECT position, paradigm, row, trace FROM "
                                   "evaluation_runs WHERE evaluation_id = ? ORDER BY "
                                   "position, paradigm", [self._known(evaluation_id)])]

    def judged_with(self, evaluation_id: int) -> tuple[str, str, str | None] | None:
        """(dataset, state, the stamp of the judgments it was last measured by) of
        evaluation `evaluation_id`; None if there is none."""
        found = self.store.execute("SELECT dataset, state, judged_with FROM evaluations "
                                   "WHERE id = ?", [self._id(evaluation_id)])
        return tuple(found[0]) if found else None

    def remeasure(self, evaluation_id: int, runs: Sequence[tuple[int, RunTrace, dict]],
                  summary: dict, stamp: str) -> None:
        """Every run ((position, trace, eval row)) measured again, with the summary and the
        stamp of the judgments measured by, in one transaction; nothing else changes."""
        update = "UPDATE evaluation_runs SET row = ?, trace = ? WHERE evaluation_id = ? " \
                 "AND position = ? AND paradigm = ?"
        self.store.transaction([
            *((update, [json.dumps(row), trace.to_json(), evaluation_id, position,
                        row["paradigm"]]) for position, trace, row in runs),
            ("UPDATE evaluations SET summary = ?, judged_with = ? WHERE id = ? AND state <> "
             "'running'", [json.dumps(summary), stamp, evaluation_id])])

    def set_owner(self, evaluation_id: int, owner: str) -> None:
        """Record the user who started or imported evaluation `evaluation_id`."""
        self.store.execute("UPDATE evaluations SET owner = ? WHERE id = ?",
                           [owner, self._known(evaluation_id)])

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
            baseline=None if r[12] is None else int(r[12]), owner=r[13] or "",
            done=int(r[14]), created=r[15],
            seconds=None if r[16] is None else round(float(r[16]), 1))

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
