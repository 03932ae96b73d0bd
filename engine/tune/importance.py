"""Which options mattered: Optuna's fANOVA over a paradigm's finished trials.

fANOVA (Hutter et al., 2014) fits a random forest from a trial's values to its measure (or
cost) and splits the variance it explains among the options: an importance of 0.6 for K
says six tenths of what the forest explains of the measure comes from K alone. It is asked
per paradigm (each searched its own options), over every setting tried once, on the
questions all of them answered (the first rung: a trial stopped there counts too; one
stopped sooner, far over the cost ceiling, does not), and only with MIN_TRIALS of them:
below that the forest says nothing.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence

from engine.tune.halving import rungs
from engine.tune.search import COMPLETE, STOPPED, SearchPlan, Trial

MIN_TRIALS = 4


def importance(plan: SearchPlan, trials: Sequence[Trial]) -> dict[str, dict]:
    """{paradigm: {"measure": {option: share}, "cost": {...}, "trials": n, "questions": m}}
    for each paradigm with MIN_TRIALS settings tried and an option that varied among them;
    a paradigm with fewer says so in "note"."""
    answered = [t for t in trials if t.state in (COMPLETE, STOPPED)]
    searched = max((len(t.values) for t in answered), default=0)
    first = rungs(searched, plan.eta, plan.smallest)[0] if searched else 0
    # each setting once, among those that answered the first rung (not those stopped
    # sooner, far over the ceiling)
    ran = list({json.dumps(t.config, sort_keys=True): t for t in answered
                if len(t.values) >= first}.values())
    ids = sorted(set.intersection(*(set(t.values) for t in ran))) if ran else []
    out = {}
    for paradigm in plan.paradigms:
        finished = [t for t in ran if t.paradigm == paradigm]
        dimensions = {d.name: d for d in plan.of(paradigm)}
        varied = [d for d in dimensions.values()
                  if len({repr(t.params.get(d.option)) for t in finished}) > 1]
        if len(finished) < MIN_TRIALS or not varied:
            out[paradigm] = {"trials": len(finished), "note": (
                f"{len(finished)} setting{'s' if len(finished) != 1 else ''} tried: fANOVA "
                f"needs {MIN_TRIALS} with an option that varies")}
            continue
        found = {"trials": len(finished), "questions": len(ids)}
        for objective, name in enumerate(("measure", "cost")):
            targets = {round(_target(plan, t, ids, objective), 9) for t in finished}
            if len(targets) > 1:
                found[name] = _fanova(plan, finished, varied, ids, objective)
            else:  # the forest has nothing to split
                found["note"] = f"the {name} was the same for every setting"
        out[paradigm] = found
    return out


def _target(plan: SearchPlan, trial: Trial, ids: Sequence[str], objective: int) -> float:
    point = trial.point(plan, ids)
    return point.measure if objective == 0 else point.cost


def _fanova(plan: SearchPlan, trials: Sequence[Trial], dimensions: list,
            ids: Sequence[str], objective: int) -> dict[str, float]:
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"])
    for trial in trials:
        point = trial.point(plan, ids)
        study.add_trial(optuna.trial.create_trial(
            params={d.name: trial.params[d.option] for d in dimensions},
            distributions={d.name: d.distribution() for d in dimensions},
            values=[point.measure, point.cost]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = get_param_importances(
            study, evaluator=FanovaImportanceEvaluator(seed=plan.seed),
            target=lambda t: t.values[objective])
    return {name.split(".", 1)[1]: round(float(v), 4) for name, v in found.items()}
