"""A whole tuning: the search on its part, the picks checked on the held-out part, the
report.

`tune` runs the search (engine.tune.search), picks each paradigm's best setting and the
winner among them (engine.tune.halving.pick: the best within the cost ceiling, else the
knee of the front), runs every pick beside its paradigm's default on the held-out questions
(engine.tune.held_out) and says whether the gain held. The command line's `tune` and the
app's Tune view both call it; what it reports is JSON-ready.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from engine.documents import Question
from engine.errors import ConfigError
from engine.paradigms.base import Paradigm
from engine.tune.halving import front, pick
from engine.tune.held_out import answers, compare, with_verdicts
from engine.tune.importance import importance
from engine.tune.search import COMPLETE, Search, SearchPlan, Trial

logger = logging.getLogger(__name__)

Make = Callable[[str, dict], Paradigm]


def finished(trials: Sequence[Trial]) -> list[Trial]:
    """The trials that answered every search question and have the measure on some of them
    (a question set whose search questions have no judgments yet has no nDCG@10: a trial
    of it is not a pick, however cheap)."""
    return [t for t in trials if t.state == COMPLETE and t.measure() is not None]


def front_of(plan: SearchPlan, trials: Sequence[Trial]) -> list[Trial]:
    """The finished trials no other beats on measure and cost, cheapest first."""
    by_number = {t.number: t for t in finished(trials)}
    return [by_number[p.number] for p in front([t.point(plan) for t in by_number.values()])]


def picks(plan: SearchPlan, trials: Sequence[Trial]) -> dict[str, Trial]:
    """Each paradigm's pick among its finished trials (none within the ceiling: left out)."""
    out = {}
    for paradigm in plan.paradigms:
        own = {t.number: t for t in finished(trials) if t.paradigm == paradigm}
        chosen = pick([t.point(plan) for t in own.values()], plan.ceiling)
        if chosen is not None:
            out[paradigm] = own[chosen.number]
    return out


def winner(plan: SearchPlan, trials: Sequence[Trial]) -> Trial | None:
    """The pick among all paradigms' finished trials."""
    by_number = {t.number: t for t in finished(trials)}
    chosen = pick([t.point(plan) for t in by_number.values()], plan.ceiling)
    return None if chosen is None else by_number[chosen.number]


def held_out_check(plan: SearchPlan, chosen: dict[str, Trial],
                   questions: Sequence[Question], make: Make,
                   cancelled: Callable[[], bool] = lambda: False,
                   phase: Callable[[str], None] = lambda _: None) -> list[dict]:
    """Each pick against its paradigm's default on `questions`, with verdicts (Holm over
    all picks); [] when cancelled before the end."""
    from engine.paradigms.registry import make_config

    comparisons, unmeasured = [], []
    for paradigm, trial in chosen.items():
        default = plan.base.get(paradigm) or {}
        phase(f"held-out: {trial.label()}")
        rows_pick = list(answers(make(paradigm, trial.config), questions, cancelled))
        same = make_config(paradigm, trial.config) == make_config(paradigm, default)
        phase(f"held-out: {paradigm} default")
        rows_default = rows_pick if same else list(
            answers(make(paradigm, default), questions, cancelled))
        if cancelled():
            return []
        entry = {"paradigm": paradigm, "trial": trial.number, "label": trial.label(),
                 "config": trial.config, "default_config": default, "pick_is_default": same}
        try:
            comparisons.append({**entry, **compare(rows_pick, rows_default, plan.measure,
                                                   plan.cost)})
        except ConfigError as err:  # no held-out measure (best skipped every retrieval)
            unmeasured.append({**entry, "measured": False, "held": False,
                               "verdict": f"not checked: {str(err).rstrip('.')}"})
    # Holm over the picks that have a measure; the others are said as such, and never stop
    # the rest from their verdicts
    return [*(with_verdicts(comparisons) if comparisons else []), *unmeasured]


def report(plan: SearchPlan, trials: Sequence[Trial], held_out: Sequence[dict]) -> dict:
    """What a tuning found: counts, the front, each paradigm's pick, the winner, the
    held-out check and each option's importance."""
    best = winner(plan, trials)
    states = {}
    for trial in trials:
        states[trial.state] = states.get(trial.state, 0) + 1
    winner_check = next((c for c in held_out if best and c["trial"] == best.number), None)
    return {
        "trials": states,
        "front": [t.to_dict(plan) for t in front_of(plan, trials)],
        "picks": {p: t.to_dict(plan) for p, t in picks(plan, trials).items()},
        "winner": None if best is None else {**best.to_dict(plan),
                                             "held_out": winner_check},
        "held_out": list(held_out),
        "importance": importance(plan, trials),
        "note": _unmeasured(plan, trials),
    }


def _unmeasured(plan: SearchPlan, trials: Sequence[Trial]) -> str:
    """Why no trial can be picked when trials completed without the measure; else ''."""
    complete = [t for t in trials if t.state == COMPLETE]
    if not complete or finished(trials):
        return ""
    return (f"None of the search questions has {plan.measure}: its trials ran but measure "
            f"nothing. Judge the question set's documents first (Judge), or pick a "
            "measure its questions have.")


def tune(plan: SearchPlan, search_part: Sequence[Question], held_part: Sequence[Question],
         make: Make, *, done: Sequence[Trial] = (),
         on_trial: Callable[[Trial], None] | None = None,
         cancelled: Callable[[], bool] = lambda: False,
         progress: Callable[[dict], None] | None = None,
         phase: Callable[[str], None] = lambda _: None) -> dict:
    """Search, check the picks on the held-out part, report (see the module). A search
    cancelled part-way is reported on what finished, without the held-out check."""
    search = Search(plan, search_part, make, done=done, on_trial=on_trial,
                    cancelled=cancelled, progress=progress)
    phase("searching")
    trials = search.run()
    held = [] if cancelled() else held_out_check(plan, picks(plan, trials), held_part,
                                                 make, cancelled, phase)
    logger.info("tuning: %d trials, %d finished; %d picks checked on %d held-out questions",
                len(trials), len(finished(trials)), len(held), len(held_part))
    return report(plan, trials, held)
