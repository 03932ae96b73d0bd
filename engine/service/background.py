"""A long job in the background: its lifecycle once, for evaluations, tuning searches and
the classifier's retrain (engine.service.annotation.Retraining).

A `BackgroundJob` runs its `work()` in a thread of its own (`start()`) or in the calling one
(`run()`: the command line), can be cancelled (`cancel()`: the work stops at its next
`cancelled` check, what it stored stays) and waited for. It ends in one of four states:
running until `work()` returns, then done, or cancelled where it was asked to stop, or
failed with its error (logged, stored by `finish()`, never raised: what it stored before
stays). What a job needs prepared first (a build, a model) is prepared by
`prepare_first()`, a slow one taking its turn with the corpora's builds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from engine.documents import Corpus
from engine.errors import log_failure
from engine.paradigms.needs import Need
from engine.progress import duration
from engine.service.builds import BUILDS, Cancelled, Turn
from engine.service.store import process_store

logger = logging.getLogger(__name__)

RUNNING, DONE, CANCELLED, FAILED = "running", "done", "cancelled", "failed"


class BackgroundJob:
    """One long job: `kind` names it in its thread, its log lines and its phases
    ("evaluation 3"); a subclass does its `work()` and stores its end in `finish()`."""

    kind: ClassVar[str] = "job"
    clock: ClassVar[Callable[[], float]] = staticmethod(time.monotonic)  # a test's moves

    def __init__(self, job_id: int) -> None:
        self.id = job_id
        self.state, self.error = RUNNING, ""
        self.phase = ""  # what is being prepared before the work itself starts
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self.clock()
        self._ended: float | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} {self.id}"

    def work(self) -> None:
        """The job itself, in the calling thread; it checks `cancelled` between steps."""
        raise NotImplementedError

    def finish(self) -> None:
        """Store how the job ended (its state and error are set); called once, always."""

    def start(self) -> BackgroundJob:
        self._thread = threading.Thread(target=self.run, name=self.label.replace(" ", "-"),
                                        daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """`work()` to its end, then its state; a failure is logged and kept as the error."""
        try:
            self.work()
            self.state = CANCELLED if self.cancelled else DONE
        except Exception as err:  # noqa: BLE001 - stored and shown; what is stored stays
            log_failure(logger, self.label, err)
            self.state, self.error = FAILED, f"{type(err).__name__}: {err}"
        self.phase = ""
        self._ended = self.clock()
        self.finish()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def elapsed(self) -> float:
        """Seconds so far, or in all once it ended."""
        return (self._ended if self._ended is not None else self.clock()) - self._started

    def prepare_first(self, needs: Sequence[Need], corpus: Corpus) -> bool:
        """Prepare `needs` over `corpus`, saying what it does in `phase`; False when
        cancelled before the end."""
        return prepare_needs(needs, corpus, self.label, self._cancel, self._set_phase)

    def _set_phase(self, phase: str) -> None:
        self.phase = phase


def prepare_needs(needs: Sequence[Need], corpus: Corpus, job: str,
                  cancel: threading.Event, phase: Callable[[str], None]) -> bool:
    """Prepare `needs` over `corpus` for `job` ("evaluation 3"), saying what it does with
    `phase`; a slow one takes its turn with the corpora's builds (engine.service.builds).
    False when cancelled before the end."""
    for need in needs:
        if cancel.is_set():
            return False
        phase(f"preparing {need.label}")

        def progress(done: int, total: int, label: str = need.label) -> None:
            phase(f"preparing {label}: {done:,} of {total:,}")

        if not need.slow:
            need.prepare(corpus, progress, process_store())
            continue

        def waits(turn: Turn, label: str = need.label) -> None:
            place, seconds = BUILDS.wait_of(turn)
            phase(f"waiting to build {label}: number {place} in the build queue, about "
                  f"{duration(seconds)} until it starts")

        try:
            with BUILDS.turn(f"{need.label} (for {job})", need.seconds_to_prepare(corpus),
                             cancelled=cancel, on_wait=waits) as turn:
                need.prepare(corpus, turn.progress(progress), process_store())
        except Cancelled:
            return False
    return not cancel.is_set()
