"""Where a corpus's dense indexes are served when not in this process: by Ray actors, one
shard each (`RayShards`: engine.index.shards), or from Qdrant collections (`InQdrant`:
engine.index.qdrant). The process's store (engine.service.store) keeps one of these per
corpus and loads the corpus's dense indexes from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from engine.units.build import UnitConfig


class RayShards(NamedTuple):
    """Dense indexes served by `shards` Ray actors at `address` (engine.index.shards)."""

    address: str
    shards: int
    workers: int  # with address "local": the local cluster's workers

    def described(self, corpus_name: str = "") -> str:
        return f"{self.shards} Ray shards at {self.address!r}"


class InQdrant(NamedTuple):
    """Dense indexes served from Qdrant collections at `where` (engine.index.qdrant)."""

    where: str
    collection: str = ""  # the primary index's collection; "" names it after the corpus

    def collection_for(self, corpus_name: str, config: UnitConfig, model: str) -> str:
        """The collection serving the dense index over `config` units with encoder `model`:
        the named one (else the corpus's name) for the flat paradigm's passages with its
        default encoder, which most stages search; for another index that name plus what
        differs ("wiki.passages-200-20.minilm", "wiki.documents.bge")."""
        from engine.index.qdrant_locations import check_collection, derived_collection
        from engine.paradigms.flat import FlatConfig

        base = self.collection or check_collection(corpus_name)
        primary = FlatConfig()
        if config.key() == primary.passages().key() and model == primary.bi_encoder:
            return base
        return derived_collection(base, config, model)

    def described(self, corpus_name: str = "") -> str:
        name = self.collection or corpus_name
        return f"Qdrant collection {name!r} at {self.where}" if name else \
            f"Qdrant at {self.where}"
