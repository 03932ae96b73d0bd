"""An evaluation running in the background: a QA file's questions through paradigms, each
question's runs stored as they finish, with progress, running means and cancellation; one
that ended before every question ran resumes from the questions it lacks (`resume`,
engine.service.resume).

The app starts one with `EvaluationJob(...).start()` (what it runs: an
engine.service.evaluation_request.EvaluationRequest) and polls
`status()`; questions are answered by `engine.eval.runner.answer_all`, as the command
line's `eval` answers them (here or as Ray tasks). The corpus is the one the caller
prepared, and what the configs need beyond it is only what the caller passes as `prepare`
(the app asks first before a long build).
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from engine.documents import Corpus
from engine.errors import ConfigError
from engine.eval.runner import answer_all
from engine.eval.summary import row, summarise
from engine.paradigms.needs import Need
from engine.paradigms.registry import make_config
from engine.service.background import BackgroundJob
from engine.service.evaluation_request import EvaluationRequest
from engine.service.labelled import labelled_relevance, with_label_measures
from engine.service.long_builds import LONG_BUILD_SECONDS, BuildNeeded, long_builds
from engine.service.preparation import Preparation
from engine.service.store import make_paradigm
from engine.store.evaluations import EvaluationStore
from engine.store.labels import LabelStore
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

# what a long build asks of whoever starts the evaluation (engine.service.long_builds)
EVALUATION_CONFIRM = ("Confirm to build it before the first question (the app stays usable), "
                      "or keep the options the app prepared.")
# questions answered at once by an evaluation that reads, so that their reader calls decode
# as one batch (engine/readers/batching.py). Measured (bench/reader_batch.py, flat, 24 dev500
# questions, fp32 SmolLM2): 2, 4 and 8 in flight gave 0.86-0.89x one at a time's questions a
# minute, same answers: prefill is compute-bound and the answers are a few tokens.
QUESTIONS_IN_FLIGHT = 1


class EvaluationJob(BackgroundJob):
    """One evaluation: `start()` runs it in a thread, `status()` reports, `cancel()` stops
    it after the question in flight (what is stored stays)."""

    kind = "evaluation"

    def __init__(self, evaluations: EvaluationStore, corpus: Corpus,
                 request: EvaluationRequest, prepare: Sequence[Need] = (),
                 corpus_spec: str = "", sent: Callable[[RunTrace], None] | None = None,
                 resumed: int | None = None) -> None:
        """`prepare`: what the configs need that the caller has not prepared, prepared
        (built or loaded) before the first question. `corpus_spec`: what Ray workers load
        `corpus` from (a request with a Ray address needs it). `sent` is handed every run
        once stored (to a trace collector). `resumed`: the stored evaluation this one goes
        on with (its request is the questions it lacks, engine.service.resume); its stored
        runs count among the questions done and in the means."""
        from engine.service.resume import plan_of

        self.sent = sent
        # the configs are read first: a bad name or config is refused before anything is
        # stored (the paradigms are made, handed what they use, once it is prepared)
        configs = [make_config(request.kind(label), request.config(label))
                   for label in request.paradigms]
        self.evaluations, self.corpus, self.request = evaluations, corpus, request
        self.questions = request.chosen()
        self.rows: list[dict] = []
        if resumed is None:
            self.id = evaluations.create(
                dataset=request.dataset, questions=len(self.questions),
                paradigms=request.paradigms,
                configs={label: asdict(config)
                         for label, config in zip(request.paradigms, configs, strict=True)},
                corpus=corpus.name, corpus_fingerprint=corpus.fingerprint,
                code_version=code_version(), name=request.name, baseline=request.baseline,
                plan=plan_of(self.questions, request.kinds, request.cuts,
                             request.retrieval_only,
                             {"limit": request.limit, "sample": request.sample,
                              "seed": request.seed}))
        else:
            self.id = resumed
            self.rows = [{k: v for k, v in r.items() if k != "position"}
                         for r in evaluations.rows(resumed)]
            evaluations.reopen(resumed)
        self.before = evaluations.get(self.id).done  # questions stored before this run
        self.total = self.before + len(self.questions)
        self.prepare, self.corpus_spec = list(prepare), corpus_spec
        self.done = self.before
        super().__init__(self.id)
        self._asking = self._started  # when its first question was asked

    def work(self) -> None:
        """Every chosen question through every paradigm, in the calling thread."""
        self.prepare_first(self.prepare, self.corpus)
        self.phase, self._asking = "", self.clock()
        request = self.request
        paradigms = [make_paradigm(request.kind(label), self.corpus, request.config(label),
                                   retrieval_only=request.retrieval_only)
                     for label in request.paradigms]
        if request.baseline is not None:
            answered = self._ceilings(paradigms)
        else:
            answered = answer_all(paradigms, [q for _, q in self.questions],
                                  ray=request.ray, workers=request.workers,
                                  corpus_spec=self.corpus_spec,
                                  cancelled=self._cancel.is_set, reuse=bool(request.kinds),
                                  make=make_paradigm, concurrency=1
                                  if request.retrieval_only else QUESTIONS_IN_FLIGHT)
        relevance = labelled_relevance(LabelStore(self.evaluations.store).list())
        for (position, _), traces in zip(self.questions, answered, strict=False):
            traces = [with_label_measures(t, relevance) for t in traces]
            found = [{**row(trace), "paradigm": label}
                     for trace, label in zip(traces, self.request.paradigms, strict=True)]
            self.evaluations.add(self.id, position, traces, found)
            for trace in traces if self.sent is not None else ():
                self.sent(trace)
            self.rows.extend(found)
            self.done += 1

    def finish(self) -> None:
        self.evaluations.finish(self.id, self.state, summarise(self.rows), self.error)
        logger.info("evaluation %d %s: %d of %d questions", self.id, self.state, self.done,
                    self.total)

    def _ceilings(self, paradigms: list) -> Iterator[list[RunTrace]]:
        """Per question: each label's run of it, the baseline's run with one cut perfect
        (engine.eval.ceilings), until cancelled."""
        from engine.eval.ceilings import ceiling

        request = self.request
        for position, _ in self.questions:
            if self._cancel.is_set():
                return
            yield [ceiling(paradigm, self.evaluations.trace(request.baseline, position,
                                                            request.kind(label)),
                           request.cuts[label])
                   for paradigm, label in zip(paradigms, request.paradigms, strict=True)]

    def status(self) -> EvaluationStatus:
        """Questions done, seconds so far (or in all, once it ended) and left (at the pace
        so far), running means."""
        now = self._ended if self._ended is not None else self.clock()
        elapsed = now - self._started
        total, answered = self.total, self.done - self.before  # answered by this run
        pace = (now - self._asking) / answered if answered else None
        left = pace * (total - self.done) if pace is not None else None
        return EvaluationStatus(
            id=self.id, state=self.state, phase=self.phase, done=self.done, total=total,
            seconds=round(elapsed, 1),
            seconds_left=round(left, 1) if left is not None else None, error=self.error,
            means=summarise(self.rows) if self.rows else {}, corpus=self.corpus.name,
            partial=self.state not in ("running", "done") and self.done < total)


@dataclass(frozen=True)
class EvaluationStatus:
    """An evaluation's progress, live while it runs or as it ended: its `state` (running,
    done, cancelled, failed, interrupted), what it prepares first (`phase`), questions
    `done` of `total`, `seconds` so far or in all and `seconds_left` at its pace (None:
    unknown), its `error`, the running `means` per paradigm, the `corpus` searched (beside
    every figure), whether it was `imported` (stored at once: its time is its runs'), and
    whether it is `partial` (ended before every question ran: its means are of those
    stored). `dataclasses.asdict` of it is its JSON form (the API's)."""

    id: int
    state: str
    done: int
    total: int
    seconds: float | None
    error: str = ""
    means: dict = field(default_factory=dict)
    corpus: str = ""
    phase: str = ""
    seconds_left: float | None = None
    imported: bool = False
    partial: bool = False


class EvaluationJobs:
    """The evaluations started in this process: one runs at a time (two would share the
    same two cores)."""

    def __init__(self, evaluations: EvaluationStore,
                 sent: Callable[[RunTrace], None] | None = None) -> None:
        self._evaluations, self._sent = evaluations, sent
        self._jobs: dict[int, EvaluationJob] = {}
        self._lock = threading.Lock()

    def start(self, request: EvaluationRequest, preparation: Preparation,
              build: bool = False) -> int:
        """Start `request` in the background over `preparation`'s corpus; returns its id.

        A config may need an index the app has not prepared (another passage size, say).
        Quick ones are prepared when the evaluation starts; one that takes longer than
        LONG_BUILD_SECONDS here is refused with `BuildNeeded` (which one, how long) unless
        `build` confirms it. One the app's own preparation is still building (the dense
        index on a first start, which questions meanwhile answer with a stand-in for) is
        waited for: an evaluation never scores the dense index's stand-in."""
        return self._launch(request, preparation, build)

    def resume(self, evaluation_id: int, preparation: Preparation,
               build: bool = False) -> int:
        """Go on with stored evaluation `evaluation_id` (interrupted, cancelled or failed)
        over the questions it lacks, with its paradigms and configs, over `preparation`'s
        corpus, which must be the one it searched (engine.service.resume says what is
        refused); returns its id. One that lacks no question is finished at once."""
        from engine.service.resume import finish_whole, resumable, resume_request

        with self._lock:
            self._refuse_if_running()
        stored = self._evaluations.get(evaluation_id)
        plan, missing = resumable(self._evaluations, stored, preparation.corpus)
        if not missing:  # every question stored; the process died before it finished
            self._jobs.pop(stored.id, None)  # a job of this process said how it ended
            finish_whole(self._evaluations, stored)
            logger.info("evaluation %d resumed: no question missing, finished", stored.id)
            return stored.id
        logger.info("evaluation %d resumed: %d of %d questions to go", stored.id,
                    len(missing), len(plan["questions"]))
        return self._launch(resume_request(stored, plan, missing), preparation, build,
                            resumed=stored.id)

    def _launch(self, request: EvaluationRequest, preparation: Preparation, build: bool,
                resumed: int | None = None) -> int:
        with self._lock:
            self._refuse_if_running()
            corpus = preparation.corpus
            pending = self._unprepared(corpus, request, preparation)
            long = long_builds(preparation, pending, LONG_BUILD_SECONDS)
            if long and not build:
                raise BuildNeeded(long, EVALUATION_CONFIRM)
            job = EvaluationJob(self._evaluations, corpus, request, prepare=pending,
                                corpus_spec=preparation.corpus_spec, sent=self._sent,
                                resumed=resumed).start()
            self._jobs[job.id] = job
        return job.id

    def _refuse_if_running(self) -> None:
        running = [job for job in self._jobs.values() if job.state == "running"]
        if running:
            job = running[0]
            raise ConfigError(f"Evaluation {job.id} is still running ({job.done} of "
                              f"{job.total} questions); wait for it or cancel it first.")

    @staticmethod
    def _unprepared(corpus: Corpus, request: EvaluationRequest,
                    preparation: Preparation) -> list[Need]:
        """What the request's configs need that the app has not prepared, each once."""
        pending: dict[str, Need] = {}
        for label in request.paradigms:
            name = request.kind(label)
            config = make_config(name, request.config(label))
            for need in preparation.unprepared(name, config):
                pending.setdefault(need.key, need)
        return list(pending.values())

    def corpora_in_use(self) -> set[str]:
        """The names of the corpora a running evaluation searches."""
        return {job.corpus.name for job in list(self._jobs.values()) if job.state == "running"}

    def get(self, evaluation_id: int) -> EvaluationJob | None:
        return self._jobs.get(int(evaluation_id))

    def cancel(self, evaluation_id: int) -> None:
        job = self.get(evaluation_id)
        if job is None or job.state != "running":
            raise ConfigError(f"Evaluation {evaluation_id} is not running here; nothing to "
                              "cancel.")
        job.cancel()


@lru_cache(maxsize=1)
def code_version() -> str:
    """The git commit the code runs from ("+dirty" with local changes), or "unknown"."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                                capture_output=True, text=True, timeout=5, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
