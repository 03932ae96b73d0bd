"""Every document's score for a query, from indexes already built: no encoding per query
beyond the query itself.

- lexical: BM25 over whole documents (`engine.index.bm25`, the index drrag searches);
- dense: the passage vectors the flat paradigm's dense index stores, a document scoring as
  its best passage (MaxP), so documents need no index of their own; over an approximate
  index (millions of passages), only the passages it finds nearest are scored;
- hybrid: a weighted sum of the two, BM25 first scaled by its best score for the query so
  both lie in [0, 1] for the documents that matter.

A group of documents (a cluster) scores as its best member, or the sum of its best two.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import ConfigError, check_choice, check_range
from engine.index.query_memo import Recent
from engine.index.stand_in import STAND_IN
from engine.trace_details import StandIn
from engine.units.lazy import PassageUnits

if TYPE_CHECKING:
    from engine.documents import Corpus
    from engine.index.bm25 import BM25Index
    from engine.index.dense import DenseIndex

SCORERS = ("bm25", "dense", "hybrid")
# passages an approximate dense index is asked for per query (its efSearch too), and BM25's
# best documents scored exactly beside them in "hybrid"; other documents score as the last
# of those passages. bench/funnel_scale.py: over HNSW the first stage keeps 99.5% of the
# exact one's 10 clusters at 1M documents.
APPROXIMATE_DEPTH = 400


def group_max(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """out[g] = max of `values[i]` over i with groups[i] == g (-inf for an empty group)."""
    out = np.full(n_groups, -np.inf, dtype=np.float32)
    np.maximum.at(out, groups, values)
    return out


class Groups:
    """A fixed assignment of items to groups, for the maximum of each group many times over
    (every query): sorted once, then one `np.maximum.reduceat` per call, several times
    faster than `group_max` over a million items."""

    def __init__(self, groups: np.ndarray, n_groups: int) -> None:
        self.n_groups = n_groups
        self._order = np.argsort(groups, kind="stable")
        ordered = groups[self._order]
        self._starts = (np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
                        if ordered.size else np.zeros(0, dtype=np.int64))
        self._present = ordered[self._starts]
        if np.array_equal(self._order, np.arange(groups.size)):
            self._order = None  # already grouped (passages come in document order)

    def max(self, values: np.ndarray) -> np.ndarray:
        """out[g] = the max of the values of group g's items (-inf for an empty group), as
        `group_max(values, groups, n_groups)`."""
        out = np.full(self.n_groups, -np.inf, dtype=np.float32)
        if self._starts.size:
            ordered = values if self._order is None else values[self._order]
            out[self._present] = np.maximum.reduceat(ordered, self._starts)
        return out


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the `k` highest `scores`, best first, ties by position: what
    `np.argsort(-scores, kind="stable")[:k]` gives, without sorting every score."""
    if k >= scores.size:
        return np.argsort(-scores, kind="stable")
    threshold = np.partition(scores, scores.size - k)[scores.size - k]
    candidates = np.flatnonzero(scores >= threshold)
    return candidates[np.argsort(-scores[candidates], kind="stable")[:k]]


def group_top2(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """out[g] = the sum of the two largest `values` of group g (its max if it has one
    member; a negative second value adds nothing)."""
    order = np.lexsort((-values, groups))  # by group, best first within a group
    g, v = groups[order], values[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if g.size else g
    out = np.full(n_groups, -np.inf, dtype=np.float32)
    out[g[starts]] = v[starts]
    seconds = starts[starts + 1 < g.size]
    seconds = seconds[g[seconds + 1] == g[seconds]]
    out[g[seconds]] += np.maximum(v[seconds + 1], 0.0)
    return out


class DocumentScorer:
    """Scores of every document of a corpus (corpus order) for a query.

    The last few queries' scores are kept, so two stages asking for the same query's
    scores (clusters, then their documents) compute them once.
    """

    def __init__(self, corpus: Corpus, bm25: BM25Index | None = None,
                 dense: DenseIndex | None = None, how: str = "hybrid",
                 weight: float = 0.5, stand_in_reason: str = "") -> None:
        """
        Args:
            corpus: the documents scored.
            bm25: a BM25 index over `corpus`'s documents (for "bm25" and "hybrid").
            dense: a dense index over `corpus`'s passages (for "dense" and "hybrid").
            how: "bm25", "dense" or "hybrid".
            weight: the dense part of "hybrid" (0: BM25 only, 1: dense only).
            stand_in_reason: why these scores stand in for dense ones (the dense index
                is still being built, or failed to: engine.index.stand_in); empty when
                they do not.
        """
        check_choice("document scorer", how, SCORERS)
        check_range("weight", weight, 0.0, 1.0)
        if how in ("bm25", "hybrid") and bm25 is None:
            raise ConfigError(f"The {how!r} document scorer needs a BM25 index over "
                              "documents; pass bm25=...")
        if how in ("dense", "hybrid") and dense is None:
            raise ConfigError(f"The {how!r} document scorer needs a dense passage index; "
                              "pass dense=...")
        self.corpus, self.bm25, self.dense, self.how, self.weight = (corpus, bm25, dense, how,
                                                                     weight)
        self.stand_in_reason = stand_in_reason
        self._recent: Recent[np.ndarray] = Recent()

    @cached_property
    def _passage_documents(self) -> np.ndarray:
        """Each dense row's document, as a position in the corpus."""
        units = self.dense.units
        if isinstance(units, PassageUnits) and units.documents is self.corpus.documents:
            return units.spans[:, 0].astype(np.int64)  # the spans name it: no unit is made
        index_of = self.corpus.index_of
        return np.fromiter((index_of[u.doc_ids[0]] for u in units), dtype=np.int64,
                           count=len(units))

    @cached_property
    def _passage_groups(self) -> Groups:
        return Groups(self._passage_documents, len(self.corpus))

    @cached_property
    def _document_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The dense rows in document order and where each document's begin (corpus order,
        one bound more than documents): two arrays, not an array per document."""
        owners = self._passage_documents
        order = np.argsort(owners, kind="stable")
        return order, np.searchsorted(owners[order], np.arange(len(self.corpus) + 1))

    def _rows_of(self, documents: Sequence[int]) -> np.ndarray:
        """The dense rows of the documents at these corpus positions."""
        order, bounds = self._document_rows
        if not len(documents):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([order[bounds[d]:bounds[d + 1]] for d in documents])

    def best_passage(self, query: str, doc_ids: Sequence[str]) -> tuple[int, float] | None:
        """The dense row of the passage of `doc_ids` closest to `query` and its cosine (the
        chunk that wins a MaxP score), or None without dense vectors or passages."""
        if self.dense is None or self.stand_in_reason:
            return None
        rows = self._rows_of([self.corpus.index_of[d] for d in doc_ids])
        if not rows.size:
            return None
        cosines = self.dense.vectors[rows] @ self.dense.encode_queries([query])[0]
        best = int(cosines.argmax())
        return int(rows[best]), float(cosines[best])

    @property
    def stand_in(self) -> StandIn | None:
        """What a stage reading these scores says when they stand in for dense ones."""
        if not self.stand_in_reason:
            return None
        return StandIn(STAND_IN, f"{self.stand_in_reason}: documents score by BM25 alone")

    def lexical(self, query: str) -> np.ndarray:
        """BM25 score of every document."""
        return np.asarray(self.bm25.scores(query), dtype=np.float32)

    def semantic(self, query: str, also: np.ndarray | None = None) -> np.ndarray:
        """Cosine of every document's best passage to the query (-inf for a document with
        no passage).

        Over an approximate dense index only the APPROXIMATE_DEPTH passages closest to the
        query, and every passage of the documents at positions `also` (those another
        scorer ranks high), are scored exactly: any other document scores as the farthest
        of those nearest passages, an upper bound of its own best cosine.
        """
        q = self.dense.encode_queries([query])[0]
        n = len(self.corpus)
        if self.dense.exact:
            return self._passage_groups.max(self.dense.vectors @ q)
        rows, cosines = self.dense.top(q, APPROXIMATE_DEPTH, ef=APPROXIMATE_DEPTH)
        out = group_max(cosines, self._passage_documents[rows], n)
        if cosines.size:
            np.maximum(out, cosines[-1], out=out)
        if also is not None and also.size:
            extra = np.sort(self._rows_of(also))
            exact = group_max(self.dense.vectors[extra] @ q, self._passage_documents[extra], n)
            out[also] = exact[also]
        return out

    def scores(self, query: str) -> np.ndarray:
        """Every document's score by `how`, float32, corpus order (read-only)."""
        return self._recent.get(query, lambda: _read_only(self._score(query)))

    def _score(self, query: str) -> np.ndarray:
        if self.how == "bm25":
            return self.lexical(query)
        if self.how == "dense":
            return self.semantic(query)
        lexical = self.lexical(query)
        top = float(lexical.max()) if lexical.size else 0.0
        lexical = lexical / top if top > 0 else lexical
        also = None
        if not self.dense.exact:  # BM25's best documents get their exact dense score too
            also = np.flatnonzero(lexical > 0)
            if also.size > APPROXIMATE_DEPTH:
                best = np.argpartition(-lexical[also], APPROXIMATE_DEPTH - 1)
                also = also[best[:APPROXIMATE_DEPTH]]
        dense = np.maximum(self.semantic(query, also), 0.0)  # a passage-less document: 0
        return ((1.0 - self.weight) * lexical + self.weight * dense).astype(np.float32)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
