"""The engine as the app sees it: one object whose methods are everything the app and the API
ask of the engine.

`Explorer` is a facade. The app calls its methods and those of the collaborators it exposes
(`explorer.runs.run(...)`; tests/test_layout.py checks); each of its own methods hands the
call to the collaborator of its concern, where the work and its documentation are:
- runs (engine.service.runs.Runs, the public `runs`): a question through a paradigm,
  re-answered over other passages or attributed passage by passage; runs saved, exported
  and imported;
- corpora (engine.service.corpora.Corpora): the corpora a request may name, each prepared
  in the background, and their rows (engine.service.corpus_rows); whether a paradigm can
  answer over one, and the app's status line (engine.service.readiness);
- datasets (engine.service.datasets): the listed QA files and their questions;
- evaluations (engine.service.evaluations.Evaluations, the public `evaluations`):
  evaluations, sweeps and ceilings run in the background, stored ones read and exported;
- diagnoses (engine.service.diagnosis.Diagnoses, the public `diagnoses`): what Diagnose
  shows of stored evaluations;
- annotation (engine.service.annotation.Annotation): the selection classifier's judged
  pairs, their labels and its retraining;
- judging (engine.service.judging.Judging, the public `judging`): question sets, pools and
  relevance judgments; stored evaluations of a question set read as measured by its latest
  judgments (engine.service.judged_evaluations);
- tuning (engine.service.tuning.Tuning, the public `tuning`): searches over options.
A paradigm object is cheap (its indexes and models live in process-wide stores), so each run
builds its own; no config ever loads a second copy of anything. It holds no UI code; the
Gradio callbacks only convert what it returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from engine.cache import interrupted, sweep_leftovers
from engine.data.collection_store import judged_corpus
from engine.documents import Corpus, Question
from engine.judging.agreement import Agreement
from engine.service import readiness
from engine.service.annotation import Annotation, ClassifierStatus, JudgedPair
from engine.service.corpora import IDLE_SECONDS, Corpora
from engine.service.corpus_rows import CorpusRow
from engine.service.datasets import listed_datasets, listed_questions
from engine.service.diagnosis import (
    Diagnoses,
)
from engine.service.door import Door, guarded
from engine.service.evaluation_jobs import EvaluationJobs
from engine.service.evaluations import Evaluations
from engine.service.judged_evaluations import JudgedEvaluations
from engine.service.judging import Judging
from engine.service.limits import job_alive
from engine.service.models import ModelRow, model_rows
from engine.service.otel import Tracing
from engine.service.preparation import Preparation
from engine.service.presets import Presets
from engine.service.runs import Runs
from engine.service.tuning import Tuning
from engine.store.audit import AuditLog
from engine.store.labels import Label
from engine.store.sessions import SessionStore
from engine.trace import RunTrace


@guarded
class Explorer:
    """Runs questions through paradigms over prepared corpora; saves and reloads runs;
    evaluates, diagnoses and annotates. Every method hands its call to a collaborator once
    its door has checked the role (`guarded`); `runs`, `diagnoses`, `evaluations`,
    `judging`, `presets` and `tuning` are called on their own, checked by the same door."""

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
        self._interrupted = interrupted(sweep_leftovers())  # what such a process was writing
        self._jobs = EvaluationJobs(self._evaluation_store,
                                    sent=tracing.send if tracing is not None else None)
        self._corpora = Corpora(preparation, root=corpus_root, idle_seconds=idle_seconds,
                                in_use=self._jobs.corpora_in_use, preparing=preparing,
                                clock=clock)
        self._preparation = preparation
        self._annotation = Annotation(lambda name: self._corpora.preparation(name).corpus,
                                      store, self._corpora.loaded_preparations, self.door)
        self._presets = Presets(store, self.door)
        self._runs = Runs(store, self._corpora, self._annotation.labels, tracing, self.door,
                          self._presets.store)
        self._evaluations = Evaluations(self._evaluation_store, self._jobs, self._corpora,
                                        self.door, presets=self._presets.store)
        self._diagnoses = Diagnoses(self._evaluation_store, self._corpora, self.door)
        self._judging = Judging(store, self.door,
                                lambda name: self._corpora.preparation(name).corpus)
        self._tuning = Tuning(store, self._corpora, self.door)
        if self.door.limits is not None:  # a user's long jobs count until they end
            self.door.limits.alive = job_alive(self._evaluation_store, self._corpora,
                                               self._annotation, self._tuning)

    # --- corpora and their preparation: engine.service.corpora, readiness ----------------

    @property
    def corpus(self) -> Corpus | None:
        """The corpus the app started with; None while it is still loading."""
        return self._preparation.corpus

    @property
    def corpus_spec(self) -> str:
        return self._preparation.corpus_spec

    def corpus_names(self) -> list[str]:
        """Every corpus a request may name, the start-up one first."""
        return self._corpora.names()

    def corpora(self) -> list[CorpusRow]:
        """Every corpus with its state, size and what is built for it."""
        return self._corpora.rows()

    def add_corpus(self, name: str, source: str | Path, *, upload: bool,
                   original: str = "", ray: str = "", shards: int = 0, qdrant: str = "",
                   collection: str = "", drop_unknown: bool = False) -> str:
        """Add corpus `name` from an upload or a path under the corpus root, prepared in
        the background (where its dense indexes are served: Ray, shards or Qdrant); a test
        collection with its judged questions, its splits datasets from then on."""
        return self._corpora.add(name, source, upload=upload, original=original, ray=ray,
                                 shards=shards, qdrant=qdrant, collection=collection,
                                 drop_unknown=drop_unknown)

    def remove_corpus(self, name: str) -> None:
        self._corpora.remove(name)

    def models(self) -> list[ModelRow]:
        """The models each role can use here and what each has built."""
        return model_rows(self._corpora.named_fingerprints())

    def status(self) -> list[str]:
        """The start-up corpus's tasks, then every other long build of the process."""
        return readiness.status(self._corpora)

    def failures(self) -> list[str]:
        """What failed preparing the start-up corpus or was stopped mid-way, with why."""
        return [*self._interrupted, *readiness.failures(self._corpora)]

    def standing_in(self) -> list[str]:
        """What answers meanwhile for builds and training under way, and added corpora's."""
        return [*self._preparation.standing_in(), *readiness.building(self._corpora)]

    def ready(self, name: str | None = None, corpus: str = "") -> bool:
        """Whether paradigm `name` can answer now over `corpus` (None: everything)."""
        return readiness.ready(self._corpora, name, corpus)

    def supporting_in_corpus(self, question: Question, corpus: str = "") -> tuple[int, int]:
        """(supporting documents of `question` that `corpus` holds, how many it has)."""
        return readiness.supporting_in_corpus(self._corpora, question, corpus)

    def titles(self, doc_ids, corpus: str = "") -> dict[str, str]:
        """{id: title} of `doc_ids` in corpus `corpus` if loaded now (never loads it)."""
        return readiness.titles(self._corpora, doc_ids, corpus)

    def counted_corpus(self, corpus: str = "") -> str:
        """The name of the corpus `supporting_in_corpus(q, corpus)` counts in."""
        return readiness.counted_corpus(self._corpora, corpus)

    # --- datasets: engine.service.datasets ------------------------------------------------

    def datasets(self) -> dict[str, str]:
        """{path: label} of the QA files present, then of added collections' splits."""
        return listed_datasets()

    def dataset_corpus(self, dataset: str) -> str | None:
        """The corpus an added collection's split is judged over (None: another dataset)."""
        return judged_corpus(dataset)

    def datasets_note(self) -> str:
        """'' when every listed dataset is here; else which are missing and the fix."""
        return readiness.datasets_note(self._corpora)

    def questions(self, dataset: str, limit: int = 300) -> tuple[Question, ...]:
        """The first `limit` questions of a listed dataset."""
        return listed_questions(dataset, limit)

    # --- annotation: engine.service.annotation --------------------------------------------

    def judged_pairs(self, trace: RunTrace) -> list[JudgedPair]:
        """The selection classifier's judged pairs of a drrag trace, in labelling order."""
        return self._annotation.pairs(trace)

    def add_label(self, question: str, d1_id: str, d2_id: str, value: int, **who) -> Label:
        return self._annotation.label(question, d1_id, d2_id, value, **who)

    def labels(self) -> list[Label]:
        """Every stored label, newest first."""
        return self._annotation.labels.list()

    def label_agreement(self) -> list[tuple[str, str, Agreement]]:
        """(first, second, Cohen's kappa) of every two who labelled a pair in common."""
        return self._annotation.agreement()

    def audit_log(self, limit: int = 200, user: str = "") -> list[dict]:
        """The latest admin actions and refusals (of `user` only), newest first."""
        return self._audit.entries(limit, user)

    def export_labels(self) -> str:
        return self._annotation.labels.export_jsonl()

    def import_labels(self, text: str, filename: str) -> tuple[int, int]:
        """(labels added, labels already stored) from a labels JSONL export."""
        return self._annotation.labels.import_jsonl(text, filename)

    def classifier_status(self) -> ClassifierStatus:
        """The active classifier version, every version's held-out figures, any retrain."""
        return self._annotation.status()

    def retrain_classifier(self) -> ClassifierStatus:
        return self._annotation.retrain()

    def activate_classifier(self, version: str) -> ClassifierStatus:
        return self._annotation.activate(version)

    # --- the collaborators called on their own, each checked by the same door -----------

    @property
    def door(self) -> Door:
        """Who acts, and what their role may do."""
        return self._door

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
