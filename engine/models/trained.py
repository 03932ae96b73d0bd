"""What identifies a model trained here, and where its cached folder is.

Training (engine/train) writes a model into the cache under `cache_key(config)`; query-time
code finds it through this module and never imports the training code. A trained model is
named by its config, the sha256 of every data file it was trained on and a format version,
so new data or a new recipe can never be mistaken for the old model.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from engine.cache import existing_entry, file_sha256
from engine.errors import ConfigError, DataFormatError, check_choice
from engine.qa_data import require

# The models trained here, each named once: the cache family it is stored under, the
# trainer `Need.trained_by` names, the key of the trainers table (engine/train/trainers.py)
# and the argument of `python -m engine train`.
PRERANKER = "preranker"
SELECTION_CLASSIFIER = "classifier"
QUERY_CLASSIFIER = "query-classifier"


@dataclass(frozen=True)
class TrainingTime:
    """How long training a model took here, and under what conditions (2 CPU cores)."""

    seconds: float
    measured: str


# measured figures (bench/README.md); a machine shared with other work takes longer
TRAINING_TIMES = {
    PRERANKER: TrainingTime(600.0, "1 epoch plus its inverse-cloze variant, idle machine"),
    SELECTION_CLASSIFIER: TrainingTime(
        786.0, "feature pass and 3 epochs on 888 pairs, 2 threads, idle machine; a "
               "retrain with 50 labels took 1,013 s"),
    QUERY_CLASSIFIER: TrainingTime(
        60.0, "3 epochs on 611 examples, 2 threads, idle machine (59 s); 203 s while a "
              "test suite shared the cores"),
}

PRERANKER_VERSION = 1
TRAIN_FILES = ("hotpotqa/train100.json", "musique/train100.json")
REPORT = "training_report.json"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the trained pre-ranker (its cache key, with the data)."""

    seed: int = 13
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 1e-4
    max_length: int = 256
    max_negatives: int = 2  # per training question (seeded sample of its distractors)
    use_ict: bool = True  # also try supervised + inverse cloze, keep the better variant
    ict_pairs: int = 100  # ICT queries; each gives one positive and one negative pair
    validation_fraction: float = 0.2
    loss: str = "listwise"  # or "bce" (pointwise binary cross-entropy)
    base_model: str = "minilm"

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, ("listwise", "bce"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown TrainConfig field(s) {unknown}. Known: {sorted(known)}.")
        return cls(**data)


def cache_key(config: TrainConfig) -> dict:
    """Config + sha256 of every data file the training reads + format version."""
    from engine.models.packaged import wiki_summaries_path
    from engine.paths import POOLED_FILES

    root = require(TRAIN_FILES, "no training data")
    names = set(TRAIN_FILES) | (set(POOLED_FILES) if config.use_ict else set())
    data = {name: file_sha256(root / name) for name in sorted(names) if (root / name).exists()}
    if config.use_ict:
        data["wiki"] = file_sha256(wiki_summaries_path())
    return {"config": asdict(config), "data": data, "version": PRERANKER_VERSION}


def cached_preranker_path(config: TrainConfig | None = None) -> Path | None:
    """The verified cached pre-ranker for `config`, or None (never trains)."""
    try:
        key = cache_key(config or TrainConfig())
    except (DataFormatError, OSError):  # without its training data it cannot be identified
        return None
    return existing_entry(PRERANKER, key)


def training_report(folder: Path) -> dict:
    """The validation figures and timings saved beside a trained pre-ranker."""
    return json.loads((folder / REPORT).read_text(encoding="utf-8"))
