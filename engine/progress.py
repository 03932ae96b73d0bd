"""Progress of long work (encoding, clustering) as log lines: done of total, rate, time left.

Long work reports `progress(done, total)` to a callback (the app's status line receives
one). `LoggedProgress` is such a callback that also writes a log line at most every
`log_seconds()`, so a command-line build that encodes for an hour says how far it is
instead of staying silent, and the log never fills with a bar redrawn many times a second.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable

Progress = Callable[[int, int], None]

LOG_SECONDS = 30.0  # between two progress lines of one piece of work, by default


def log_seconds() -> float:
    """Seconds between two progress lines: `$FUNNEL_PROGRESS_SECONDS`, default 30."""
    try:
        return max(0.0, float(os.environ.get("FUNNEL_PROGRESS_SECONDS") or LOG_SECONDS))
    except ValueError:
        return LOG_SECONDS


def duration(seconds: float) -> str:
    """'40 s', '3 min', '1 h 5 min': how long, as a person would say it ('an unknown time'
    for an infinite estimate)."""
    if math.isinf(seconds):
        return "an unknown time"
    if 0 < seconds < 0.5:
        return "a second"  # "about a second": a build is never "about 0 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


class LoggedProgress:
    """A `Progress` callback that logs "<what>: 10,240 of 44,000 <unit> (23%), 17.1/s,
    about 33 min left" at most every `every` seconds (default `log_seconds()`), and the last
    line when the work ends if it logged any before (work shorter than `every` logs
    nothing); each call is passed on to `then` (another callback, such as the status
    line's). Time spent inside `then` (a build paused there while a shorter one runs) does
    not count towards the rate."""

    def __init__(self, logger: logging.Logger, what: str, unit: str, *,
                 then: Progress | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger, self.what, self.unit = logger, what, unit
        self.then, self.clock = then, clock
        self.every = log_seconds() if every is None else every
        self.started = self.last = clock()
        self.logged, self.paused = 0, 0.0

    def __call__(self, done: int, total: int) -> None:
        if self.then is not None:
            before = self.clock()
            self.then(done, total)
            self.paused += self.clock() - before
        now = self.clock()
        ended = total > 0 and done >= total
        if now - self.last < self.every and not (ended and self.logged):
            return
        self.last, self.logged = now, self.logged + 1
        self.logger.info("%s", self.line(done, total, now - self.started - self.paused))

    def line(self, done: int, total: int, seconds: float) -> str:
        """The progress line after `seconds` of work."""
        share = f" ({done / total:.0%})" if total else ""
        rate = done / seconds if seconds > 0 else 0.0
        line = f"{self.what}: {done:,} of {total:,} {self.unit}{share}, {rate:,.1f}/s"
        if done >= total:
            return f"{line}, done in {duration(seconds)}"
        if rate > 0:
            return f"{line}, about {duration((total - done) / rate)} left"
        return line
