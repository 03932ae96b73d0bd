"""Tuning as the app and the API see it: start a search over paradigms' options on a
dataset (checked, split and stored at once), follow it, cancel it, resume one that ended
early, list them, and the space a search would vary.

`Tuning` is a facade beside Explorer (`explorer.tuning`): each public method is checked
against the roles' table (engine.service.door). Anyone may read searches; starting,
cancelling and resuming one is an admin's, as an evaluation is (it holds both cores for its
minutes). The work is engine.tune's; the background job engine.service.tune_jobs'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.documents import unanswered
from engine.errors import ConfigError
from engine.paradigms.registry import make_config
from engine.service.corpora import Corpora
from engine.service.datasets import dataset_label, dataset_of
from engine.service.door import Door, guarded
from engine.service.evaluations import preparation_for
from engine.service.long_builds import LONG_BUILD_SECONDS, BuildNeeded, long_builds
from engine.service.preparation import Preparation
from engine.service.readiness import check_ready
from engine.service.tune_jobs import TuneJobs, resume_tune, start_tune
from engine.store.sessions import SessionStore
from engine.store.tuning import QuestionSplit, TuneRow, TuneStore
from engine.tune.search import SearchPlan, SearchProgress, TrialRow
from engine.tune.space import RETRIEVAL_MEASURES, Dimension, space
from engine.tune.tuning import front_of

SEARCH_CONFIRM = ("Confirm to build it before the first trial (the app stays usable), or "
                  "search options that need nothing built.")


@dataclass(frozen=True)
class TuneStatus:
    """A search as it stands: its `state` (running, done, cancelled, failed), `error`,
    what it does now (`phase`, and `search`: the live search's own status while it runs),
    its `plan`, the `preset` its winner was saved as, how many `questions` it searched
    and held out, every trial as shown (`trials`), the trial numbers on the current
    `front`, and its report once done (`result`). `engine.results.plain` of it is its
    JSON form (the API's)."""

    id: int
    name: str
    dataset: str
    corpus: str
    state: str
    plan: SearchPlan
    questions: QuestionSplit
    error: str = ""
    phase: str = ""
    search: SearchProgress | None = None
    preset: str = ""
    trials: tuple[TrialRow, ...] = ()
    front: tuple[int, ...] = ()
    result: dict | None = None


@guarded
class Tuning:
    """The tuning searches of one sessions database."""

    def __init__(self, store: SessionStore, corpora: Corpora, door: Door | None = None) -> None:
        self.sessions, self.store = store, TuneStore(store)
        self._corpora = corpora
        self.door = door or Door()
        self._jobs = TuneJobs()
        self.store.mark_interrupted()  # left running by a process that died

    def tune(self, dataset: str, paradigms: Sequence[str], *, measure: str = "",
             cost: str = "seconds", ceiling: float | None = None, trials: int = 30,
             minutes: float | None = None, options: dict | None = None,
             configs: dict | None = None, held_out: float = 0.5, seed: int = 0,
             limit: int = 0, name: str = "", preset: str = "", corpus: str = "",
             build: bool = False) -> int:
        """Start a search of `paradigms` on `dataset` over `corpus` (""; the start-up
        one, or a collection's own) in the background; its id. `measure` ("": nDCG@10 on
        judged questions, else AR@4) goes up, `cost` (seconds or reader_tokens per
        question) down; the pick is the best within `ceiling`, else the front's knee.
        `options` ({"funnel.K": [2, 40]}) names what is searched (default: every numeric and
        choice option that builds nothing), `configs` ({paradigm: options}) what stays
        fixed. The winner, checked on the `held_out` share, is saved as preset `preset`
        (default tune-ID)."""
        chosen = dataset_of(dataset)
        questions = list(chosen.questions[:limit] if limit else chosen.questions)
        judged = unanswered(questions)
        measure = measure or ("nDCG@10" if judged else "AR@4")
        if judged and measure not in RETRIEVAL_MEASURES:
            raise ConfigError(f"{dataset_label(dataset)}'s questions are judged, not "
                              f"answered: {measure} needs answers; use one of "
                              f"{', '.join(RETRIEVAL_MEASURES)}.")
        paradigms = tuple(paradigms)
        plan = SearchPlan(paradigms, tuple(space(paradigms, options or None,
                                                 reads=measure not in RETRIEVAL_MEASURES)),
                          measure, cost, ceiling, int(trials), minutes, int(seed),
                          base=dict(configs or {}))
        preparation = preparation_for(self._corpora, corpus, dataset, chosen)
        pending = self._pending(plan, preparation, build)
        return self._jobs.launch(lambda: start_tune(
            self.sessions, plan, questions, preparation.corpus, dataset_label(dataset),
            held_out=held_out, name=name, owner=self.door.name(), preset=preset,
            prepare=pending))

    def resume_tune(self, tune_id: int, build: bool = False) -> int:
        """Go on with stored search `tune_id` (interrupted, cancelled or failed) from its
        stored trials, over the same questions and corpus; its id."""
        stored = self.store.get(tune_id)
        chosen = dataset_of(stored.dataset)
        preparation = preparation_for(self._corpora, stored.corpus, stored.dataset, chosen)
        pending = self._pending(stored.plan, preparation, build)
        return self._jobs.launch(lambda: resume_tune(
            self.sessions, stored.id, chosen.questions, preparation.corpus,
            owner=self.door.name(), prepare=pending))

    def cancel_tune(self, tune_id: int) -> None:
        """Stop search `tune_id` after the question in flight; finished trials stay."""
        job = self._jobs.get(self.store.get(tune_id).id)
        if job is None or job.state != "running":
            raise ConfigError(f"Search {tune_id} is not running here.")
        job.cancel()

    def tunes(self) -> list[TuneRow]:
        """Every stored search, newest first, as the list shows it."""
        return [t.row() for t in self.store.list()]

    def tune_status(self, tune_id: int) -> TuneStatus:
        """Search `tune_id`: its state, what it does now, its plan, every trial (as a
        report shows it), the current front's trial numbers, and its report once done."""
        stored = self.store.get(tune_id)
        job = self._jobs.get(stored.id)
        trials = self.store.trials(stored.id)
        plan = stored.plan
        live = job if job is not None and stored.state == "running" else None
        return TuneStatus(
            id=stored.id, name=stored.name, dataset=stored.dataset, corpus=stored.corpus,
            state=stored.state, error=stored.error or (live.error if live else ""),
            phase=live.phase if live else "", search=live.search if live else None,
            plan=plan, preset=stored.preset, questions=stored.questions(),
            trials=tuple(t.shown(plan) for t in trials),
            front=tuple(t.number for t in front_of(plan, trials)), result=stored.result)

    def search_space(self, paradigms: Sequence[str], measure: str = "AR@4"
                     ) -> list[Dimension]:
        """The dimensions a search of `paradigms` varies by default for `measure`."""
        return space(list(paradigms), reads=measure not in RETRIEVAL_MEASURES)

    def _pending(self, plan: SearchPlan, preparation: Preparation, build: bool) -> list:
        """What the paradigms' fixed options need that is not prepared; a long build is
        refused with BuildNeeded unless `build` confirms it."""
        pending: dict = {}
        for paradigm in plan.paradigms:
            check_ready(self._corpora, paradigm, preparation)
            config = make_config(paradigm, plan.base.get(paradigm) or {})
            for need in preparation.unprepared(paradigm, config):
                pending.setdefault(need.key, need)
        long = long_builds(preparation, pending.values(), LONG_BUILD_SECONDS)
        if long and not build:
            raise BuildNeeded(long, SEARCH_CONFIRM)
        return list(pending.values())
