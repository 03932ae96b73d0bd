"""The app's named API endpoints for tuning (app.api registers them with the others):
start a search over paradigms' options, follow it, list, cancel and resume searches. Each
converts strings and numbers to a call of `explorer.tuning` (engine.service.tuning) and its
result to JSON; an engine refusal becomes a gr.Error that names the bad value and the fix.
"""

from __future__ import annotations

import json

from app.endpoints import endpoint
from app.errors import refused
from engine.config import json_object
from engine.results import plain
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded


def tuning_api(explorer: Explorer) -> None:
    """Named endpoints for tuning searches."""

    def tune(dataset: str, paradigms: str, measure: str = "", cost: str = "seconds",
             ceiling: float = 0.0, trials: int = 30, minutes: float = 0.0,
             options_json: str = "", configs_json: str = "", held_out: float = 0.5,
             seed: int = 0, limit: int = 0, name: str = "", preset: str = "",
             corpus: str = "", build: bool = False) -> int:
        """Start a search of comma-separated `paradigms` on `dataset` (as /evaluate names
        it) over `corpus`: `measure` up (empty: nDCG@10 on judged questions, else AR@4),
        `cost` (seconds or reader_tokens per question) down, the pick the best within
        `ceiling` (0: the front's knee); `trials` and `minutes` (0: none) its budget;
        `options_json` what is searched ({"funnel.K": [2, 40]}; empty: every numeric and
        choice option that builds nothing), `configs_json` what stays fixed ({paradigm:
        options}). The winner is checked on the `held_out` share against its paradigm's
        default and saved as preset `preset` (empty: tune-ID). Returns the search's id;
        follow it with /tune_status."""
        try:
            return explorer.tuning.tune(
                dataset, [p.strip() for p in (paradigms or "").split(",") if p.strip()],
                measure=measure or "", cost=cost or "seconds",
                ceiling=float(ceiling) if ceiling else None, trials=int(trials),
                minutes=float(minutes) if minutes else None,
                options=json_object(options_json, "options_json", '{"funnel.K": [2, 40]}'),
                configs=json_object(configs_json, "configs_json", '{"funnel": {"H": 2}}'),
                held_out=float(held_out),
                seed=int(seed), limit=int(limit), name=name or "", preset=preset or "",
                corpus=corpus or "", build=bool(build))
        except BuildNeeded as err:
            raise refused(f"{err} Over the API: pass build=True to build it first.") from None

    def tune_status(tune_id: int) -> str:
        """Search `tune_id`: its state, plan, every trial, the front's trial numbers and,
        once it ended, its report (front, picks, winner, held-out check, importance)."""
        return json.dumps(plain(explorer.tuning.tune_status(int(tune_id))))

    def list_tunes() -> str:
        """Every stored search, newest first."""
        return json.dumps(plain(explorer.tuning.tunes()))

    def cancel_tune(tune_id: int) -> str:
        """Stop search `tune_id` after the question in flight; its finished trials stay."""
        explorer.tuning.cancel_tune(int(tune_id))
        return json.dumps({"cancelled": int(tune_id)})

    def resume_tune(tune_id: int, build: bool = False) -> int:
        """Go on with stored search `tune_id` (interrupted, cancelled or failed) from its
        stored trials; its id."""
        return explorer.tuning.resume_tune(int(tune_id), bool(build))

    endpoint(tune, "tune_id", "the id of the new search (follow it with /tune_status)")
    endpoint(tune_status, "tune_json", "JSON text: the search's state, trials and report")
    endpoint(list_tunes, "tunes_json", "JSON text: a list of the stored searches")
    endpoint(cancel_tune, "cancelled_json", "JSON text: {cancelled: id}")
    endpoint(resume_tune, "tune_id", "the id of the search resumed (follow it with /tune_status)")


