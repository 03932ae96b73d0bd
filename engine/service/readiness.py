"""Background preparation: build or load, in order, everything the paradigms need.

The app starts serving at once and calls `Preparation.start()`; one background thread then
loads the corpus and everything the registered paradigms declare they need (`Need`s: the
cluster index, the reader converted once from GGUF, the re-rankers, the dense passage
index, the classifiers), each through its fingerprinted cache and into the process-wide
stores, so a second start only verifies and loads. A need two paradigms share is one task.
One thread, in sequence: on two cores, parallel builds would only slow each other down.
Slow needs (dense indexes) go last, and after them the training of models trained here on
a first start (DR-RAG's selection classifier, best's query classifier): no paradigm waits
for those, it runs on the model's untrained stand-in until training ends. Nor does any
paradigm wait for a dense index: once the corpus is loaded its build is promised, and BM25
over the same passages stands in until it ends (engine.index.stand_in).

Builds take turns across every corpus's preparation (`BUILDS`): a corpus added while another
is encoding loads, gets its BM25 indexes and answers on the stand-ins at once, and encodes
when the other build ends.

`missing(paradigm)` says what a paradigm still waits for and how far along that is, so the
UI can show it instead of failing. Nothing here imports torch until a task runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import check_choice
from engine.paradigms.base import Need
from engine.paradigms.registry import PARADIGMS
from engine.types import Corpus

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

# encoding a dense index or training a model: one at a time in the process (two cores)
BUILDS = threading.Lock()
CANCELLED = "cancelled while it waited for another corpus's build"


@dataclass
class Task:
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
    behind: bool = False  # waiting for another corpus's build to end (BUILDS)
    must_train: Callable[[], bool] | None = None  # whether running it trains a model

    def headline(self) -> str:
        """What it is and its state, without figures that go stale once shown."""
        state = {"running": "training" if self.train_seconds else "building",
                 "waiting": "waiting for its turn",
                 "failed": f"FAILED - {self.error}"}.get(self.state, self.state)
        return f"{self.label} ({state})"

    def describe(self) -> str:
        """One human line: what it is and how far along."""
        if self.state == "running":
            elapsed = time.monotonic() - (self.started or time.monotonic())
            part = ""
            if self.total:
                part = f" {self.done:,}/{self.total:,} ({self.done / self.total:.0%})"
                if self.done and elapsed > 0:
                    rate = self.done / elapsed
                    part += (f", {rate:,.{0 if rate >= 10 else 1}f}/s, about "
                             f"{duration((self.total - self.done) / rate)} left")
            doing = "training" if self.train_seconds else "building"
            meanwhile = f"; {self.stand_in} stands in meanwhile" if self.promised else ""
            return f"{self.label}: {doing}{part}, {elapsed:.0f} s so far{meanwhile}"
        if self.state == "ready":
            return f"{self.label}: ready ({self.seconds:.1f} s)"
        if self.state == "failed":
            return f"{self.label}: FAILED - {self.error}"
        if self.behind:
            return f"{self.label}: waiting for another corpus's build to end"
        return f"{self.label}: waiting for its turn"

    def builds(self) -> bool:
        """Whether running it is a long build (encoding, training) that takes its turn
        (BUILDS); loading what an earlier build cached is not."""
        return self.promised or (self.must_train is not None and self.must_train())


def duration(seconds: float) -> str:
    """'40 s', '3 min', '1 h 5 min': how long, as a person would say it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


class Preparation:
    """Prepares one corpus for the paradigms in a background thread."""

    def __init__(self, corpus_spec: str, *, dense: bool = True,
                 load: Callable[[Progress], Corpus] | None = None) -> None:
        """Prepare corpus `corpus_spec` for every registered paradigm's default config;
        `dense=False` leaves the slow builds out (they then happen on first use). `load`
        replaces `load_corpus(corpus_spec)` (an added corpus is read and stored first)."""
        self.corpus_spec, self.dense = corpus_spec, dense
        self._load = load
        self._thread: threading.Thread | None = None
        self._cancelled = threading.Event()
        self.tasks: dict[str, Task] = {"corpus": Task("corpus", f"corpus '{corpus_spec}'",
                                                      self._load_corpus)}
        self.needs: dict[str, tuple[str, ...]] = {}  # paradigm -> the tasks it waits for
        self._promises: dict[str, Callable[[Corpus], None]] = {}
        for name, spec in PARADIGMS.items():
            keys = []
            for need in spec.needs():
                if need.slow and not dense:
                    continue
                self.tasks.setdefault(need.key, Task(need.key, need.label,
                                                     self._preparer(need), slow=need.slow,
                                                     stand_in=need.stand_in))
                if need.trained_by and dense:  # the paradigm runs on the stand-in meanwhile
                    self._add_training(need)
                if need.promise is not None:
                    self._promises[need.key] = need.promise
                if not need.stand_in:
                    keys.append(need.key)
            self.needs[name] = ("corpus", *keys)
        # fast first: on two cores one build at a time, and the slowest last (a minute of
        # training for best's query classifier before ten for DR-RAG's selection classifier)
        self.tasks = dict(sorted(self.tasks.items(),
                                 key=lambda item: (item[1].slow, item[1].train_seconds)))

    def _preparer(self, need: Need) -> Callable[[Progress], Any]:
        return lambda progress: need.prepare(self.corpus, progress)

    def _add_training(self, need: Need) -> None:
        """A background task that trains `need`'s model if it is missing and then loads it,
        so the next question runs on it instead of the stand-in. No paradigm waits for it."""
        from engine.train.trainers import TRAINERS

        name = f"train {need.trained_by}"
        if name in self.tasks:
            return
        trainer = TRAINERS[need.trained_by]

        def action(progress: Progress) -> Any:
            from engine.train.trainers import train_if_missing

            train_if_missing(need.trained_by, progress)
            return need.prepare(self.corpus, progress)

        self.tasks[name] = Task(name, f"training {trainer.trains} (its untrained stand-in "
                                "answers meanwhile)", action, slow=True,
                                train_seconds=need.train_seconds,
                                must_train=lambda: not trainer.is_trained())

    @property
    def corpus(self):
        task = self.tasks["corpus"]
        return task.result if task.state == "ready" else None

    def _load_corpus(self, progress: Progress):
        from engine.data.corpus import load_corpus

        return self._load(progress) if self._load else load_corpus(self.corpus_spec)

    # --- running --------------------------------------------------------------------------

    def start(self) -> Preparation:
        """Start the background thread (once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="preparation",
                                            daemon=True)
            self._thread.start()
        return self

    def run(self) -> Preparation:
        """Prepare everything in this thread (for the CLI and tests)."""
        self._work()
        return self

    def _work(self) -> None:
        for task in self.tasks.values():
            if self._cancelled.is_set():
                task.state, task.error = "failed", CANCELLED
                continue
            if task.name != "corpus" and self.corpus is None:
                task.state, task.error = "failed", "the corpus did not load"
                continue
            self._run(task)
            if task.name == "corpus" and self.corpus is not None:
                self._promise()

    def cancel(self, timeout: float = 5.0) -> bool:
        """Stop a preparation that is only waiting for another corpus's build (nothing of
        its own running): its tasks end as cancelled. False, and nothing done, while one of
        its tasks runs."""
        if any(t.state == "running" for t in self.tasks.values()) or not self.busy():
            return False
        self._cancelled.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.busy()

    def _promise(self) -> None:
        """Promise what must be built that a stand-in answers for meanwhile."""
        for key, promise in self._promises.items():
            try:
                self.tasks[key].promised = promise(self.corpus)
            except Exception:  # noqa: BLE001 - unpromised, it is built (or fails) in its turn
                logger.exception("could not tell whether %s must be built", key)

    def _run(self, task: Task) -> None:
        """Run one task, recording its state, progress and time; a long build first waits
        for any other corpus's to end (or for the preparation to be cancelled)."""
        builds = task.builds()
        if builds and not BUILDS.acquire(blocking=False):
            task.behind = True
            while not BUILDS.acquire(timeout=0.2):
                if self._cancelled.is_set():
                    task.state, task.behind, task.error = "failed", False, CANCELLED
                    return
            task.behind = False
        try:
            Preparation._run_now(task)
        finally:
            if builds:
                BUILDS.release()

    @staticmethod
    def _run_now(task: Task) -> None:
        task.state, task.started = "running", time.monotonic()

        def progress(done: int, total: int) -> None:
            task.done, task.total = done, total

        try:
            task.result = task.action(progress)
        except Exception as err:  # noqa: BLE001 - shown to the user, the app keeps going
            logger.exception("preparing %s failed", task.label)
            task.state, task.error = "failed", str(err)
        else:
            task.state = "ready"
        task.seconds = time.monotonic() - task.started

    def wait_quick(self, timeout: float) -> bool:
        """Block until every task but the slow ones has ended (or `timeout` seconds
        pass): a corpus loaded again from its caches can answer then; True if it can."""
        deadline = time.monotonic() + timeout
        while any(t.state in ("waiting", "running") and not t.slow
                  for t in self.tasks.values()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background thread ends; True if it did."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    # --- questions the UI asks ------------------------------------------------------------

    def missing(self, paradigm: str) -> list[Task]:
        """The tasks `paradigm` still waits for (empty: it can run). A paradigm registered
        after this preparation was planned waits only for the corpus."""
        check_choice("paradigm", paradigm, PARADIGMS)
        return [self.tasks[n] for n in self.needs.get(paradigm, ("corpus",))
                if n in self.tasks and self.tasks[n].state != "ready"]

    def underway(self, key: str) -> bool:
        """Whether the need `key` is in this preparation's plan and not prepared or failed
        yet: whoever needs it can wait for it instead of starting it."""
        task = self.tasks.get(key)
        return task is not None and task.state in ("waiting", "running")

    def unprepared(self, paradigm: str, config: object) -> list[Need]:
        """What `paradigm` needs with `config` that this preparation has not made ready:
        a config other than the defaults may need another index (built on first use)."""
        needs = PARADIGMS[paradigm].needs(config)
        return [need for need in needs
                if need.key not in self.tasks or self.tasks[need.key].state != "ready"]

    def standing_in(self) -> list[str]:
        """What answers meanwhile for work still under way (or failed), a phrase each: the
        builds a stand-in answers for, and the classifiers still training."""
        phrases = []
        for task in self.tasks.values():
            if task.promised and task.state == "failed":
                phrases.append(f"{task.stand_in} stands in: the {task.label} failed to build")
            elif task.promised and task.state != "ready":
                phrases.append(f"{task.stand_in} stands in until the {task.label} is built")
        training = sum(1 for task in self.tasks.values()
                       if task.train_seconds and task.state in ("waiting", "running"))
        if training:
            phrases.append(f"{training} classifier{'s' if training > 1 else ''} still "
                           "training; untrained stand-ins decide meanwhile")
        return phrases

    def status_lines(self) -> list[str]:
        return [task.describe() for task in self.tasks.values()]

    def ready(self) -> bool:
        return all(t.state == "ready" for t in self.tasks.values())

    def busy(self) -> bool:
        """Whether any task is still waiting or running."""
        return any(t.state in ("waiting", "running") for t in self.tasks.values())

