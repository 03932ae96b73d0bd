"""Long builds take turns fairly: one at a time, the shortest first, a short one never behind a
long one.

Encoding a dense index and training a model each keep both cores busy; two at once only slow
each other down (two torch jobs spinning on two cores ran many times slower here), so the
process runs one long build at a time. Which one goes next is the shortest by its estimate
(shortest job first: the queue's mean wait is then the least), in arrival order among equals.
A build estimated at no more than `SHORT_SECONDS` does not wait for a long one that is already
running: it starts at once and the long one pauses at its next progress step until the short
one ends (`Turn.progress` wraps the long build's progress callback and blocks there). So a
small corpus added while a classifier trains for half an hour is ready within seconds of its
own build time, and the training resumes where it paused.

`BUILDS.turn(label, seconds)` is a context manager that waits for the turn; every waiting turn
knows its place in the queue and how long what runs before it is expected to take
(`BUILDS.wait_of(turn)`), so the status line can say both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from engine.progress import duration

Progress = Callable[[int, int], None]

SHORT_SECONDS = 120.0  # a build estimated within this goes first, pausing a long one
PACE_SECONDS = 20.0  # a running build's time left is told once it kept a pace this long


class Cancelled(Exception):
    """A turn given up while it waited (its preparation was cancelled)."""


@dataclass(eq=False)
class Turn:
    """One build's place in the queue. `seconds` is its estimate when it asked; `left`, once
    it runs, says how long it still needs (None: unknown, the estimate stands)."""

    label: str
    seconds: float
    arrived: float = field(default_factory=time.monotonic)
    state: str = "waiting"  # waiting | running | paused | done
    left: Callable[[], float | None] | None = field(default=None, repr=False)
    queue: BuildQueue | None = field(default=None, repr=False)
    paused_seconds: float = 0.0  # in all, paused while shorter builds ran (not its pace)

    @property
    def short(self) -> bool:
        return self.seconds <= SHORT_SECONDS

    def remaining(self) -> float:
        """Seconds it still needs: its live estimate while it runs, else its estimate."""
        live = self.left() if self.left is not None and self.state != "waiting" else None
        return max(0.0, live if live is not None else self.seconds)

    def progress(self, report: Progress) -> Progress:
        """`report` wrapped so that a long build pauses there while a short one runs."""
        def wrapped(done: int, total: int) -> None:
            report(done, total)
            if self.queue is not None:
                self.queue.yield_to_short(self)
        return wrapped


class Paced:
    """The pace of a long build, for a dataclass with fields `done`, `total`, `turn` (its
    Turn, once it has one), `paced_from` ((when, done) of its first progress report) and
    `paused_at_pace` (its turn's paused seconds then): units a second since its first
    report (setup before it not counted, nor the time its turn was paused while shorter
    builds ran), told once it kept a pace for PACE_SECONDS."""

    def report(self, done: int, total: int) -> None:
        """Its progress callback: `done` of `total` units of work."""
        if self.paced_from is None or done < self.paced_from[1]:
            self.paced_from = (time.monotonic(), done)
            self.paused_at_pace = self.turn.paused_seconds if self.turn else 0.0
        self.done, self.total = done, total

    def rate(self) -> float | None:
        """Units a second at the pace it keeps; None before it kept one."""
        if self.paced_from is None:
            return None
        since, first = self.paced_from
        paused = (self.turn.paused_seconds if self.turn else 0.0) - self.paused_at_pace
        seconds = time.monotonic() - since - paused
        if seconds < PACE_SECONDS or self.done <= first:
            return None
        return (self.done - first) / seconds

    def seconds_left(self) -> float | None:
        """How long it still needs at the pace it keeps (None: too early to tell)."""
        rate = self.rate()
        if rate is None or not self.total:
            return None
        return max(0.0, (self.total - self.done) / rate)


class BuildQueue:
    """The process's long builds: one runs at a time, shortest first; a short one pauses a
    long one instead of waiting for it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` (seconds) orders turns that arrive with one estimate and times pauses."""
        self._cond = threading.Condition()
        self._clock = clock
        self._turns: list[Turn] = []  # every turn not done, in arrival order

    @contextmanager
    def turn(self, label: str, seconds: float, *, cancelled: threading.Event | None = None,
             on_wait: Callable[[Turn], None] | None = None) -> Iterator[Turn]:
        """Wait for a turn for a build of about `seconds`, run the body, hand over.
        `on_wait(turn)` is called once if it has to wait; `cancelled` set while it waits
        gives the turn up (`Cancelled`)."""
        turn = Turn(label, max(0.0, float(seconds)), arrived=self._clock(), queue=self)
        with self._cond:
            self._turns.append(turn)
            if not self._may_start(turn) and on_wait is not None:
                on_wait(turn)
            while not self._may_start(turn):
                if cancelled is not None and cancelled.is_set():
                    self._turns.remove(turn)
                    self._cond.notify_all()
                    raise Cancelled(label)
                self._cond.wait(0.2)
            turn.state = "running"
        try:
            yield turn
        finally:
            with self._cond:
                turn.state = "done"
                self._turns.remove(turn)
                self._cond.notify_all()

    def _may_start(self, turn: Turn) -> bool:
        active = [t for t in self._turns if t.state in ("running", "paused")]
        first = self._order()
        if not active:
            return bool(first) and first[0] is turn
        if turn.short and not any(t.short for t in active):
            return next(t for t in first if t.short) is turn  # goes first: the long pauses
        return False

    def _order(self) -> list[Turn]:
        """The waiting turns in the order they will start: shortest first."""
        waiting = [t for t in self._turns if t.state == "waiting"]
        return sorted(waiting, key=lambda t: (t.seconds, t.arrived))

    def yield_to_short(self, turn: Turn) -> None:
        """Called at a long build's progress steps: pause while a short build runs (or is
        about to start)."""
        if turn.short:
            return
        with self._cond:
            began = self._clock()
            while any(t.short and t is not turn and t.state in ("running", "waiting")
                      for t in self._turns):
                turn.state = "paused"
                self._cond.wait(0.2)
            turn.state = "running"
            turn.paused_seconds += self._clock() - began

    # --- what the status line says ----------------------------------------------------------

    def waiting(self) -> list[Turn]:
        with self._cond:
            return self._order()

    def running(self) -> list[Turn]:
        with self._cond:
            return [t for t in self._turns if t.state in ("running", "paused")]

    def wait_of(self, turn: Turn) -> tuple[int, float]:
        """(its place among the waiting, 1 = next; about how many seconds before it starts:
        what runs now still needs, plus every waiting turn ahead of it). A short turn waits
        only for the short ones ahead of it."""
        with self._cond:
            order = self._order()
            if turn not in order:
                return 0, 0.0
            place = order.index(turn)
            ahead = [t for t in order[:place] if t.short or not turn.short]
            active = [t for t in self._turns if t.state in ("running", "paused")]
            running = [t for t in active if t.short or not turn.short]
            return place + 1, sum(t.remaining() for t in (*running, *ahead))

    def lines(self, skip: set[Turn] = frozenset()) -> list[str]:
        """A line for each build running or waiting that is not in `skip` (those whose
        owner describes them, such as a corpus's preparation): what runs and about how
        long it still needs, then the waiting ones in the order they start, with their
        place, when they start and how long they take."""
        out = []
        for turn in self.running():
            if turn in skip:
                continue
            doing = "paused while a shorter build runs" if turn.state == "paused" else \
                "building"
            out.append(f"{turn.label}: {doing}, about {duration(turn.remaining())} left")
        for turn in self.waiting():
            if turn in skip:
                continue
            place, seconds = self.wait_of(turn)
            out.append(f"{turn.label}: number {place} in the build queue; starts in about "
                       f"{duration(seconds)}, then takes about {duration(turn.seconds)}")
        return out


BUILDS = BuildQueue()
