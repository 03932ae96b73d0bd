"""What a paradigm needs and how it is handed it: the contract between paradigms, the
resources they declare (engine.paradigms.resources) and the store that loads them
(engine.service.store).

A `Need` is something to prepare before a paradigm's first question; a `Resource` is one
thing a paradigm runs on, which says what preparing it means (its needs) and loads it from
a `ResourceLoader`; a paradigm's `Resources` (a frozen dataclass of them) load into its
`Uses`. Where a plugin's stage runs is a `StageAt`. Every module of engine/paradigms sits
above this one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from engine.documents import Corpus
from engine.units.build import UnitConfig

if TYPE_CHECKING:
    from engine.trace_details import StandIn

Progress = Callable[[int, int], None]

# the dense encoder a resource uses unless its paradigm's `bi_encoder` option names another
ENCODER = "minilm"


@dataclass(frozen=True)
class Need:
    """Something a paradigm needs before its first question: prepared once per process.

    `key` names it across paradigms (two paradigms needing the same index share one task);
    `prepare(corpus, progress, store)` builds or loads it (from the process's store,
    engine.service.store); `slow` ones are prepared last. A model
    trained here names its trainer in `trained_by` and roughly how long training takes on 2
    cores in `train_seconds`: until it is trained, `prepare` loads the model's untrained
    stand-in and the paradigm runs on that, while the service trains the model in the
    background, the quicker first (query-time code never imports training). A slow need
    that may already be cached says how long preparing it would take here with
    `build_seconds(corpus)` (0: only a load), so nobody starts a long build without being
    told. A slow need something else answers for meanwhile names that in `stand_in` (the
    dense index: BM25, engine.index.stand_in), and paradigms do not wait for it; the service
    calls `promise(corpus, store)` once the corpus is loaded, which says whether the stand-in will
    answer (True: it must be built) or the need only loads. A model that is loaded once for
    the whole process (the reader, an encoder, a classifier) says `per_corpus=False`, so a
    corpus's own progress does not repeat it.
    """

    key: str
    label: str
    prepare: Callable[[Corpus, Progress, Any], Any]
    slow: bool = False
    trained_by: str = ""
    train_seconds: float = 0.0
    build_seconds: Callable[[Corpus], float] | None = None
    stand_in: str = ""
    promise: Callable[[Corpus, Any], bool] | None = None
    per_corpus: bool = True  # False: a model the process loads once for every corpus
    combines: bool = False  # True: only combines what other needs built (document scores)

    def seconds_to_prepare(self, corpus: Corpus) -> float:
        """About how long preparing it takes here: 0 for a load or a quick build."""
        if self.build_seconds is not None:
            return self.build_seconds(corpus)
        return 0.0


@dataclass(frozen=True)
class StageAt:
    """Where a plugin's stage runs, as its spec's `resources(at)` is told: `units`, the
    units of the candidates it ranks or returns (the paradigm's passages, or documents);
    `passages`, the paradigm's passages; `bi_encoder`, the paradigm's dense encoder."""

    units: UnitConfig
    passages: UnitConfig
    bi_encoder: str


class ResourceLoader(Protocol):
    """Where resources are loaded from: the process's loaded indexes and models
    (engine.service.store.LoadedResources), or a test's own. A plugin's resource loads through it
    too."""

    def bm25(self, corpus: Corpus, config: UnitConfig) -> Any: ...
    def dense(self, corpus: Corpus, config: UnitConfig, model: str = ENCODER,
              progress: Progress | None = None, *, stand_in: bool = False) -> Any: ...
    def promise_dense(self, corpus: Corpus, config: UnitConfig, model: str = ENCODER
                      ) -> None: ...
    def break_promise(self, corpus: Corpus, config: UnitConfig, model: str,
                      error: str) -> None: ...
    def encode_remotely(self, corpus: Corpus, config: UnitConfig, model: str,
                        progress: Progress | None = None) -> None: ...
    def retriever(self, name: str, corpus: Corpus, passages: UnitConfig,
                  bi_encoder: str = ENCODER) -> Any: ...
    def clusters(self, corpus: Corpus, config: UnitConfig) -> Any: ...
    def documents(self, corpus: Corpus, how: str, weight: float, passages: UnitConfig,
                  model: str = ENCODER, *, stand_in: bool = False) -> Any: ...
    def encoder(self, model: str) -> Any: ...
    def reader(self, model: str, endpoint: str = "", precision: str = "auto") -> Any: ...
    def ranker(self, model: str, corpus: Corpus, passages: UnitConfig, *,
               bi_encoder: str = ENCODER, granularity: str = "documents",
               name: str = "preranker", hybrid_weight: float | None = None,
               stand_in: bool = False) -> Any: ...
    def cross_encoder(self, model: str, max_length: int = 256) -> Any: ...
    def selection_classifier(self, model: str) -> Any: ...
    def query_classifier(self, model: str) -> Any: ...


class Resource(ABC):
    """One thing a paradigm runs on: what preparing it means, and loading it."""

    @abstractmethod
    def needs(self) -> tuple[Need, ...]:
        """What to prepare so that `load` finds everything loaded."""

    @abstractmethod
    def load(self, corpus: Corpus, store: ResourceLoader) -> Any:
        """The loaded resource from `store` (instant once its needs are prepared). An index
        or a model declares `stand_in` (engine.trace_details.StandIn, None for the real one)."""

    def loading(self, key: str, label: str, **options: Any) -> Need:
        """The need `key` prepared by loading this resource (the store builds what is
        missing), with the Need's other `options`."""
        return Need(key, label, lambda corpus, progress, store: self.load(corpus, store),
                    **options)


class Uses:
    """A paradigm's (or a plugin stage's) resources, loaded: `uses.reader`, `uses.index`,
    ... by the field names of its `Resources` (None where a field is None)."""

    def __init__(self, loaded: dict[str, Any]) -> None:
        self.__dict__.update(loaded)

    @property
    def stand_in(self) -> StandIn | None:
        """What stands in for one of these resources (the first that declares one: BM25
        for a dense index still being built), None when every one is the real thing; a
        stage reading them gives it as its own `stand_in`, and the trace says so."""
        return next(iter(self.stand_ins()), None)

    def stand_ins(self) -> tuple[StandIn, ...]:
        """What stands in for each resource that is not the real thing yet."""
        return tuple(found for value in vars(self).values()
                     if (found := getattr(value, "stand_in", None)) is not None)


class Resources:
    """Base of a paradigm's frozen dataclass of `Resource | None` fields."""

    def load(self, corpus: Corpus, store: ResourceLoader) -> Uses:
        """Every resource loaded from `store` for `corpus`, by field name."""
        return Uses({f.name: None if (r := getattr(self, f.name)) is None
                     else r.load(corpus, store) for f in fields(self)})


def needs_of(resources: Any) -> tuple[Need, ...]:
    """Every need of a paradigm's resources (a dataclass of `Resource | None` fields), each
    key once, in field order."""
    found: dict[str, Need] = {}
    for field in fields(resources):
        resource = getattr(resources, field.name)
        for need in resource.needs() if resource is not None else ():
            found.setdefault(need.key, need)
    return tuple(found.values())
