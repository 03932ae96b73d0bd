"""Annotating the selection classifier's pairs and retraining it, as the app sees it.

`Annotation` turns a DR-RAG run into the pairs its classifier judged (disagreements with
the gold or a stored label first, then the least certain), stores a user's labels in the
sessions database, and retrains the classifier on the training pairs plus the labels in a
background thread with progress. A retrain starts from the active version's recipe, keeps
the previous version, makes the new one active and reports both versions' held-out figures.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, replace

from engine.errors import ConfigError
from engine.store.labels import Label, LabelStore
from engine.trace import RunTrace
from engine.types import Corpus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgedPair:
    """One classifier call of a run, with what is known about its truth."""

    d1_id: str
    d1_title: str
    d1_text: str
    d2_id: str
    d2_title: str
    d2_text: str
    probability: float
    threshold: float
    kept: bool
    gold: int | None = None  # 1 if both documents support the question (dataset questions)
    label: int | None = None  # the stored label, if the pair was labelled

    @property
    def truth(self) -> int | None:
        return self.label if self.label is not None else self.gold

    @property
    def disagrees(self) -> bool:
        return self.truth is not None and self.truth != int(self.kept)


def judged_pairs(trace: RunTrace, corpus: Corpus, labels: list[Label] = ()) -> list[JudgedPair]:
    """Every pair the run's classifier judged (once each): disagreements first, then the
    ones nearest the threshold."""
    stored = {(x.d1_id, x.d2_id): x.label for x in labels if x.question == trace.question}
    gold = set(trace.gold.supporting_titles) if trace.gold else None
    pairs, seen = [], set()
    for stage in trace.stages:
        for call in stage.details.calls:
            key = (call.d1, call.d2)
            if key in seen or call.d1 not in corpus.by_id or call.d2 not in corpus.by_id:
                continue
            seen.add(key)
            d1, d2 = corpus.by_id[call.d1], corpus.by_id[call.d2]
            truth = None if gold is None else int(d1.title in gold and d2.title in gold)
            pairs.append(JudgedPair(d1.id, d1.title, d1.text, d2.id, d2.title, d2.text,
                                    call.probability, call.threshold, call.kept, truth,
                                    stored.get(key)))
    return sorted(pairs, key=lambda p: (not p.disagrees, abs(p.probability - p.threshold)))


@dataclass
class RetrainJob:
    """The state of the background retrain (written by its thread only)."""

    state: str = "idle"  # idle | running | done | failed
    done: int = 0
    total: int = 0
    error: str = ""
    before: str = ""  # version ids
    after: str = ""
    labels: int = 0
    started: float = 0.0
    seconds: float = 0.0
    thread: threading.Thread | None = field(default=None, repr=False)

    def describe(self) -> dict:
        return {"state": self.state, "done": self.done, "total": self.total,
                "error": self.error, "before": self.before, "after": self.after,
                "labels": self.labels, "seconds": round(self.seconds or (
                    time.monotonic() - self.started if self.started else 0.0), 1)}


class Annotation:
    """Labels and retraining over the app's corpora and one sessions database."""

    def __init__(self, corpus_of, store) -> None:
        """`corpus_of(name)` returns the prepared corpus `name` ("": the start-up one;
        None while it loads)."""
        self._corpus_of = corpus_of
        self.labels = LabelStore(store)
        self.job = RetrainJob()
        self._lock = threading.Lock()

    def corpus(self, name: str = "") -> Corpus:
        corpus = self._corpus_of(name)
        if corpus is None:
            raise ConfigError("The corpus is still loading; try again in a moment.")
        return corpus

    def pairs(self, trace: RunTrace) -> list[JudgedPair]:
        from engine.service.corpora import check_searched

        corpus = check_searched(trace.corpus, self.corpus(trace.corpus.get("name", "")))
        return judged_pairs(trace, corpus, self.labels.list(trace.question))

    def label(self, question: str, d1_id: str, d2_id: str, value: int, *,
              question_id: str = "", annotator: str = "", source: str = "human",
              corpus: str = "") -> Label:
        """Store a label for the pair (d1, d2) of `question`; the texts come from `corpus`
        (a name; "": the start-up corpus)."""
        corpus = self.corpus(corpus)
        for name, doc_id in (("d1_id", d1_id), ("d2_id", d2_id)):
            if doc_id not in corpus.by_id:
                raise ConfigError(f"{name}={doc_id!r} is not a document of corpus "
                                  f"'{corpus.name}'; use the ids a drrag run shows.")
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"label={value!r}: use 1 (together they answer the "
                              "question) or 0 (they do not).") from None
        d1, d2 = corpus.by_id[d1_id], corpus.by_id[d2_id]
        label = Label(question.strip(), d1.id, d1.title, d1.text, d2.id, d2.title, d2.text,
                      value, source, annotator.strip(), question_id)
        return replace(label, id=self.labels.add(label))

    # --- the classifier ------------------------------------------------------------------

    def status(self) -> dict:
        from engine.models.selection_classifier import active_version, versions

        return {"active": active_version(), "versions": versions(),
                "labels": self.labels.count(), "retrain": self.job.describe()}

    def activate(self, version: str) -> dict:
        from engine.models.selection_classifier import set_active

        set_active(version)
        return self.status()

    def retrain(self, wait: bool = False) -> dict:
        """Start retraining on the training pairs plus every stored label (once at a
        time); returns the status. `wait` blocks until it ends (CLI and tests).

        Raises:
            ConfigError: no stored label can train (none at all, or all on held-out or
                dev500 questions): the retrain would only make the active model again.
        """
        with self._lock:
            if self.job.state == "running":
                return self.status()
            self._check_usable_labels()
            self.job = RetrainJob(state="running", started=time.monotonic())
            self.job.thread = threading.Thread(target=self._retrain, args=(self.job,),
                                               name="retrain", daemon=True)
            self.job.thread.start()
        if wait:
            self.job.thread.join()
        return self.status()

    def _training_input(self, version: str) -> tuple:
        """(config, labelled pairs) of a retrain that improves on `version`."""
        from engine.store.labels import training_examples
        from engine.train.fit_selection_classifier import ClassifierConfig

        return _recipe(version) or ClassifierConfig(), training_examples(self.labels.list())

    def _check_usable_labels(self) -> None:
        from engine.models.selection_classifier import active_version
        from engine.train.fit_selection_classifier import held_out_questions
        from engine.train.selection_pairs import usable_labels

        config, examples = self._training_input(active_version() or "")
        if not examples:
            raise ConfigError("There are no labels to retrain on yet: find pairs and label "
                              "some (y / n), then retrain.")
        usable, set_aside = usable_labels(examples, held_out_questions(config))
        if not usable:
            raise ConfigError(
                f"None of the {set_aside} stored labels can train: all are on held-out "
                "training questions or HotpotQA dev500 questions, which are set aside so the "
                "held-out figures stay comparable. Label pairs of other questions (typed "
                "questions count), then retrain.")

    def _retrain(self, job: RetrainJob) -> None:
        from engine.models.selection_classifier import active_version
        from engine.train.fit_selection_classifier import train_classifier

        def progress(done: int, total: int) -> None:
            job.done, job.total = done, total

        try:
            job.before = active_version() or ""
            config, examples = self._training_input(job.before)
            job.labels = len(examples)
            folder = train_classifier(config, examples, progress)
            job.after, job.state = folder.name, "done"
        except Exception as err:  # noqa: BLE001 - shown in the Annotate tab
            logger.exception("retraining the classifier failed")
            job.state, job.error = "failed", str(err)
        job.seconds = time.monotonic() - job.started


def _recipe(version: str):
    """The training config of `version` (a retrain keeps the recipe it improves on), or
    None for a version of an older model design (its recipe does not fit this one)."""
    if not version:
        return None
    from engine.models.selection_classifier import REPORT, versions_dir
    from engine.train.fit_selection_classifier import (
        CLASSIFIER_VERSION,
        ClassifierConfig,
        training_report,
    )

    folder = versions_dir() / version
    if not (folder / REPORT).is_file():
        return None
    report = training_report(folder)
    if report.get("version") != CLASSIFIER_VERSION:
        return None
    return ClassifierConfig(**report["config"])
