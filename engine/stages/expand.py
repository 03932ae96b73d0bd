"""The two granularity changes between stages: clusters -> documents (expansion) and
documents -> passages (later chunking). Both keep lineage in `Candidate.parents`."""

from __future__ import annotations

from collections.abc import Sequence

from engine.types import Candidate, Corpus
from engine.units.build import document_unit, passage_units
from engine.units.chunking import Chunker


def expand_to_documents(corpus: Corpus, clusters: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """The documents of ranked clusters, in cluster order, each carrying its cluster's score
    and the cluster id as parent. A document in two retrieved units appears once."""
    out, seen = [], set()
    for cluster in clusters:
        for doc_id in cluster.unit.doc_ids:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            out.append(Candidate(document_unit(corpus.by_id[doc_id]), cluster.score,
                                 len(out) + 1, parents=(*cluster.parents, cluster.unit.id)))
    return tuple(out)


def chunk_documents(corpus: Corpus, documents: Sequence[Candidate],
                    chunker: Chunker) -> tuple[Candidate, ...]:
    """Later chunking: split ranked documents into passages that inherit their lineage."""
    out = []
    for doc in documents:
        for unit in passage_units([corpus.by_id[doc.unit.id]], chunker):
            out.append(Candidate(unit, doc.score, len(out) + 1,
                                 parents=(*doc.parents, doc.unit.id)))
    return tuple(out)
