"""Retrieval units at each granularity: clusters, documents, passages.

Units are derived deterministically from a corpus (plus the chunker or the clustering), so
indexes store only their scores and unit ids and rebuild the unit texts on load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from engine.cache import existing_entry, load_or_build
from engine.documents import Corpus, Document, Unit
from engine.errors import check_choice
from engine.units.chunking import Chunker
from engine.units.cluster import Clustering, clustering
from engine.units.graph import LinkConfig
from engine.units.lazy import DocumentUnits, PassageUnits

GRANULARITIES = ("clusters", "documents", "passages")
SPANS_VERSION = 1  # bump when the passage spans' file changes


@dataclass(frozen=True)
class UnitConfig:
    """Everything that decides what the units of a granularity are."""

    granularity: str = "documents"
    chunker: Chunker = Chunker()
    cluster_algorithm: str = "funnelrag"
    cluster_tokens: int = 4096
    links: LinkConfig = LinkConfig()

    def __post_init__(self) -> None:
        check_choice("granularity", self.granularity, GRANULARITIES)

    def key(self) -> dict:
        """The part of the config that matters for this granularity (a cache key)."""
        if self.granularity == "passages":
            return {"granularity": "passages", "max_tokens": self.chunker.max_tokens,
                    "overlap": self.chunker.overlap}
        if self.granularity == "clusters":
            return {"granularity": "clusters", "algorithm": self.cluster_algorithm,
                    "max_tokens": self.cluster_tokens, "links": asdict(self.links)}
        return {"granularity": "documents"}


def build_units(corpus: Corpus, config: UnitConfig, *, keep: bool = True) -> Sequence[Unit]:
    """The units of `corpus` at `config.granularity`, in a stable order. Documents and
    passages are views of the corpus (engine.units.lazy) that make a unit when it is read.
    `keep=False` writes nothing to the caches (an estimate of a build nobody confirmed yet
    reads them): passages chunked and documents clustered anew where none are cached."""
    if config.granularity == "documents":
        return DocumentUnits(corpus.documents, corpus.index_of)
    if config.granularity == "passages":
        return PassageUnits(corpus.documents, passage_spans(corpus, config.chunker, keep=keep),
                            corpus.index_of)
    found = clustering(corpus, config.cluster_algorithm, config.cluster_tokens, config.links,
                       keep=keep)
    return cluster_units(corpus, found)


def passage_units(documents: Sequence[Document], chunker: Chunker) -> PassageUnits:
    """Every passage of `documents` as a unit titled by its document."""
    return PassageUnits(documents, _spans(documents, chunker))


def passage_spans(corpus: Corpus, chunker: Chunker, *, keep: bool = True) -> np.ndarray:
    """(document row, start, end) of every passage of `corpus`, cached: chunking a million
    documents takes a minute, reading their spans back a fraction of a second (`keep=False`:
    not cached when missing)."""
    key = {"corpus": corpus.fingerprint, "max_tokens": chunker.max_tokens,
           "overlap": chunker.overlap, "version": SPANS_VERSION}
    if not keep and existing_entry("passage-spans", key) is None:
        return _spans(corpus.documents, chunker)
    return load_or_build(
        "passage-spans", key,
        lambda folder: np.save(folder / "spans.npy", _spans(corpus.documents, chunker)),
        lambda folder: np.load(folder / "spans.npy"))


def _spans(documents: Sequence[Document], chunker: Chunker) -> np.ndarray:
    rows = [(d, start, end) for d, doc in enumerate(documents)
            for start, end in chunker.spans(doc.text)]
    return np.array(rows, dtype=np.int32).reshape(-1, 3)


def cluster_units(corpus: Corpus, found: Clustering, *, text: bool = True
                  ) -> tuple[Unit, ...]:
    """A unit per cluster of `found`: its documents' titles and texts joined. Without
    `text` the units' text is empty: a corpus's whole text again, which nothing but an index
    over cluster texts reads (a retrieved cluster's text is joined when it is shown)."""
    units = []
    for k, members in enumerate(found.clusters):
        docs = [corpus.documents[i] for i in members]
        title = docs[0].title + (f" (+{len(docs) - 1} more)" if len(docs) > 1 else "")
        units.append(Unit(
            id=f"{found.algorithm}-{found.max_tokens}:{k}", title=title,
            text="\n\n".join(f"{d.title}\n{d.text}" for d in docs) if text else "",
            doc_ids=tuple(d.id for d in docs), granularity="clusters",
        ))
    return tuple(units)


def units_fingerprint(units: Sequence[Unit]) -> str:
    """sha256 over every unit's id, documents and text: part of every index's cache key, so
    a change in chunking or clustering can never reuse an index built over other units."""
    digest = hashlib.sha256()
    for unit in units:
        for part in (unit.id, "\x1f".join(unit.doc_ids), unit.text):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x1e")
    return digest.hexdigest()


def index_text(unit: Unit) -> str:
    """What a lexical index sees: cluster texts carry their titles, others get theirs."""
    return unit.text if unit.granularity == "clusters" else f"{unit.title}\n{unit.text}"
