"""One step of a corpus's background preparation (engine.service.preparation) and its live
state: what it is, how far along, how long it has left at the pace it keeps, its place in
the queue of long builds (engine.service.builds.BUILDS), and what answers for it meanwhile,
as one human line (`describe`) or a short headline.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.progress import duration
from engine.service.builds import BUILDS, Paced, Turn

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


@dataclass
class Task(Paced):
    """One preparation step and its live state (written by the worker thread only)."""

    name: str
    label: str
    action: Callable[[Progress], Any]
    state: str = "waiting"  # waiting | running | ready | failed
    done: int = 0
    total: int = 0
    error: str = ""
    started: float | None = None
    seconds: float = 0.0
    result: Any = field(default=None, repr=False)
    slow: bool = False
    train_seconds: float = 0.0
    stand_in: str = ""  # what answers for it until it is ready
    promised: bool = False  # to be built, its stand-in answering meanwhile
    estimate: Callable[[], float] | None = None  # seconds a build takes here (its turn)
    turn: Turn | None = field(default=None, repr=False)  # its place in BUILDS
    paced_from: tuple[float, int] | None = None  # (when, done) of its first progress
    paused_at_pace: float = 0.0  # its turn's paused seconds when the pace began
    must_train: Callable[[], bool] | None = None  # whether running it trains a model
    needs_corpus: bool = True  # runs once the corpus has loaded (fetching data does not)
    trained_by: Task | None = field(default=None, repr=False)  # training it waits for
    per_corpus: bool = True  # False: the process's (a model), not this corpus's own
    cannot_run: Callable[[], str] | None = None  # why it would fail now ("": it can run)
    meanwhile: str = ""  # what answers while it waits or runs, said only then

    @property
    def shown(self) -> str:
        """Its label, with what answers meanwhile while it waits or runs (a training that
        ended no longer says its untrained stand-in answers)."""
        if self.meanwhile and self.state in ("waiting", "running"):
            return f"{self.label} ({self.meanwhile})"
        return self.label

    def headline(self) -> str:
        """What it is and its state, without figures that go stale once shown."""
        state = {"running": "training" if self.train_seconds else "building",
                 "waiting": "waiting for its turn",
                 "failed": f"FAILED - {self.error}"}.get(self.state, self.state)
        return f"{self.shown} ({state})"

    @property
    def behind(self) -> bool:
        """Waiting for its turn to build (BUILDS)."""
        return self.state == "waiting" and self.turn is not None

    def estimated(self) -> float:
        """About how many seconds it takes here (inf: unknown)."""
        try:
            return float(self.estimate()) if self.estimate is not None else math.inf
        except Exception:  # noqa: BLE001 - an estimate is a courtesy, never a failure
            logger.exception("could not estimate %s", self.label)
            return math.inf

    def expected(self) -> float:
        """About how many seconds it still needs: what it has left at its pace while it
        runs, its estimate while it waits (a load counts as nothing; inf: unknown)."""
        if self.state == "running":
            left = self.seconds_left()
            if left is not None:
                return left
        if self.state not in ("waiting", "running"):
            return 0.0
        return self.train_seconds or (self.estimated() if self.slow else 0.0)

    def describe(self, ahead: float | None = None) -> str:
        """One human line: what it is and how far along; a task waiting for the tasks
        before it in its preparation says when it should start (`ahead`: what they still
        need, in seconds)."""
        if self.state == "running":
            elapsed = time.monotonic() - (self.started or time.monotonic())
            part = ""
            if self.total:
                part = f" {self.done:,}/{self.total:,} ({self.done / self.total:.0%})"
                rate, left = self.rate(), self.seconds_left()
                if rate is not None and left is not None:
                    part += (f", {rate:,.{0 if rate >= 10 else 1}f}/s, about "
                             f"{duration(left)} left")
            doing = "training" if self.train_seconds else "building"
            if self.turn is not None and self.turn.state == "paused":
                doing = "paused while a shorter build runs"
            meanwhile = f"; {self.stand_in} stands in meanwhile" if self.promised else ""
            return f"{self.shown}: {doing}{part}, {elapsed:.0f} s so far{meanwhile}"
        if self.state == "ready" and self.trained_by and self.trained_by.state != "ready":
            return (f"{self.shown}: its untrained stand-in answers ({self.seconds:.1f} s to "
                    f"load) until {self.trained_by.label.split(' (')[0]} ends"
                    + (" (it failed: the stand-in stays)" if self.trained_by.state == "failed"
                       else ""))
        if self.state == "ready":
            return f"{self.shown}: ready ({self.seconds:.1f} s)"
        if self.state == "failed":
            return f"{self.shown}: FAILED - {self.error}"
        if self.behind:
            place, seconds = BUILDS.wait_of(self.turn)
            starts = (f"starts in about {duration(seconds)}" if math.isfinite(seconds) else
                      "starts when the builds before it end")
            takes = (f", then takes about {duration(self.turn.seconds)}"
                     if math.isfinite(self.turn.seconds) else "")
            return f"{self.shown}: number {place} in the build queue; {starts}{takes}"
        if ahead and math.isfinite(ahead):
            takes = self.expected()
            return (f"{self.shown}: waiting for the tasks above; starts in about "
                    f"{duration(ahead)}" + (f", then takes about {duration(takes)}"
                                             if takes and math.isfinite(takes) else ""))
        if ahead:
            return f"{self.shown}: waiting for the tasks above (how long they take is unknown)"
        return f"{self.shown}: waiting for its turn"

    def builds(self) -> bool:
        """Whether running it is a long build (encoding, training) that takes its turn
        (BUILDS); loading what an earlier build cached is not."""
        return self.promised or (self.must_train is not None and self.must_train())
