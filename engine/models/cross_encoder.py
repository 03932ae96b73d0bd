"""The cross-encoder pre-ranker: what identifies the one trained here, where a model is,
loading it once, scoring pairs.

A re-ranker option's model is "trained" (the pre-ranker `python -m engine train preranker`
caches; it is never trained at query time: engine.models.trained.model_location finds it),
an alias of engine.models.loading, a local folder or a hub id.

The trained pre-ranker is named by its `TrainConfig`, the sha256 of every data file it was
trained on and a format version (`cache_key`), so new data or a new recipe can never be
mistaken for the old model. Training (engine/train/fit_preranker.py) writes it under that key.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cache import file_sha256
from engine.errors import ConfigError, check_choice
from engine.models.kinds import PRERANKER, TRAIN_FILES, cached_model, read_report
from engine.qa_data import require

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

PRERANKER_VERSION = 1
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
    return cached_model(PRERANKER, lambda: cache_key(config or TrainConfig()))


def training_report(folder: Path) -> dict:
    """The validation figures and timings saved beside a trained pre-ranker."""
    return read_report(folder, REPORT)


@lru_cache(maxsize=4)
def load_cross_encoder(location: str, max_length: int = 256) -> CrossEncoder:
    """A one-logit CrossEncoder on the CPU, loaded once per (location, max_length)."""
    from sentence_transformers import CrossEncoder

    from engine.models.pretrained import from_pretrained

    return from_pretrained(CrossEncoder, location, num_labels=1, max_length=max_length,
                            device="cpu", local_files_only=True)


def score_pairs(model: CrossEncoder, pairs: Sequence[tuple[str, str]],
                batch_size: int = 32) -> list[float]:
    """Raw logits (no sigmoid: no ties from saturation) of `model` for (query, text) pairs."""
    import torch

    if not pairs:
        return []
    scores = model.predict(list(pairs), batch_size=batch_size, show_progress_bar=False,
                           activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    return [float(s) for s in scores]
