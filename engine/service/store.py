"""The process's loaded indexes and models: the one place a run's resources are looked up.

A paradigm declares what it runs on (engine.paradigms.resources); the service loads that
from here once per run (`make_paradigm`) and hands it over, so no stage, paradigm or reader
looks anything up (tests/test_layout.py). One loaded index per fingerprint for the whole
process: changing a stage parameter (K, N, H, M, k) never loads, verifies or holds a second
copy of an index: only what the index is built from (the corpus fingerprint, the unit
config, the encoder) names it. Two threads asking for the same missing index wait for one
build. Models (the reader, encoders, cross-encoders, classifiers) are loaded once per
process by their own modules' caches, looked up through the same `LoadedResources` by
name. Where a corpus's dense indexes are served when not here is
engine.service.remote_indexes (`RayShards`, `InQdrant`).

A dense index the app's background preparation has promised (`promise_dense`) is stood in
for by BM25 until its build ends, for callers that ask `stand_in=True` (a question's
stages); the preparation itself, the CLI and evaluations get the real one, built or waited
for (engine.index.stand_in). A promised build that failed is not tried again: the stand-in
goes on answering and says why.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.errors import EngineError
from engine.paradigms.base import Paradigm
from engine.paradigms.registry import make_config, spec
from engine.service.remote_indexes import InQdrant, RayShards

if TYPE_CHECKING:
    import numpy as np

    from engine.documents import Corpus, Unit
    from engine.index.bm25 import BM25Index
    from engine.index.dense import DenseIndex
    from engine.index.document_scores import DocumentScorer
    from engine.index.stand_in import DenseStandIn
    from engine.units.build import UnitConfig

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


class Clusters(NamedTuple):
    """Cluster units and, for each document (corpus order), its cluster's position. The
    units hold no text (engine.units.build.cluster_units): the clusters a stage keeps get
    theirs from their documents (engine.stages.retrieve.ClusterRetriever), so the corpus's
    text is not held a second time."""

    units: tuple[Unit, ...]
    assignment: np.ndarray


class LoadedResources:
    """Loaded indexes keyed by what they are built from, and the stages made from them; and
    the models a paradigm's resources name, looked up (each loaded once per process by its
    own module's cache)."""

    def __init__(self) -> None:
        self._indexes: dict[tuple, Any] = {}
        self._locks: dict[tuple, threading.Lock] = {}
        self._guard = threading.Lock()
        # dense keys a background preparation builds: "" while it does, or why it failed
        self._promised: dict[tuple, str] = {}
        # corpus fingerprint -> (Ray address, local workers) its dense encoding runs on
        self._ray: dict[str, tuple[str, int]] = {}
        # corpus fingerprint ("" for every corpus) -> where its dense indexes are served
        # from: Ray shards (engine.index.shards) or a Qdrant collection (engine.index.qdrant)
        self._served: dict[str, RayShards | InQdrant] = {}
        # (kind, corpus fingerprint) of the indexes whose loading was logged at INFO once
        self._announced: set[tuple[str, str]] = set()

    # --- models, by name ---------------------------------------------------------------

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

    # --- indexes and the stages made from them ------------------------------------------

    def bm25(self, corpus: Corpus, config: UnitConfig) -> BM25Index:
        """The BM25 index of `corpus` at `config`'s units (built or loaded once)."""
        from engine.index.bm25 import bm25_index

        return self._get(("bm25", corpus.fingerprint, _key(config)),
                         lambda: bm25_index(corpus, config))

    def dense(self, corpus: Corpus, config: UnitConfig, model: str = "minilm",
              progress: Progress | None = None, *, stand_in: bool = False
              ) -> DenseIndex | DenseStandIn:
        """The dense index of `corpus` at `config`'s units with encoder `model`. With
        `stand_in`, while a promised build of it is under way (or after it failed): BM25
        over the same units."""
        from engine.index.dense import dense_index
        from engine.index.stand_in import DenseStandIn, stand_in_reason

        key = _dense_key(corpus, config, model)
        if stand_in and self._standing_in(key):
            reason = stand_in_reason(self._promised[key])
            return self._get(("dense stand-in", *key[1:], reason),
                             lambda: DenseStandIn(self.bm25(corpus, config), model, reason))
        if self._promised.get(key):
            raise EngineError(f"Building the dense index failed ({self._promised[key]}); "
                              "restart the app to build it again.")
        served = self._serving(corpus.fingerprint)
        if isinstance(served, RayShards):
            from engine.index.shards import sharded_dense_index

            return self._get(key, lambda: sharded_dense_index(
                corpus, config, model, served.address, served.shards, workers=served.workers,
                progress=progress))
        if isinstance(served, InQdrant):
            from engine.index.qdrant import qdrant_dense_index

            collection = served.collection_for(corpus.name, config, model)
            return self._get(key, lambda: qdrant_dense_index(
                corpus, config, model, served.where, collection, progress))
        return self._get(key, lambda: dense_index(corpus, config, model=model,
                                                  progress=progress))

    def served_by(self, corpus_fingerprint: str, corpus_name: str = "") -> str:
        """Where the dense indexes of the corpus with this fingerprint (and name) are served
        when not in this process ("2 Ray shards at 'local'", "Qdrant collection 'wiki' at
        http://qdrant:6333"), or ""."""
        served = self._serving(corpus_fingerprint)
        return served.described(corpus_name) if served else ""

    def _serving(self, corpus_fingerprint: str) -> RayShards | InQdrant | None:
        """Where the corpus's dense indexes are served from: its own setting, else every
        corpus's, else None (here)."""
        return self._served.get(corpus_fingerprint) or self._served.get("")

    def serve_on_ray(self, corpus: Corpus | None, address: str, shards: int = 2,
                     workers: int = 2) -> None:
        """Serve the dense indexes of `corpus` (None: of every corpus) from `shards` Ray
        actors at `address` ("local": `workers` workers here) from their next load on
        (engine.index.shards)."""
        from engine.index.on_ray import check_address
        from engine.index.shards import check_shards

        check_shards(shards)
        check_address(address, workers)
        self._served["" if corpus is None else corpus.fingerprint] = RayShards(
            address, shards, workers)

    def serve_here(self, corpus: Corpus) -> None:
        """Serve `corpus`'s dense indexes from this process again (as every corpus's setting
        says, if any) from their next load on."""
        self._served.pop(corpus.fingerprint, None)

    def serve_from_qdrant(self, corpus: Corpus | None, where: str,
                          collection: str = "") -> None:
        """Serve the dense indexes of `corpus` (None: of every corpus) from Qdrant at `where`
        (a server's URL or a local-mode folder) from their next load on: its passages from
        `collection` (default: the corpus's name), its other indexes from collections named
        after it (`InQdrant.collection_for`); missing ones are written from this
        process's index (engine.index.qdrant)."""
        from engine.index.qdrant_locations import check_collection, check_location

        served = InQdrant(check_location(where),
                          check_collection(collection) if collection else "")
        self._served["" if corpus is None else corpus.fingerprint] = served

    def promise_dense(self, corpus: Corpus, config: UnitConfig, model: str = "minilm") -> None:
        """A background preparation will build this dense index: until it is loaded, callers
        asking with `stand_in=True` get the BM25 stand-in instead of building it inline."""
        self._promised.setdefault(_dense_key(corpus, config, model), "")

    def break_promise(self, corpus: Corpus, config: UnitConfig, model: str,
                      error: str) -> None:
        """The promised build failed with `error`: the stand-in goes on answering and says
        so, and nobody builds it again in this process."""
        key = _dense_key(corpus, config, model)
        if key in self._promised and not self._promised[key]:
            self._promised[key] = error or "an unknown error"

    def encode_on_ray(self, corpus: Corpus, address: str, workers: int = 2) -> None:
        """Encode `corpus`'s dense indexes as Ray tasks at `address` (engine.index.on_ray)
        when they are built."""
        self._ray[corpus.fingerprint] = (address, workers)

    def encode_remotely(self, corpus: Corpus, config: UnitConfig, model: str,
                        progress: Progress | None = None) -> int:
        """If `corpus` is to be encoded on Ray: encode the texts of its `config` units the
        vector store of `model` lacks there, before its dense index is built (which then
        only loads them); how many were encoded."""
        if corpus.fingerprint not in self._ray:
            return 0
        from engine.index.on_ray import encode_on_ray
        from engine.models.loading import resolve_encoder_precision
        from engine.units.build import build_units, index_text

        address, workers = self._ray[corpus.fingerprint]
        texts = [index_text(u) for u in build_units(corpus, config)]
        return encode_on_ray(texts, model, resolve_encoder_precision("auto"), address, workers,
                             progress=progress)

    def _standing_in(self, dense_key: tuple) -> bool:
        return dense_key in self._promised and dense_key not in self._indexes

    def clusters(self, corpus: Corpus, config: UnitConfig) -> Clusters:
        """`corpus`'s cluster units at `config` and each document's cluster position."""
        import numpy as np

        from engine.units.build import cluster_units
        from engine.units.cluster import clustering

        def load() -> Clusters:
            found = clustering(corpus, config.cluster_algorithm, config.cluster_tokens,
                               config.links)
            units = cluster_units(corpus, found, text=False)
            assignment = np.empty(len(corpus), dtype=np.int64)
            for position, unit in enumerate(units):
                assignment[[corpus.index_of[d] for d in unit.doc_ids]] = position
            return Clusters(units, assignment)

        return self._get(("clusters", corpus.fingerprint, _key(config)), load)

    def documents(self, corpus: Corpus, how: str, weight: float, passages: UnitConfig,
                  model: str = "minilm", *, stand_in: bool = False) -> DocumentScorer:
        """Every document's score for a query from the indexes above: BM25 over documents
        and/or the dense index over `passages` (engine.index.document_scores). With `stand_in`,
        while a promised build of that dense index is under way: BM25 alone, saying so."""
        from engine.index.document_scores import DocumentScorer
        from engine.units.build import UnitConfig

        dense_key = _dense_key(corpus, passages, model)
        if how != "bm25" and stand_in and self._standing_in(dense_key):
            from engine.index.stand_in import stand_in_reason

            reason = stand_in_reason(self._promised[dense_key])
            return self._get(
                ("documents stand-in", *dense_key[1:], reason),
                lambda: DocumentScorer(corpus, self.bm25(corpus, UnitConfig("documents")),
                                       self.dense(corpus, passages, model, stand_in=True),
                                       "bm25", stand_in_reason=reason))

        def load() -> DocumentScorer:
            bm25 = self.bm25(corpus, UnitConfig("documents")) if how != "dense" else None
            dense = self.dense(corpus, passages, model) if how != "bm25" else None
            return DocumentScorer(corpus, bm25, dense, how, weight)

        return self._get(("documents", corpus.fingerprint, _key(passages), model, how, weight),
                         load)

    def retriever(self, name: str, corpus: Corpus, passages: UnitConfig,
                  bi_encoder: str = "minilm") -> Any:
        """A plugin's first-stage retriever `name` over `passages` of `corpus`
        (engine.paradigms.registry.RETRIEVERS), handed the resources it declares loaded
        from here (engine.paradigms.plugin_stages): made once, and again once what stood
        in for one of them is replaced by the real one."""
        from engine.errors import check_choice
        from engine.paradigms.needs import StageAt
        from engine.paradigms.plugin_stages import plugin_uses
        from engine.paradigms.registry import RETRIEVERS

        check_choice("retriever", name, RETRIEVERS)
        spec = RETRIEVERS[name]
        handed = plugin_uses(spec, StageAt(passages, passages, bi_encoder), corpus, self)
        uses = handed.get("uses")
        return self._get((f"retriever {name}", corpus.fingerprint, _key(passages), bi_encoder,
                          uses.stand_ins() if uses is not None else ()),
                         lambda: spec.make(corpus, passages, **handed))

    def ranker(self, model: str, corpus: Corpus, passages: UnitConfig, *,
               bi_encoder: str = "minilm", granularity: str = "documents",
               name: str = "preranker", hybrid_weight: float | None = None,
               stand_in: bool = False) -> Any:
        """The re-ranking stage `model` names over `corpus`.

        "bi-encoder", "bm25" and "hybrid" read stored scores (the dense index of
        `bi_encoder` over `passages`, BM25 over documents: built once, shared with the
        other paradigms); a name a plugin registered is its re-ranker
        (engine.paradigms.registry.RERANKERS), handed the resources it declares loaded from
        here (with their stand-ins: a plugin's stage is made for each paradigm made);
        anything else is a cross-encoder ("trained",
        an alias, a local folder or a hub id), loaded once per process. `stand_in`: stored
        scores stand in while the dense index is being built (engine.index.stand_in).
        """
        from engine.errors import ConfigError
        from engine.paradigms.registry import RERANKERS
        from engine.stages.rerank import (
            BI_ENCODER,
            HYBRID_WEIGHT,
            NONE,
            STORED,
            CrossEncoderReranker,
            KeptOrder,
            StoredScoreReranker,
        )

        if model == NONE:  # the order given, cut to k
            return KeptOrder(granularity, name)
        if model in RERANKERS:  # a plugin's, handed the resources it declares
            from engine.paradigms.plugin_stages import plugin_uses
            from engine.paradigms.resources import Ranker

            at = Ranker(model, passages, bi_encoder, granularity, name).at()
            return RERANKERS[model].make(corpus, passages, granularity=granularity, name=name,
                                         **plugin_uses(RERANKERS[model], at, corpus, self))
        if model not in STORED:
            return CrossEncoderReranker(self.cross_encoder(model), model,
                                        granularity=granularity, name=name)
        if granularity == "passages" and model != BI_ENCODER:
            raise ConfigError(f"Re-ranker {model!r} scores documents; passages re-rank by "
                              f"'{BI_ENCODER}' (their stored vectors) or a cross-encoder.")
        how = "dense" if model == BI_ENCODER else model
        weight = HYBRID_WEIGHT if hybrid_weight is None else hybrid_weight
        documents = self.documents(corpus, how, weight, passages, bi_encoder,
                                   stand_in=stand_in)
        return StoredScoreReranker(documents, granularity=granularity, name=name)

    def __len__(self) -> int:
        return len(self._indexes)

    def evict(self, corpus_fingerprint: str) -> int:
        """Forget every index built from the corpus with this fingerprint (a corpus no
        longer in use; its caches stay on disk); returns how many were held."""
        with self._guard:
            keys = [k for k in self._indexes if k[1] == corpus_fingerprint]
            for key in keys:
                del self._indexes[key]
            for key in [k for k in self._locks if k[1] == corpus_fingerprint]:
                del self._locks[key]
            for key in [k for k, why in self._promised.items()  # not one still building
                        if k[1] == corpus_fingerprint and (why or k in keys)]:
                del self._promised[key]
        return len(keys)

    def _get(self, key: tuple, load: Callable[[], Any]) -> Any:
        found = self._indexes.get(key)
        if found is not None:
            return found
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one build per key; the others wait and then find it loaded
            if key not in self._indexes:
                # one INFO line per kind of index and corpus; every load, settings and
                # all, at DEBUG
                if key[:2] not in self._announced:
                    self._announced.add(key[:2])
                    logger.info("loading %s index of corpus %s", key[0], key[1][:12])
                logger.debug("loading %s index %s", key[0], key[1:])
                self._indexes[key] = load()
        return self._indexes[key]


def _dense_key(corpus: Corpus, config: UnitConfig, model: str) -> tuple:
    return ("dense", corpus.fingerprint, _key(config), model)


def _key(config: UnitConfig) -> str:
    """The unit config, and the cache folder the index is loaded from (a test or a second
    data directory must not be handed an index another one built)."""
    from engine.paths import data_dir

    return json.dumps({"units": config.key(), "data_dir": str(data_dir())}, sort_keys=True)


_SHARED = LoadedResources()


def process_store() -> LoadedResources:
    """The process's store of loaded indexes and models."""
    return _SHARED


def make_paradigm(name: str, corpus: Corpus, config: dict | object | None = None, *,
                  retrieval_only: bool = False, store: LoadedResources | None = None) -> Paradigm:
    """Paradigm `name` over `corpus`, handed what it uses: its resources loaded from `store`
    (the process's by default) now, once for all its runs. `config`: its config object, or
    a JSON-style dict of options (the defaults if None). `retrieval_only` stops its runs
    before the reader."""
    if not dataclasses.is_dataclass(config):
        config = make_config(name, config)
    paradigm = spec(name).paradigm
    resources = paradigm.resources(config)
    store = _SHARED if store is None else store  # not `store or`: an empty LoadedResources is falsy
    uses = resources.load(corpus, store) if resources is not None else None
    return paradigm(corpus, config, uses, retrieval_only=retrieval_only)
