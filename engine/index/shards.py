"""A dense index served by Ray actors, one shard each: `funnel-explorer --ray ADDRESS`
(every corpus), or a corpus added in the Corpora tab with "serve from Ray shards".

The index is built (or found) in the shared cache as always (`dense_entry`,
engine.index.dense); the serving process never loads it. Shard s of n is an actor holding
rows [a, b) of its vectors with an index of its own over them: exact (a copy of its rows,
in its worker's memory) or HNSW (a graph per shard, built by the actor once and cached,
its vectors memory-mapped for re-scoring, as one approximate index re-scores).

A query's top k is scattered to every shard; each returns its k best rows (corpus-wide
numbers) with their exact cosines, and the merge keeps the k highest of the union, ties by
row. Every row of the true top k is in the top k of the shard holding it, so over exact
shards the merge is one exact index's top k. Vectors of given rows (re-scoring, a
document's best passage) are gathered from the shards holding them; a query's cosine to
every row (the exact first stage), from every shard.

The actors' workers read the cache from the data directory they are given
(`engine.paths.worker_environment`): a cluster's workers must see it (a shared file
system), as they must for encoding on Ray.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.cache import load_or_build
from engine.errors import check_range
from engine.index.dense import DenseIndex, RemoteVectors, dense_entry, stored_vectors
from engine.index.faiss_index import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    faiss_vectors,
    hnsw_index,
    top_rows,
)
from engine.index.on_ray import connect

if TYPE_CHECKING:
    from engine.documents import Corpus
    from engine.units.build import UnitConfig

logger = logging.getLogger(__name__)

SHARD_VERSION = 1  # bump when a shard's cached graph changes
DEFAULT_SHARDS = 2
MAX_SHARDS = 64
SHARD_FILE = "shard.faiss"


def check_shards(shards: int) -> None:
    """Refuse a shard count out of 1..MAX_SHARDS, naming it."""
    check_range("shards", shards, 1, MAX_SHARDS)


class DenseShard:
    """Rows [start, stop) of a saved dense index, searchable: the state of one Ray actor."""

    def __init__(self, folder: str, start: int, stop: int, kind: str) -> None:
        import faiss

        faiss.omp_set_num_threads(1)  # an actor is one CPU; shards search side by side
        vectors = stored_vectors(Path(folder))[start:stop]
        self.start = start
        if kind == "exact":
            self.stored = None  # top_rows scans the index itself
            self.index = faiss.IndexFlatIP(vectors.shape[1])
            self.index.add(np.ascontiguousarray(vectors))
            self.vectors = faiss_vectors(self.index)  # its copy, in this worker's memory
        else:
            self.stored = self.vectors = vectors  # memory-mapped, for re-scoring
            key = {"entry": Path(folder).name, "start": start, "stop": stop,
                   "index": {"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                   "version": SHARD_VERSION}
            self.index = load_or_build(
                "dense-shard", key,
                lambda out: faiss.write_index(hnsw_index(vectors), str(out / SHARD_FILE)),
                lambda out: faiss.read_index(str(out / SHARD_FILE), faiss.IO_FLAG_MMAP_IFC))

    def size(self) -> int:
        return self.index.ntotal

    def top(self, vector: np.ndarray, k: int, ef: int | None) -> tuple[np.ndarray,
                                                                      np.ndarray]:
        rows, scores = top_rows(self.index, self.stored, vector, k, ef)
        return rows + self.start, scores

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of these shard-local rows."""
        return np.asarray(self.vectors[rows], dtype=np.float32)

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Every row's cosine to the query `vector`."""
        return np.asarray(self.vectors @ vector, dtype=np.float32)

    def memory(self) -> dict[str, int]:
        """This worker's resident memory (`resident_memory`)."""
        return resident_memory()


def resident_memory() -> dict[str, int]:
    """This process's resident memory, MiB: its own (anonymous) and file-backed (pages of
    memory-mapped files, which the kernel may drop and read again)."""
    fields = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {name: round(int(fields[key].split()[0]) / 1024)
            for name, key in (("anonymous", "RssAnon"), ("file-backed", "RssFile"))}


class Shards:
    """The actors holding a dense index's shards, and the first row of each."""

    def __init__(self, ray: Any, actors: list, bounds: np.ndarray, d: int, kind: str,
                 address: str) -> None:
        self._ray, self.actors, self.bounds = ray, actors, bounds
        self.d, self.kind, self.address = d, kind, address

    @property
    def ntotal(self) -> int:
        return int(self.bounds[-1])

    def top(self, vector: np.ndarray, k: int, ef: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The `k` rows closest to `vector` over every shard, best first, and their cosines."""
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        found = self._ray.get([actor.top.remote(vector, k, ef) for actor in self.actors])
        return merge_top(found, k)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of `rows` (corpus-wide), gathered from the shards holding them."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.d), dtype=np.float32)
        owner = np.searchsorted(self.bounds, rows, side="right") - 1
        asked = {s: np.flatnonzero(owner == s) for s in np.unique(owner)}
        pending = {s: self.actors[s].rows.remote(rows[at] - self.bounds[s])
                   for s, at in asked.items()}
        for s, result in zip(pending, self._ray.get(list(pending.values())), strict=True):
            out[asked[s]] = result
        return out

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Every row's cosine to `vector`, in row order."""
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        return np.concatenate(self._ray.get([a.cosines.remote(vector)
                                             for a in self.actors]))

    def memory(self) -> list[dict[str, int]]:
        """Each shard's worker's resident memory (engine.index.shards.DenseShard.memory)."""
        return self._ray.get([actor.memory.remote() for actor in self.actors])


def merge_top(found: list[tuple[np.ndarray, np.ndarray]], k: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best of the shards' (rows, cosines), best first, ties by row."""
    rows = np.concatenate([r for r, _ in found]) if found else np.zeros(0, dtype=np.int64)
    scores = np.concatenate([s for _, s in found]) if found else np.zeros(0, np.float32)
    best = np.lexsort((rows, -scores))[:k]
    return rows[best], scores[best]


@dataclass(frozen=True)
class ShardedDenseIndex(DenseIndex):
    """A `DenseIndex` whose `index` is Ray shards (`Shards`): searched, re-scored and read
    through them; the serving process holds the units and no vector."""

    @property
    def exact(self) -> bool:
        return self.index.kind == "exact"

    @cached_property
    def vectors(self) -> RemoteVectors:  # type: ignore[override]
        return RemoteVectors(self.index)

    @property
    def description(self) -> str:
        kind = "exact" if self.exact else "HNSW"
        return (f"{len(self.index.actors)} Ray shards ({kind}) at "
                f"{self.index.address!r}")

    def top(self, vector: np.ndarray, k: int, ef: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        return self.index.top(vector, min(k, self.index.ntotal), ef)


def sharded_dense_index(corpus: Corpus, config: UnitConfig, model: str, address: str,
                        shards: int = DEFAULT_SHARDS, *, workers: int = 2, kind: str = "auto",
                        progress: Any = None) -> ShardedDenseIndex:
    """`dense_index(corpus, config, model)` served by `shards` Ray actors at `address`
    ("local": `workers` one-CPU workers on this machine): the index is built or found in
    the cache first, then each actor loads its rows."""
    from engine.models.loading import resolve_encoder_precision

    check_shards(shards)
    precision = resolve_encoder_precision("auto")
    units, folder, kind = dense_entry(corpus, config, model, progress, precision, kind)
    ray = connect(address, workers)
    bounds = np.linspace(0, len(units), min(shards, max(len(units), 1)) + 1).astype(np.int64)
    started = time.perf_counter()
    # a shard holds memory, not a CPU (a CPU held for the actor's life would leave none to
    # the next index's shards or an evaluation's tasks): it asks for the memory its rows
    # take, so Ray places shards where they fit, spread over the cluster's nodes
    actor = ray.remote(num_cpus=0, scheduling_strategy="SPREAD", max_restarts=1,
                       max_task_retries=1)(DenseShard)
    dim = stored_vectors(folder).shape[1]  # a memory map's shape: nothing is read
    per_row = dim * 4 if kind == "exact" else dim + 8 * HNSW_M
    actors = [actor.options(memory=max(1, int(b - a)) * per_row).remote(
                  str(folder), int(a), int(b), kind)
              for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    ray.get([a.size.remote() for a in actors])  # loaded; a shard that failed raises here
    logger.info("Dense: %d %s served by %d Ray shards (%s) in %.1f s", len(units),
                config.granularity, len(actors), kind, time.perf_counter() - started)
    return ShardedDenseIndex(units, Shards(ray, actors, bounds, dim, kind, address), model,
                             precision)
