"""Tuning searches in the sessions database: what each searched and on which questions, each
trial as it ends, and what the search found.

A search is stored when it starts, with its plan (engine.tune.search.SearchPlan) and the ids
of its search and held-out questions, so that a search whose process died or was cancelled
goes on from its stored trials (`funnel-engine tune --resume ID`, the Tune view's Resume)
over the same questions. Each trial is stored as it ends (finished, stopped early, failed or
refused); the report (engine.tune.tuning.report) when the search ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.store.sessions import SessionStore
from engine.tune.search import SearchPlan, Trial

STATES = ("running", "done", "cancelled", "failed", "interrupted")


@dataclass(frozen=True)
class StoredTune:
    id: int
    name: str
    dataset: str
    corpus: str
    plan: SearchPlan
    search_ids: list[str]
    held_out_ids: list[str]
    state: str
    error: str
    result: dict | None
    preset: str
    owner: str
    created: str
    trials: int  # stored so far

    def row(self) -> TuneRow:
        """What the list of searches shows."""
        return TuneRow(id=self.id, name=self.name, dataset=self.dataset, corpus=self.corpus,
                       paradigms=tuple(self.plan.paradigms), measure=self.plan.measure,
                       cost=self.plan.cost, state=self.state,
                       trials=f"{self.trials} of {self.plan.trials}", preset=self.preset,
                       by=self.owner, created=self.created)

    def questions(self) -> QuestionSplit:
        """How many questions it searched on, and how many it held out."""
        return QuestionSplit(len(self.search_ids), len(self.held_out_ids))


@dataclass(frozen=True)
class QuestionSplit:
    """How many questions a search searched on, and how many it held out."""

    search: int
    held_out: int


@dataclass(frozen=True)
class TuneRow:
    """A stored search as the Tune view's list and the API's `tunes` show it: `trials` as
    "3 of 12" (stored so far of planned), `by` its owner."""

    id: int
    name: str
    dataset: str
    corpus: str
    paradigms: tuple[str, ...]
    measure: str
    cost: str
    state: str
    trials: str
    preset: str
    by: str
    created: str


class TuneStore:
    """The tunes and tune_trials tables of a `SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def create(self, *, plan: SearchPlan, dataset: str, corpus: str, search_ids: list[str],
               held_out_ids: list[str], name: str = "", owner: str = "",
               preset: str = "") -> int:
        """A new search, state "running"; its id. `preset`: the name its winner is to be
        saved under ("": tune-ID)."""
        ((tune_id,),) = self.store.execute(
            "INSERT INTO tunes (name, dataset, corpus, plan, search_ids, held_out_ids, "
            "owner, preset) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [name, dataset, corpus, json.dumps(plan.to_dict()), json.dumps(search_ids),
             json.dumps(held_out_ids), owner, preset])
        return int(tune_id)

    def add_trial(self, tune_id: int, trial: Trial) -> None:
        self.store.execute(
            "INSERT OR REPLACE INTO tune_trials (tune_id, number, paradigm, state, trial) "
            "VALUES (?, ?, ?, ?, ?)",
            [tune_id, trial.number, trial.paradigm, trial.state, json.dumps(trial.to_dict())])

    def trials(self, tune_id: int) -> list[Trial]:
        """Search `tune_id`'s stored trials, in order."""
        rows = self.store.execute("SELECT trial FROM tune_trials WHERE tune_id = ? "
                                  "ORDER BY number", [self._known(tune_id)])
        return [Trial(**json.loads(r[0])) for r in rows]

    def finish(self, tune_id: int, state: str, result: dict | None, error: str = "",
               preset: str = "") -> None:
        if state not in STATES[1:]:
            raise ConfigError(f"state={state!r}: a search ends as one of "
                              f"{', '.join(STATES[1:])}.")
        self.store.execute(
            "UPDATE tunes SET state = ?, result = ?, error = ?, preset = ?, "
            "finished = current_timestamp WHERE id = ?",
            [state, None if result is None else json.dumps(result), error, preset,
             self._known(tune_id)])

    def reopen(self, tune_id: int) -> None:
        """An ended search running again (a resume); its stored trials stay."""
        self.store.execute("UPDATE tunes SET state = 'running', error = '', result = NULL, "
                           "finished = NULL WHERE id = ?", [self._known(tune_id)])

    def mark_interrupted(self) -> int:
        """Searches left "running" by a process that died; how many."""
        rows = self.store.execute(
            "UPDATE tunes SET state = 'interrupted', error = 'the process ended during the "
            "search: resume it to go on from its stored trials' WHERE state = 'running' "
            "RETURNING id")
        return len(rows)

    def get(self, tune_id: int) -> StoredTune:
        rows = self.store.execute(self._select() + " WHERE t.id = ?", [self._known(tune_id)])
        return _stored(rows[0])

    def list(self) -> list[StoredTune]:
        """Every search, newest first."""
        return [_stored(r) for r in self.store.execute(self._select() + " ORDER BY t.id DESC")]

    def delete(self, tune_id: int) -> None:
        tune_id = self._known(tune_id)
        self.store.transaction([("DELETE FROM tune_trials WHERE tune_id = ?", [tune_id]),
                                ("DELETE FROM tunes WHERE id = ?", [tune_id])])

    def _known(self, tune_id: object) -> int:
        try:
            number = int(tune_id)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"A search id is a number; got {tune_id!r}.") from None
        if not self.store.execute("SELECT 1 FROM tunes WHERE id = ?", [number]):
            known = ", ".join(str(r[0]) for r in self.store.execute(
                "SELECT id FROM tunes ORDER BY id DESC LIMIT 10")) or "none yet"
            raise ConfigError(f"No search {number}; stored searches: {known}.")
        return number

    @staticmethod
    def _select() -> str:
        return ("SELECT t.id, t.name, t.dataset, t.corpus, t.plan, t.search_ids, "
                "t.held_out_ids, t.state, t.error, t.result, t.preset, t.owner, "
                "strftime(t.created, '%Y-%m-%d %H:%M:%S'), "
                "(SELECT count(*) FROM tune_trials x WHERE x.tune_id = t.id "
                "AND x.state != 'refused') FROM tunes t")


def _stored(row: tuple) -> StoredTune:
    (tune_id, name, dataset, corpus, plan, search_ids, held, state, error, result, preset,
     owner, created, trials) = row
    return StoredTune(int(tune_id), name, dataset, corpus,
                      SearchPlan.from_dict(json.loads(plan)), json.loads(search_ids),
                      json.loads(held), state, error, json.loads(result) if result else None,
                      preset, owner, created, int(trials))
