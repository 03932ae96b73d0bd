"""The engine as the app sees it: one object that runs paradigms, lists datasets and saves runs.

`Explorer` ties together the background `Preparation` of one corpus, the paradigm registry,
the QA datasets found in the shared data folder, and the `SessionStore`. A paradigm object
is cheap (its indexes and models live in process-wide stores), so each run builds its own;
no config ever loads a second copy of anything. It holds no UI code; the Gradio callbacks
only convert what it returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from functools import lru_cache

from engine.errors import ConfigError, EngineError
from engine.paradigms.base import Need, Paradigm, check_question
from engine.paradigms.registry import make_paradigm, parse_config, spec
from engine.service.annotation import Annotation
from engine.service.evaluation import EvaluationJob, EvaluationRequest
from engine.service.readiness import Preparation, duration
from engine.store.evaluations import EvaluationStore
from engine.store.sessions import SessionStore
from engine.trace import RunTrace
from engine.types import Dataset, Question

logger = logging.getLogger(__name__)

# QA files of the shared data folder offered in the question picker (path -> label).
DATASETS = {
    "hotpotqa/dev500_contexts.jsonl": "HotpotQA dev500",
    "hotpotqa/train100.json": "HotpotQA train100",
    "musique/train100.json": "MuSiQue train100",
    "squad/small_v2.json": "SQuAD v2 (small)",
    "nq_open/dev.jsonl": "NQ-open dev",
}


# preparing what an evaluation's configs need for longer than this waits for a confirmation
LONG_BUILD_SECONDS = 60.0


class NotReady(EngineError):
    """A paradigm's models or indexes are still being prepared."""


class BuildNeeded(EngineError):
    """An evaluation's configs need a long build the user has not confirmed."""

    def __init__(self, builds: list[tuple[str, float]]) -> None:
        self.builds = builds
        what = "; ".join(f"{label}: about {duration(seconds)} on this machine"
                         for label, seconds in builds)
        super().__init__(f"These configs need what is not built yet - {what}. Confirm to "
                         "build it before the first question (the app stays usable), or "
                         "keep the options the app prepared.")


class Explorer:
    """Runs questions through paradigms over one prepared corpus; saves and reloads runs."""

    def __init__(self, preparation: Preparation, store: SessionStore) -> None:
        self.preparation = preparation
        self.store = store
        self.annotation = Annotation(lambda: self.preparation.corpus, store)
        self.evaluations = EvaluationStore(store)
        self.evaluations.mark_interrupted()  # left running by a process that died
        self._jobs: dict[int, EvaluationJob] = {}
        self._jobs_lock = threading.Lock()

    # --- running --------------------------------------------------------------------------

    def paradigm(self, name: str, config_json: str = "") -> Paradigm:
        """The paradigm `name` with a JSON config (defaults when empty)."""
        spec(name)  # an unknown name before a bad config
        config = parse_config(config_json)
        self._check_ready(name)
        return make_paradigm(name, self.preparation.corpus, config)

    def _check_ready(self, name: str) -> None:
        spec(name)  # an unknown name: the ConfigError listing the registered ones
        waiting = self.preparation.missing(name)
        if waiting:
            raise NotReady(f"'{name}' is not ready yet; waiting for: "
                           + "; ".join(t.describe() for t in waiting))

    def stream(self, question: str | Question, name: str,
               config_json: str = "") -> Iterator[RunTrace]:
        """The run's trace after every stage, then the finished trace."""
        if isinstance(question, str):
            question = check_question(question)
        return self.paradigm(name, config_json).stream(question)

    def run(self, question: str | Question, name: str, config_json: str = "") -> RunTrace:
        *_, trace = self.stream(question, name, config_json)
        return trace

    def status(self) -> list[str]:
        return self.preparation.status_lines()

    # --- datasets -------------------------------------------------------------------------

    def datasets(self) -> dict[str, str]:
        """{relative path: label} of the QA files present in the shared data folder."""
        from engine.paths import shared_data_dir

        root = shared_data_dir()
        return {path: label for path, label in DATASETS.items() if (root / path).exists()}

    def questions(self, dataset: str, limit: int = 300) -> tuple[Question, ...]:
        """The first `limit` questions of a listed dataset."""
        if dataset not in DATASETS:
            raise ConfigError(f"Unknown dataset {dataset!r}. Choose one of: "
                              f"{', '.join(DATASETS)}.")
        return _dataset(dataset).questions[:limit]

    def dataset_questions(self, dataset: str) -> tuple[Question, ...]:
        """Every question of a listed dataset, or of a QA file at path `dataset` (an upload)."""
        if dataset in DATASETS:
            return _dataset(dataset).questions
        from pathlib import Path

        from engine.data.loaders import read_dataset

        if not Path(dataset).is_file():
            raise ConfigError(f"Unknown dataset {dataset!r}: pick one of "
                              f"{', '.join(DATASETS)}, or give a QA file.")
        return read_dataset(dataset).questions

    def supporting_in_corpus(self, question: Question) -> tuple[int, int]:
        """(how many of the question's supporting documents the corpus holds, how many it
        has); (0, n) too while the corpus is still loading."""
        corpus = self.preparation.corpus
        titles = question.supporting_titles
        held = sum(t in corpus.by_id for t in titles) if corpus is not None else 0
        return held, len(titles)


    # --- evaluations ----------------------------------------------------------------------

    def evaluate(self, dataset: str, paradigms: list[str], configs: dict | None = None, *,
                 limit: int = 0, sample: int = 0, seed: int = 0, name: str = "",
                 build: bool = False, ray: str = "") -> int:
        """Start evaluating `dataset` (a listed one, or a QA file) through `paradigms` over
        the prepared corpus, in the background; returns the evaluation's id. One runs at a
        time (two would share the same two cores).

        A config may need an index the app has not prepared (another passage size, say).
        Quick ones are prepared when the evaluation starts; one that takes longer than
        LONG_BUILD_SECONDS here is refused with `BuildNeeded` (which one, how long) unless
        `build` confirms it. With a `ray` address ("local": two workers on this machine)
        the questions run as Ray tasks (engine.eval.on_ray).
        """
        with self._jobs_lock:
            running = [job for job in self._jobs.values() if job.state == "running"]
            if running:
                job = running[0]
                raise ConfigError(f"Evaluation {job.id} is still running ({job.done} of "
                                  f"{len(job.questions)} questions); wait for it or cancel "
                                  "it first.")
            for paradigm in paradigms:
                self._check_ready(paradigm)
            label = DATASETS.get(dataset, dataset)
            request = EvaluationRequest(label, self.dataset_questions(dataset),
                                        tuple(paradigms), dict(configs or {}), limit, sample,
                                        seed, name, ray=(ray or "").strip())
            corpus = self.preparation.corpus
            pending = self._unprepared(corpus, request)
            long = [(need.label, seconds) for need in pending
                    if (seconds := need.seconds_to_prepare(corpus)) >= LONG_BUILD_SECONDS]
            if long and not build:
                raise BuildNeeded(long)
            job = EvaluationJob(self.evaluations, corpus, request, prepare=pending,
                                corpus_spec=self.preparation.corpus_spec).start()
            self._jobs[job.id] = job
        return job.id

    def _unprepared(self, corpus, request: EvaluationRequest) -> list[Need]:
        """What the request's configs need that the app has not prepared, each once."""
        pending: dict[str, Need] = {}
        for name in request.paradigms:
            config = make_paradigm(name, corpus, request.configs.get(name)).config
            for need in self.preparation.unprepared(name, config):
                pending.setdefault(need.key, need)
        return list(pending.values())

    def evaluation_status(self, evaluation_id: int) -> dict:
        """A running evaluation's live status, or a stored one's as it ended."""
        job = self._jobs.get(int(evaluation_id))
        if job is not None:
            return job.status()
        stored = self.evaluations.get(evaluation_id)
        return {"id": stored.id, "state": stored.state, "phase": "", "done": stored.done,
                "total": stored.questions, "seconds": stored.seconds, "seconds_left": None,
                "error": stored.error, "means": stored.summary}

    def cancel_evaluation(self, evaluation_id: int) -> None:
        job = self._jobs.get(int(evaluation_id))
        if job is None or job.state != "running":
            raise ConfigError(f"Evaluation {evaluation_id} is not running here; nothing to "
                              "cancel.")
        job.cancel()


@lru_cache(maxsize=8)
def _dataset(path: str) -> Dataset:
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    return read_dataset(shared_data_dir() / path)
