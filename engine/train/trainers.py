"""Every model trained here, in one table: what it is, whether it is trained, how to train it
and what to say of it once trained.

Keyed by the constants of engine.models.trained, which `Need.trained_by`, the app's
background preparation (engine.service.preparation) and `python -m engine train` (its choices,
options and reports: engine/cli/train.py) all use, so adding a model trained here is one row
of `TRAINERS`. Training never runs at query time: only the service (when a paradigm's model
is missing, or Retrain is pressed) and the CLI import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.models import cross_encoder, query_classifier
from engine.models.kinds import (
    PRERANKER,
    QUERY_CLASSIFIER,
    SELECTION_CLASSIFIER,
    TRAIN_FILES,
    TRAINING_TIMES,
    TrainingTime,
)
from engine.models.trained import trained_folder
from engine.train import fit_preranker, fit_query_classifier, fit_selection_classifier

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Flag:
    """A command-line switch of one trainer, `--name`: `apply` changes its config."""

    name: str
    help: str
    apply: Callable[[Any], Any]

    @property
    def dest(self) -> str:
        """The switch's attribute on the parsed arguments."""
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class Trainer:
    """One trainable model, and all that training it takes:
    - `config()`: its default recipe, a config dataclass with `seed` and `epochs`;
    - `fit(config, progress)`: the cached model of `config`'s folder, trained first if
      missing (`progress(done, total)` for trainers that report it);
    - `cached(config)`: that folder if it is cached, else None (never trains);
    - `report(folder)`: the training report saved beside it (its "seconds" among them);
    - `summary(folder)`: what the CLI says of it, a line naming it and its folder first,
      then its held-out figures;
    - `data`: the QA files it reads (engine.qa_data); `flags`: its own command-line switches.
    """

    kind: str
    trains: str
    config: Callable[[], Any]
    fit: Callable[[Any, Progress], Path]
    cached: Callable[[Any], Path | None]
    report: Callable[[Path], dict]
    summary: Callable[[Path], list[str]]
    data: tuple[str, ...] = TRAIN_FILES
    flags: tuple[Flag, ...] = ()

    @property
    def time(self) -> TrainingTime:
        return TRAINING_TIMES[self.kind]

    def is_trained(self) -> bool:
        """Whether the model "trained" names is there (engine.models.trained)."""
        return trained_folder(self.kind) is not None

    def train(self, progress: Progress, config: Any = None) -> Path:
        """The folder of the model `config` (default: its default recipe) makes, trained
        first unless it is cached."""
        return self.fit(self.config() if config is None else config, progress)


TRAINERS: dict[str, Trainer] = {trainer.kind: trainer for trainer in (
    Trainer(PRERANKER, "the cross-encoder pre-ranker", config=cross_encoder.TrainConfig,
            fit=lambda config, progress: fit_preranker.train_preranker(config),
            cached=cross_encoder.cached_preranker_path,
            report=cross_encoder.training_report, summary=fit_preranker.summary,
            flags=(Flag("no-ict", "supervised pairs only (no inverse-cloze variant)",
                        lambda config: replace(config, use_ict=False)),)),
    Trainer(SELECTION_CLASSIFIER, "DR-RAG's selection classifier C(q, d1, d2)",
            config=fit_selection_classifier.ClassifierConfig,
            fit=lambda config, progress: fit_selection_classifier.train_classifier(
                config, progress=progress),
            cached=fit_selection_classifier.cached_classifier,
            report=fit_selection_classifier.training_report,
            summary=fit_selection_classifier.summary),
    Trainer(QUERY_CLASSIFIER, "the best-practices query classifier",
            config=query_classifier.QueryClassifierConfig,
            fit=lambda config, progress: fit_query_classifier.train_query_classifier(config),
            cached=query_classifier.cached_query_classifier,
            report=query_classifier.training_report, summary=fit_query_classifier.summary,
            data=query_classifier.KNOWLEDGE_FILES),
)}


def train_if_missing(kind: str, progress: Progress) -> None:
    """Train model `kind` unless a trained one is cached (a first start of the app)."""
    trainer = TRAINERS[kind]
    if not trainer.is_trained():
        trainer.train(progress)
