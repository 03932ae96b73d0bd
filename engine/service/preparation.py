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

Long builds take turns across every corpus's preparation and the retraining of classifiers
(engine.service.builds.BUILDS): shortest first, and a short one (a small corpus's dense index)
pauses a long one (a training of many minutes) instead of waiting behind it. A corpus added
meanwhile loads, gets its BM25 indexes and answers on the stand-ins at once. A waiting build
says its place in the queue and when it should start; a running one, how long it has left
at the pace it keeps (measured from its own progress, not from a fixed figure).

`missing(paradigm)` says what a paradigm still waits for and how far along that is, so the
UI can show it instead of failing. Nothing here imports torch until a task runs. Each step
is a `Task` (engine.service.tasks), which describes itself.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from engine import qa_data
from engine.documents import Corpus
from engine.errors import EngineError, check_choice
from engine.paradigms.needs import Need
from engine.paradigms.registry import PARADIGMS
from engine.service.builds import BUILDS, Cancelled, Turn
from engine.service.store import process_store
from engine.service.tasks import Task

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

CANCELLED = "cancelled while it waited for its turn to build"


class Preparation:
    """Prepares one corpus for the paradigms in a background thread."""

    def __init__(self, corpus_spec: str, *, dense: bool = True,
                 load: Callable[[Progress], Corpus] | None = None,
                 fetch_data: bool = False, train: bool = True) -> None:
        """Prepare corpus `corpus_spec` for every registered paradigm's default config;
        `dense=False` leaves the slow builds out (they then happen on first use). `load`
        replaces `load_corpus(corpus_spec)` (an added corpus is read and stored first).
        `fetch_data`: fetch the QA files that are missing first (the app's first start;
        engine.qa_data), before the corpus, which may be made of them. `train`: train the
        models trained here that are missing (the start-up corpus's preparation does; the
        models are the process's, so a corpus added later only loads them)."""
        self.corpus_spec, self.dense = corpus_spec, dense
        self._load = load
        self._thread: threading.Thread | None = None
        self._cancelled = threading.Event()
        self.tasks: dict[str, Task] = {}
        if fetch_data and qa_data.missing():
            self.tasks["qa data"] = Task("qa data", "fetching the QA data (datasets and "
                                         "training files)", self._fetch_data,
                                         needs_corpus=False, per_corpus=False)
        self.tasks["corpus"] = Task("corpus", f"corpus '{corpus_spec}'", self._load_corpus)
        self.needs: dict[str, tuple[str, ...]] = {}  # paradigm -> the tasks it waits for
        self._promises: dict[str, Callable[[Corpus], None]] = {}
        for name, spec in PARADIGMS.items():
            keys = []
            for need in spec.needs():
                if need.slow and not dense:
                    continue
                self.tasks.setdefault(need.key, Task(
                    need.key, need.label, self._preparer(need), slow=need.slow,
                    stand_in=need.stand_in, estimate=self._estimator(need),
                    per_corpus=need.per_corpus))
                if need.trained_by and dense and train:  # on the stand-in meanwhile
                    self.tasks[need.key].trained_by = self._add_training(need)
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
        return lambda progress: need.prepare(self.corpus, progress, process_store())

    def _estimator(self, need: Need) -> Callable[[], float]:
        return lambda: need.seconds_to_prepare(self.corpus) if self.corpus else math.inf

    def _add_training(self, need: Need) -> Task:
        """A background task that trains `need`'s model if it is missing and then loads it,
        so the next question runs on it instead of the stand-in. No paradigm waits for it."""
        from engine.train.trainers import TRAINERS

        name = f"train {need.trained_by}"
        if name in self.tasks:
            return self.tasks[name]
        trainer = TRAINERS[need.trained_by]

        def action(progress: Progress) -> Any:
            from engine.train.trainers import train_if_missing

            train_if_missing(need.trained_by, progress)
            return need.prepare(self.corpus, progress, process_store())

        def lacks_data() -> str:
            try:
                qa_data.require(trainer.data, "no training data")
            except qa_data.DataMissing as err:
                return str(err)
            return ""

        self.tasks[name] = Task(name, f"training {trainer.trains}", action, slow=True,
                                meanwhile="its untrained stand-in answers meanwhile",
                                train_seconds=need.train_seconds,
                                estimate=lambda: need.train_seconds, per_corpus=False,
                                must_train=lambda: not trainer.is_trained(),
                                cannot_run=lacks_data)
        return self.tasks[name]

    @property
    def corpus(self):
        task = self.tasks["corpus"]
        return task.result if task.state == "ready" else None

    @staticmethod
    def _fetch_data(progress: Progress) -> list[str]:
        return qa_data.fetch(progress=progress)

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
        if "qa data" not in self.tasks:
            self._fail_what_cannot_run()
        for task in self.tasks.values():
            if task.state == "failed":  # at once, below: it could only fail in its turn
                continue
            if self._cancelled.is_set():
                task.state, task.error = "failed", CANCELLED
                continue
            if task.needs_corpus and task.name != "corpus" and self.corpus is None:
                task.state, task.error = "failed", "the corpus did not load"
                continue
            self._run(task)
            if task.name == "qa data":
                self._fail_what_cannot_run()
            if task.name == "corpus" and self.corpus is not None:
                self._promise()

    def _fail_what_cannot_run(self) -> None:
        """Fail at once, saying why, the tasks that could only fail in their turn (a
        training whose QA files are not here), instead of showing them as queued."""
        for task in self.tasks.values():
            if task.state != "waiting" or task.cannot_run is None:
                continue
            why = task.cannot_run()
            if why and (task.must_train is None or task.must_train()):
                task.state, task.error = "failed", why

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
                self.tasks[key].promised = promise(self.corpus, process_store())
            except Exception:  # noqa: BLE001 - unpromised, it is built (or fails) in its turn
                logger.exception("could not tell whether %s must be built", key)

    def _run(self, task: Task) -> None:
        """Run one task, recording its state, progress and time; a long build first waits
        for its turn (BUILDS), or for the preparation to be cancelled."""
        if not task.builds():
            Preparation._run_now(task)
            return

        def waits(turn: Turn) -> None:
            task.turn = turn

        try:
            with BUILDS.turn(task.label, task.estimated(), cancelled=self._cancelled,
                             on_wait=waits) as turn:
                task.turn, turn.left = turn, task.seconds_left
                Preparation._run_now(task, turn.progress(task.report))
        except Cancelled:
            task.state, task.error = "failed", CANCELLED
        finally:
            task.turn = None

    @staticmethod
    def _run_now(task: Task, progress: Progress | None = None) -> None:
        task.state, task.started = "running", time.monotonic()
        try:
            task.result = task.action(progress or task.report)
        except EngineError as err:  # a refusal that names its fix: one line is enough
            logger.warning("%s failed: %s", task.label, err)
            task.state, task.error = "failed", str(err)
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
        untrained = sum(1 for task in self.tasks.values()
                        if task.train_seconds and task.state == "failed")
        if untrained:
            phrases.append(f"{untrained} classifier{'s' if untrained > 1 else ''} could not "
                           "be trained; untrained stand-ins decide")
        return phrases

    def failed(self) -> list[Task]:
        """The tasks that failed (each says why in its `error`)."""
        return [task for task in self.tasks.values() if task.state == "failed"]

    def status_lines(self, own: bool = False) -> list[str]:
        """A line per task; `own`: only this corpus's own (no model the process loads
        once for every corpus, no training)."""
        lines, ahead = [], 0.0
        for task in self.tasks.values():  # in the order they run
            if task.per_corpus or not own:
                lines.append(task.describe(ahead if task.state == "waiting" else None))
            ahead += task.expected()
        return lines

    def ready(self) -> bool:
        return all(t.state == "ready" for t in self.tasks.values())

    def busy(self, own: bool = False) -> bool:
        """Whether any task is still waiting or running; `own`: any of this corpus's own
        (not a model the process loads once, nor a training)."""
        return any(t.state in ("waiting", "running") for t in self.tasks.values()
                   if t.per_corpus or not own)

