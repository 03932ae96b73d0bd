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
IVF-PQ, and the threshold: bench/README.md, "Millions of passages on one machine".

Shortcuts taken on purpose:
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from engine.cache import existing_entry, load_or_build
from engine.documents import Candidate, Corpus, Unit
from engine.errors import check_choice, check_range
from engine.index.query_memo import Recent
from engine.index.unit_scores import row_mapping, scores_by_id
from engine.index.vectors import VectorStore
from engine.models.loading import (
    ALIASES,
    load_bi_encoder,
    query_precision,
    resolve,
    resolve_encoder_precision,
)
from engine.progress import LoggedProgress
from engine.text import count_tokens
from engine.units.build import UnitConfig, build_units, index_text, units_fingerprint

if TYPE_CHECKING:
    import faiss
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

DENSE_VERSION = 1
MAX_K = 10_000
# bench/dense_throughput.py (bench/results/dense_throughput.json): 2,000 pooled passages,
# MiniLM, 2 cores shared with other jobs (load 4-7): batch size 64 encoded 23.3 passages/s,
# 8 / 16 / 32 / 128 reached 0.35 / 0.54 / 0.79 / 0.84 of that. 64 and 128 were within
# noise of each other across runs. Not in the cache key: it changes speed, not the vectors.
DEFAULT_BATCH_SIZE = 64
# bf16 where the CPU multiplies it natively, fp32 through ONNX Runtime elsewhere
# (engine.models.loading `resolve_encoder_precision`): bench/dense_precision.py and
# bench/encoder_runtimes.py, figures in bench/README.md.
DEFAULT_PRECISION = "auto"
# building the pooled passage index (35,297 passages, 2,367,137 engine tokens) took 318 s
# in bf16 (torch), 533 s in fp32 and 255 s in int8 (ONNX Runtime) on this machine's 2
# cores (bench/dense_precision.py, bench/encoder_runtimes.py): what `build_seconds`
# estimates a build from
ENCODE_TOKENS_PER_SECOND = {"bf16": 7_400.0, "fp32": 4_400.0, "int8": 9_300.0}
INDEX_FILE = "faiss.index"
VECTORS_FILE = "vectors.npy"  # an approximate index's exact vectors, memory-mapped
RECALL_FILE = "recall.json"
INDEX_KINDS = ("auto", "exact", "hnsw")
# bench/ann_choice.py and bench/funnel_scale.py (bench/README.md, "Millions of passages on
# one machine"): an exact top-100 costs ~0.1 ms per 1,000 passages on one thread here (16 ms
# at 166k passages, 160 ms at 1.66M); HNSW's stays under 10 ms at either size. From 400k
# passages the exact scan alone passes 40 ms.
APPROXIMATE_FROM = 400_000
# bench/ann_million.py at 1.66M passages, one thread (bench/README.md, "A million passages
# that keep their recall"): M=32, efConstruction=40 kept 0.86 of the exact top-100 at
# efSearch 800 (6.1 ms) and 0.93 at 2400 (16.5 ms); the denser graph keeps 0.98 at 800
# (9.6 ms), built in 19 min on two cores instead of 5, its index 1.45 GB instead of 1.04.
# IVF-SQ8 (0.86 at 10 ms), sign bits re-scored (0.88 at 11 ms) and usearch i8 (0.82 at
# 3.3 ms, expansion 400) kept less in the same time.
HNSW_M = 64  # graph degree (128 links per node at level 0)
HNSW_EF_CONSTRUCTION = 100
# candidates searched and re-scored per query, chosen on the training questions at 1.66M
# passages: the highest recall@100 (0.981) whose search stays within flat's 10 ms (9.6 ms)
HNSW_EF_SEARCH = 800
RECALL_QUERIES = 100  # pseudo-queries the recall is measured with at build time
SAMPLE_TEXTS = 64  # texts timed to estimate the build of an encoder other than MiniLM
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


def top_rows(index: faiss.Index, stored: np.ndarray | None, vector: np.ndarray, k: int,
             ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`DenseIndex.top` over a faiss `index`: an exact one's top `k` (`stored` None), or an
    HNSW one's candidates rescored exactly against its `stored` vectors."""
    k = min(k, index.ntotal)
    if not k:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1)
    if stored is None:
        scores, rows = index.search(query, k)
        keep = rows[0] >= 0
        return rows[0][keep], scores[0][keep]
    import faiss

    wanted = min(max(k, ef or HNSW_EF_SEARCH), index.ntotal)
    _, rows = index.search(query, wanted, params=faiss.SearchParametersHNSW(efSearch=wanted))
    rows = np.sort(rows[0][rows[0] >= 0])  # file order: fewer pages read
    scores = stored[rows] @ query[0]
    best = np.argsort(-scores, kind="stable")[:k]
    return rows[best], scores[best]


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


class _Owned:
    """An array interface that keeps its memory's owner alive (the array's `base`)."""

    def __init__(self, view: np.ndarray, owner: object) -> None:
        self.__array_interface__ = view.__array_interface__
        self.owner = owner


def faiss_vectors(index: faiss.Index) -> np.ndarray:
    """A read-only view (no copy) of the vectors an exact faiss index holds; the view keeps
    `index` alive."""
    import faiss

    flat = faiss.downcast_index(index)
    view = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d).reshape(flat.ntotal,
                                                                              flat.d)
    matrix = np.asarray(_Owned(view, index))
    matrix.setflags(write=False)
    return matrix


def encode(texts: list[str], model: str = "minilm", batch_size: int = DEFAULT_BATCH_SIZE, *,
           queries: bool = False, show_progress: bool = False,
           precision: str = DEFAULT_PRECISION) -> np.ndarray:
    """Embeddings of `texts` by the bi-encoder `model`, L2-normalised, float32, C-ordered.

    `queries` picks the model's query prompt instead of its document prompt (MiniLM has
    neither, so both give the same vectors for it), and the precision queries are encoded
    in (engine.models.loading `query_precision`). `precision` is the documents' ("auto":
    `resolve_encoder_precision`); vectors are normalised in float32 either way.
    """
    precision = resolve_encoder_precision(precision)
    if queries:
        precision = query_precision(model, precision)
    return encode_with(load_bi_encoder(model, precision), texts, batch_size,
                       queries=queries, show_progress=show_progress)


def encode_with(encoder: SentenceTransformer, texts: list[str],
                batch_size: int = DEFAULT_BATCH_SIZE, *, queries: bool = False,
                show_progress: bool = False) -> np.ndarray:
    """Embeddings of `texts` by a loaded bi-encoder, as `encode` gives them."""
    if not texts:
        return np.zeros((0, encoder.get_embedding_dimension()), dtype=np.float32)
    method = encoder.encode_query if queries else encoder.encode_document
    vectors = np.asarray(method(texts, batch_size=batch_size, show_progress_bar=show_progress,
                                convert_to_numpy=True), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(vectors)


def model_identity(model: str) -> dict:
    """What names `model`'s weights in a cache key: alias or path, plus config.json sha256
    (a plugin's encoder: its name and version)."""
    from engine.models.encoders import known_encoders

    plugin = known_encoders().get(model)
    if plugin is not None:
        return {"plugin": model, "version": plugin.version}
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
    return {**model_identity(model), "precision": resolve_encoder_precision(precision)}


def _config_sha256(folder: Path) -> str | None:
    config = folder / "config.json"
    return hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else None


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
    vectors = store.encode(texts, lambda batch: encode(batch, model, batch_size,
                                                       precision=precision),
                           progress=logged, out=out)
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


def hnsw_index(vectors: np.ndarray, slice_rows: int = 65_536) -> faiss.Index:
    """An HNSW graph over 8-bit scalar-quantised `vectors` (inner product), added a slice at
    a time from `vectors` (which may be memory-mapped)."""
    import faiss

    index = faiss.IndexHNSWSQ(vectors.shape[1], faiss.ScalarQuantizer.QT_8bit, HNSW_M,
                              faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    sample = np.random.default_rng(0).choice(len(vectors), min(len(vectors), 100_000),
                                             replace=False)
    index.train(np.ascontiguousarray(vectors[np.sort(sample)]))
    for start in range(0, len(vectors), slice_rows):
        index.add(np.ascontiguousarray(vectors[start:start + slice_rows]))
    return index


def measure_recall(index: faiss.Index, vectors: np.ndarray, k: int = 100,
                   queries: int = RECALL_QUERIES, slice_rows: int = 262_144) -> float:
    """Recall@`k` of an approximate `index` (searched as `DenseIndex.top` searches it)
    against an exact scan of `vectors`, for `queries` pseudo-queries: the normalised
    midpoints of random pairs of stored vectors (a question between two passages)."""
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(vectors), size=(queries, 2))
    probes = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
    probes /= np.maximum(np.linalg.norm(probes, axis=1, keepdims=True), 1e-12)
    probes = probes.astype(np.float32)
    truth_scores = np.full((queries, k), -np.inf, dtype=np.float32)
    truth_rows = np.zeros((queries, k), dtype=np.int64)
    for start in range(0, len(vectors), slice_rows):  # one pass over the file
        scores = probes @ np.asarray(vectors[start:start + slice_rows]).T
        rows = np.broadcast_to(np.arange(start, start + scores.shape[1]), scores.shape)
        both = np.concatenate([truth_scores, scores], axis=1)
        keep = np.argsort(-both, axis=1, kind="stable")[:, :k]
        truth_rows = np.take_along_axis(np.concatenate([truth_rows, rows], axis=1), keep, 1)
        truth_scores = np.take_along_axis(both, keep, 1)
    probe = DenseIndex((), index, stored=vectors)
    found = 0
    for vector, truth in zip(probes, truth_rows, strict=True):
        rows, _ = probe.top(vector, k)
        found += len(np.intersect1d(rows, truth))
    return round(found / (queries * min(k, len(vectors))), 4)


def recall_note(folder: Path) -> str:
    """"recall@100 R vs exact at efSearch E" of the approximate index built in `folder`
    (as measured when it was built), or "" for an exact one."""
    path = folder / RECALL_FILE
    if not path.is_file():
        return ""
    measured = json.loads(path.read_text(encoding="utf-8"))
    at = f" at efSearch {measured['ef_search']}" if measured.get("ef_search") else ""
    return f"recall@100 {measured['recall@100']:.3f} vs exact{at}"


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
    units = build_units(corpus, config)
    kind = index_kind(kind, len(units))
    if existing_entry("dense", _cache_key(corpus, config, units, model, precision, kind)):
        return 0.0
    texts = [index_text(u) for u in units]
    todo = [texts[i] for i in VectorStore(encoder_identity(model, precision)).missing(texts)]
    if not todo:
        return 0.0
    return sum(count_tokens(t) for t in todo) / encoding_rate(model, precision, todo)


_RATES: dict[str, float] = {}


def encoding_rate(model: str, precision: str, texts: list[str]) -> float:
    """Engine tokens per second `model` encodes here: MiniLM's measured
    ENCODE_TOKENS_PER_SECOND, and any other encoder's timed once per process on a sample
    of `texts` (SAMPLE_TEXTS, after one warm-up batch): a larger model's build is estimated
    at its own speed, not MiniLM's."""
    if model == "minilm":
        return ENCODE_TOKENS_PER_SECOND[precision]
    name = json.dumps(encoder_identity(model, precision), sort_keys=True)
    if name not in _RATES:
        sample = texts[:: max(1, len(texts) // SAMPLE_TEXTS)][:SAMPLE_TEXTS]
        encode(sample[:4], model, precision=precision)  # warm-up: loading, first batch
        started = time.perf_counter()
        encode(sample, model, precision=precision)
        seconds = max(time.perf_counter() - started, 1e-3)
        _RATES[name] = sum(count_tokens(t) for t in sample) / seconds
        logger.info("Dense: %s encodes ~%.0f tokens/s here (%d texts timed)", model,
                    _RATES[name], len(sample))
    return _RATES[name]


def _cache_key(corpus: Corpus, config: UnitConfig, units: tuple[Unit, ...], model: str,
               precision: str, kind: str) -> dict:
    key = {"corpus": corpus.fingerprint, "units": config.key(),
           "unit_texts": units_fingerprint(units),
           "model": encoder_identity(model, precision), "version": DENSE_VERSION}
    if kind == "hnsw":  # the exact index's key is unchanged: its caches stay valid
        key["index"] = {"kind": "hnsw", "M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION,
                        "storage": "sq8"}
    return key
