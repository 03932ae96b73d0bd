"""The engine as the app sees it: one object whose collaborators are everything the app and
the API ask of the engine, each checked by one door.

`Explorer` builds the collaborators and exposes them; the app calls them
(`explorer.runs.run(...)`; tests/test_layout.py checks), where the work and its
documentation are:
- catalog (engine.service.catalog.Catalog): the corpora a request may name (the app's
  engine.service.corpora.Corpora, each prepared in the background), the listed QA files
  and their questions, the models, what is ready, and the app's status line;
- runs (engine.service.runs.Runs): a question through a paradigm, re-answered over other
  passages or attributed passage by passage; runs saved, exported and imported;
- evaluations (engine.service.evaluations.Evaluations): evaluations, sweeps and ceilings
  run in the background, stored ones read and exported;
- diagnoses (engine.service.diagnosis.Diagnoses): what Diagnose shows of stored
  evaluations;
- annotation (engine.service.annotation.Annotation): the selection classifier's judged
  pairs, their labels and its retraining;
- judging (engine.service.judging.Judging): question sets, pools and relevance judgments;
  stored evaluations of a question set read as measured by its latest judgments
  (engine.service.judged_evaluations);
- nuggets (engine.service.nuggets.Nuggets): a dataset's nuggets, and stored evaluations'
  answers assigned and scored by them;
- presets (engine.service.presets.Presets): named paradigms with their settings;
- tuning (engine.service.tuning.Tuning): searches over options.
Its one action of its own is `audit_log`, what its door recorded. A paradigm object is
cheap (its indexes and models live in process-wide stores), so each run builds its own; no
config ever loads a second copy of anything. It holds no UI code; the Gradio callbacks only
convert what it returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from engine.cache import interrupted, sweep_leftovers
from engine.service.annotation import Annotation
from engine.service.catalog import Catalog
from engine.service.corpora import IDLE_SECONDS, Corpora
from engine.service.diagnosis import Diagnoses
from engine.service.door import Door, guarded
from engine.service.evaluation_jobs import EvaluationJobs
from engine.service.evaluations import Evaluations
from engine.service.judged_evaluations import JudgedEvaluations
from engine.service.judging import Judging
from engine.service.limits import job_alive
from engine.service.nuggets import Nuggets
from engine.service.otel import Tracing
from engine.service.preparation import Preparation
from engine.service.presets import Presets
from engine.service.runs import Runs
from engine.service.tuning import Tuning
from engine.store.audit import AuditEntry, AuditLog
from engine.store.sessions import SessionStore


@guarded
class Explorer:
    """Runs questions through paradigms over prepared corpora; saves and reloads runs;
    evaluates, diagnoses and annotates, each through the collaborator of its concern
    (`catalog`, `runs`, `evaluations`, `diagnoses`, `annotation`, `judging`, `nuggets`,
    `presets`, `tuning`), all guarded by the same door, which checks every call's role."""

    def __init__(self, preparation: Preparation, store: SessionStore, *,
                 corpus_root: Path | None = None, idle_seconds: float = IDLE_SECONDS,
                 preparing: Callable[..., Preparation] = Preparation,
                 tracing: Tracing | None = None, door: Door | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`preparation` prepares the corpus the app starts with (the default of every
        request); `corpus_root` is the folder server-side corpus paths may be read from
        (default: the data directory); `preparing` prepares any other corpus
        (engine.service.corpora); `tracing` sends every run (Explore, Compare, re-answer,
        an evaluation's) to an OTLP collector as OpenInference spans; `door` checks roles
        and limits, and names who made a run, label, judgment or evaluation; `clock`
        (seconds) times how long a corpus has been idle."""
        self._door, self._audit = door or Door(), AuditLog(store)
        self._door.audit = self._door.audit or self._audit.record
        self._evaluation_store = JudgedEvaluations(store)  # measured by the latest judgments
        self._evaluation_store.mark_interrupted()  # left running by a process that died
        interrupted_writes = interrupted(sweep_leftovers())  # what such a process wrote
        self._jobs = EvaluationJobs(self._evaluation_store,
                                    sent=tracing.send if tracing is not None else None)
        self._corpora = Corpora(preparation, root=corpus_root, idle_seconds=idle_seconds,
                                in_use=self._jobs.corpora_in_use, preparing=preparing,
                                clock=clock)
        self._catalog = Catalog(self._corpora, self.door, interrupted=interrupted_writes)
        self._annotation = Annotation(lambda name: self._corpora.preparation(name).corpus,
                                      store, self._corpora.loaded_preparations, self.door)
        self._presets = Presets(store, self.door)
        self._runs = Runs(store, self._corpora, self._annotation.label_store, tracing,
                          self.door, self._presets.store)
        self._evaluations = Evaluations(self._evaluation_store, self._jobs, self._corpora,
                                        self.door, presets=self._presets.store)
        self._diagnoses = Diagnoses(self._evaluation_store, self._corpora, self.door)
        self._judging = Judging(store, self.door,
                                lambda name: self._corpora.preparation(name).corpus)
        self._nuggets = Nuggets(store, self.door)
        self._tuning = Tuning(store, self._corpora, self.door)
        if self.door.limits is not None:  # a user's long jobs count until they end
            self.door.limits.alive = job_alive(self._evaluation_store, self._corpora,
                                               self._annotation, self._tuning)

    def audit_log(self, limit: int = 200, user: str = "") -> list[AuditEntry]:
        """The latest admin actions and refusals (of `user` only), newest first: what
        this Explorer's door recorded (engine.store.audit)."""
        return self._audit.entries(limit, user)

    # --- the collaborators called on their own, each checked by the same door -----------

    @property
    def door(self) -> Door:
        """Who acts, and what their role may do."""
        return self._door

    @property
    def catalog(self) -> Catalog:
        """The corpora, datasets and models a request may name, what is ready over them
        and the app's status line (engine.service.catalog)."""
        return self._catalog

    @property
    def annotation(self) -> Annotation:
        """The selection classifier's judged pairs, their labels and its retraining
        (engine.service.annotation)."""
        return self._annotation

    @property
    def runs(self) -> Runs:
        """Questions run through paradigms, re-answered or attributed; runs saved, exported
        and imported (engine.service.runs)."""
        return self._runs

    @property
    def diagnoses(self) -> Diagnoses:
        """What Diagnose shows of stored evaluations (engine.service.diagnosis)."""
        return self._diagnoses

    @property
    def evaluations(self) -> Evaluations:
        """Evaluations, sweeps and ceilings started in the background; stored ones read
        and exported (engine.service.evaluations)."""
        return self._evaluations

    @property
    def presets(self) -> Presets:
        """Named paradigms with their settings (engine.service.presets)."""
        return self._presets

    @property
    def tuning(self) -> Tuning:
        """Searches over paradigms' options (engine.service.tuning)."""
        return self._tuning

    @property
    def judging(self) -> Judging:
        """Question sets, pools, judgments, the LLM judge and agreement
        (engine.service.judging)."""
        return self._judging

    @property
    def nuggets(self) -> Nuggets:
        """A dataset's nuggets and the answers assigned them (engine.service.nuggets)."""
        return self._nuggets
