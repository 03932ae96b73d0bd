"""Annotating the selection classifier's pairs and retraining it, as the app sees it.

`Annotation` turns a DR-RAG run into the pairs its classifier judged (disagreements with
the gold or a stored label first, then the least certain), stores a user's labels in the
sessions database, and retrains the classifier on the training pairs plus the labels in a
background job with progress (`Retraining`, an engine.service.background.BackgroundJob).

A retrain first waits, saying what for: the first-start training of this classifier if that
is under way (the version a retrain improves on and is compared with), then its turn in the
queue of long builds (engine.service.builds.BUILDS: one at a time on two cores, shortest
first; a short build pauses it at its next step). It starts from the active version's
recipe and measures both versions on the same held-out pairs. The rule (`not_worse`): the
new version becomes active only if its held-out AUC, as shown (3 decimals), is at least the
active version's; otherwise the active one stays, and the new one is kept for the user to
make active anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from engine.documents import Corpus, Question
from engine.errors import ConfigError, EngineError
from engine.judging.agreement import Agreement, pairwise
from engine.service.background import FAILED, BackgroundJob
from engine.service.door import Door, guarded
from engine.service.retrain_job import (
    FIRST_TRAINING,
    RetrainJob,
    record,
    recorded_job,
    timed,
)
from engine.store.labels import Label, LabelStore, by_annotator
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

AUC_DECIMALS = 3  # the held-out AUC as the Annotate tab shows it, and as the rule compares it
POLL_SECONDS = 0.5  # how often a retrain waiting for the first-start training looks again


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


def labelling_order(datasets: dict[str, str]) -> dict[str, str]:
    """The listed datasets ({path: label}) as Annotate offers them: the classifier's
    training files first (their labels train, but for the held-out questions), then the
    others, the evaluation questions (HotpotQA dev500: their labels never train) last."""
    from engine.models.kinds import TRAIN_FILES
    from engine.train.preranker_pairs import DEV_SOURCE

    def rank(path: str) -> int:
        return 0 if path in TRAIN_FILES else 2 if path == DEV_SOURCE else 1

    return dict(sorted(datasets.items(), key=lambda item: rank(item[0])))


def trainable(questions: Sequence[Question]) -> set[str] | None:
    """The ids of `questions` whose labels a retrain trains on, by its own rule
    (engine.train.selection_pairs.usable_labels: not a held-out training question, not a
    dev500 one); None when it cannot tell (the training data is missing)."""
    from engine.models.selection_classifier import active_version
    from engine.train.fit_selection_classifier import ClassifierConfig, held_out_questions
    from engine.train.selection_pairs import PairExample, usable_labels

    try:
        held_out = held_out_questions(_recipe(active_version() or "") or ClassifierConfig())
    except (EngineError, OSError) as err:  # the training files are missing
        logger.info("cannot tell which questions' labels train: %s", err)
        return None
    kept, _ = usable_labels([PairExample(q.text, "", "", 0, "human") for q in questions],
                            held_out)
    texts = {x.query for x in kept}
    return {q.id for q in questions if q.text in texts}


def not_worse(after: dict, before: dict | None) -> bool:
    """The rule that makes a retrained version active: its held-out AUC, rounded as shown,
    is at least the version it would replace, on the same held-out pairs. With nothing to
    replace (no trained version, or one that could not be measured) it is made active."""
    if not before or before.get("heldout_auc") is None:
        return True
    return round(after["heldout_auc"], AUC_DECIMALS) >= round(before["heldout_auc"],
                                                               AUC_DECIMALS)


@dataclass(frozen=True)
class ClassifierStatus:
    """DR-RAG's selection classifier as the Annotate tab shows it: the `active` version's
    id (None before any), every version with its held-out figures (`versions`,
    engine.models.selection_classifier.versions), how many `labels` are stored, the last
    retrain (`retrain`: RetrainJob.describe) and the first-start training
    (`first_training`: {state, line}; state "" when no preparation trains it)."""

    active: str | None
    versions: list
    labels: int
    retrain: dict
    first_training: dict = field(default_factory=lambda: {"state": "", "line": ""})


@guarded
class Annotation:
    """Labels and retraining over the app's corpora and one sessions database; the app
    and the API call it as `explorer.annotation`, each call checked by `door`."""

    def __init__(self, corpus_of, store, preparations=tuple, door: Door | None = None
                 ) -> None:
        """`corpus_of(name)` returns the prepared corpus `name` ("": the start-up one;
        None while it loads); `preparations()` the loaded corpora's preparations, whose
        first-start training and long builds a retrain waits for; `door` names the
        annotator when people log in."""
        self._corpus_of = corpus_of
        self.door = door or Door()
        self._preparations = preparations
        self.label_store = LabelStore(store)
        self.job = recorded_job()  # the last retrain's record; its thread, once started:
        self.retraining: Retraining | None = None
        self._lock = threading.Lock()

    def _corpus(self, name: str = "") -> Corpus:
        corpus = self._corpus_of(name)
        if corpus is None:
            raise ConfigError("The corpus is still loading; try again in a moment.")
        return corpus

    def judged_pairs(self, trace: RunTrace) -> list[JudgedPair]:
        """The judged pairs of a drrag trace with their stored labels (the acting
        annotator's only, when people log in and each has their own)."""
        from engine.service.corpora import check_searched

        corpus = check_searched(trace.corpus, self._corpus(trace.corpus.get("name", "")))
        labels = self.label_store.list(trace.question)
        annotator = self.door.name()
        if annotator:
            labels = [x for x in labels if x.annotator == annotator or x.source == "gold"]
        return judged_pairs(trace, corpus, labels)

    def add_label(self, question: str, d1_id: str, d2_id: str, value: int, *,
                  question_id: str = "", annotator: str = "", source: str = "human",
                  corpus: str = "") -> Label:
        """Store a label for the pair (d1, d2) of `question`; the texts come from `corpus`
        (a name; "": the start-up corpus)."""
        corpus = self._corpus(corpus)
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
                      value, source, self.door.signed(annotator, "Annotator"), question_id)
        return replace(label, id=self.label_store.add(label))

    def label_agreement(self) -> list[tuple[str, str, Agreement]]:
        """(first, second, their agreement) for every two annotators who labelled a pair
        in common: Cohen's kappa on the pairs both labelled."""
        return pairwise(by_annotator(self.label_store.list()), categories=2)

    def labels(self) -> list[Label]:
        """Every stored label, newest first."""
        return self.label_store.list()

    def export_labels(self) -> str:
        return self.label_store.export_jsonl()

    def import_labels(self, text: str, filename: str) -> tuple[int, int]:
        """(labels added, labels already stored) from a labels JSONL export."""
        return self.label_store.import_jsonl(text, filename)

    # --- the classifier ------------------------------------------------------------------

    def classifier_status(self) -> ClassifierStatus:
        """The active classifier version, every version's held-out figures, any retrain."""
        return self._status()

    def _status(self) -> ClassifierStatus:
        from engine.models.selection_classifier import active_version, versions

        return ClassifierStatus(active=active_version(), versions=versions(),
                                labels=self.label_store.count(), retrain=self.job.describe(),
                                first_training=self._first_training_said())

    def _first_training_said(self) -> dict:
        """The first-start training of this classifier as the Annotate tab says it:
        {state, line} (state "" when no preparation trains it)."""
        for preparation in self._preparations():
            task = preparation.tasks.get(FIRST_TRAINING)
            if task is not None:
                return {"state": task.state, "line": task.describe()}
        return {"state": "", "line": ""}

    def activate_classifier(self, version: str) -> ClassifierStatus:
        from engine.models.selection_classifier import set_active

        set_active(version)
        return self._status()

    def retrain_classifier(self, wait: bool = False) -> ClassifierStatus:
        """Start retraining on the training pairs plus every stored label (once at a
        time); returns the status. `wait` blocks until it ends (CLI and tests).

        Raises:
            ConfigError: no stored label can train (none at all, or all on held-out or
                dev500 questions): the retrain would only make the active model again.
        """
        with self._lock:
            if self.job.state in ("waiting", "running"):
                return self._status()
            labels, set_aside = self._check_usable_labels()
            self.job = RetrainJob(state="waiting", queued=time.monotonic(), labels=labels,
                                  set_aside=set_aside)
            # what it waits for, said from the first status on (its thread keeps it)
            self.job.first_training = self._first_training()
            self.job.own = timed(self.job.first_training)
            record(self.job)
            self.retraining = Retraining(self, self.job).start()
        if wait:
            self.retraining.wait()
        return self._status()

    def _training_input(self, version: str) -> tuple:
        """(config, labelled pairs) of a retrain that improves on `version`."""
        from engine.store.labels import training_examples
        from engine.train.fit_selection_classifier import ClassifierConfig

        return _recipe(version) or ClassifierConfig(), training_examples(self.label_store.list())

    def _check_usable_labels(self) -> tuple[int, int]:
        """(how many stored labels a retrain trains on, how many it sets aside); a
        ConfigError if none can train."""
        from engine.models.selection_classifier import active_version

        config, examples = self._training_input(active_version() or "")
        if not examples:
            raise ConfigError("There are no labels to retrain on yet: find pairs and label "
                              "some (y / n), then retrain.")
        usable, set_aside = self._usable(examples, config)
        if not usable:
            raise ConfigError(
                f"None of the {set_aside} stored labels can train: all are on held-out "
                "training questions or HotpotQA dev500 questions, which are set aside so the "
                "held-out figures stay comparable. Label pairs of other questions (typed "
                "questions count), then retrain.")
        return usable, set_aside

    def _retrain(self, job: RetrainJob) -> None:
        """Wait for the first-start training, then for a turn among the long builds, then
        train (Retraining's work)."""
        from engine.service.builds import BUILDS

        def waits(turn) -> None:
            job.turn = turn

        self._wait_for_first_training(job)
        with BUILDS.turn(f"retraining DR-RAG's selection classifier with {job.labels} "
                         "labels", job.own_seconds(), on_wait=waits) as turn:
            job.turn, turn.left = turn, job.seconds_left
            job.waited = time.monotonic() - job.queued
            self._train(job, turn.progress(job.report))

    def _wait_for_first_training(self, job: RetrainJob) -> None:
        """Block while the first-start training of this classifier is under way: the
        version it makes is the one a retrain improves on and is compared with (the build
        queue alone might let the retrain go first)."""
        while (task := self._first_training()) is not None:
            job.first_training = task
            job.own = timed(task) or job.own
            time.sleep(POLL_SECONDS)
        job.first_training = None

    def _first_training(self):
        """The preparation task that trains this classifier on a first start, while it
        has not trained it yet (None otherwise)."""
        from engine.models.selection_classifier import active_version

        if active_version() is not None:
            return None
        for preparation in self._preparations():
            if preparation.underway(FIRST_TRAINING):
                return preparation.tasks[FIRST_TRAINING]
        return None

    def _train(self, job: RetrainJob, progress) -> None:
        from engine.models.selection_classifier import active_version, set_active
        from engine.train.fit_selection_classifier import train_classifier

        job.state, job.started = "running", time.monotonic()
        job.before = active_version() or ""
        record(job)
        if job.before:  # pinned: a version kept inactive must not take over as the newest
            set_active(job.before)
        config, examples = self._training_input(job.before)
        job.labels, job.set_aside = self._usable(examples, config)
        job.after = train_classifier(config, examples, progress, activate=False).name
        job.compared = self._compare(job, config)
        job.activated = not_worse(job.compared["after"], job.compared["before"])
        if job.activated:
            set_active(job.after)
        logger.info("retrained classifier %s (held-out AUC %s) against %s (%s): %s",
                    job.after, job.compared["after"]["heldout_auc"], job.before or "none",
                    (job.compared["before"] or {}).get("heldout_auc"),
                    "made active" if job.activated else "kept, not active")

    @staticmethod
    def _usable(examples: list, config) -> tuple[int, int]:
        """(labels trained on, labels set aside) of `examples` under `config`, as
        train_classifier counts them."""
        from engine.train.fit_selection_classifier import held_out_questions
        from engine.train.selection_pairs import usable_labels

        usable, set_aside = usable_labels(examples, held_out_questions(config))
        return len(usable), set_aside

    @staticmethod
    def _compare(job: RetrainJob, config) -> dict:
        """Both versions' held-out figures on the same pairs (the new version's): the
        version before is measured again if its stored figures are on other pairs."""
        from engine.train.fit_selection_classifier import figures_on, heldout_pairs

        job.phase = "measuring both versions on the same held-out pairs"
        pairs = heldout_pairs(config)
        after = figures_on(job.after, pairs, config.max_length)
        before = None
        if job.before and job.before != job.after:
            try:
                before = figures_on(job.before, pairs, config.max_length)
            except Exception as err:  # noqa: BLE001 - the new version stands on its own
                logger.exception("measuring classifier version %s failed", job.before)
                before = {"id": job.before, "error": str(err)}
        return {"pairs": len(pairs), "before": before, "after": after}


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


class Retraining(BackgroundJob):
    """A retrain's thread (engine.service.background): its work is `Annotation._retrain`,
    run as the operator's (a retrain follows the active version's stored recipe, its base
    model among it: the operator's set-up, resolved as such by engine.allowed, not a
    request's); its end is written into the retrain's record, `job`."""

    kind = "retrain"

    def __init__(self, annotation: Annotation, job: RetrainJob) -> None:
        super().__init__(0)
        self.annotation, self.job = annotation, job

    @property
    def label(self) -> str:
        return "retraining the classifier"

    def work(self) -> None:
        from engine import allowed

        with allowed.operator_work():
            self.annotation._retrain(self.job)

    def finish(self) -> None:
        job = self.job
        job.seconds = time.monotonic() - job.started if job.started else 0.0
        job.phase, job.turn = "", None
        if self.state == FAILED:
            job.error = self.error
        job.state = "failed" if self.state == FAILED else "done"  # last: "done" says all
        record(job)
