"""Re-ranking: FunnelRAG's pre-ranker and the flat paradigm's re-ranker.

Two kinds, named honestly in traces and the UI:

- stored scores (`StoredScoreReranker`): "bi-encoder" (the dense passage index's stored
  vectors; a document as its best passage), "bm25" (BM25 over documents) or "hybrid" (the
  two, weighted). Nothing is encoded per query but the query: milliseconds.
- a cross-encoder (`CrossEncoderReranker`): each candidate scored as the pair (query,
  "title\ntext") by a sentence-transformers `CrossEncoder` with one output logit, re-sorted
  by that logit (no sigmoid, so confident scores do not tie); handed to the stage loaded
  (engine.service.store.LoadedResources.cross_encoder, once per process). `model` is "trained" (the
  pre-ranker `python -m engine train preranker` caches; never trained at query time), an
  alias of engine.models.loading, a local folder or a hub id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.documents import Candidate
from engine.errors import ConfigError, check_choice, check_range
from engine.index.stand_in import STAND_IN
from engine.models.cross_encoder import score_pairs
from engine.stages.base import Reranker, StageOutput
from engine.trace_details import StageDetails, StandIn
from engine.units.build import GRANULARITIES

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from engine.index.document_scores import DocumentScorer

# the dense part of the "hybrid" document score, chosen on the training questions
# (bench/first_stage.py; docs/benchmarks/funnel.md, "The first stage and the
# pre-ranker")
HYBRID_WEIGHT = 0.7


class CrossEncoderReranker(Reranker):
    """Re-rank incoming candidates by a cross-encoder's score of (query, title + text)."""

    def __init__(self, encoder: CrossEncoder, model: str = "trained", *, batch_size: int = 32,
                 granularity: str = "documents", name: str = "preranker") -> None:
        """
        Args:
            encoder: the loaded cross-encoder (engine.models.cross_encoder; the store loads
                it once per process), whose max_length truncates each (query, text) pair.
            model: what it was loaded as: "trained", an alias (e.g. "minilm"), a local
                folder or a hub id.
            batch_size: pairs per forward pass.
            granularity: of the candidates it receives, and so of those it returns.
            name: the stage's name in traces ("preranker" in FunnelRAG, "rerank" in flat).
        """
        check_range("batch_size", batch_size, 1, 4096)
        self.encoder, self.model, self.batch_size = encoder, model, batch_size
        self.granularity = check_choice("granularity", granularity, GRANULARITIES)
        self.name = name

    def settings(self) -> dict:
        return {"model": self.model, "batch_size": self.batch_size,
                "max_length": self.encoder.max_length, "granularity": self.granularity}

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        """The cross-encoder's logit for each candidate, in input order."""
        if not candidates:
            return []
        pairs = [(query, f"{c.unit.title}\n{c.unit.text}") for c in candidates]
        return score_pairs(self.encoder, pairs, self.batch_size)

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The top-`k` of `candidates` by cross-encoder score, ranks renumbered from 1."""
        wrong = {c.unit.granularity for c in candidates} - {self.granularity}
        if wrong:
            raise ConfigError(
                f"{type(self).__name__}(granularity={self.granularity!r}) got "
                f"{', '.join(sorted(wrong))} candidates; construct it with "
                f"granularity={sorted(wrong)[0]!r}."
            )
        return super().run(query, candidates, k)


STORED = ("bi-encoder", "bm25", "hybrid")  # re-rankers that read scores from built indexes
BI_ENCODER = "bi-encoder"
NONE = "none"  # no re-ranking: the order given, cut to k


class KeptOrder(Reranker):
    """No re-ranking: the candidates in the order the stage before gave them, cut to k
    (their scores kept). Reads nothing, so nothing is built for it."""

    prefix_stable = True

    def __init__(self, granularity: str = "passages", name: str = "reranker") -> None:
        self.granularity = check_choice("granularity", granularity, GRANULARITIES)
        self.name = name

    def settings(self) -> dict:
        return {"kind": "none: the first stage's order, cut to k"}

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        return [float(c.score) for c in candidates]

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The first `k` candidates as given, saying they were not re-ranked and why."""
        kept = super().run(query, candidates, k).candidates
        return StageOutput(kept, StageDetails(note=KEPT_ORDER_NOTE))


KEPT_ORDER_NOTE = ("not re-ranked: the first stage's order, cut to k (reranker none, "
                   "which auto picks after a BM25 or plugin first stage)")


class StoredScoreReranker(Reranker):
    """Re-rank by scores read from indexes already built: nothing is encoded at query time
    but the query.

    Documents score by `engine.index.document_scores`: the stored dense passage vectors (a
    document as its best passage: "bi-encoder"), BM25 over documents, or their hybrid.
    Passages score by their own stored vector (the bi-encoder that retrieved them, so the
    dense order is kept).
    """

    prefix_stable = True

    def __init__(self, documents: DocumentScorer, *, granularity: str = "documents",
                 name: str = "preranker") -> None:
        self.documents = documents
        self.granularity = check_choice("granularity", granularity, GRANULARITIES)
        self.name = name
        if granularity == "passages" and documents.dense is None:
            raise ConfigError("Re-ranking passages by stored vectors needs the dense passage "
                              "index; use the 'bi-encoder' document scores.")
        if granularity == "clusters":
            raise ConfigError("Stored scores re-rank documents or passages, not clusters.")

    @property
    def kind(self) -> str:
        if self.granularity == "passages":
            return "bi-encoder (stored passage vectors: the dense order)"
        return {"dense": "bi-encoder (stored passage vectors, best passage per document)",
                "bm25": "BM25 document score",
                "hybrid": f"hybrid: BM25 + stored vectors (dense weight "
                          f"{self.documents.weight})"}[self.documents.how]

    @property
    def stand_in(self) -> StandIn | None:
        """What the stage says when its scores stand in for a dense index (being built)."""
        reason = self.documents.stand_in_reason
        if reason and self.granularity == "passages":
            return StandIn(STAND_IN, f"{reason}: no stored passage vectors, so the order "
                                     "given is kept")
        return self.documents.stand_in

    def settings(self) -> dict:
        return {"kind": self.kind, "granularity": self.granularity}

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        if self.granularity == "passages" and self.documents.stand_in_reason:
            return [c.score for c in candidates]  # no stored vectors yet: the order given
        if self.granularity == "passages":
            dense = self.documents.dense
            q = dense.encode_queries([query])[0]
            return [float(v @ q) for v in dense.unit_vectors([c.unit for c in candidates])]
        scores, index_of = self.documents.scores(query), self.documents.corpus.index_of
        return [float(scores[index_of[c.unit.id]]) for c in candidates]

