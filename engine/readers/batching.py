"""Reader calls that arrive together run as one batch.

Concurrent users (and an evaluation with several questions in flight, engine.eval.runner)
call the same in-process model, one call at a time under its lock. `Batcher.submit` queues
a call; whichever caller gets the lock next takes every queued call (up to `max_batch`) and
runs them together, and the others find their results done when the lock comes to them.
Nothing waits for a batch to fill: a call alone runs alone, at once.

What "together" means is the generator's business (engine/readers/backends.py): each
prompt is prefilled on its own (its prefix cache, its attention), and the greedy decoding
steps of the batch run as one forward pass over a left-padded cache.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Call:
    """One queued generator call: what to run, then what it produced or raised."""

    payload: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = field(default=False)


class Batcher:
    """Runs queued calls in batches of at most `max_batch`, one batch at a time under `lock`.

    `run(payloads)` returns one result per payload, in order; an exception fails every call
    of that batch (each caller re-raises it).
    """

    def __init__(self, run: Callable[[Sequence[Any]], Sequence[Any]], lock: threading.Lock,
                 max_batch: int = 8) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch={max_batch}; it must be at least 1")
        self._run, self._lock, self.max_batch = run, lock, max_batch
        self._queue: list[Call] = []
        self._guard = threading.Lock()  # the queue's own: held for moments, never while running
        self.sizes: Counter[int] = Counter()  # batches run, by size (tests and benches read it)
        self.last_size = 0

    @property
    def waiting(self) -> int:
        """Calls queued and not yet taken into a batch."""
        with self._guard:
            return len(self._queue)

    def submit(self, payload: Any) -> Any:
        """Run `payload` (alone or with calls queued meanwhile) and return its result."""
        call = Call(payload)
        with self._guard:
            self._queue.append(call)
        while not call.done:
            with self._lock:
                if call.done:  # a batch run by another caller held it
                    break
                with self._guard:
                    batch = self._queue[:self.max_batch]
                    del self._queue[:len(batch)]
                self._run_batch(batch)
        if call.error is not None:
            raise call.error
        return call.result

    def _run_batch(self, batch: list[Call]) -> None:
        self.sizes[len(batch)] += 1
        self.last_size = len(batch)
        try:
            results = self._run([c.payload for c in batch])
            for c, result in zip(batch, results, strict=True):
                c.result = result
        except BaseException as err:  # every caller of the batch re-raises it
            for c in batch:
                c.error = err
        finally:
            for c in batch:
                c.done = True
