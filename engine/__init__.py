"""Funnel Explorer's retrieval engine: corpora, link graph, clustering, indexes, stages.

No UI code lives here. Heavy libraries (torch, transformers, faiss, bm25s) are imported
inside the functions that use them, so `import engine` stays fast.
"""

from __future__ import annotations

from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.documents import Candidate, Corpus, Dataset, Document, Passage, Question, Unit
from engine.errors import ConfigError, DataFormatError, EngineError, ResourceMissingError
from engine.index.bm25 import BM25Index, bm25_index
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

__all__ = [
    "BM25Index", "Candidate", "Chunker", "ConfigError", "Corpus", "DataFormatError",
    "Dataset", "Document", "EngineError", "Passage", "Question", "ResourceMissingError",
    "Unit", "UnitConfig", "bm25_index", "load_corpus", "read_dataset",
]
