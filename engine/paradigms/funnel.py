"""FunnelRAG (Zhao et al.): coarse to fine, each stage handing fewer, smaller units on.

BM25 over ~S-token clusters (K) -> the clusters' documents pre-ranked (N) -> later chunking
of those documents into passages -> FiD attention post-ranking (H) -> the reader answers
over the H passages (one LLM step).

Defaults are scaled to the pooled corpus (23k documents) and recorded in bench/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import check_config, param
from engine.errors import ConfigError
from engine.index.store import shared_indexes
from engine.paradigms.base import Need, Paradigm, ParadigmSpec
from engine.paradigms.needs import bm25_need, ranker_need, reader_need
from engine.readers.reader import ReaderConfig, answer
from engine.stages.base import run_stage
from engine.stages.expand import chunk_documents, expand_to_documents
from engine.stages.postrank import FiDPostRanker
from engine.stages.rerank import shared_reranker
from engine.stages.retrieve import BM25Retriever
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker
from engine.units.cluster import ALGORITHMS


@dataclass(frozen=True)
class FunnelConfig:
    cluster_algorithm: str = param("longrag", "how documents are grouped into clusters",
                                   choices=ALGORITHMS)
    cluster_tokens: int = param(2048, "S: largest cluster, in tokens", low=64, high=65536)
    K: int = param(10, "K: clusters kept by BM25", low=1, high=200)
    N: int = param(8, "N: documents kept by the pre-ranker", low=1, high=200)
    H: int = param(4, "H: passages kept by the post-ranker and read", low=1, high=50)
    passage_tokens: int = param(100, "passage size in tokens (later chunking)", low=16,
                                high=1000)
    # the bi-encoder, not the trained cross-encoder: on dev500 it keeps far more gold
    # documents (bench/preranker_recall.py; the cross-encoder's failure is in bench/README.md)
    preranker: str = param("bi-encoder", "pre-ranker: bi-encoder, trained (the cross-encoder "
                           "trained here), or a cross-encoder folder or hub id")
    # mean_tokens, not eq3: on HotpotQA *train* paragraphs it finds the supporting ones best
    # (recall@2 0.40 vs eq3 0.23, random 0.18; bench/fid_scoring.py, bench/README.md).
    reader: ReaderConfig = param(ReaderConfig(aggregation="mean_tokens"), "the reader")

    def __post_init__(self) -> None:
        check_config(self)
        if self.reader.endpoint:
            raise ConfigError("The funnel's post-ranker reads the reader's attention, which "
                              "a remote endpoint cannot give; leave reader.endpoint empty "
                              "(use an endpoint with the flat paradigm).")

    def clusters(self) -> UnitConfig:
        return UnitConfig("clusters", cluster_algorithm=self.cluster_algorithm,
                          cluster_tokens=self.cluster_tokens)


class FunnelParadigm(Paradigm):
    name = "funnel"

    @classmethod
    def needs(cls, config: FunnelConfig) -> tuple[Need, ...]:
        return (bm25_need(config.clusters()), reader_need(config.reader.model),
                ranker_need(config.preranker))

    def steps(self, question: str):
        cfg = self.config
        index = shared_indexes().bm25(self.corpus, cfg.clusters())
        first = run_stage(BM25Retriever(index), question, (), cfg.K)
        yield first
        documents = expand_to_documents(self.corpus, first.candidates)
        pre = run_stage(shared_reranker(cfg.preranker), question, documents, cfg.N)
        yield pre
        passages = chunk_documents(self.corpus, pre.candidates, Chunker(cfg.passage_tokens))
        post = run_stage(FiDPostRanker(cfg.reader), question, passages, cfg.H)
        yield post
        yield answer(question, post.candidates, cfg.reader)


SPEC = ParadigmSpec(
    name=FunnelParadigm.name, label="FunnelRAG (clusters → documents → passages)",
    description="BM25 over clusters, documents pre-ranked, later chunking, FiD attention "
                "post-ranking, then the reader.",
    config=FunnelConfig, paradigm=FunnelParadigm)
