"""The process's models as the store hands them to paradigms (engine.service.store.Store
inherits these): the bi-encoder, the reader's generator with its FiD reader, cross-encoders
and the two classifiers, each looked up by name and loaded once per process by its own
module's cache (engine.models, engine.readers).
"""

from __future__ import annotations

from typing import Any


class ModelLookups:
    """The models a paradigm's resources name, looked up (each loaded once per process)."""

    def encoder(self, model: str) -> Any:
        """The bi-encoder `model` (sentence-transformers), loaded once per process."""
        from engine.models.loading import load_bi_encoder

        return load_bi_encoder(model)

    def reader(self, model: str, endpoint: str = "", precision: str = "auto",
               backend: str = "auto") -> Any:
        """The reader's generator from backend `backend` and, where the backend has one,
        its FiD reader (for the in-process model, sharing the loaded weights):
        engine.readers.reader.ReaderModels."""
        from engine.readers.backends import backend_named, shared_generator
        from engine.readers.reader import ReaderModels

        generator = shared_generator(model, endpoint, precision, backend)
        reads = backend_named(backend, endpoint).fid
        return ReaderModels(generator, reads(model, precision) if reads else None)

    def cross_encoder(self, model: str, max_length: int = 256) -> Any:
        """The cross-encoder `model` ("trained": the cached trained pre-ranker, or the
        command that trains it; an alias, a folder or a hub id), loaded once per process."""
        from engine.models.cross_encoder import load_cross_encoder
        from engine.models.kinds import PRERANKER
        from engine.models.trained import model_location

        return load_cross_encoder(model_location(model, PRERANKER), max_length)

    def selection_classifier(self, model: str) -> Any:
        """DR-RAG's selection classifier `model` ("trained" before one is trained: the
        untrained stand-in, which declares itself)."""
        from engine.models.selection_classifier import shared_classifier

        return shared_classifier(model)

    def query_classifier(self, model: str) -> Any:
        """The best-practices query classifier `model` ("trained" before one is trained:
        the always-retrieve stand-in)."""
        from engine.models.query_classifier import shared_query_classifier

        return shared_query_classifier(model)
