"""A tuning search running in the background (or, for the command line, here): the search,
the held-out check and the winner saved as a preset, each trial stored as it ends.

`start_tune` splits the questions (seeded), stores the new search and returns its job;
`resume_tune` makes the job of a stored search that ended early, over the same questions
and from its stored trials. `TuneJob.run()` does the work in the calling thread (the
command line's `tune`), `start()` in a thread of its own (the app), `status()` says where it
is. One runs at a time in a process (`TuneJobs`): two would share the same two cores.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from engine.documents import Corpus, Question
from engine.errors import ConfigError
from engine.paradigms.needs import Need
from engine.results import plain
from engine.service.background import BackgroundJob
from engine.service.store import make_paradigm
from engine.store.presets import Preset, PresetStore
from engine.store.sessions import SessionStore
from engine.store.tuning import TuneStore
from engine.tune.held_out import split
from engine.tune.search import SearchPlan, SearchProgress, Trial
from engine.tune.tuning import tune

logger = logging.getLogger(__name__)


class TuneJob(BackgroundJob):
    """One search: `run()` or `start()`, `status()`, `cancel()` (what finished stays)."""

    kind = "search"

    def __init__(self, store: SessionStore, tune_id: int, corpus: Corpus,
                 search_part: Sequence[Question], held_part: Sequence[Question], *,
                 prepare: Sequence[Need] = (), preset: str = "", owner: str = "",
                 on_status: Callable[[dict], None] | None = None) -> None:
        """`prepare`: what the paradigms' defaults need that is not prepared yet; `preset`:
        the name the winner is saved under (default "tune-ID"); `on_status` is handed the
        status after every question (the command line's progress line)."""
        self.tunes, self.presets = TuneStore(store), PresetStore(store)
        self.id, self.corpus = tune_id, corpus
        self.plan = self.tunes.get(tune_id).plan
        self.search_part, self.held_part = list(search_part), list(held_part)
        self.prepare, self.preset, self.owner = list(prepare), preset, owner
        self.on_status = on_status
        self.result: dict | None = None
        self.search: SearchProgress | None = None  # the search's last status
        self._saved = ""  # the preset the winner was saved as
        super().__init__(tune_id)

    def work(self) -> None:
        plan = self.plan
        self.prepare_first(self.prepare, self.corpus)

        def make(paradigm: str, config: dict):
            return make_paradigm(paradigm, self.corpus, config, retrieval_only=not plan.reads)

        self.result = tune(plan, self.search_part, self.held_part, make,
                           done=self.tunes.trials(self.id), on_trial=self._stored,
                           cancelled=self._cancel.is_set, progress=self._progressed,
                           phase=self._set_phase)
        if not self.cancelled and self.result["winner"] is not None:
            self._saved = self._save_winner(self.result["winner"])

    def finish(self) -> None:
        # a failed search saved no preset and lists none; a cancelled one keeps the name
        # it is to save its winner under when it resumes
        self.tunes.finish(self.id, self.state, self.result, self.error,
                          self._saved or ("" if self.state == "failed" else self.preset))
        logger.info("search %d %s", self.id, self.state)

    def _save_winner(self, winner: dict) -> str:
        """The winner as a preset (replacing one this search saved before); its name."""
        name = self.preset or f"tune-{self.id}"
        source = f"tune {self.id}"
        before = self.presets.find(name)
        if before is not None and before.source != source:
            raise ConfigError(f"A preset named {name!r} exists already (from "
                              f"{before.source or 'elsewhere'}); the winner is in the "
                              "search's report: save it under another name.")
        check = winner.get("held_out") or {}
        notes = f"{winner['label']}: {check.get('verdict', 'not checked on held-out questions')}"
        self.presets.save(Preset(name, winner["paradigm"], winner["config"], source,
                                 notes[:2000], self.owner, corpus=self.corpus.name),
                          replace=before is not None)
        return name

    def _stored(self, trial: Trial) -> None:
        self.tunes.add_trial(self.id, trial)

    def _progressed(self, status: SearchProgress) -> None:
        self.search = status
        if self.on_status is not None:
            self.on_status(self.status())

    def status(self) -> dict:
        return {"id": self.id, "state": self.state, "phase": self.phase, "error": self.error,
                "search": plain(self.search) if self.search else {},
                "elapsed": round(self.elapsed(), 1)}


def start_tune(store: SessionStore, plan: SearchPlan, questions: Sequence[Question],
               corpus: Corpus, dataset: str, *, held_out: float = 0.5, name: str = "",
               owner: str = "", preset: str = "", prepare: Sequence[Need] = (),
               on_status: Callable[[dict], None] | None = None) -> TuneJob:
    """A new search of `questions` (split with the plan's seed) over `corpus`, stored;
    its job, not started."""
    if preset:
        Preset(preset, plan.paradigms[0], {})  # a bad name is refused before anything runs
        found = PresetStore(store).find(preset)
        if found is not None:
            raise ConfigError(f"A preset named {preset!r} exists already; name the winner "
                              "another way, or leave the name out (tune-ID).")
    searched, held = split(questions, held_out, plan.seed)
    tune_id = TuneStore(store).create(
        plan=plan, dataset=dataset, corpus=corpus.name, search_ids=[q.id for q in searched],
        held_out_ids=[q.id for q in held], name=name, owner=owner, preset=preset)
    return TuneJob(store, tune_id, corpus, searched, held, prepare=prepare, preset=preset,
                   owner=owner, on_status=on_status)


def resume_tune(store: SessionStore, tune_id: int, questions: Sequence[Question],
                corpus: Corpus, *, owner: str = "", prepare: Sequence[Need] = (),
                on_status: Callable[[dict], None] | None = None) -> TuneJob:
    """The job of stored search `tune_id` (interrupted, cancelled or failed) going on from
    its stored trials over the same questions (those of `questions` it names)."""
    tunes = TuneStore(store)
    stored = tunes.get(tune_id)
    if stored.state in ("running", "done"):
        raise ConfigError(f"Search {tune_id} is {stored.state}: only one that ended early "
                          "(interrupted, cancelled or failed) goes on.")
    if corpus.name != stored.corpus:
        raise ConfigError(f"Search {tune_id} searched corpus {stored.corpus!r}; resume it "
                          f"over that corpus, not {corpus.name!r}.")
    by_id = {q.id: q for q in questions}
    missing = [i for i in stored.search_ids + stored.held_out_ids if i not in by_id]
    if missing:
        raise ConfigError(f"Search {tune_id}'s dataset {stored.dataset!r} lacks "
                          f"{len(missing)} of its questions (first: {missing[0]!r}); resume "
                          "it with the dataset it searched.")
    tunes.reopen(tune_id)
    return TuneJob(store, tune_id, corpus, [by_id[i] for i in stored.search_ids],
                   [by_id[i] for i in stored.held_out_ids], prepare=prepare,
                   preset=stored.preset, owner=owner or stored.owner, on_status=on_status)


class TuneJobs:
    """The searches started in this process: one runs at a time."""

    def __init__(self) -> None:
        self._jobs: dict[int, TuneJob] = {}
        self._lock = threading.Lock()

    def launch(self, make_job: Callable[[], TuneJob]) -> int:
        """Start the job `make_job()` makes, unless one is running; its id."""
        with self._lock:
            running = [j for j in self._jobs.values() if j.state == "running"]
            if running:
                raise ConfigError(f"Search {running[0].id} is still running; wait for it or "
                                  "cancel it first.")
            job = make_job().start()
            self._jobs[job.id] = job
        return job.id

    def get(self, tune_id: int) -> TuneJob | None:
        return self._jobs.get(int(tune_id))
