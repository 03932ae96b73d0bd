"""The faiss side of a dense index (engine.index.dense): searching a faiss index, exactly or
through its HNSW graph with the candidates rescored exactly (`top_rows`); reading an exact
index's vectors without a copy (`faiss_vectors`); building the HNSW graph over 8-bit
scalar-quantised vectors (`hnsw_index`) and measuring its recall against the exact scan
(`measure_recall`, kept beside it: `recall_note`). faiss is imported inside the functions
that use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import faiss

# bench/ann_million.py at 1.66M passages, one thread (docs/benchmarks/scale.md, "A million passages
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
RECALL_FILE = "recall.json"


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
    found = 0
    for vector, truth in zip(probes, truth_rows, strict=True):
        rows, _ = top_rows(index, vectors, vector, k)
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
