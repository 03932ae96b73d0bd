"""The background retrain of DR-RAG's selection classifier, as its thread writes it and the
Annotate tab reads it: what it waits for and how long in all (the first-start training still
running, then its turn among the long builds, then its own training, timed from the
first-start training's pace here), its progress, how it ended; and its record
(data/retrain.json), so that how it ended survives a restart and one the process died in is
told as interrupted. engine.service.annotation runs it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.models.kinds import SELECTION_CLASSIFIER
from engine.service.builds import Paced

logger = logging.getLogger(__name__)

FIRST_TRAINING = f"train {SELECTION_CLASSIFIER}"  # the preparation task that trains it first
FIRST_TRAINING_PHRASE = ("the first-start training of this classifier (the version a retrain "
                         "improves on and is compared with)")


@dataclass
class RetrainJob(Paced):
    """The state of the background retrain (written by its thread only, but for what it
    waits for and `own`, set when Retrain is pressed so the first status says them)."""

    state: str = "idle"  # idle | waiting | running | done | failed | interrupted
    done: int = 0
    total: int = 0
    error: str = ""
    before: str = ""  # version ids: the one active when training began, and the new one
    after: str = ""
    labels: int = 0  # the stored labels it trains on
    set_aside: int = 0  # the stored labels it leaves out (on held-out or dev500 questions)
    queued: float = 0.0  # when Retrain was pressed
    started: float = 0.0  # when its training began, after the wait
    seconds: float = 0.0  # training time, once ended
    waited: float = 0.0  # time waiting for its turn, once it began
    phase: str = ""  # what it does beside the training steps
    activated: bool = False  # the new version was made active (`not_worse`)
    compared: dict = field(default_factory=dict)  # both versions on the same held-out pairs
    first_training: Any = field(default=None, repr=False)  # the Task it waits for, if any
    # seconds its own training should take: the first-start training's as timed here at the
    # pace it keeps (the same work on the same machine), else the recorded figure
    own: float = 0.0
    turn: Any = field(default=None, repr=False)  # its Turn in BUILDS, once it asked
    paced_from: tuple[float, int] | None = None  # (when, done) of its first progress
    paused_at_pace: float = 0.0  # its turn's paused seconds when the pace began

    def waiting_for(self) -> str:
        """What it waits for now, as a phrase ("" once it runs)."""
        from engine.progress import duration
        from engine.service.builds import BUILDS

        if self.state != "waiting":
            return ""
        if self.first_training is not None:
            return f"{FIRST_TRAINING_PHRASE}: {self.first_training.describe()}"
        place, seconds = BUILDS.wait_of(self.turn) if self.turn is not None else (0, 0.0)
        if not place:  # not in the queue yet, or just given its turn
            return "its turn among the long builds"
        starts = (f"starts in about {duration(seconds)}" if math.isfinite(seconds) else
                  "starts when the builds before it end")
        running = "; ".join(t.label for t in BUILDS.running())
        return (f"its turn among the long builds: number {place} in the queue, {starts}"
                + (f" (running now: {running})" if running else ""))

    def own_seconds(self) -> float:
        """About how many seconds its own training takes (`own`)."""
        from engine.models.kinds import TRAINING_TIMES

        return self.own or TRAINING_TIMES[SELECTION_CLASSIFIER].seconds

    def starts_in(self) -> float:
        """About how many seconds before its training begins (0 once it runs; inf:
        unknown): what the first-start training still needs, else what runs and waits
        before it among the long builds."""
        from engine.service.builds import BUILDS

        if self.state != "waiting":
            return 0.0
        task = self.first_training
        if task is not None:
            # then the retrain asks for its turn: next, unless a shorter build came meanwhile
            queued = BUILDS.wait_of(task.turn)[1] if task.behind else 0.0
            return queued + task.expected()
        if self.turn is not None:
            return BUILDS.wait_of(self.turn)[1]
        # not in the queue yet (just pressed): what runs, and what waits that would go first
        own = self.own_seconds()
        return (sum(t.remaining() for t in BUILDS.running())
                + sum(t.seconds for t in BUILDS.waiting() if t.seconds <= own))

    def describe(self) -> dict:
        now = time.monotonic()
        training = self.seconds or (now - self.started if self.started else 0.0)
        waited = self.waited or (now - self.queued if self.state == "waiting" else 0.0)
        paused = self.turn is not None and self.turn.state == "paused"
        left = self.seconds_left() if self.state == "running" else None
        return {"state": self.state, "done": self.done, "total": self.total,
                "error": self.error, "before": self.before, "after": self.after,
                "labels": self.labels, "set_aside": self.set_aside,
                "seconds": round(training, 1),
                "left": None if left is None else round(left, 1),
                "waited": round(waited, 1), "waiting_for": self.waiting_for(),
                # the whole wait, up front: until it starts, then its own training
                "starts_in": round(self.starts_in(), 1) if self.state == "waiting" else 0.0,
                "takes": round(self.own_seconds(), 1),
                "phase": "paused while a shorter build runs" if paused else self.phase,
                "activated": self.activated, "compared": self.compared}


# what a retrain's record keeps (data/retrain.json): how it ended survives a restart, and one
# the process died in is told as interrupted
RECORDED = ("state", "error", "before", "after", "labels", "set_aside", "seconds", "waited",
            "activated", "compared")


def retrain_record() -> Path:
    from engine.paths import data_dir

    return data_dir() / "retrain.json"


def record(job: RetrainJob) -> None:
    """Write the retrain's state where a restart finds it (atomically)."""
    from engine.cache import write_json_atomic

    write_json_atomic(retrain_record(), {name: getattr(job, name) for name in RECORDED})


def recorded_job() -> RetrainJob:
    """The last retrain as its record left it: one still waiting or running then was
    interrupted by the process's end (a hard stop) and is said so."""
    path = retrain_record()
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        job = RetrainJob(**{name: found[name] for name in RECORDED if name in found})
    except FileNotFoundError:
        return RetrainJob()
    except (OSError, ValueError, TypeError) as err:
        logger.warning("ignoring the damaged retrain record %s: %s", path, err)
        return RetrainJob()
    if job.state in ("waiting", "running"):
        was = "training" if job.state == "running" else "waiting for its turn"
        job.state = "interrupted"
        job.error = (f"the app stopped while this retrain on {job.labels} labels was {was}; "
                     "nothing of it was kept (the active version is unchanged). Press Retrain "
                     "to start it again.")
        record(job)
    return job


def timed(task) -> float:
    """How long the first-start training `task` takes in all at the pace it keeps here
    (what it took so far, not counting pauses, plus what it has left); 0 before it kept a
    pace (or with no task)."""
    if task is None or task.state != "running" or not task.started:
        return 0.0
    left = task.seconds_left()
    if left is None:
        return 0.0
    paused = task.turn.paused_seconds if task.turn is not None else 0.0
    return max(0.0, time.monotonic() - task.started - paused) + left
