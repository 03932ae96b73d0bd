"""Flat retrieval, the baseline of FunnelRAG and LongRAG: one granularity, one big index.

Passages chunked up front ("early chunking") -> dense bi-encoder top-M over all of them (or
BM25's, or a plugin's first-stage retriever) -> re-ranking to k -> the reader answers over the k
passages (one LLM step).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import check_config, param
from engine.paradigms import options
from engine.paradigms.base import Paradigm, ParadigmSpec
from engine.paradigms.needs import Resources
from engine.paradigms.resources import BM25, Dense, Ranker, Reader, Retriever, SentenceScorer
from engine.readers.reader import ReaderConfig
from engine.stages.base import run_stage
from engine.stages.prune import PruneConfig
from engine.stages.rerank import BI_ENCODER, NONE
from engine.stages.retrieve import BM25Retriever, DenseRetriever
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

AUTO = "auto"  # the re-ranker that follows the first stage


def _retrievers() -> tuple[str, ...]:
    from engine.paradigms.registry import retriever_choices

    return retriever_choices()


@dataclass(frozen=True)
class FlatConfig:
    M: int = param(50, "M: passages from dense retrieval", low=1, high=1000)
    k: int = param(4, "k: passages kept by the re-ranker and read", low=1, high=50)
    retriever: str = param("dense", "first stage: dense (the bi-encoder's index of the "
                           "passages), bm25 (their BM25 index) or a retriever a plugin adds",
                           choices=_retrievers)
    passage_tokens: int = options.passage_tokens("passage size in tokens (early chunking)")
    bi_encoder: str = options.bi_encoder("the retrieval and the bi-encoder re-ranker")
    # auto follows the first stage: after dense retrieval "bi-encoder" reads the stored
    # vectors of the model that retrieved (the order stays the dense one, in milliseconds);
    # after BM25 or a plugin's retriever "none" keeps their order, so no dense index is
    # built for a BM25 run (one over a BEIR corpus once encoded 17,688 passages unasked).
    # A cross-encoder (a folder, hub id or "trained") is what the paradigm is built for,
    # but none available offline beats the dense order (docs/benchmarks)
    reranker: str = param(AUTO, "re-ranker: auto (bi-encoder after dense retrieval, none "
                          "after BM25 or a plugin's retriever), none (the first stage's "
                          "order), bi-encoder (stored vectors: the dense order; after BM25 "
                          "it needs the dense index), trained, a plugin's (the Models table "
                          "lists them), or a cross-encoder folder or hub id",
                          names="models")
    prune: PruneConfig = options.prune()
    reader: ReaderConfig = options.reader()

    def __post_init__(self) -> None:
        check_config(self)
        options.check_kept(self, "k", "M", "the re-ranker cannot keep more passages than "
                           "retrieval found")

    def passages(self) -> UnitConfig:
        return UnitConfig("passages", chunker=Chunker(self.passage_tokens))

    def ranker(self) -> str:
        """The re-ranker that runs: `reranker`, auto following the first stage."""
        if self.reranker != AUTO:
            return self.reranker
        return BI_ENCODER if self.retriever == "dense" else NONE


@dataclass(frozen=True)
class FlatResources(Resources):
    reader: Reader
    index: Dense | None  # the first stage: the dense index, BM25, or a plugin's retriever
    ranker: Ranker
    retriever: Retriever | None
    bm25: BM25 | None = None
    pruner: SentenceScorer | None = None  # the sentence cut's scorer (prune on)


class FlatParadigm(Paradigm):
    name = "flat"

    @classmethod
    def resources(cls, config: FlatConfig) -> FlatResources:
        dense, bm25 = config.retriever == "dense", config.retriever == "bm25"
        plugin = not (dense or bm25)
        return FlatResources(
            Reader(config.reader), Dense(config.passages(), config.bi_encoder) if dense else None,
            Ranker(config.ranker(), config.passages(), config.bi_encoder,
                   granularity="passages", name="reranker"),
            Retriever(config.retriever, config.passages(), config.bi_encoder) if plugin
            else None,
            BM25(config.passages()) if bm25 else None,
            pruner=SentenceScorer.of(config))

    def steps(self, question: str):
        cfg, uses = self.config, self.uses
        first_stage = uses.retriever or (BM25Retriever(uses.bm25) if uses.bm25 is not None
                                         else DenseRetriever(uses.index))
        first = run_stage(first_stage, question, (), cfg.M)
        yield first
        ranked = run_stage(uses.ranker, question, first.candidates, cfg.k)
        yield ranked
        yield from self.read(question, ranked.candidates)


SPEC = ParadigmSpec(
    name=FlatParadigm.name, label="Flat (dense top-k passages)",
    description="Dense retrieval over early-chunked passages, re-ranking, then the reader.",
    config=FlatConfig, paradigm=FlatParadigm)
