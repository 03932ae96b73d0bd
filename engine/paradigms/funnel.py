"""FunnelRAG (Zhao et al.): coarse to fine, each stage handing fewer, smaller units on.

BM25 over ~S-token clusters (K) -> the clusters' documents pre-ranked (N) -> later chunking
of those documents into passages -> FiD attention post-ranking (H) -> the reader answers
over the H passages (one LLM step).

Defaults are scaled to the pooled corpus (23k documents) and recorded in docs/benchmarks/funnel.md,
"Paradigm defaults and why".
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import check_config, param
from engine.errors import ConfigError
from engine.index.document_scores import SCORERS
from engine.paradigms import options
from engine.paradigms.base import Paradigm, ParadigmSpec
from engine.paradigms.needs import Resources
from engine.paradigms.resources import (
    BM25,
    Clusters,
    DocumentScores,
    Ranker,
    Reader,
    SentenceScorer,
)
from engine.readers.reader import ReaderConfig
from engine.stages.base import run_stage
from engine.stages.expand import chunk_documents, expand_to_documents
from engine.stages.postrank import FiDPostRanker, fused_scores
from engine.stages.prune import PruneConfig
from engine.stages.rerank import BI_ENCODER, StoredScoreReranker
from engine.stages.retrieve import ClusterRetriever
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker
from engine.units.cluster import ALGORITHMS

POSTRANK_PRIORS = ("preranker", "passage", "both")


@dataclass(frozen=True)
class FunnelConfig:
    cluster_algorithm: str = param("longrag", "how documents are grouped into clusters",
                                   choices=ALGORITHMS)
    cluster_tokens: int = param(2048, "S: largest cluster, in tokens", low=64, high=65536)
    # hybrid: on the training questions it finds the clusters holding both supporting
    # documents far more often than BM25 over cluster texts (bench/first_stage.py)
    cluster_scores: str = param("hybrid", "how clusters are ranked: by their best member "
                                "document's hybrid (BM25 + dense), dense or bm25 score, or "
                                "text (BM25 over each cluster's whole text, the paper's)",
                                choices=(*SCORERS, "text"))
    hybrid_weight: float = options.hybrid_weight()
    K: int = param(10, "K: clusters kept by the first stage", low=1, high=200)
    N: int = param(8, "N: documents kept by the pre-ranker", low=1, high=200)
    H: int = param(4, "H: passages kept by the post-ranker and read", low=1, high=50)
    # 0 with the "both" prior: on the training questions the reader's attention, alone or
    # fused at any weight, never beat the prior order (AR@4 0.403; attention alone 0.215 to
    # 0.251), so the default skips the reader's pass (bench/postrank_fusion.py)
    attention_weight: float = param(0.0, "post-ranking: weight of the reader's attention "
                                    "order against the prior order (1: attention only, "
                                    "FunnelRAG's; 0: the prior alone, no reader pass)",
                                    low=0.0, high=1.0)
    postrank_prior: str = param("both", "post-ranking's prior order: preranker "
                                "(documents by pre-ranker rank, passages in document order), "
                                "passage (each passage's stored dense cosine), or both fused",
                                choices=POSTRANK_PRIORS)
    passage_tokens: int = options.passage_tokens("passage size in tokens (later chunking)")
    # stored scores, not the trained cross-encoder: on dev500 the bi-encoder keeps far more
    # gold documents (bench/preranker_recall.py), hybrid more still on the training
    # questions (bench/first_stage.py)
    preranker: str = param("hybrid", "pre-ranker: hybrid (BM25 + stored passage vectors), "
                           "bi-encoder (stored passage vectors), bm25, trained (the "
                           "cross-encoder trained here), a plugin's (the Models table lists "
                           "them), or a cross-encoder folder or hub id", names="models")
    bi_encoder: str = options.bi_encoder("the document scores, the pre-ranker's stored "
                                         "scores and the passage prior")
    index_passage_tokens: int = options.passage_tokens("passage size of the dense index the "
                                                       "document scores read (shared with "
                                                       "flat)")
    prune: PruneConfig = options.prune()
    # mean_tokens, not eq3: on HotpotQA *train* paragraphs it finds the supporting ones best
    # (recall@2 0.40 vs eq3 0.23, random 0.18; bench/fid_scoring.py; docs/benchmarks/funnel.md,
    # "Does FiD post-ranking beat the pre-ranker's order?").
    reader: ReaderConfig = options.reader(aggregation="mean_tokens")

    def __post_init__(self) -> None:
        check_config(self)
        backend = self.reader.backend_of()
        if self.attention_weight > 0 and backend.fid is None:
            raise ConfigError(f"The funnel's post-ranker reads the reader's attention, which "
                              f"the {backend.name!r} backend cannot give; set "
                              "attention_weight 0 (the pre-ranker's order) or use a backend "
                              "with attention (transformers).")
        if self.postrank_prior != "preranker" and \
                self.passage_tokens != self.index_passage_tokens:
            raise ConfigError(
                f"postrank_prior={self.postrank_prior!r} reads the stored vectors of the "
                f"dense index's passages, which later chunking only reproduces when "
                f"passage_tokens ({self.passage_tokens}) equals index_passage_tokens "
                f"({self.index_passage_tokens}); make them equal or use "
                f"postrank_prior='preranker'.")

    def clusters(self) -> UnitConfig:
        return UnitConfig("clusters", cluster_algorithm=self.cluster_algorithm,
                          cluster_tokens=self.cluster_tokens)

    def indexed_passages(self) -> UnitConfig:
        return UnitConfig("passages", chunker=Chunker(self.index_passage_tokens))


@dataclass(frozen=True)
class FunnelResources(Resources):
    reader: Reader  # and its FiD reader: post-ranking reads its attention
    clusters: Clusters
    cluster_text: BM25 | None  # cluster_scores="text": BM25 over the clusters' own text
    documents: DocumentScores  # the first stage's document scores
    preranker: Ranker
    prior: Ranker | None  # post-ranking's passage cosines (postrank_prior != "preranker")
    pruner: SentenceScorer | None = None  # the sentence cut's scorer (prune on)


class FunnelParadigm(Paradigm):
    name = "funnel"

    @classmethod
    def resources(cls, config: FunnelConfig) -> FunnelResources:
        passages, text = config.indexed_passages(), config.cluster_scores == "text"
        return FunnelResources(
            reader=Reader(config.reader),
            clusters=Clusters(config.clusters()),
            cluster_text=BM25(config.clusters()) if text else None,
            documents=DocumentScores("bm25" if text else config.cluster_scores,
                                     config.hybrid_weight, passages, config.bi_encoder),
            preranker=Ranker(config.preranker, passages, config.bi_encoder,
                             weight=config.hybrid_weight),
            prior=Ranker(BI_ENCODER, passages, config.bi_encoder, granularity="passages",
                         name="passage prior")
            if config.postrank_prior != "preranker" else None,
            pruner=SentenceScorer.of(config))

    def steps(self, question: str):
        cfg, uses = self.config, self.uses
        first = run_stage(ClusterRetriever(*uses.clusters, self.corpus, uses.documents,
                                           uses.cluster_text), question, (), cfg.K)
        yield first
        members = expand_to_documents(self.corpus, first.candidates)
        pre = run_stage(uses.preranker, question, members, cfg.N)
        yield pre
        passages = chunk_documents(self.corpus, pre.candidates, Chunker(cfg.passage_tokens))
        post = run_stage(FiDPostRanker(cfg.reader, uses.reader.fid,
                                       attention_weight=cfg.attention_weight,
                                       **self._prior(uses.prior)), question, passages, cfg.H)
        yield post
        yield from self.read(question, post.candidates)

    def _prior(self, stored: StoredScoreReranker | None) -> dict:
        """The post-ranker's prior order (its `prior` and `prior_name` arguments)."""
        if stored is None:
            return {}
        if stored.documents.stand_in_reason:  # no stored passage vectors
            return {"prior_name": "the pre-ranker's order (no passage cosines: "
                                  f"{stored.documents.stand_in_reason})"}
        cosine = stored.scores
        if self.config.postrank_prior == "passage":
            return {"prior": cosine, "prior_name": "each passage's stored dense cosine"}
        return {"prior": lambda query, passages: fused_scores(cosine(query, passages), 0.5),
                "prior_name": "the pre-ranker's order and passage cosines, fused"}


SPEC = ParadigmSpec(
    name=FunnelParadigm.name, label="FunnelRAG (clusters → documents → passages)",
    description="BM25 over clusters, documents pre-ranked, later chunking, FiD attention "
                "post-ranking, then the reader.",
    config=FunnelConfig, paradigm=FunnelParadigm)
