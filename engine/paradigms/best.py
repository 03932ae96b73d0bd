"""The best-practices pipeline (Wang et al., "Searching for Best Practices in
Retrieval-Augmented Generation"): each module switchable, each its own stage or LLM step.

query classification (is retrieval needed?) -> HyDE pseudo-document (optional, an LLM
step) -> hybrid search: alpha x BM25 + dense on min-max normalised scores -> re-ranking
(optional) -> extractive summarisation (optional) -> repacking (the reader's packing) ->
the generator. A request the classifier sends past retrieval is answered without context,
and the trace says so.

Defaults follow the paper where it is explicit (alpha 0.3, reverse repacking); the
re-ranker (the bi-encoder's stored vectors) and the 200-token summary were chosen on the
training questions (bench/best_ablation.py --part defaults; figures in
docs/benchmarks/longrag-best.md, "best's defaults, chosen on the training questions").
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import check_config, param
from engine.paradigms import options
from engine.paradigms.base import Paradigm, ParadigmSpec
from engine.paradigms.needs import Resources
from engine.paradigms.resources import (
    BM25,
    Dense,
    Encoder,
    QueryClassifier,
    Ranker,
    Reader,
    SentenceScorer,
)
from engine.readers.reader import ReaderConfig, hyde
from engine.stages.base import run_stage
from engine.stages.classify import QueryClassification
from engine.stages.prune import PruneConfig
from engine.stages.rerank import BI_ENCODER
from engine.stages.retrieve import SEARCHES, HybridRetriever
from engine.stages.summarise import ExtractiveSummariser
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

NO_RERANK = "none"


@dataclass(frozen=True)
class BestConfig:
    classify: bool = param(True, "query classification: skip retrieval for requests that "
                           "need none")
    classifier: str = param("trained", "query classifier: trained (here; until it is, "
                            "always-retrieve stands in), always-retrieve, or a "
                            "sequence-classifier folder or hub id (label 1: needs retrieval)",
                            names="models")
    hyde: bool = param(False, "HyDE: search the dense index with a generated pseudo-document "
                       "plus the question (one more LLM call)")
    search: str = param("hybrid", "retrieval: hybrid (alpha x BM25 + dense), bm25 or dense",
                        choices=SEARCHES)
    alpha: float = param(0.3, "hybrid search: weight of the min-max scaled BM25 score",
                         low=0.0, high=10.0)
    M: int = param(50, "M: passages retrieved (each list's depth in hybrid search)", low=1,
                   high=1000)
    reranker: str = param(BI_ENCODER, "re-ranker of the M passages found: none, bi-encoder "
                          "(stored vectors), trained, a plugin's (the Models table lists "
                          "them), or a cross-encoder folder or hub id", names="models")
    bi_encoder: str = options.bi_encoder("the search, the bi-encoder re-ranker and the "
                                         "summariser")
    k: int = param(4, "k: passages handed to summarisation and the reader", low=1, high=50)
    summarise: bool = param(True, "extractive summarisation: keep the sentences closest to "
                            "the question")
    summary_tokens: int = param(200, "summarisation budget, in tokens", low=16, high=4096)
    passage_tokens: int = options.passage_tokens("passage size in tokens (shared with flat)")
    prune: PruneConfig = options.prune()
    reader: ReaderConfig = options.reader("the generator (its packing is the repacking "
                                          "module)")

    def __post_init__(self) -> None:
        check_config(self)
        options.check_kept(self, "k", "M", "the pipeline cannot keep more passages than "
                           "retrieval found")

    def passages(self) -> UnitConfig:
        return UnitConfig("passages", chunker=Chunker(self.passage_tokens))


@dataclass(frozen=True)
class BestResources(Resources):
    reader: Reader  # answers, and writes HyDE's pseudo-document
    classifier: QueryClassifier | None
    bm25: BM25 | None
    dense: Dense | None
    ranker: Ranker | None
    summariser: Encoder | None  # scores sentences: no index of its own
    pruner: SentenceScorer | None = None  # the sentence cut's scorer (prune on)


class BestParadigm(Paradigm):
    name = "best"

    @classmethod
    def resources(cls, config: BestConfig) -> BestResources:
        passages = config.passages()
        return BestResources(
            reader=Reader(config.reader),
            classifier=QueryClassifier(config.classifier) if config.classify else None,
            bm25=BM25(passages) if config.search != "dense" else None,
            dense=Dense(passages, config.bi_encoder) if config.search != "bm25" else None,
            ranker=Ranker(config.reranker, passages, config.bi_encoder,
                          granularity="passages", name="reranker")
            if config.reranker != NO_RERANK else None,
            summariser=Encoder(config.bi_encoder) if config.summarise else None,
            pruner=SentenceScorer.of(config))

    def steps(self, question: str):
        cfg, uses = self.config, self.uses
        if uses.classifier is not None:
            routed = run_stage(QueryClassification(uses.classifier), question, (), 1)
            yield routed
            if not routed.details.decision.retrieve:  # no cut: nothing was retrieved
                if not self.retrieval_only:
                    yield from self.reader_steps(question, ())
                return
        dense_query = ""
        if cfg.hyde:
            pseudo = hyde(question, cfg.reader, uses.reader)
            yield pseudo
            dense_query = f"{question} {pseudo.output.strip()}"
        rerank = uses.ranker is not None
        found = run_stage(HybridRetriever(uses.bm25, uses.dense, cfg.alpha, cfg.M, dense_query,
                                          cfg.search), question, (), cfg.M if rerank else cfg.k)
        yield found
        kept = found
        if rerank:
            kept = run_stage(uses.ranker, question, found.candidates, cfg.k)
            yield kept
        if uses.summariser is not None:
            kept = run_stage(ExtractiveSummariser(uses.summariser, cfg.bi_encoder,
                                                  cfg.summary_tokens),
                             question, kept.candidates, cfg.k)
            yield kept
        yield from self.read(question, kept.candidates)


SPEC = ParadigmSpec(
    name=BestParadigm.name, label="Best practices (classify → hybrid → summarise)",
    description="Query classification, hybrid search (optionally with HyDE), optional "
                "re-ranking, extractive summarisation, repacking and the generator.",
    config=BestConfig, paradigm=BestParadigm)
