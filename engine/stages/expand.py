"""The granularity changes between stages: clusters -> documents (expansion, and LongRAG's
reader context under a token cap) and documents -> passages (later chunking). All keep
lineage in `Candidate.parents`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.documents import Candidate, Corpus, Document, Unit
from engine.readers.reader import within_budget
from engine.stages.base import Stage, StageOutput
from engine.text import count_tokens
from engine.trace_details import StageDetails
from engine.units.build import passage_units
from engine.units.chunking import Chunker
from engine.units.lazy import document_unit

if TYPE_CHECKING:
    from engine.index.document_scores import DocumentScorer


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
        for unit in _passages(corpus.by_id[doc.unit.id], chunker):
            out.append(Candidate(unit, doc.score, len(out) + 1,
                                 parents=(*doc.parents, doc.unit.id)))
    return tuple(out)


@lru_cache(maxsize=4096)
def _passages(doc: Document, chunker: Chunker) -> tuple[Unit, ...]:
    """A document's passages, remembered: later chunking meets the same documents at every
    stage run of a question and every grid point of a sweep."""
    return passage_units([doc], chunker)


CONTEXT_ORDER = "as the reader reads them: the best unit's documents first, best first"

# the fewest tokens worth reading of a document cut by a context cap
MIN_CLIPPED_TOKENS = 32


class ReaderContext(Stage):
    """The documents of the ranked units, best unit and best member first, until the
    reader's token cap (`within_budget`): the first that does not fit is cut to the room
    left, if at least `min_clipped` tokens of its text fit, and later ones are dropped.
    Each document shows its own score for the query when a scorer is given (its unit's
    otherwise), so the order inside a unit can be read off the table."""

    name = "context"
    granularity = "documents"

    def __init__(self, corpus: Corpus, max_tokens: int,
                 min_clipped: int = MIN_CLIPPED_TOKENS,
                 documents: DocumentScorer | None = None) -> None:
        """
        Args:
            corpus: the documents the units are made of.
            max_tokens: the cap.
            min_clipped: the fewest tokens worth reading of a document cut by the cap.
            documents: each document's own score for the query (else it keeps its unit's).
        """
        self.corpus, self.max_tokens, self.min_clipped = corpus, max_tokens, min_clipped
        self.documents = documents

    def settings(self) -> dict:
        return {"max_tokens": self.max_tokens}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The documents of `candidates` (ranked units) that fit the cap; `k` is unused."""
        own = self.documents.scores(query) if self.documents is not None else None
        documents = [
            Candidate(document_unit(self.corpus.by_id[doc_id]),
                      float(own[self.corpus.index_of[doc_id]]) if own is not None
                      else unit.score, 0, parents=(*unit.parents, unit.unit.id))
            for unit in candidates for doc_id in unit.unit.doc_ids]
        read = within_budget(documents, self.max_tokens, self.min_clipped)
        out = tuple(replace(c, rank=rank) for rank, c in enumerate(read, start=1))
        used = sum(count_tokens(c.unit.title) + count_tokens(c.unit.text) for c in out)
        cut = [c.unit.id for c, whole in zip(out, documents, strict=False)
               if c.unit.text != whole.unit.text]
        note = (f"{used:,} of {self.max_tokens:,} context tokens"
                + (f"; cut to fit: {', '.join(cut)}" if cut else ""))
        members = len({d for unit in candidates for d in unit.unit.doc_ids})
        return StageOutput(out, StageDetails(note=note, order=CONTEXT_ORDER, tokens=used),
                           n_in=members)
