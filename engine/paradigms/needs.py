"""The `Need`s paradigms declare: indexes from the shared store, readers, re-rankers.

Each is keyed by what it loads, so two paradigms that need the same index or model share one
preparation task, and preparing it loads it into the process-wide store the paradigms read.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from engine.models.trained import QUERY_CLASSIFIER, SELECTION_CLASSIFIER, TRAINING_TIMES
from engine.paradigms.base import Need, Progress
from engine.types import Corpus
from engine.units.build import UnitConfig

if TYPE_CHECKING:
    from engine.readers.reader import ReaderConfig


def _describe(units: UnitConfig) -> str:
    key = units.key()
    if units.granularity == "clusters":
        return f"{key['algorithm']} clusters (S={key['max_tokens']})"
    if units.granularity == "passages":
        return f"{key['max_tokens']}-token passages"
    return "documents"


def bm25_need(units: UnitConfig) -> Need:
    """The BM25 index over `units`."""
    from engine.index.shared import shared_indexes

    return Need(f"bm25 {json.dumps(units.key(), sort_keys=True)}",
                f"BM25 over {_describe(units)}",
                lambda corpus, progress: shared_indexes().bm25(corpus, units))


def dense_need(units: UnitConfig, model: str) -> Need:
    """The dense index over `units` with encoder `model` (the slowest build: last)."""
    from engine.index.shared import shared_indexes

    def prepare(corpus: Corpus, progress: Progress):
        return shared_indexes().dense(corpus, units, model, progress=progress)

    def build_seconds(corpus: Corpus) -> float:
        from engine.index.dense import build_seconds

        return build_seconds(corpus, units, model)

    return Need(f"dense {model} {json.dumps(units.key(), sort_keys=True)}",
                f"dense index ({model}, {_describe(units)})", prepare, slow=True,
                build_seconds=build_seconds)


def reader_need(reader: ReaderConfig) -> Need:
    """The reader's model in its precision, loaded once (converted from GGUF on a first
    start); nothing to load for a remote endpoint."""
    model, endpoint, precision = reader.model, reader.endpoint, reader.precision

    def prepare(corpus: Corpus, progress: Progress):
        from engine.readers.generators import shared_generator

        return shared_generator(model, endpoint, precision)

    where = f" at {endpoint}" if endpoint else ""
    return Need(f"reader {model} {endpoint} {precision}", f"reader {model}{where}", prepare)


def ranker_need(model: str) -> Need:
    """A re-ranking model ("bi-encoder", "trained" or a cross-encoder), loaded so first
    questions are fast. A "trained" model that is not trained yet fails with the command
    that trains it (training takes minutes: never started behind the user's back)."""
    def prepare(corpus: Corpus, progress: Progress):
        if model == "bi-encoder":
            from engine.models.loading import load_bi_encoder

            return load_bi_encoder("minilm")
        from engine.models.cross_encoder import load_cross_encoder, model_location

        return load_cross_encoder(model_location(model))

    return Need(f"ranker {model}", f"re-ranker '{model}'", prepare)


def classifier_need(model: str) -> Need:
    """The selection classifier, loaded once; "trained" is trained first if no version
    exists yet (in the background, by the trainers table's SELECTION_CLASSIFIER)."""
    def prepare(corpus: Corpus, progress: Progress):
        from engine.models.selection_classifier import shared_classifier

        return shared_classifier(model)

    trained = model == "trained"
    return Need(f"classifier {model}", f"selection classifier '{model}'", prepare,
                slow=trained, trained_by=SELECTION_CLASSIFIER if trained else "",
                train_seconds=TRAINING_TIMES[SELECTION_CLASSIFIER].seconds if trained else 0.0)


def query_classifier_need(model: str) -> Need:
    """The query classifier, loaded once; "trained" is trained first if missing (about a
    minute on an idle machine, in the background, by the trainers table's QUERY_CLASSIFIER)."""
    def prepare(corpus: Corpus, progress: Progress):
        from engine.models.query_classifier import shared_query_classifier

        return shared_query_classifier(model)

    trained = model == "trained"
    return Need(f"query classifier {model}", f"query classifier '{model}'", prepare,
                slow=trained, trained_by=QUERY_CLASSIFIER if trained else "",
                train_seconds=TRAINING_TIMES[QUERY_CLASSIFIER].seconds if trained else 0.0)
