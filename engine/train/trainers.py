"""Every model trained here, in one table: what it is, whether it is trained, how to train it.

Keyed by the constants of engine.models.trained, which `Need.trained_by`, the app's
background preparation (engine.service.readiness) and `python -m engine train` all use, so
a trainer is named in one place. Training never runs at query time: only the service (when a
paradigm's model is missing, or Retrain is pressed) and the CLI import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.models.query_classifier import KNOWLEDGE_FILES
from engine.models.trained import (
    PRERANKER,
    QUERY_CLASSIFIER,
    SELECTION_CLASSIFIER,
    TRAIN_FILES,
    TRAINING_TIMES,
    TrainingTime,
    trained_folder,
)

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Trainer:
    """One trainable model: `is_trained()` looks in the cache (never trains);
    `train(progress)` trains it with its default recipe (or returns the cached one) on the
    QA files `data` (engine.qa_data)."""

    kind: str
    trains: str
    train: Callable[[Progress], Path]
    data: tuple[str, ...] = TRAIN_FILES

    @property
    def time(self) -> TrainingTime:
        return TRAINING_TIMES[self.kind]

    def is_trained(self) -> bool:
        """Whether the model "trained" names is there (engine.models.trained)."""
        return trained_folder(self.kind) is not None


def _train_preranker(progress: Progress) -> Path:
    from engine.train.fit_preranker import train_preranker

    return train_preranker()


def _train_selection_classifier(progress: Progress) -> Path:
    from engine.train.fit_selection_classifier import train_classifier

    return train_classifier(progress=progress)


def _train_query_classifier(progress: Progress) -> Path:
    from engine.train.fit_query_classifier import train_query_classifier

    return train_query_classifier()


TRAINERS: dict[str, Trainer] = {trainer.kind: trainer for trainer in (
    Trainer(PRERANKER, "the cross-encoder pre-ranker", _train_preranker),
    Trainer(SELECTION_CLASSIFIER, "DR-RAG's selection classifier C(q, d1, d2)",
            _train_selection_classifier),
    Trainer(QUERY_CLASSIFIER, "the best-practices query classifier", _train_query_classifier,
            KNOWLEDGE_FILES),
)}


def train_if_missing(kind: str, progress: Progress) -> None:
    """Train model `kind` unless a trained one is cached (a first start of the app)."""
    trainer = TRAINERS[kind]
    if not trainer.is_trained():
        trainer.train(progress)
