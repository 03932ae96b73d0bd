"""First-stage retrievers: search a prebuilt index and ignore incoming candidates.

Building the index (slow, cached) stays outside the stage, so a stage is cheap to make and
several funnels can share one index.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.index.bm25 import BM25Index
from engine.index.dense import MAX_K, DenseIndex
from engine.stages.base import Stage, StageOutput
from engine.types import Candidate, Corpus
from engine.units.build import document_unit


class _IndexRetriever(Stage):
    """A stage returning the top-`k` units of `index` for the query."""

    def __init__(self, index: BM25Index | DenseIndex) -> None:
        self.index = index
        if index.units:  # an empty index keeps the class default
            self.granularity = index.units[0].granularity

    @property
    def haystack(self) -> int:
        """How many units a search looks through."""
        return len(self.index.units)

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """Top-`k` units of the index for `query`; `candidates` are ignored."""
        return StageOutput(candidates=tuple(self.index.search(query, k)))


class BM25Retriever(_IndexRetriever):
    """Lexical first stage over an `engine.index.bm25.BM25Index`."""

    name = "bm25"

    def __init__(self, index: BM25Index) -> None:
        super().__init__(index)


class DenseRetriever(_IndexRetriever):
    """Bi-encoder first stage over an `engine.index.dense.DenseIndex` (cosine scores)."""

    name = "dense"

    def __init__(self, index: DenseIndex) -> None:
        super().__init__(index)


class DocumentRetriever(Stage):
    """Top-`k` whole documents from an index of documents or of their passages.

    Over passages, a document scores as its best passage (MaxP), so the passage index the
    flat paradigm builds serves document retrieval too, with no second index.
    """

    granularity = "documents"

    def __init__(self, index: BM25Index | DenseIndex, corpus: Corpus, name: str = "sm",
                 fanout: int = 8) -> None:
        """`fanout` passages are fetched per wanted document (a document may own several)."""
        self.index, self.corpus, self.name = index, corpus, name
        over_documents = not index.units or index.units[0].granularity == "documents"
        self.fanout = 1 if over_documents else fanout

    @property
    def haystack(self) -> int:
        """How many documents a search looks through."""
        return len(self.corpus)

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The `k` best documents for `query`; `candidates` are ignored."""
        return StageOutput(candidates=self.search(query, k))

    def search(self, query: str, k: int, exclude: frozenset[str] = frozenset(),
               parents: tuple[str, ...] = ()) -> tuple[Candidate, ...]:
        """The `k` best documents not in `exclude`, each with `parents` as lineage."""
        fetch = (k + len(exclude)) * self.fanout
        best: dict[str, float] = {}
        for hit in self.index.search(query, min(fetch, MAX_K, len(self.index.units) or 1)):
            doc_id = hit.unit.doc_ids[0]
            if doc_id not in exclude and doc_id not in best:  # hits come best first: MaxP
                best[doc_id] = hit.score
        ranked = list(best.items())[:k]
        return tuple(Candidate(document_unit(self.corpus.by_id[doc_id]), score, rank,
                               parents=parents)
                     for rank, (doc_id, score) in enumerate(ranked, start=1))
