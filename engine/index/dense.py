"""Dense retrieval: bi-encoder embeddings of the units of one granularity in faiss, cached.

Units (normally early-chunked passages) are embedded from `engine.units.build.index_text` (title
plus text), L2-normalised to float32 and held in a faiss `IndexFlatIP`, so inner product is
cosine similarity. The cache holds the faiss index and the unit ids; unit texts are rebuilt
from the corpus.

Beyond APPROXIMATE_FROM units the index is approximate (`kind="auto"`): an HNSW graph over
8-bit scalar-quantised vectors, its candidates rescored with the exact float32 vectors, which
stay on disk in the cache entry and are memory-mapped (`vectors`), so the process holds no
float32 matrix of them at all. Its recall@100 against the exact scan is measured when it is
built and kept with it (`recall`). An exact index holds its vectors once, in faiss: `vectors`
is a view of faiss's own copy. An HNSW index file is memory-mapped when loaded, so a large
index lives in pages the kernel can drop, not in the process's own memory. Why HNSW and not
IVF-PQ, and the threshold: docs/benchmarks/scale.md, "Millions of passages on one machine".

Shortcuts taken on purpose:
- the model's identity in the cache key is its alias or resolved path plus the sha256 of
  its config.json, not a hash of the weights (fast, but weights retrained in place under an
  unchanged config.json would not invalidate the cache: bump DENSE_VERSION or move them).
- units longer than the model's max_seq_length (256 word pieces for MiniLM) are truncated.

Below it: the encoder's side (engine.index.encoding: `encode`, `encoder_identity`, the
encoding rate a build's estimate reads) and faiss's (engine.index.faiss_index: searching,
the HNSW graph, its recall, `faiss_vectors`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from engine.cache import existing_entry, load_or_build
from engine.documents import Candidate, Corpus, Unit
from engine.errors import check_choice, check_range
from engine.index.encoding import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PRECISION,
    encode,
    encoder_identity,
    encoding_rate,
    record_rate,
)
from engine.index.faiss_index import (
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
    RECALL_FILE,
    faiss_vectors,
    hnsw_index,
    measure_recall,
    top_rows,
)
from engine.index.query_memo import Recent
from engine.index.unit_scores import row_mapping, scores_by_id
from engine.index.vectors import VectorStore
from engine.models.loading import load_bi_encoder, resolve_encoder_precision
from engine.progress import LoggedProgress
from engine.text import count_tokens
from engine.units.build import UnitConfig, build_units, index_text, units_fingerprint

if TYPE_CHECKING:
    import faiss

logger = logging.getLogger(__name__)

DENSE_VERSION = 1
MAX_K = 10_000
INDEX_FILE = "faiss.index"
VECTORS_FILE = "vectors.npy"  # an approximate index's exact vectors, memory-mapped
INDEX_KINDS = ("auto", "exact", "hnsw")
# bench/ann_choice.py and bench/funnel_scale.py (docs/benchmarks/scale.md, "Millions of passages on
# one machine"): an exact top-100 costs ~0.1 ms per 1,000 passages on one thread here (16 ms
# at 166k passages, 160 ms at 1.66M); HNSW's stays under 10 ms at either size. From 400k
# passages the exact scan alone passes 40 ms.
APPROXIMATE_FROM = 400_000
Progress = Callable[[int, int], None]
T = TypeVar("T")


@dataclass(frozen=True)
class DenseIndex:
    """A searchable dense index aligned with `units`; `model` encodes the queries."""

    units: tuple[Unit, ...]
    index: faiss.Index
    model: str = "minilm"
    precision: str = "fp32"
    stored: np.ndarray | None = None  # an approximate index's exact vectors (memory-mapped)
    recall: float | None = None  # an approximate index's recall@100 against the exact scan
    recall_ef: int | None = None  # the efSearch `recall` was measured at
    stand_in = None  # the real index (engine.index.stand_in.DenseStandIn stands in for it)

    @property
    def exact(self) -> bool:
        """Whether `search` and `top` scan every vector (else: HNSW, then exact rescoring)."""
        return self.stored is None

    @cached_property
    def vectors(self) -> np.ndarray:
        """The stored unit vectors, a row per unit (read-only, float32, unit length): a view
        of the exact index's own copy, or an approximate index's memory-mapped file."""
        if self.stored is not None:
            return self.stored
        if not self.units:
            return np.zeros((0, self.index.d), dtype=np.float32)
        return faiss_vectors(self.index)

    @property
    def description(self) -> str:
        """What kind of index this is, as the status names it."""
        if self.exact:
            return "exact"
        at = f" at efSearch {self.recall_ef}" if self.recall_ef else ""
        recall = "" if self.recall is None else f", recall@100 {self.recall:.3f} vs exact{at}"
        return f"approximate (HNSW{recall})"

    @cached_property
    def row_of(self) -> Mapping[str, int]:
        """Each unit id's row in `vectors` (a corpus's passages or documents answer it from
        their spans, without a dictionary of every id)."""
        return row_mapping(self.units)

    @cached_property
    def _recent(self) -> Recent[np.ndarray]:
        return Recent()

    def unit_vectors(self, units: Sequence[Unit]) -> np.ndarray:
        """The vectors of `units`: the stored row of each unit the index holds; one it does
        not hold (a gold paragraph a stage's ceiling adds) is encoded now, as the index
        encodes its units."""
        rows = self.row_of
        missing = [u for u in units if u.id not in rows]
        extra = dict(zip((u.id for u in missing),
                         encode([index_text(u) for u in missing], self.model,
                                precision=self.precision), strict=True)) if missing else {}
        return np.stack([self.vectors[rows[u.id]] if u.id in rows else extra[u.id]
                         for u in units]) if units else np.zeros((0, self.index.d),
                                                                 dtype=np.float32)

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

    def top(self, vector: np.ndarray, k: int, ef: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the `k` units closest to the query `vector` and their cosines, best
        first: exact, or the HNSW's candidates (`ef`, default HNSW_EF_SEARCH, or `k` if
        more) rescored exactly."""
        return top_rows(self.index, None if self.exact else self.vectors, vector, k, ef)

    def score_units(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """The cosine of each unit of `ids` to `query`, from its stored vector (as an exact
        search scores it, and an HNSW one re-scores it; Ray shards and Qdrant send the rows'
        vectors), -inf for a unit the index does not hold: engine.index.unit_scores."""
        return scores_by_id(self.row_of, ids, lambda rows: np.asarray(
            self.vectors[rows], dtype=np.float32) @ self.encode_queries([query])[0])

    def search(self, query: str, k: int = 10) -> list[Candidate]:
        """Top-`k` units for `query` by cosine similarity, best first."""
        check_range("k", k, 1, MAX_K)
        if not self.units:
            return []
        rows, scores = self.top(self.encode_queries([query])[0], k)
        return [Candidate(unit=self.units[int(i)], score=float(s), rank=rank)
                for rank, (i, s) in enumerate(zip(rows, scores, strict=True), start=1)]


class RemoteVectors:
    """The vectors of an index held elsewhere (Ray shards, a vector database) as the engine
    reads an index's `vectors`: rows indexed (gathered from where they are held), or times a
    query vector (every row's cosine). `held` answers `rows(rows)`, `cosines(vector)`,
    `ntotal` and `d`."""

    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, held: Any) -> None:
        self._held = held
        self.shape = (held.ntotal, held.d)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> np.ndarray:
        if isinstance(rows, slice):
            return self._held.rows(np.arange(*rows.indices(len(self))))
        if np.ndim(rows) == 0:
            row = int(rows)
            return self._held.rows(np.array([row + len(self) if row < 0 else row]))[0]
        return self._held.rows(np.asarray(rows))

    def __matmul__(self, vector: np.ndarray) -> np.ndarray:
        return self._held.cosines(vector)


# --- building, loading, caching ---------------------------------------------------------


def index_kind(kind: str, n_units: int) -> str:
    """The index `kind` ("auto", "exact" or "hnsw") builds over `n_units` units: "auto" is
    exact below APPROXIMATE_FROM units and HNSW from there."""
    check_choice("dense index kind", kind, INDEX_KINDS)
    if kind == "auto":
        return "hnsw" if n_units >= APPROXIMATE_FROM else "exact"
    return kind


def build_dense(units: tuple[Unit, ...], folder: Path, model: str = "minilm",
                batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None,
                precision: str = DEFAULT_PRECISION, kind: str = "exact") -> None:
    """Embed `units` and save an index of `kind` ("exact" or "hnsw") plus their ids into
    `folder`.

    Vectors come from the content-addressed store (engine.index.vectors): only texts no
    earlier build encoded are encoded. `progress(done, total)` is called after every slice
    of `engine.index.vectors.SLICE_TEXTS` texts encoded. An HNSW index writes the vectors
    into a file it memory-maps, then adds them slice by slice: the build never holds them
    twice either.
    """
    import faiss

    granularity = units[0].granularity if units else "units"
    logger.info("Dense: %d %s with %s (%s, batch size %d, %s index)", len(units),
                granularity, model, precision, batch_size, kind)
    started = time.perf_counter()
    store = VectorStore(encoder_identity(model, precision))
    texts = [index_text(u) for u in units]
    dim = load_bi_encoder(model, precision).get_embedding_dimension()
    if kind == "hnsw":
        out = np.lib.format.open_memmap(folder / VECTORS_FILE, mode="w+", dtype=np.float32,
                                        shape=(len(units), dim))
    else:
        out = np.empty((len(units), dim), dtype=np.float32)
    # progress in the log too (every LOG_SECONDS), where no status line shows it: an hour
    # of encoding on a busy CPU says how far it is and how long is left
    logged = LoggedProgress(logger, "Dense: encoding", granularity, then=progress)
    paced = [0, 0.0]  # tokens encoded, seconds spent encoding them (pauses left out)

    def encoding(batch: list[str]) -> np.ndarray:
        began = time.perf_counter()
        vectors = encode(batch, model, batch_size, precision=precision)
        paced[0] += sum(count_tokens(t) for t in batch)
        paced[1] += time.perf_counter() - began
        return vectors

    vectors = store.encode(texts, encoding, progress=logged, out=out)
    record_rate(model, precision, paced[0], paced[1])  # the next estimate's pace here
    logger.info("Dense: vectors of %d %s in %.1f s", len(units), granularity,
                time.perf_counter() - started)
    if kind == "hnsw":
        vectors.flush()
        index = hnsw_index(vectors)
        recall = measure_recall(index, vectors)
        (folder / RECALL_FILE).write_text(json.dumps({"recall@100": recall,
                                                      "ef_search": HNSW_EF_SEARCH}),
                                          encoding="utf-8")
        logger.info("Dense: HNSW over %d vectors in %.1f s, recall@100 %.3f vs exact",
                    len(units), time.perf_counter() - started, recall)
    else:
        index = faiss.IndexFlatIP(dim)
        index.add(vectors)
    faiss.write_index(index, str(folder / INDEX_FILE))
    (folder / "unit_ids.json").write_text(json.dumps([u.id for u in units]), encoding="utf-8")


def load_dense(units: tuple[Unit, ...], folder: Path, model: str = "minilm",
               precision: str = DEFAULT_PRECISION) -> DenseIndex:
    """Load a saved index, checking that it was built over exactly `units` (an approximate
    one with its vectors memory-mapped and its measured recall)."""
    import faiss

    ids = json.loads((folder / "unit_ids.json").read_text(encoding="utf-8"))
    if ids != [u.id for u in units]:
        raise ValueError("index unit ids do not match the corpus units")
    # an approximate index is memory-mapped, not read: its graph and codes are pages the
    # kernel can drop and read again, not the process's own memory (1.4 GB at 1.66M
    # passages), and a search touches few of them. An exact index is read: every search
    # scans every page, and pages dropped between questions (as this machine's proactive
    # reclaim does) made the exact first stage at 1.66M passages 3x slower mapped. A
    # mapped index cannot grow; nothing adds to a loaded one.
    approximate = (folder / VECTORS_FILE).exists()
    index = faiss.read_index(str(folder / INDEX_FILE),
                             faiss.IO_FLAG_MMAP_IFC if approximate else 0)
    if index.ntotal != len(units):
        raise ValueError(f"index holds {index.ntotal} vectors for {len(units)} units")
    if not approximate:
        return DenseIndex(units, index, model, precision)
    stored = np.load(folder / VECTORS_FILE, mmap_mode="r")
    if stored.shape[0] != len(units):
        raise ValueError(f"{VECTORS_FILE} holds {stored.shape[0]} vectors for {len(units)} "
                         "units")
    measured = json.loads((folder / RECALL_FILE).read_text(encoding="utf-8"))
    return DenseIndex(units, index, model, precision, stored=stored,
                      recall=measured["recall@100"], recall_ef=measured.get("ef_search"))


def stored_vectors(folder: Path) -> np.ndarray:
    """The exact vectors a saved index entry holds, memory-mapped (read-only): an HNSW
    entry's vectors file, or the exact index's own codes."""
    import faiss

    if (folder / VECTORS_FILE).exists():
        return np.load(folder / VECTORS_FILE, mmap_mode="r")
    return faiss_vectors(faiss.read_index(str(folder / INDEX_FILE), faiss.IO_FLAG_MMAP_IFC))


def dense_index(corpus: Corpus, config: UnitConfig = UnitConfig("passages"),
                model: str = "minilm", batch_size: int = DEFAULT_BATCH_SIZE,
                progress: Progress | None = None,
                precision: str = DEFAULT_PRECISION, kind: str = "auto") -> DenseIndex:
    """The cached dense index of `corpus` at `config.granularity` (built on first use).

    Args:
        corpus: the documents to index.
        config: which units to embed; early-chunked passages by default.
        model: a bi-encoder alias ("minilm"), local path or hub id.
        batch_size: encoding batch size when building (speed only; not in the cache key).
        progress: called as `progress(done, total)` while building (not when loading).
        precision: the encoder's while encoding ("fp32", "bf16", "int8", or "auto":
            `resolve_encoder_precision`).
        kind: "exact", "hnsw" (approximate), or "auto": exact below APPROXIMATE_FROM units.

    Raises:
        ResourceMissingError: the model cannot be found or loaded.
    """
    precision = resolve_encoder_precision(precision)
    return _dense_cached(corpus, config, model, batch_size, progress, precision, kind,
                         lambda units, folder, kind: load_dense(units, folder, model,
                                                                precision))


def dense_entry(corpus: Corpus, config: UnitConfig = UnitConfig("passages"),
                model: str = "minilm", progress: Progress | None = None,
                precision: str = "auto", kind: str = "auto"
                ) -> tuple[Sequence[Unit], Path, str]:
    """What `dense_index` builds, built or found in the cache but not loaded: its units, its
    entry folder and its kind (for shards that load their part of it elsewhere)."""
    return _dense_cached(corpus, config, model, DEFAULT_BATCH_SIZE, progress,
                         resolve_encoder_precision(precision), kind,
                         lambda units, folder, kind: (units, folder, kind))


def _dense_cached(corpus: Corpus, config: UnitConfig, model: str, batch_size: int,
                  progress: Progress | None, precision: str, kind: str,
                  load: Callable[[Sequence[Unit], Path, str], T]) -> T:
    """The cache entry of the dense index of `corpus` (built first if missing), read by
    `load(units, folder, kind)`; `precision` resolved, `kind` not yet."""
    units = build_units(corpus, config)
    kind = index_kind(kind, len(units))
    return load_or_build(
        "dense", _cache_key(corpus, config, units, model, precision, kind),
        lambda folder: build_dense(units, folder, model, batch_size, progress, precision,
                                   kind),
        lambda folder: load(units, folder, kind))


def build_seconds(corpus: Corpus, config: UnitConfig = UnitConfig("passages"),
                  model: str = "minilm", precision: str = DEFAULT_PRECISION,
                  kind: str = "auto") -> float:
    """About how long `dense_index(corpus, config, model)` takes here: 0 when its cache
    exists, else the encoding of the texts no earlier build encoded at `encoding_rate`
    (the rest only loads)."""
    precision = resolve_encoder_precision(precision)
    units = build_units(corpus, config, keep=False)
    kind = index_kind(kind, len(units))
    if existing_entry("dense", _cache_key(corpus, config, units, model, precision, kind)):
        return 0.0
    texts = [index_text(u) for u in units]
    todo = [texts[i] for i in VectorStore(encoder_identity(model, precision)).missing(texts)]
    if not todo:
        return 0.0
    return sum(count_tokens(t) for t in todo) / encoding_rate(model, precision, todo)


def _cache_key(corpus: Corpus, config: UnitConfig, units: tuple[Unit, ...], model: str,
               precision: str, kind: str) -> dict:
    key = {"corpus": corpus.fingerprint, "units": config.key(),
           "unit_texts": units_fingerprint(units),
           "model": encoder_identity(model, precision), "version": DENSE_VERSION}
    if kind == "hnsw":  # the exact index's key is unchanged: its caches stay valid
        key["index"] = {"kind": "hnsw", "M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION,
                        "storage": "sq8"}
    return key
