"""The query classifier of the best-practices pipeline: does a request need retrieval?

A MiniLM sequence classifier fine-tuned here (`python -m engine train query-classifier`;
engine/train/fit_query_classifier.py; "trained" finds it through
engine.models.trained.trained_folder) or any Hugging Face sequence-classifier folder or id
whose label 1 means "needs retrieval". Loaded once per location; query-time code never
imports the training code. Until one is trained (a fresh start trains it in the background in 1-3
minutes), "trained" stands in with "always-retrieve": every request is retrieved for, what
the pipeline does without the classifier, and the trace says so.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.cache import file_sha256
from engine.models.kinds import (
    QUERY_CLASSIFIER,
    TRAINED,
    cached_model,
    option_location,
    read_report,
)
from engine.qa_data import require
from engine.trace_details import StandIn

REPORT = "training_report.json"
KIND = QUERY_CLASSIFIER
STAND_IN = "always-retrieve"
VERSION = 1
KNOWLEDGE_FILES = ("hotpotqa/train100.json", "musique/train100.json", "squad/small_v2.json")


@dataclass(frozen=True)
class QueryClassifierConfig:
    """Everything that decides the trained query classifier (its cache key, with the data)."""

    seed: int = 13
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 5e-5
    max_length: int = 128
    base_model: str = "minilm"


def cache_key(config: QueryClassifierConfig) -> dict:
    """Config + sha256 of the data files the labelled set is made from + format version."""
    from engine.models.packaged import wiki_summaries_path

    root = require(KNOWLEDGE_FILES, "no training data")
    data = {name: file_sha256(root / name) for name in KNOWLEDGE_FILES}
    data["wiki"] = file_sha256(wiki_summaries_path())
    return {"config": asdict(config), "data": data, "version": VERSION}


def cached_query_classifier(config: QueryClassifierConfig | None = None) -> Path | None:
    """The verified cached classifier for `config`, or None (never trains)."""
    return cached_model(KIND, lambda: cache_key(config or QueryClassifierConfig()))


def training_report(folder: Path) -> dict:
    """The held-apart figures, threshold and timings saved beside a trained classifier."""
    return read_report(folder, REPORT)


class QueryClassifier:
    """P(needs retrieval) of a request, and the threshold the decision uses."""

    stand_in = None  # trained (the declared field every loaded resource has)

    def __init__(self, name: str, tokenizer: Any, model: Any, threshold: float = 0.5,
                 max_length: int = QueryClassifierConfig.max_length) -> None:
        self.name, self.tokenizer, self.model, self.threshold = name, tokenizer, model, threshold
        self.max_length = max_length  # the length it was trained at

    def probabilities(self, texts: list[str]) -> list[float]:
        import torch

        if not texts:
            return []
        batch = self.tokenizer(texts, padding=True, truncation=True,
                               max_length=self.max_length, return_tensors="pt")
        with torch.inference_mode():
            logits = self.model(**batch).logits
        return torch.softmax(logits.float(), dim=-1)[:, 1].tolist()

    def needs_retrieval(self, text: str) -> tuple[bool, float]:
        """(decision, probability) for one request."""
        p = self.probabilities([text])[0]
        return p >= self.threshold, p


class AlwaysRetrieve:
    """The stand-in while no query classifier is trained: every request needs retrieval."""

    name = STAND_IN
    threshold = 0.5
    stand_in = StandIn("always-retrieve", "no query classifier is trained yet: every "
                       "request retrieves (the trained one takes over when its training ends)")

    def probabilities(self, texts: list[str]) -> list[float]:
        return [1.0] * len(texts)

    def needs_retrieval(self, text: str) -> tuple[bool, float]:
        return True, 1.0


@lru_cache(maxsize=4)
def load_query_classifier(location: str) -> QueryClassifier:
    from engine.models.loading import load_sequence_classifier

    tokenizer, model, threshold = load_sequence_classifier(location, "the classifier trained "
                                                           "here", REPORT)
    report = Path(location) / REPORT  # a classifier trained here says its training length
    trained = json.loads(report.read_text(encoding="utf-8")).get("config", {}) \
        if report.is_file() else {}
    return QueryClassifier(location, tokenizer, model, threshold,
                           trained.get("max_length", QueryClassifierConfig.max_length))


def shared_query_classifier(model: str = "trained") -> QueryClassifier | AlwaysRetrieve:
    """The classifier `model` names; "trained" before one is trained is the stand-in."""
    if model == STAND_IN:
        return AlwaysRetrieve()
    if model == TRAINED:  # one lookup: identifying the cache entry hashes its data files
        folder = cached_query_classifier()
        return AlwaysRetrieve() if folder is None else load_query_classifier(str(folder))
    return load_query_classifier(option_location(model, KIND, cached_query_classifier))
