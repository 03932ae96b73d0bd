"""Where an added corpus's dense indexes are encoded and served when not in this process: on
Ray (its passages encoded as Ray tasks, and with shards its indexes served by Ray actors:
engine.index.on_ray, engine.index.shards) or from Qdrant collections (engine.index.qdrant).
`serving_of` checks what adding a corpus asks for at once and gives the record its
meta.json keeps (engine.data.ingest.StoredCorpus.serving); `served` sets it up when the
corpus loads, and `served_as_added` again after a restart.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.data.corpus import load_corpus
from engine.data.ingest import stored_corpora
from engine.documents import Corpus
from engine.errors import ConfigError
from engine.service.preparation import Progress


def serving_of(ray: str, workers: int, shards: int, qdrant: str, collection: str) -> dict:
    """Where a corpus being added is to be served, as its meta.json records it: {"ray",
    "workers", "shards"} with a Ray address, {"qdrant", "collection"} with a Qdrant
    location, {} here; refused at once (ConfigError) when the address, the shard count,
    the location or the collection is unusable, or when both Ray shards and Qdrant are
    asked for."""
    from engine import allowed

    # a request names a Ray cluster or a Qdrant by the name the operator allowed it by
    ray = allowed.place("ray", ray, "ray", words=("local",))
    qdrant = allowed.place("qdrant", qdrant, "qdrant")
    if shards and not ray:
        raise ConfigError("Serving a corpus from Ray shards needs a Ray address: give "
                          "one (host:port, ray://host:port or 'local').")
    if ray:
        from engine.index.on_ray import check_address

        check_address(ray, workers)
    if shards:
        from engine.index.shards import check_shards

        check_shards(shards)
    qdrant, collection = (qdrant or "").strip(), (collection or "").strip()
    if collection and not qdrant:
        raise ConfigError(f"Qdrant collection {collection!r} needs a Qdrant location: "
                          "give a server's URL (http://host:6333) or a folder for "
                          "Qdrant's local mode.")
    if qdrant:
        if shards:
            raise ConfigError("A corpus's dense index is served from Ray shards or from "
                              "Qdrant, not both: choose one.")
        from engine.index.qdrant_locations import check_collection, check_location

        qdrant = check_location(qdrant)  # a folder as an absolute path, for meta.json
        if collection:
            check_collection(collection)
    return ({"ray": ray, "workers": workers, "shards": shards} if ray else
            {"qdrant": qdrant, "collection": collection} if qdrant else {})


def served(corpus: Corpus, serving: dict) -> Corpus:
    """`corpus`, its dense indexes encoded and served where `serving` (a StoredCorpus's)
    says: Ray workers and shards, or Qdrant; nothing for an empty one."""
    from engine.service.store import process_store

    store = process_store()
    store.serve_here(corpus)  # an earlier corpus of this content served elsewhere: not now
    if serving.get("ray"):
        store.encode_on_ray(corpus, serving["ray"], serving.get("workers", 2))
        if serving.get("shards"):
            store.serve_on_ray(corpus, serving["ray"], serving["shards"],
                               serving.get("workers", 2))
    if serving.get("qdrant"):
        store.serve_from_qdrant(corpus, serving["qdrant"], serving.get("collection", ""))
    return corpus


def served_as_added(name: str) -> Callable[[Progress], Corpus] | None:
    """How an added corpus loads after a restart: where its dense indexes were served when
    it was added, served there again (None: as any named corpus loads)."""
    record = next((c for c in stored_corpora() if c.name == name), None)
    if record is None or not record.serving:
        return None
    return lambda progress: served(load_corpus(name), record.serving)
