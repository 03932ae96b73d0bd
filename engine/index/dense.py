"""Dense retrieval: bi-encoder embeddings of the units of one granularity in faiss, cached.

Units (normally early-chunked passages) are embedded from `engine.units.build.index_text` (title
plus text), L2-normalised to float32 and held in a faiss `IndexFlatIP`, so inner product is
cosine similarity. The cache holds the faiss index and the unit ids; unit texts are rebuilt
from the corpus.

Shortcuts taken on purpose:
- exact search (flat index): 10^5 passages x 384 dims is ~150 MB and a brute-force scan;
  IVF/PQ indexes on disk are the growth path for millions of units.
- the model's identity in the cache key is its alias or resolved path plus the sha256 of
  its config.json, not a hash of the weights (fast, but weights retrained in place under an
  unchanged config.json would not invalidate the cache: bump DENSE_VERSION or move them).
- units longer than the model's max_seq_length (256 word pieces for MiniLM) are truncated.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cache import existing_entry, load_or_build
from engine.errors import check_range
from engine.index.recent import Recent
from engine.index.vectors import VectorStore
from engine.models.loading import ALIASES, load_bi_encoder, resolve, resolve_precision
from engine.text import count_tokens
from engine.types import Candidate, Corpus, Unit
from engine.units.build import UnitConfig, build_units, index_text, units_fingerprint

if TYPE_CHECKING:
    import faiss

logger = logging.getLogger(__name__)

DENSE_VERSION = 1
MAX_K = 10_000
# bench/dense_throughput.py (bench/results/dense_throughput.json): 2,000 pooled passages,
# MiniLM, 2 cores shared with other jobs (load 4-7): batch size 64 encoded 23.3 passages/s,
# 8 / 16 / 32 / 128 reached 0.35 / 0.54 / 0.79 / 0.84 of that. 64 and 128 were within
# noise of each other across runs. Not in the cache key: it changes speed, not the vectors.
DEFAULT_BATCH_SIZE = 64
# bf16 where the CPU multiplies it natively, fp32 elsewhere (engine.models.loading
# `resolve_precision`): bench/dense_precision.py, figures in bench/README.md.
DEFAULT_PRECISION = "auto"
# building the pooled passage index (35,297 passages, 2,367,137 engine tokens) took 318 s
# in bf16 and 688 s in fp32 on this machine's 2 cores (bench/results/dense_precision.json):
# what `build_seconds` estimates a build from
ENCODE_TOKENS_PER_SECOND = {"bf16": 7_400.0, "fp32": 3_400.0}
INDEX_FILE = "faiss.index"
PROGRESS_SLICE = 1024  # units encoded between two progress reports
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class DenseIndex:
    """A searchable dense index aligned with `units`; `model` encodes the queries."""

    units: tuple[Unit, ...]
    index: faiss.Index
    model: str = "minilm"
    precision: str = "fp32"

    @cached_property
    def vectors(self) -> np.ndarray:
        """The stored unit vectors, a row per unit (read-only, float32, unit length)."""
        matrix = self.index.reconstruct_n(0, self.index.ntotal) if self.units else (
            np.zeros((0, self.index.d), dtype=np.float32))
        matrix.setflags(write=False)
        return matrix

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Each unit id's row in `vectors`."""
        return {unit.id: row for row, unit in enumerate(self.units)}

    @cached_property
    def _recent(self) -> Recent[np.ndarray]:
        return Recent()

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """Unit-length float32 query embeddings, shape (len(queries), dim). The last few
        queries' vectors are kept: the stages of one run that read this index (first stage,
        re-ranker, post-ranking prior) encode the question once."""
        if not queries:
            return encode([], self.model, queries=True, precision=self.precision)
        return np.stack([self._recent.get(q, lambda q=q: self._encode_one(q))
                         for q in queries])

    def _encode_one(self, query: str) -> np.ndarray:
        vector = encode([query], self.model, queries=True, precision=self.precision)[0]
        vector.setflags(write=False)
        return vector

    def search(self, query: str, k: int = 10) -> list[Candidate]:
        """Top-`k` units for `query` by cosine similarity, best first."""
        check_range("k", k, 1, MAX_K)
        if not self.units:
            return []
        k = min(k, len(self.units))
        scores, ids = self.index.search(self.encode_queries([query]), k)
        return [Candidate(unit=self.units[int(i)], score=float(s), rank=rank)
                for rank, (i, s) in enumerate(zip(ids[0], scores[0], strict=True), start=1)
                if i >= 0]


def encode(texts: list[str], model: str = "minilm", batch_size: int = DEFAULT_BATCH_SIZE, *,
           queries: bool = False, show_progress: bool = False,
           precision: str = DEFAULT_PRECISION) -> np.ndarray:
    """Embeddings of `texts` by the bi-encoder `model`, L2-normalised, float32, C-ordered.

    `queries` picks the model's query prompt instead of its document prompt (MiniLM has
    neither, so both give the same vectors for it). `precision` is the weights' ("bf16"
    encodes in bfloat16); vectors are normalised in float32 either way.
    """
    encoder = load_bi_encoder(model, precision)  # resolves "auto"
    if not texts:
        return np.zeros((0, encoder.get_embedding_dimension()), dtype=np.float32)
    method = encoder.encode_query if queries else encoder.encode_document
    vectors = np.asarray(method(texts, batch_size=batch_size, show_progress_bar=show_progress,
                                convert_to_numpy=True), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(vectors)


def model_identity(model: str) -> dict:
    """What names `model`'s weights in a cache key: alias or path, plus config.json sha256."""
    if model in ALIASES:
        return {"alias": model, "config_sha256": _config_sha256(Path(resolve(model)))}
    path = Path(model).expanduser()
    if path.exists():
        path = path.resolve()
        return {"path": str(path), "config_sha256": _config_sha256(path)}
    return {"hub_id": model}


def encoder_identity(model: str, precision: str) -> dict:
    """What names an encoder's vectors: its weights (`model_identity`) and the precision
    they were encoded in ("auto" resolved)."""
    return {**model_identity(model), "precision": resolve_precision(precision)}


def _config_sha256(folder: Path) -> str | None:
    config = folder / "config.json"
    return hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else None


# --- building, loading, caching ---------------------------------------------------------


def build_dense(units: tuple[Unit, ...], folder: Path, model: str = "minilm",
                batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None,
                precision: str = DEFAULT_PRECISION) -> None:
    """Embed `units` and save a flat inner-product index plus their ids into `folder`.

    Vectors come from the content-addressed store (engine.index.vectors): only texts no
    earlier build encoded are encoded. `progress(done, total)` is called after every slice
    of `PROGRESS_SLICE` texts encoded.
    """
    import faiss

    granularity = units[0].granularity if units else "units"
    logger.info("Dense: %d %s with %s (%s, batch size %d)", len(units), granularity, model,
                precision, batch_size)
    started = time.perf_counter()
    store = VectorStore(encoder_identity(model, precision))
    vectors = store.encode([index_text(u) for u in units],
                           lambda texts: encode(texts, model, batch_size, precision=precision),
                           slice_size=PROGRESS_SLICE, progress=progress)
    if not units:
        vectors = encode([], model, precision=precision)
    seconds = time.perf_counter() - started
    logger.info("Dense: vectors of %d %s in %.1f s", len(units), granularity, seconds)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(folder / INDEX_FILE))
    (folder / "unit_ids.json").write_text(json.dumps([u.id for u in units]), encoding="utf-8")


def load_dense(units: tuple[Unit, ...], folder: Path, model: str = "minilm",
               precision: str = DEFAULT_PRECISION) -> DenseIndex:
    """Load a saved index, checking that it was built over exactly `units`."""
    import faiss

    ids = json.loads((folder / "unit_ids.json").read_text(encoding="utf-8"))
    if ids != [u.id for u in units]:
        raise ValueError("index unit ids do not match the corpus units")
    index = faiss.read_index(str(folder / INDEX_FILE))
    if index.ntotal != len(units):
        raise ValueError(f"index holds {index.ntotal} vectors for {len(units)} units")
    return DenseIndex(units, index, model, precision)


def dense_index(corpus: Corpus, config: UnitConfig = UnitConfig("passages"),
                model: str = "minilm", batch_size: int = DEFAULT_BATCH_SIZE,
                progress: Progress | None = None,
                precision: str = DEFAULT_PRECISION) -> DenseIndex:
    """The cached dense index of `corpus` at `config.granularity` (built on first use).

    Args:
        corpus: the documents to index.
        config: which units to embed; early-chunked passages by default.
        model: a bi-encoder alias ("minilm"), local path or hub id.
        batch_size: encoding batch size when building (speed only; not in the cache key).
        progress: called as `progress(done, total)` while building (not when loading).
        precision: of the encoder's weights while encoding ("fp32", "bf16", or "auto":
            bf16 where the CPU has native bf16 units).

    Raises:
        ResourceMissingError: the model cannot be found or loaded.
    """
    precision = resolve_precision(precision)
    units = build_units(corpus, config)
    key = _cache_key(corpus, config, units, model, precision)
    return load_or_build(
        "dense", key,
        lambda folder: build_dense(units, folder, model, batch_size, progress, precision),
        lambda folder: load_dense(units, folder, model, precision))


def build_seconds(corpus: Corpus, config: UnitConfig = UnitConfig("passages"),
                  model: str = "minilm", precision: str = DEFAULT_PRECISION) -> float:
    """About how long `dense_index(corpus, config, model)` takes here: 0 when its cache
    exists, else the encoding of the texts no earlier build encoded, at the measured
    ENCODE_TOKENS_PER_SECOND (the rest only loads)."""
    precision = resolve_precision(precision)
    units = build_units(corpus, config)
    if existing_entry("dense", _cache_key(corpus, config, units, model, precision)):
        return 0.0
    texts = [index_text(u) for u in units]
    todo = VectorStore(encoder_identity(model, precision)).missing(texts)
    return sum(count_tokens(texts[i]) for i in todo) / ENCODE_TOKENS_PER_SECOND[precision]


def _cache_key(corpus: Corpus, config: UnitConfig, units: tuple[Unit, ...], model: str,
               precision: str) -> dict:
    return {"corpus": corpus.fingerprint, "units": config.key(),
            "unit_texts": units_fingerprint(units),
            "model": encoder_identity(model, precision), "version": DENSE_VERSION}
