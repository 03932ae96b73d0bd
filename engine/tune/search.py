"""The search: Optuna's TPE over the space, two objectives, trials stopped early.

Each trial is a paradigm (a choice, when several are searched) with values for its
dimensions (engine.tune.space), sampled by a multivariate TPE (Optuna's TPESampler,
`group=True`: each paradigm's options are a space of their own) that maximises the measure
and minimises the cost. A trial answers the search questions rung by rung and stops at the
first rung where it falls behind (engine.tune.halving), or after its first CEILING_PROBE
questions if they cost over twice the ceiling (a setting that reads with the LLM where the
ceiling asks for retrieval's milliseconds); Optuna is told a finished trial's
measure and cost, a stopped one as pruned (its TPE counts it with the worse trials). A
setting the paradigm refuses (funnel's N above K) is told as infeasible (a constraint), so
TPE learns to avoid it without it counting against the budget.

Stages are reused across trials as a sweep reuses them across grid points
(engine.stages.base.reusing_stages): a retriever's top 50 for a question serves every later
trial that asks for 50 or fewer, keeping the seconds it took. Each finished, stopped, failed
or refused trial is handed to `on_trial` (the store); a search given the trials it stored
tells them to a new study and goes on (a restart resumes). The budget is a number of trials,
minutes, or both; cancelling, or the minutes running out, drops the trial in flight and
keeps every one before it.
"""

from __future__ import annotations

import logging
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.documents import Question
from engine.errors import ConfigError, log_failure
from engine.eval.paired import question_values
from engine.eval.summary import row
from engine.eval.sweep import with_values
from engine.paradigms.base import Paradigm
from engine.stages.base import reusing_stages
from engine.trace import FAILED
from engine.tune.halving import ETA, SMALLEST, Point, goes_on, rungs
from engine.tune.space import COSTS, MEASURES, RETRIEVAL_MEASURES, Dimension

logger = logging.getLogger(__name__)

COMPLETE, STOPPED, FAILED_TRIAL, REFUSED = "complete", "stopped", "failed", "refused"
MAX_TRIALS = 500
MAX_REFUSED = 200  # settings refused in a row before the space is called unsatisfiable
CEILING_PROBE = 5  # questions after which a setting far over the cost ceiling stops


@dataclass(frozen=True)
class SearchPlan:
    """What a search varies, maximises, minimises and may spend."""

    paradigms: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    measure: str
    cost: str = "seconds"
    ceiling: float | None = None  # the most cost a pick may have
    trials: int = 30
    minutes: float | None = None
    seed: int = 0
    eta: int = ETA
    smallest: int = SMALLEST
    base: dict = field(default_factory=dict)  # {paradigm: config} the dimensions vary

    def __post_init__(self) -> None:
        from engine.errors import check_choice

        check_choice("measure", self.measure, MEASURES)
        check_choice("cost", self.cost, COSTS)
        if not self.paradigms:
            raise ConfigError("Give at least one paradigm to search.")
        if not isinstance(self.trials, int) or not 1 <= self.trials <= MAX_TRIALS:
            raise ConfigError(f"trials={self.trials!r} is out of range; allowed: 1 to "
                              f"{MAX_TRIALS}.")
        if self.minutes is not None and not 0 < self.minutes <= 7 * 24 * 60:
            raise ConfigError(f"minutes={self.minutes!r} is out of range; give a number of "
                              "minutes above 0 (a week at most), or none.")
        if self.ceiling is not None and not self.ceiling > 0:
            raise ConfigError(f"The cost ceiling {self.ceiling!r} must be above 0.")
        if not 2 <= self.eta <= 10:
            raise ConfigError(f"eta={self.eta!r} is out of range; allowed: 2 to 10.")

    @property
    def reads(self) -> bool:
        """Whether the measure needs the reader (EM, F1): else trials stop before it."""
        return self.measure not in RETRIEVAL_MEASURES

    def of(self, paradigm: str) -> list[Dimension]:
        return [d for d in self.dimensions if d.paradigm == paradigm]

    def to_dict(self) -> dict:
        return {**asdict(self), "dimensions": [d.to_dict() for d in self.dimensions]}

    @classmethod
    def from_dict(cls, data: dict) -> SearchPlan:
        dimensions = tuple(
            Dimension(*d["name"].split(".", 1), d["kind"], d["low"], d["high"],
                      tuple(d["choices"])) for d in data["dimensions"])
        return cls(**{**data, "paradigms": tuple(data["paradigms"]),
                      "dimensions": dimensions})


@dataclass
class Trial:
    """One setting tried: its values, and per question [measure, seconds, reader tokens]
    (measure None where the question has none: AR@k of a yes/no question)."""

    number: int
    paradigm: str
    params: dict  # {option: value}: the searched values
    config: dict  # the whole config it ran with
    state: str = "running"
    values: dict[str, list] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of the trial
    note: str = ""

    def measure(self, ids: Sequence[str] | None = None) -> float | None:
        found = [v[0] for q, v in self._of(ids) if v[0] is not None]
        return statistics.fmean(found) if found else None

    def cost(self, cost: str, ids: Sequence[str] | None = None) -> float | None:
        if not self.values:
            return None
        if cost == "seconds":
            return statistics.median(v[1] for _, v in self._of(ids))
        return statistics.fmean(v[2] for _, v in self._of(ids))

    def point(self, plan: SearchPlan, ids: Sequence[str] | None = None) -> Point:
        return Point(self.number, self.measure(ids) or 0.0, self.cost(plan.cost, ids) or 0.0)

    def _of(self, ids: Sequence[str] | None) -> list[tuple[str, list]]:
        return list(self.values.items()) if ids is None else \
            [(q, self.values[q]) for q in ids if q in self.values]

    def label(self) -> str:
        """"funnel K=5 N=8" (its searched values)."""
        shown = " ".join(f"{k}={_show(v)}" for k, v in self.params.items())
        return f"{self.paradigm} {shown}".strip()

    def shown(self, plan: SearchPlan) -> TrialRow:
        """The trial as a report and the Tune view show it under `plan`."""
        measure, cost = self.measure(), self.cost(plan.cost)
        return TrialRow(self.number, self.paradigm, self.params, self.config, self.state,
                        self.seconds, self.note, self.label(), len(self.values),
                        None if measure is None else round(measure, 4),
                        None if cost is None else round(cost, 5))

    def to_dict(self, plan: SearchPlan | None = None) -> dict:
        """The stored trial; with `plan`, as a report shows it (`shown`)."""
        return asdict(self) if plan is None else asdict(self.shown(plan))


@dataclass(frozen=True)
class TrialRow:
    """A trial as shown: its searched values (`params`), whole config, state, seconds and
    note, with its `label`, how many `questions` it answered, and its mean `measure` and
    `cost` over them (None before its first question, or where no question has the
    measure), instead of each question's values."""

    number: int
    paradigm: str
    params: dict
    config: dict
    state: str
    seconds: float
    note: str
    label: str
    questions: int
    measure: float | None
    cost: float | None


@dataclass(frozen=True)
class CurrentTrial:
    """The trial in flight: its `number`, `label`, and how many `questions` it answered."""

    number: int
    label: str
    questions: int


@dataclass(frozen=True)
class SearchProgress:
    """A running search: the `trials` counted of the budget (`of`), the settings
    `refused`, the trial in flight (`current`), the seconds `elapsed` and about how many
    are `left` (None until a trial's pace is known, and no minutes are set)."""

    trials: int
    of: int
    refused: int
    current: CurrentTrial | None
    elapsed: float
    left: int | None


class Stop(Exception):
    """Cancelled, or out of minutes: the trial in flight is dropped."""


class Search:
    """A search over `plan` on `questions` (the search part, in rung order)."""

    def __init__(self, plan: SearchPlan, questions: Sequence[Question],
                 make: Callable[[str, dict], Paradigm], *, done: Sequence[Trial] = (),
                 on_trial: Callable[[Trial], None] | None = None,
                 cancelled: Callable[[], bool] = lambda: False,
                 progress: Callable[[SearchProgress], None] | None = None) -> None:
        """`make(paradigm, config)` makes a paradigm to run (stopping before the reader
        when the measure does not read); `done`: the trials stored by an earlier run of
        this search; `progress` is handed the search's status after every question."""
        if not questions:
            raise ConfigError("The search part holds no questions.")
        self.plan, self.questions, self.make = plan, list(questions), make
        self.ids = [q.id for q in self.questions]
        self.rungs = rungs(len(self.questions), plan.eta, plan.smallest)
        self.trials: list[Trial] = list(done)
        self.on_trial, self.cancelled, self.progress = on_trial, cancelled, progress
        self._started = time.monotonic()
        self._current: Trial | None = None

    # --- the budget -----------------------------------------------------------------------

    def counted(self) -> int:
        """Trials that count against the budget (a refused setting does not)."""
        return sum(t.state != REFUSED for t in self.trials)

    def _out_of_time(self) -> bool:
        return self.plan.minutes is not None and \
            time.monotonic() - self._started >= self.plan.minutes * 60

    def status(self) -> SearchProgress:
        """Trials done of the budget, the one in flight, seconds so far and left."""
        elapsed = time.monotonic() - self._started
        ran = [t for t in self.trials if t.state != REFUSED and t.seconds]
        pace = statistics.fmean(t.seconds for t in ran) if ran else None
        left_trials = max(0, self.plan.trials - self.counted())
        left = pace * left_trials if pace is not None else None
        if self.plan.minutes is not None:
            budget = max(0.0, self.plan.minutes * 60 - elapsed)
            left = budget if left is None else min(left, budget)
        current = self._current
        return SearchProgress(
            trials=self.counted(), of=self.plan.trials,
            refused=len(self.trials) - self.counted(),
            current=None if current is None else CurrentTrial(
                current.number, current.label(), len(current.values)),
            elapsed=round(elapsed, 1), left=None if left is None else round(left))

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> list[Trial]:
        """Trials until the budget is spent or the search is cancelled; every trial."""
        study = self._study()
        refused_in_a_row = 0
        with reusing_stages():
            while self.counted() < self.plan.trials and not self.cancelled() \
                    and not self._out_of_time():
                asked = study.ask()
                trial = self._sampled(asked)
                try:
                    self._ran(trial)
                except Stop:
                    study.tell(asked, state=_state("FAIL"))
                    logger.info("search stopped during trial %d (%s); it is dropped",
                                trial.number, trial.label())
                    break
                finally:
                    self._current = None
                refused_in_a_row = refused_in_a_row + 1 if trial.state == REFUSED else 0
                if refused_in_a_row >= MAX_REFUSED:
                    raise ConfigError(f"{MAX_REFUSED} settings in a row were refused (last: "
                                      f"{trial.note}); narrow the ranges so that they fit "
                                      "together.")
                self._tell(study, asked, trial)
                self.trials.append(trial)
                if self.on_trial is not None:
                    self.on_trial(trial)
        return self.trials

    def _sampled(self, asked: Any) -> Trial:
        """The trial Optuna asked for, as a paradigm and a config."""
        from engine.paradigms.registry import make_config

        plan = self.plan
        paradigm = plan.paradigms[0] if len(plan.paradigms) == 1 else \
            asked.suggest_categorical("paradigm", list(plan.paradigms))
        params = {d.option: _suggest(asked, d) for d in plan.of(paradigm)}
        config = with_values(plan.base.get(paradigm) or {}, params)
        trial = Trial(len(self.trials), paradigm, params, config)
        try:
            make_config(paradigm, config)
        except ConfigError as err:
            trial.state, trial.note = REFUSED, str(err)
        return trial

    def _ran(self, trial: Trial) -> None:
        """Answer `trial`'s rungs; its state says how it ended."""
        if trial.state == REFUSED or self._took_twin(trial):
            return
        self._current = trial
        start = time.monotonic()
        try:
            self._climbed(trial, self.make(trial.paradigm, trial.config))
        except Stop:
            raise
        except Exception as err:  # noqa: BLE001 - a failed setting is stored, not fatal
            log_failure(logger, f"trial {trial.number} ({trial.label()})", err)
            trial.state, trial.note = FAILED_TRIAL, f"{type(err).__name__}: {err}"
        trial.seconds = round(time.monotonic() - start, 3)

    def _took_twin(self, trial: Trial) -> bool:
        """Whether `trial`'s setting was tried before (TPE asks again for a setting tried):
        then it takes that trial's answers, which stand, and is not run again."""
        twin = next((t for t in self.trials if t.config == trial.config and
                     t.state in (COMPLETE, STOPPED)), None)
        if twin is None:
            return False
        trial.values, trial.state = dict(twin.values), twin.state
        trial.note = f"the setting of trial {twin.number}, not run again"
        return True

    def _climbed(self, trial: Trial, paradigm: Paradigm) -> None:
        """Answer `trial`'s rungs in turn, until its last or one that stops it (its cost far
        over the ceiling, or the successive-halving rule against its peers)."""
        answered = 0
        for n, size in enumerate(self.rungs):
            self._answered(trial, paradigm, self.questions[answered:size])
            if self._far_over_ceiling(trial):
                trial.state, trial.note = STOPPED, (
                    f"stopped after {len(trial.values)} questions: its cost, "
                    f"{trial.cost(self.plan.cost):.4g}, is over twice the ceiling")
                return
            answered = size
            if n == len(self.rungs) - 1:
                trial.state = COMPLETE
                return
            going, why = goes_on(trial.point(self.plan, self.ids[:size]), self._peers(size),
                                 eta=self.plan.eta, ceiling=self.plan.ceiling)
            if not going:
                trial.state, trial.note = STOPPED, f"stopped after {size} questions: {why}"
                return

    def _answered(self, trial: Trial, paradigm: Paradigm,
                  questions: Sequence[Question]) -> None:
        """`trial`'s answers to `questions`, ending early once it is far over the ceiling;
        Stop when the search is cancelled or out of time."""
        for question in questions:
            if self.cancelled() or self._out_of_time():
                raise Stop
            trial.values[question.id] = self.answer(paradigm, question)
            if self.progress is not None:
                self.progress(self.status())
            if self._far_over_ceiling(trial):
                return

    def _far_over_ceiling(self, trial: Trial) -> bool:
        """Whether `trial`'s first CEILING_PROBE questions already cost over twice the
        ceiling: a setting that slow stops then, not after the first rung."""
        ceiling = self.plan.ceiling
        return ceiling is not None and len(trial.values) >= CEILING_PROBE and \
            trial.cost(self.plan.cost) > 2 * ceiling

    def answer(self, paradigm: Paradigm, question: Question) -> list:
        """[measure, seconds, reader tokens] of `paradigm`'s run of `question`."""
        trace = paradigm.run(question)
        if trace.status == FAILED:
            raise RuntimeError(f"question {question.id!r}: {trace.error}")
        found = row(trace)
        values = question_values(found)
        return [values.get(self.plan.measure), round(values["seconds"], 5),
                int(found.get("reader_tokens") or 0)]

    def _peers(self, size: int) -> list[Point]:
        """Every earlier trial that answered the first `size` questions, on them."""
        ids = self.ids[:size]
        return [t.point(self.plan, ids) for t in self.trials
                if t.state in (COMPLETE, STOPPED) and all(q in t.values for q in ids)]

    # --- Optuna ---------------------------------------------------------------------------

    def _study(self) -> Any:
        """A study told every trial done before (a resumed search)."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():  # multivariate, group, constraints: "experimental"
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                seed=self.plan.seed + len(self.trials), multivariate=True, group=True,
                n_startup_trials=min(10, max(3, self.plan.trials // 3)))
        study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
        for trial in self.trials:
            study.add_trial(self._frozen(trial))
        return study

    def _distributions(self, trial: Trial) -> dict:
        from optuna.distributions import CategoricalDistribution

        out = {} if len(self.plan.paradigms) == 1 else {
            "paradigm": CategoricalDistribution(list(self.plan.paradigms))}
        out.update({d.name: d.distribution() for d in self.plan.of(trial.paradigm)})
        return out

    def _params(self, trial: Trial) -> dict:
        out = {} if len(self.plan.paradigms) == 1 else {"paradigm": trial.paradigm}
        out.update({f"{trial.paradigm}.{k}": v for k, v in trial.params.items()})
        return out

    def _frozen(self, trial: Trial) -> Any:
        import optuna

        state, values, refused = self._told(trial)
        return optuna.trial.create_trial(
            params=self._params(trial), distributions=self._distributions(trial),
            values=values, state=state, constraints={"refused": refused})

    def _tell(self, study: Any, asked: Any, trial: Trial) -> None:
        state, values, refused = self._told(trial)
        asked.set_constraint("refused", refused)
        study.tell(asked, values, state=state)

    def _told(self, trial: Trial) -> tuple[Any, list[float] | None, float]:
        """What Optuna is told of `trial`: its state, values, and its constraint (above 0:
        infeasible, which TPE puts among the worse trials)."""
        if trial.state == COMPLETE:
            point = trial.point(self.plan)
            return _state("COMPLETE"), [point.measure, point.cost], 0.0
        if trial.state == REFUSED:
            return _state("COMPLETE"), [0.0, 0.0], 1.0
        return _state("PRUNED" if trial.state == STOPPED else "FAIL"), None, 0.0


def _suggest(asked: Any, dimension: Dimension) -> Any:
    if dimension.kind == "choice":
        return asked.suggest_categorical(dimension.name, list(dimension.choices))
    if dimension.kind == "int":
        return asked.suggest_int(dimension.name, int(dimension.low), int(dimension.high),
                                 log=dimension.log)
    return asked.suggest_float(dimension.name, float(dimension.low), float(dimension.high),
                               log=dimension.log)


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return TrialState[name]


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)

