"""Background preparation: build or load, in order, everything the paradigms need.

The app starts serving at once and calls `Preparation.start()`; one background thread then
loads the corpus, the cluster index, the reader (converted once from GGUF), the pre-ranker
and the dense passage index, each through its fingerprinted cache, so a second start only
verifies and loads. One thread, in sequence: on two cores, parallel builds would only slow
each other down. Order: what the funnel needs first (it has no slow build), the dense index
(the slowest build) last.

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

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


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

    def describe(self) -> str:
        """One human line: what it is and how far along."""
        if self.state == "running":
            elapsed = time.monotonic() - (self.started or time.monotonic())
            part = f" {self.done:,}/{self.total:,} ({self.done / self.total:.0%})" \
                if self.total else ""
            return f"{self.label}: building{part}, {elapsed:.0f} s so far"
        if self.state == "ready":
            return f"{self.label}: ready ({self.seconds:.1f} s)"
        if self.state == "failed":
            return f"{self.label}: FAILED - {self.error}"
        return f"{self.label}: waiting for its turn"


# What each paradigm needs before its first question (its default config's resources).
NEEDS = {"funnel": ("corpus", "clusters", "reader", "preranker"),
         "flat": ("corpus", "reader", "reranker", "dense")}


class Preparation:
    """Prepares one corpus for the paradigms in a background thread."""

    def __init__(self, corpus_spec: str, *, dense: bool = True) -> None:
        self.corpus_spec = corpus_spec
        self._thread: threading.Thread | None = None
        self.tasks: dict[str, Task] = {}
        for name, label, action in self._plan(dense):
            self.tasks[name] = Task(name, label, action)

    # --- the plan -------------------------------------------------------------------------

    def _plan(self, dense: bool) -> list[tuple[str, str, Callable[[Progress], Any]]]:
        from engine.paradigms import FlatConfig, FunnelConfig

        funnel, flat = FunnelConfig(), FlatConfig()
        plan = [
            ("corpus", f"corpus '{self.corpus_spec}'", self._load_corpus),
            ("clusters", f"BM25 over {funnel.cluster_algorithm} clusters "
                         f"(S={funnel.cluster_tokens})", self._clusters),
            ("reader", f"reader {funnel.reader.model}", self._reader),
            ("preranker", f"pre-ranker '{funnel.preranker}'",
             lambda progress: _ranker(funnel.preranker, progress)),
            ("reranker", f"re-ranker '{flat.reranker}'",
             lambda progress: _ranker(flat.reranker, progress)),
        ]
        if dense:
            plan.append(("dense", f"dense index ({flat.bi_encoder}, passages)", self._dense))
        return plan

    @property
    def corpus(self):
        task = self.tasks["corpus"]
        return task.result if task.state == "ready" else None

    def _load_corpus(self, progress: Progress):
        from engine.corpus import load_corpus

        return load_corpus(self.corpus_spec)

    def _clusters(self, progress: Progress):
        from engine.bm25 import bm25_index
        from engine.paradigms import FunnelConfig
        from engine.units import UnitConfig

        cfg = FunnelConfig()
        return bm25_index(self.corpus, UnitConfig("clusters", cluster_algorithm=
                                                  cfg.cluster_algorithm,
                                                  cluster_tokens=cfg.cluster_tokens))

    def _reader(self, progress: Progress):
        from engine.models import load_causal_lm

        return load_causal_lm("smollm2")

    def _dense(self, progress: Progress):
        from engine.chunking import Chunker
        from engine.dense import dense_index
        from engine.paradigms import FlatConfig
        from engine.units import UnitConfig

        cfg = FlatConfig()
        return dense_index(self.corpus, UnitConfig("passages", chunker=Chunker(
            cfg.passage_tokens)), model=cfg.bi_encoder, progress=progress)

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
            if task.name != "corpus" and self.corpus is None:
                task.state, task.error = "failed", "the corpus did not load"
                continue
            task.state, task.started = "running", time.monotonic()

            def progress(done: int, total: int, task: Task = task) -> None:
                task.done, task.total = done, total

            try:
                task.result = task.action(progress)
            except Exception as err:  # noqa: BLE001 - shown to the user, the app keeps going
                logger.exception("preparing %s failed", task.label)
                task.state, task.error = "failed", str(err)
            else:
                task.state = "ready"
            task.seconds = time.monotonic() - task.started

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background thread ends; True if it did."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    # --- questions the UI asks ------------------------------------------------------------

    def missing(self, paradigm: str) -> list[Task]:
        """The tasks `paradigm` still waits for (empty: it can run)."""
        check_choice("paradigm", paradigm, NEEDS)
        return [self.tasks[n] for n in NEEDS[paradigm]
                if n in self.tasks and self.tasks[n].state != "ready"]

    def status_lines(self) -> list[str]:
        return [task.describe() for task in self.tasks.values()]

    def ready(self) -> bool:
        return all(t.state == "ready" for t in self.tasks.values())


def _ranker(model: str, progress: Progress):
    """Load (and for "trained", train once) a re-ranking model so first questions are fast."""
    if model == "bi-encoder":
        from engine.models import load_bi_encoder

        return load_bi_encoder("minilm")
    from engine.stages.rerank import load_cross_encoder, model_location

    if model == "trained":
        from engine.train import train_preranker

        train_preranker()
    return load_cross_encoder(model_location(model))
