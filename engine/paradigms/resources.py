"""What a paradigm loads, described once: the same object says how to prepare it and loads it.

A paradigm's `resources(config)` returns a frozen dataclass of the resources below (a
`Resources`). Its `needs()` (what the app prepares in the background) are derived from them,
and the service hands the paradigm what it runs on, `uses = resources(config).load(corpus,
store)`: the same objects loaded from the process's store (engine.service.store), which no
code here imports. So a stage can never run on something nobody prepared: preparing a
paradigm's needs and then running a question loads nothing new into the process-wide stores
(tests/test_prepared_needs.py checks every registered paradigm).

Each `Need` is keyed by what it loads, so two paradigms needing the same index or model
share one preparation task. What a resource is (`Resource`, `Resources`, `Uses`, the
`ResourceLoader` it loads from, `needs_of`) is in engine.paradigms.needs, below this module,
and imported from here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.documents import Corpus
from engine.index.stand_in import SCORES_LABEL, SEARCH_LABEL
from engine.models.kinds import QUERY_CLASSIFIER, SELECTION_CLASSIFIER, TRAINING_TIMES
from engine.paradigms.needs import ENCODER, Need, Progress, Resource, ResourceLoader, StageAt
from engine.paradigms.plugin_stages import plugin_needs
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

if TYPE_CHECKING:
    from engine.readers.reader import ReaderConfig


def plugin_spec(table: str, name: str) -> Any:
    """The spec a plugin registered as `name` in the registry's `table` ("RERANKERS",
    "RETRIEVERS"), or None. The registry is imported when first asked: importing it loads
    the plugins' entry points, the built-in paradigms among them, which import this module."""
    from engine.paradigms import registry

    return getattr(registry, table).get(name)


def _describe(units: UnitConfig) -> str:
    key = units.key()
    if units.granularity == "clusters":
        return f"{key['algorithm']} clusters (S={key['max_tokens']})"
    if units.granularity == "passages":
        return f"{key['max_tokens']}-token passages"
    return "documents"


def _units_key(units: UnitConfig) -> str:
    return json.dumps(units.key(), sort_keys=True)


@dataclass(frozen=True)
class BM25(Resource):
    """The BM25 index over `units`."""

    units: UnitConfig

    def needs(self) -> tuple[Need, ...]:
        def build_seconds(corpus: Corpus) -> float:
            from engine.index.bm25 import build_seconds

            return build_seconds(corpus, self.units)

        return (self.loading(f"bm25 {_units_key(self.units)}",
                             f"BM25 over {_describe(self.units)}",
                             build_seconds=build_seconds),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.bm25(corpus, self.units)


@dataclass(frozen=True)
class Dense(Resource):
    """The dense index over `units` with encoder `model`, and the encoder for queries (the
    slowest build: prepared last). While the service builds it, BM25 over the same units
    stands in (engine.index.stand_in), so their BM25 index is a need of its own."""

    units: UnitConfig
    model: str = ENCODER

    def needs(self) -> tuple[Need, ...]:
        def prepare(corpus: Corpus, progress: Progress, store: ResourceLoader):
            try:
                store.encode_remotely(corpus, self.units, self.model, progress)
                index = store.dense(corpus, self.units, self.model, progress=progress)
            except Exception as err:
                store.break_promise(corpus, self.units, self.model, str(err))
                raise
            index.encode_queries([])  # loads the query encoder (a cached index has none)
            return index

        def build_seconds(corpus: Corpus) -> float:
            from engine.index.dense import build_seconds

            return build_seconds(corpus, self.units, self.model)

        def promise(corpus: Corpus, store: ResourceLoader) -> bool:
            """Promised when it must be encoded; a cached one only loads, and a question
            arriving first waits for that instead."""
            if not build_seconds(corpus):
                return False
            store.promise_dense(corpus, self.units, self.model)
            return True

        return (*BM25(self.units).needs(),
                Need(f"dense {self.model} {_units_key(self.units)}",
                     f"dense index ({self.model}, {_describe(self.units)})", prepare,
                     slow=True, build_seconds=build_seconds, stand_in=SEARCH_LABEL,
                     promise=promise))

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.dense(corpus, self.units, self.model, stand_in=True)


@dataclass(frozen=True)
class Encoder(Resource):
    """A bi-encoder on its own (the summariser scores sentences with it)."""

    model: str = ENCODER

    def needs(self) -> tuple[Need, ...]:
        return (self.loading(f"encoder {self.model}", f"encoder {self.model}",
                             per_corpus=False),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.encoder(self.model)


@dataclass(frozen=True)
class Clusters(Resource):
    """The corpus's documents grouped into units (`units`, granularity "clusters") and each
    document's unit."""

    units: UnitConfig

    def needs(self) -> tuple[Need, ...]:
        def build_seconds(corpus: Corpus) -> float:
            from engine.units.cluster import build_seconds

            units = self.units
            return build_seconds(corpus, units.cluster_algorithm, units.cluster_tokens,
                                 units.links)

        return (self.loading(f"clusters {_units_key(self.units)}", _describe(self.units),
                             build_seconds=build_seconds),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.clusters(corpus, self.units)


@dataclass(frozen=True)
class DocumentScores(Resource):
    """Every document's score for a query (engine.index.document_scores): BM25 over documents
    ("bm25"), the dense index over `passages` ("dense"), or both ("hybrid", `weight`)."""

    how: str
    weight: float
    passages: UnitConfig
    model: str = ENCODER

    def needs(self) -> tuple[Need, ...]:
        # BM25 over documents: "bm25" and "hybrid" read it, and it stands in for "dense"
        # while the dense index is being built
        parts = (*BM25(UnitConfig("documents")).needs(),
                 *(Dense(self.passages, self.model).needs() if self.how != "bm25" else ()))
        # after the dense index it reads (slow needs are prepared last, in order)
        dense = self.how != "bm25"
        scorer = Need(f"documents {self.how} {self.weight} {self.model} "
                      f"{_units_key(self.passages)}", f"document scores ({self.how})",
                      lambda corpus, progress, store: store.documents(
                          corpus, self.how, self.weight, self.passages, self.model),
                      slow=dense, stand_in=SCORES_LABEL if dense else "", combines=True)
        return (*parts, scorer)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.documents(corpus, self.how, self.weight, self.passages, self.model,
                               stand_in=True)


@dataclass(frozen=True)
class Ranker(Resource):
    """A re-ranking stage (engine.service.store.LoadedResources.ranker): stored scores
    ("bi-encoder", "bm25", "hybrid") or a cross-encoder ("trained", an alias, a folder or a
    hub id). A "trained" cross-encoder that is not trained yet fails with the command that
    trains it (training takes minutes: never started behind the user's back)."""

    model: str
    passages: UnitConfig
    bi_encoder: str = ENCODER
    granularity: str = "documents"
    name: str = "preranker"
    weight: float | None = None  # the hybrid weight (None: the re-ranker's default)

    def _stored(self) -> DocumentScores | None:
        from engine.stages.rerank import BI_ENCODER, HYBRID_WEIGHT, STORED

        if self.model not in STORED:
            return None
        how = "dense" if self.model == BI_ENCODER else self.model
        return DocumentScores(how, HYBRID_WEIGHT if self.weight is None else self.weight,
                              self.passages, self.bi_encoder)

    def at(self) -> StageAt:
        """Where it runs, as a plugin re-ranker's `resources(at)` is told."""
        units = self.passages if self.granularity == "passages" else UnitConfig(
            self.granularity)
        return StageAt(units, self.passages, self.bi_encoder)

    def needs(self) -> tuple[Need, ...]:
        from engine.stages.rerank import NONE

        if self.model == NONE:  # the order given: nothing to read or build
            return ()
        stored = self._stored()
        if stored is not None:
            return stored.needs()
        key, label = f"ranker {self.model} {self.granularity} {self.name}", \
            f"re-ranker '{self.model}'"
        plugin = plugin_spec("RERANKERS", self.model)
        if plugin is not None and plugin.resources is not None:  # what it reads first
            return plugin_needs(plugin, self.at(), self, f"{key} {self.bi_encoder} "
                                f"{_units_key(self.passages)}", label)
        return (self.loading(key, label),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        """The stage itself, its model loaded (a cross-encoder) or its scores built."""
        return store.ranker(self.model, corpus, self.passages, bi_encoder=self.bi_encoder,
                            granularity=self.granularity, name=self.name,
                            hybrid_weight=self.weight, stand_in=True)


@dataclass(frozen=True)
class SentenceScorer(Resource):
    """What scores sentences in the sentence cut (engine.stages.prune): the bi-encoder
    `bi_encoder` (no index: it encodes the sentences), or a re-ranker `model` names (a
    cross-encoder, "trained", a plugin's); loaded, an object with `scores(query,
    candidates)`."""

    model: str
    passages: UnitConfig
    bi_encoder: str = ENCODER

    @classmethod
    def of(cls, config: Any) -> SentenceScorer | None:
        """The scorer a paradigm's `config.prune` asks for; None when the cut is off (or the
        config has no `prune`: a plugin paradigm's)."""
        prune = getattr(config, "prune", None)
        if prune is None or not prune.on:
            return None
        # the passages a plugin re-ranker is told it scores pieces of: the paradigm's own
        units = getattr(config, "passages", None) or getattr(config, "indexed_passages", None)
        passages = units() if units is not None else UnitConfig("passages", chunker=Chunker())
        return cls(prune.scorer, passages, getattr(config, "bi_encoder", ENCODER))

    def _ranker(self) -> Ranker:
        return Ranker(self.model, self.passages, self.bi_encoder, granularity="passages",
                      name="sentences")

    def needs(self) -> tuple[Need, ...]:
        from engine.stages.prune import BI_ENCODER

        if self.model == BI_ENCODER:
            return Encoder(self.bi_encoder).needs()
        return self._ranker().needs()

    def load(self, corpus: Corpus, store: ResourceLoader):
        from engine.stages.prune import BI_ENCODER, EncoderScorer

        if self.model == BI_ENCODER:
            return EncoderScorer(store.encoder(self.bi_encoder))
        return self._ranker().load(corpus, store)


@dataclass(frozen=True)
class Retriever(Resource):
    """A plugin's first-stage retriever over `passages` (engine.paradigms.registry
    .RETRIEVERS), made once per corpus, after the resources it declares: loaded, the
    stage."""

    name: str
    passages: UnitConfig
    bi_encoder: str = ENCODER

    def needs(self) -> tuple[Need, ...]:
        key = f"retriever {self.name} {_units_key(self.passages)}"
        label = f"retriever '{self.name}' ({_describe(self.passages)})"
        plugin = plugin_spec("RETRIEVERS", self.name)
        if plugin is not None and plugin.resources is not None:
            return plugin_needs(plugin, StageAt(self.passages, self.passages,
                                                self.bi_encoder), self,
                                f"{key} {self.bi_encoder}", label)
        return (self.loading(key, label),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.retriever(self.name, corpus, self.passages, self.bi_encoder)


@dataclass(frozen=True)
class Reader(Resource):
    """The reader's model in its precision, loaded once (converted from GGUF on a first
    start; nothing to load for a remote endpoint), with its FiD reader (FunnelRAG's
    post-ranking attention, the "fid" prompt), which shares the loaded weights: loaded, an
    engine.readers.reader.ReaderModels."""

    config: ReaderConfig

    def needs(self) -> tuple[Need, ...]:
        c = self.config
        backend = c.backend_of().name
        where = f" at {c.endpoint}" if c.endpoint else ""
        through = "" if backend in ("transformers", "openai") else f" ({backend})"
        return (self.loading(f"reader {backend} {c.model} {c.endpoint} {c.precision}",
                             f"reader {c.model}{where}{through}", per_corpus=False),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        c = self.config
        return store.reader(c.model, c.endpoint, c.precision, c.backend_of().name)


def _model_need(key: str, label: str, resource: SelectionClassifier | QueryClassifier,
                trainer: str) -> Need:
    """Loading a classifier. "trained" names `trainer`: while it is not trained the load
    gives the model's untrained stand-in, and the service trains it in the background."""
    trained = resource.model == "trained"
    return resource.loading(key, label, per_corpus=False,
                            trained_by=trainer if trained else "",
                            train_seconds=TRAINING_TIMES[trainer].seconds if trained else 0.0)


@dataclass(frozen=True)
class SelectionClassifier(Resource):
    """DR-RAG's selection classifier C(q, d1, d2); "trained" with no version yet is the
    untrained "cosines" stand-in until the service has trained one in the background (the
    trainers table's SELECTION_CLASSIFIER)."""

    model: str

    def needs(self) -> tuple[Need, ...]:
        return (_model_need(f"classifier {self.model}", f"selection classifier '{self.model}'",
                            self, SELECTION_CLASSIFIER),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.selection_classifier(self.model)


@dataclass(frozen=True)
class QueryClassifier(Resource):
    """The best-practice pipeline's query classifier; "trained" before one is trained is the
    "always-retrieve" stand-in until the service has trained it in the background (the
    trainers table's QUERY_CLASSIFIER)."""

    model: str

    def needs(self) -> tuple[Need, ...]:
        return (_model_need(f"query classifier {self.model}",
                            f"query classifier '{self.model}'", self, QUERY_CLASSIFIER),)

    def load(self, corpus: Corpus, store: ResourceLoader):
        return store.query_classifier(self.model)
