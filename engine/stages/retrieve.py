"""First-stage retrievers: search a prebuilt index and ignore incoming candidates.

Building the index (slow, cached) stays outside the stage, so a stage is cheap to make and
several funnels can share one index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property

import numpy as np

from engine.documents import Candidate, Corpus, Unit
from engine.errors import ConfigError, check_choice, check_range
from engine.index.bm25 import BM25Index
from engine.index.dense import MAX_K, DenseIndex
from engine.index.document_scores import DocumentScorer, Groups, top_k
from engine.stages.base import Stage, StageOutput
from engine.trace_details import BestChunk, StageDetails, StandIn
from engine.units.lazy import document_unit


class _IndexRetriever(Stage):
    """A stage returning the top-`k` units of `index` for the query."""

    prefix_stable = True

    def __init__(self, index: BM25Index | DenseIndex) -> None:
        self.index = index
        if index.units:  # an empty index keeps the class default
            self.granularity = index.units[0].granularity

    @property
    def stand_in(self) -> StandIn | None:
        return self.index.stand_in

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

    def settings(self) -> dict:
        """Which dense index answered: exact, or approximate with its measured recall."""
        description = getattr(self.index, "description", "")
        return {"index": description} if description else {}


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
    def stand_in(self) -> StandIn | None:
        """Its index's (engine.index.stand_in): a stage holding this retriever (DR-RAG's
        query-document concatenation) says so too."""
        return self.index.stand_in

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


class ScoredDocumentRetriever(DocumentRetriever):
    """Top-`k` documents by a `DocumentScorer`: every document scored, as the funnel's
    first stage scores them (BM25, dense MaxP over the stored passage vectors, or their
    hybrid), so "hybrid" here is the same score the funnel ranks by, not a second copy."""

    def __init__(self, documents: DocumentScorer, name: str = "hybrid") -> None:
        # the scorer stands as the index: its stand-in note (BM25 alone while the dense
        # index is built) is the stage's, and QDC's
        self.index, self.corpus, self.name, self.fanout = documents, documents.corpus, name, 1

    def settings(self) -> dict:
        return {"document_scores": self.index.how,
                "hybrid_weight": self.index.weight if self.index.how == "hybrid" else None}

    def search(self, query: str, k: int, exclude: frozenset[str] = frozenset(),
               parents: tuple[str, ...] = ()) -> tuple[Candidate, ...]:
        """The `k` best-scoring documents not in `exclude` (a positive score only), each
        with `parents` as lineage."""
        scores = self.index.scores(query)
        documents = self.corpus.documents
        ranked = [(documents[i], float(scores[i])) for i in top_k(scores, k + len(exclude))
                  if np.isfinite(scores[i]) and scores[i] > 0
                  and documents[i].id not in exclude][:k]
        return tuple(Candidate(document_unit(doc), score, rank, parents=parents)
                     for rank, (doc, score) in enumerate(ranked, start=1))


class ClusterRetriever(Stage):
    """Clusters ranked by their best member document: FunnelRAG's first stage, scored
    through the documents.

    Every document is scored (BM25, the stored dense passage vectors, or their hybrid:
    engine.index.document_scores) and a cluster scores as its best member, so a cluster holding
    an obviously matching document is found however long the rest of it is. With
    `text_index` (BM25 over the clusters' whole texts, the paper's first stage) that index
    ranks the clusters instead. Either way each kept cluster is labelled by its members
    that match best, and its documents are listed best first.
    """

    name = "clusters"
    granularity = "clusters"
    prefix_stable = True

    def __init__(self, clusters: Sequence[Unit], assignment: np.ndarray, corpus: Corpus,
                 documents: DocumentScorer, text_index: BM25Index | None = None,
                 label_members: int = 2) -> None:
        """
        Args:
            clusters: the cluster units.
            assignment: for each document of `corpus` (corpus order), its cluster's position
                in `clusters`.
            corpus: the documents the clusters group.
            documents: every document's score for a query.
            text_index: BM25 over the clusters' texts, to rank clusters by instead.
            label_members: how many best-matching members title a cluster.
        """
        self.clusters, self._assignment, self.corpus = clusters, assignment, corpus
        self.documents, self.text_index, self.label_members = (documents, text_index,
                                                               label_members)

    @property
    def stand_in(self) -> StandIn | None:
        return self.documents.stand_in

    @property
    def haystack(self) -> int:
        """How many clusters a search looks through."""
        return len(self.clusters)

    def settings(self) -> dict:
        ranked_by = ("bm25 over cluster texts" if self.text_index is not None
                     else f"best member ({self.documents.how} document score)")
        return {"ranked_by": ranked_by, "document_scores": self.documents.how,
                "hybrid_weight": self.documents.weight if self.documents.how == "hybrid"
                else None}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The `k` best clusters for `query`; `candidates` are ignored."""
        check_range("k", k, 1, MAX_K)
        documents = self.documents.scores(query)
        if self.text_index is not None:
            scores = np.zeros(len(self.clusters), dtype=np.float32)
            for hit in self.text_index.search(query, k):
                scores[self._position(hit.unit)] = hit.score
        else:
            scores = self._groups.max(documents)
        kept = [int(i) for i in top_k(scores, k) if np.isfinite(scores[i]) and scores[i] > 0]
        return StageOutput(tuple(
            Candidate(self._labelled(self.clusters[c], documents), float(scores[c]), rank)
            for rank, c in enumerate(kept, start=1)))

    @cached_property
    def _groups(self) -> Groups:
        return Groups(self._assignment, len(self.clusters))

    def _position(self, cluster: Unit) -> int:
        return int(self._assignment[self.corpus.index_of[cluster.doc_ids[0]]])

    def _labelled(self, cluster: Unit, documents: np.ndarray) -> Unit:
        """`cluster` with its documents best first (in its text too, so its snippet comes
        from the members that matched), titled by the best-matching ones."""
        index_of, by_id = self.corpus.index_of, self.corpus.by_id
        members = sorted(cluster.doc_ids, key=lambda d: -documents[index_of[d]])
        shown = [by_id[d].title for d in members[:self.label_members]]
        more = len(members) - len(shown)
        title = ", ".join(shown) + (f" (+{more} more)" if more else "")
        text = "\n\n".join(f"{by_id[d].title}\n{by_id[d].text}" for d in members)
        return replace(cluster, title=title, text=text, doc_ids=tuple(members))


class LongUnitRetriever(ClusterRetriever):
    """LongRAG's long retriever: units of grouped documents ranked by MaxP.

    A unit scores as its best chunk (LongRAG approximates sim(q, unit) by the max over the
    unit's chunks): with dense document scores, the best stored passage vector of any of its
    documents, so the passage index the other paradigms share serves it with no index of its
    own. BM25 over the units' whole texts (`text_index`) or the hybrid document score are
    options. The chunk that won each kept unit is kept in the stage's details.
    """

    name = "units"

    def settings(self) -> dict:
        return {**super().settings(), "chunks": "the dense index's stored passages"}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The `k` best units for `query`, with each one's winning chunk."""
        out = super().run(query, candidates, k)
        chunks = []
        for cand in out.candidates:
            found = self.documents.best_passage(query, cand.unit.doc_ids)
            if found is not None:
                row, cosine = found
                chunk = self.documents.dense.units[row]
                chunks.append(BestChunk(cand.unit.id, chunk.id, chunk.title, chunk.text,
                                        round(cosine, 4)))
        return StageOutput(out.candidates, StageDetails(best_chunks=tuple(chunks)))


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores scaled to [0, 1] by their list's min and max (all 1.0 if they are equal)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


def fuse_hybrid(lexical: Sequence[Candidate], dense: Sequence[Candidate], alpha: float,
                k: int) -> tuple[Candidate, ...]:
    """The best-practices paper's hybrid search: alpha x BM25 + dense over min-max
    normalised scores, on the union of both lists. A unit missing from one list gets that
    list's minimum (0 after normalising), as pyserini's hybrid search does."""
    scores: dict[str, list[float]] = {}
    units: dict[str, Unit] = {}
    for column, hits in enumerate((lexical, dense)):
        for hit, scaled in zip(hits, min_max([h.score for h in hits]), strict=True):
            units.setdefault(hit.unit.id, hit.unit)
            scores.setdefault(hit.unit.id, [0.0, 0.0])[column] = scaled
    fused = sorted(((alpha * lex + den, uid) for uid, (lex, den) in scores.items()),
                   key=lambda pair: -pair[0])  # stable: BM25's order breaks ties
    return tuple(Candidate(units[uid], score, rank)
                 for rank, (score, uid) in enumerate(fused[:k], start=1))


SEARCHES = ("hybrid", "bm25", "dense")


class HybridRetriever(Stage):
    """Search over passages as the best-practices pipeline does: `hybrid` fuses BM25's and
    the dense index's top `depth` by `fuse_hybrid`; `bm25` and `dense` are either list
    alone (its ablation rows). The dense side may search with another text than the
    question (HyDE's pseudo-document with the question); BM25 always reads the question."""

    granularity = "passages"
    prefix_stable = True  # both lists are searched to `depth`, whatever k

    def __init__(self, bm25: BM25Index | None, dense: DenseIndex | None, alpha: float = 0.3,
                 depth: int = 50, dense_query: str = "", search: str = "hybrid") -> None:
        self.search = check_choice("search", search, SEARCHES)
        check_range("alpha", alpha, 0.0, 10.0)
        check_range("depth", depth, 1, MAX_K)
        if search != "dense" and bm25 is None or search != "bm25" and dense is None:
            raise ConfigError(f"The {search!r} search needs "
                              f"{'a BM25 and a dense' if search == 'hybrid' else 'its'} "
                              "passage index.")
        self.bm25, self.dense, self.alpha, self.depth = bm25, dense, alpha, depth
        self.dense_query = dense_query
        self.name = search

    @property
    def stand_in(self) -> StandIn | None:
        return self.dense.stand_in if self.dense is not None else None

    @property
    def haystack(self) -> int:
        return len((self.dense or self.bm25).units)

    def settings(self) -> dict:
        return {"search": self.search, "alpha": self.alpha, "depth": self.depth,
                "dense_query": "HyDE pseudo-document + question" if self.dense_query
                else "the question"}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The `k` best passages for `query`; `candidates` are ignored."""
        check_range("k", k, 1, MAX_K)
        dense_query = self.dense_query or query
        if self.search == "bm25":
            return StageOutput(tuple(self.bm25.search(query, k)))
        if self.search == "dense":
            return StageOutput(tuple(self.dense.search(dense_query, k)))
        lexical = self.bm25.search(query, self.depth)
        dense = self.dense.search(dense_query, self.depth)
        return StageOutput(fuse_hybrid(lexical, dense, self.alpha, k), StageDetails(
            note=f"score = {self.alpha} x BM25 + dense, each min-max scaled over its top "
                 f"{self.depth}; {len(lexical)} BM25 and {len(dense)} dense hits"))
