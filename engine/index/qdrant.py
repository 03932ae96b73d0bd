"""A dense index served from a Qdrant collection: a corpus added with a Qdrant location (a
server's URL, or a folder for Qdrant's local mode) and a collection name, or every corpus
with `funnel-explorer --qdrant WHERE`.

A collection holds one dense index: a point per unit, its vector the unit's embedding by
the index's encoder, its payload naming the unit (`{"unit": "Danube#2", "document":
"Danube"}`). A collection that does not exist yet is written from the index built (or
found) in the cache, point id = the unit's row. One that exists is served as it is, so
vectors that already live in Qdrant are searched without encoding the corpus here, after
checks that it holds this corpus's units: its size, its vectors' dimension and distance,
and the payloads of a sample of points. Points with other ids (written by another tool)
are mapped to rows by their payloads' unit ids, read once.

Every dense stage searches it: `top` asks Qdrant for the k nearest points (a server
searches its HNSW graph at `hnsw_ef` = the engine's efSearch; local mode scans every
vector), `vectors[rows]` retrieves points' vectors (re-scoring, a document's best
passage). It counts as approximate (`exact` False): the funnel's first stage scores
documents from its top APPROXIMATE_DEPTH passages, as over an HNSW index, and never reads
every vector.

The same client serves a Qdrant cluster (`http://host:6333`; an API key from
QDRANT_API_KEY) and local mode, which the tests use: locations, collection names and the
clients are engine.index.qdrant_locations (their names imported from here too). Why Qdrant
and not Milvus, and what 100M passages would take: docs/benchmarks/scale.md, "Ray shards and vector
databases".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.errors import ConfigError
from engine.index.dense import DenseIndex, RemoteVectors, dense_entry, stored_vectors
from engine.index.encoding import encoder_identity
from engine.index.faiss_index import HNSW_EF_SEARCH
from engine.index.qdrant_locations import (
    answering,
    check_collection,
    check_location,
    client_for,
    is_server,
)

if TYPE_CHECKING:
    from engine.documents import Corpus, Unit
    from engine.units.build import UnitConfig

logger = logging.getLogger(__name__)

UNIT_KEY = "unit"  # the payload key naming a point's unit id
DOCUMENT_KEY = "document"  # and its document's (filters by document)
IDENTITY_KEY = "funnel_explorer"  # collection metadata: the corpus, units, encoder written
WRITE_SLICE = 4096  # points written between two progress reports
READ_SLICE = 1024  # points retrieved or scrolled per request

Progress = Callable[[int, int], None]


class Collection:
    """A Qdrant collection holding a dense index's units, searched and read by row."""

    def __init__(self, client: Any, where: str, name: str, d: int, ntotal: int,
                 using: str | None, point_of_row: np.ndarray | None) -> None:
        self.client, self.where, self.name, self.d, self.ntotal = client, where, name, d, ntotal
        self.using = using  # the vector's name in a collection of named vectors
        # each row's point id where they differ (points written by another tool)
        self.point_of_row = point_of_row
        self.local = not is_server(where)

    @cached_property
    def row_of_point(self) -> dict:
        return {point: row for row, point in enumerate(self.point_of_row.tolist())}

    def _points(self, rows: np.ndarray) -> list:
        return (rows.tolist() if self.point_of_row is None
                else self.point_of_row[rows].tolist())

    def _rows(self, points: Sequence) -> np.ndarray:
        if self.point_of_row is None:
            rows = np.asarray(points, dtype=np.int64)
            unknown = [p for p in points if not 0 <= p < self.ntotal]
        else:
            unknown = [p for p in points if p not in self.row_of_point]
            rows = np.array([self.row_of_point.get(p, -1) for p in points], dtype=np.int64)
        if unknown:
            raise ConfigError(f"Qdrant collection {self.name!r} at {self.where} holds point "
                              f"{unknown[0]!r}, which it did not hold when it was opened; "
                              "restart the app to check it again.")
        return rows

    def _call(self, method: str, **arguments: Any) -> Any:
        with answering(self.where):
            return getattr(self.client, method)(self.name, **arguments)

    def top(self, vector: np.ndarray, k: int, ef: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the `k` points nearest `vector` and their cosines, best first, ties
        by row; a server's HNSW searched at efSearch `ef` (default HNSW_EF_SEARCH) or `k`."""
        from qdrant_client import models

        k = min(k, self.ntotal)
        if not k:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        # a server searches its HNSW graph; local mode scans every vector (no parameters)
        searching = {} if self.local else {"search_params": models.SearchParams(
            hnsw_ef=max(k, ef or HNSW_EF_SEARCH))}
        found = self._call("query_points", query=np.asarray(vector, dtype=np.float32),
                           using=self.using, limit=k, with_payload=False,
                           **searching).points
        rows = self._rows([point.id for point in found])
        scores = np.array([point.score for point in found], dtype=np.float32)
        best = np.lexsort((rows, -scores))
        return rows[best], scores[best]

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of `rows`, retrieved from their points."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.d), dtype=np.float32)
        for start in range(0, len(rows), READ_SLICE):
            part = rows[start:start + READ_SLICE]
            records = self._call("retrieve", ids=self._points(np.unique(part)),
                                 with_payload=False, with_vectors=True)
            got = dict(zip(self._rows([r.id for r in records]).tolist(),
                           (self._vector(r) for r in records), strict=True))
            missing = sorted(set(part.tolist()) - set(got))
            if missing:
                raise ConfigError(f"Qdrant collection {self.name!r} at {self.where} lost the "
                                  f"point of row {missing[0]} since it was opened; restart "
                                  "the app to check it again.")
            out[start:start + len(part)] = [got[row] for row in part.tolist()]
        return _unit_length(out)

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Every row's cosine to `vector`, in row order (every vector read: for checks, not
        for a question's first stage)."""
        out = np.empty(self.ntotal, dtype=np.float32)
        offset = None
        while True:
            records, offset = self._call("scroll", limit=READ_SLICE, offset=offset,
                                         with_payload=False, with_vectors=True)
            if records:
                rows = self._rows([r.id for r in records])
                out[rows] = _unit_length(np.stack([self._vector(r) for r in records])
                                         ) @ vector
            if offset is None:
                return out

    def _vector(self, record: Any) -> np.ndarray:
        return vector_of(record, self.using)


def vector_of(record: Any, using: str | None) -> np.ndarray:
    """A retrieved point's vector (`using`: its name in a collection of named vectors)."""
    return np.asarray(record.vector[using] if using else record.vector, dtype=np.float32)


def _unit_length(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a collection of dot-product vectors may hold others)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class QdrantDenseIndex(DenseIndex):
    """A `DenseIndex` whose `index` is a Qdrant collection (`Collection`): searched and
    read through it; this process holds the units and no vector."""

    @property
    def exact(self) -> bool:
        return False

    @cached_property
    def vectors(self) -> RemoteVectors:  # type: ignore[override]
        return RemoteVectors(self.index)

    @property
    def description(self) -> str:
        return f"Qdrant collection {self.index.name!r} at {self.index.where}"

    def top(self, vector: np.ndarray, k: int, ef: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        return self.index.top(vector, k, ef)


def qdrant_dense_index(corpus: Corpus, config: UnitConfig, model: str, where: str,
                       collection: str, progress: Progress | None = None
                       ) -> QdrantDenseIndex:
    """`dense_index(corpus, config, model)` served from Qdrant `collection` at `where`: an
    existing collection checked and opened, a missing one written from the cached index
    (built first if need be)."""
    from engine.models.loading import load_bi_encoder, resolve_encoder_precision
    from engine.units.build import build_units

    collection = check_collection(collection)
    where = check_location(where)
    client = client_for(where)
    precision = resolve_encoder_precision("auto")
    identity = {"corpus": corpus.fingerprint, "units": config.key(),
                "encoder": encoder_identity(model, precision)}
    with answering(where):
        if client.collection_exists(collection):
            units = build_units(corpus, config)
            dim = load_bi_encoder(model, precision).get_embedding_dimension()
            # compared with the metadata as it comes back from JSON (tuples as lists)
            opened = open_collection(client, where, collection, units, dim, model,
                                     json.loads(json.dumps(identity)))
            logger.info("Dense: %d %s served by Qdrant collection %r at %s", len(units),
                        config.granularity, collection, where)
        else:
            units, folder, _ = dense_entry(corpus, config, model, progress, precision)
            vectors = stored_vectors(folder)  # a memory map: read slice by slice
            write_collection(client, collection, units, vectors, progress, identity)
            opened = Collection(client, where, collection, vectors.shape[1], len(units),
                                None, None)
    return QdrantDenseIndex(units, opened, model, precision)


def write_collection(client: Any, name: str, units: Sequence[Unit], vectors: np.ndarray,
                     progress: Progress | None = None, identity: dict | None = None) -> None:
    """Create collection `name` (cosine) holding `units` with their `vectors`, point id =
    row, and `identity` (what the vectors are of) as its metadata. One that fails midway
    is deleted: no half-written collection is served."""
    from qdrant_client import models

    from engine.progress import LoggedProgress

    progress = LoggedProgress(logger, f"Qdrant: writing {name!r}", "points", then=progress)
    started = time.perf_counter()
    client.create_collection(name, vectors_config=models.VectorParams(
        size=int(vectors.shape[1]), distance=models.Distance.COSINE),
        metadata={IDENTITY_KEY: identity} if identity else None)
    try:
        for start in range(0, len(units), WRITE_SLICE):
            stop = min(start + WRITE_SLICE, len(units))
            client.upload_collection(
                name, vectors=np.ascontiguousarray(vectors[start:stop], dtype=np.float32),
                payload=[{UNIT_KEY: u.id, DOCUMENT_KEY: u.doc_ids[0] if u.doc_ids else ""}
                         for u in units[start:stop]],
                ids=range(start, stop), batch_size=256, wait=True)
            progress(stop, len(units))
    except BaseException:
        client.delete_collection(name)
        raise
    logger.info("Qdrant: wrote %d points into collection %r in %.1f s", len(units), name,
                time.perf_counter() - started)


def open_collection(client: Any, where: str, name: str, units: Sequence[Unit], dim: int,
                    model: str, identity: dict | None = None) -> Collection:
    """An existing collection, checked to hold `units` as vectors of dimension `dim`: one
    this engine wrote must name the same `identity` (corpus, units, encoder)."""
    from qdrant_client import models

    fix = ("delete the collection (it is then written from this corpus's index) or name "
           "another")
    config = client.get_collection(name).config
    written = (getattr(config, "metadata", None) or {}).get(IDENTITY_KEY)
    if written is not None and identity is not None and written != identity:
        differs = ", ".join(k for k in sorted(set(written) | set(identity))
                            if written.get(k) != identity.get(k))
        raise ConfigError(f"Qdrant collection {name!r} at {where} was written from another "
                          f"index than this corpus's (its {differs} differ): {fix}.")
    params = config.params.vectors
    using = None
    if isinstance(params, dict):
        if len(params) != 1:
            raise ConfigError(f"Qdrant collection {name!r} at {where} holds named vectors "
                              f"{', '.join(sorted(params))}; serve a collection of one kind "
                              "of vector.")
        (using, params), = params.items()
    if params.size != dim:
        raise ConfigError(f"Qdrant collection {name!r} at {where} holds {params.size}-"
                          f"dimensional vectors, but encoder {model!r} makes {dim}-"
                          "dimensional ones: name the encoder that made them (bi_encoder), "
                          f"or {fix}.")
    if params.distance not in (models.Distance.COSINE, models.Distance.DOT):
        raise ConfigError(f"Qdrant collection {name!r} at {where} ranks by "
                          f"{params.distance.value} distance; the engine ranks by cosine: "
                          f"{fix}.")
    if params.distance == models.Distance.DOT:  # ranks as cosine only over unit vectors
        records, _ = client.scroll(name, limit=3, with_payload=False, with_vectors=True)
        norms = [float(np.linalg.norm(vector_of(r, using))) for r in records]
        if any(abs(norm - 1) > 1e-3 for norm in norms):
            raise ConfigError(f"Qdrant collection {name!r} at {where} ranks by dot product "
                              f"over vectors that are not of unit length (norms "
                              f"{', '.join(f'{n:.3f}' for n in norms)}), which is not "
                              f"cosine: write them normalised or with cosine distance, or "
                              f"{fix}.")
    count = client.count(name, exact=True).count
    if count != len(units):
        raise ConfigError(f"Qdrant collection {name!r} at {where} holds {count:,} points, "
                          f"but the corpus has {len(units):,} units here: {fix}.")
    return Collection(client, where, name, dim, len(units), using,
                      None if _rows_are_ids(client, name, units) else
                      _point_of_row(client, where, name, units))


def _rows_are_ids(client: Any, name: str, units: Sequence[Unit]) -> bool:
    """Whether a sample of points (first, middle, last row) has id = row and names that
    row's unit, as `write_collection` writes them."""
    if not units:
        return True
    sample = sorted({0, len(units) // 2, len(units) - 1})
    records = client.retrieve(name, ids=sample, with_payload=[UNIT_KEY])
    named = {r.id: (r.payload or {}).get(UNIT_KEY) for r in records}
    return all(named.get(row) == units[row].id for row in sample)


def _point_of_row(client: Any, where: str, name: str, units: Sequence[Unit]) -> np.ndarray:
    """Each row's point id, read from every point's payload."""
    from engine.index.unit_scores import row_mapping

    row_of = row_mapping(units)
    point_of_row: list = [None] * len(units)
    offset = None
    while True:
        records, offset = client.scroll(name, limit=READ_SLICE, offset=offset,
                                        with_payload=[UNIT_KEY], with_vectors=False)
        for record in records:
            unit = (record.payload or {}).get(UNIT_KEY)
            row = row_of.get(unit) if isinstance(unit, str) else None
            if row is None:
                raise ConfigError(f"Qdrant collection {name!r} at {where}: point {record.id!r} "
                                  f"names unit {unit!r} in its payload's {UNIT_KEY!r}, which "
                                  "this corpus does not have: write the collection from this "
                                  "corpus (delete it, and it is written here) or name another.")
            point_of_row[row] = record.id
        if offset is None:
            break
    if None in point_of_row:  # as many points as units, so another unit has two
        row = point_of_row.index(None)
        raise ConfigError(f"Qdrant collection {name!r} at {where} has no point naming unit "
                          f"{units[row].id!r} (another unit has two): write the collection "
                          "from this corpus (delete it, and it is written here) or name "
                          "another.")
    return np.array(point_of_row, dtype=object)
