"""LongRAG (Jiang et al.): a long retriever over long units and a long reader.

Documents grouped into units of up to S tokens (LongRAG's grouping over the link graph) ->
the top k units by MaxP, each unit scoring as its best chunk (the stored passage vectors) ->
their documents, best first, fill the reader's context up to a token cap -> the long reader
answers in two turns: a long answer over the whole context, then the short answer extracted
from it (two LLM steps).

Defaults keep an Explore run on 2 cores within about 8 s (fp32); they are recorded with
their measurements in docs/benchmarks/longrag-best.md, "LongRAG and the best-practices
pipeline".
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import check_config, param
from engine.index.document_scores import SCORERS
from engine.paradigms import options
from engine.paradigms.base import Paradigm, ParadigmSpec
from engine.paradigms.needs import Resources
from engine.paradigms.resources import BM25, Clusters, DocumentScores, Reader, SentenceScorer
from engine.readers.prompts import LONG_ANSWER
from engine.readers.reader import ReaderConfig, answer, extract_answer
from engine.stages.base import run_stage
from engine.stages.expand import ReaderContext
from engine.stages.prune import BUDGET, PruneConfig
from engine.stages.retrieve import LongUnitRetriever
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker


@dataclass(frozen=True)
class LongRAGConfig:
    # 1024: at the ~3k tokens a 2-core run reads, k=4 units of S=1024 hold the answer most
    # often on the training questions (0.738; S=2048, k=2: 0.639;
    # docs/benchmarks/longrag-best.md, "Units: size S and k")
    unit_tokens: int = param(1024, "S: largest unit, in tokens (LongRAG's grouping of linked "
                             "documents)", low=64, high=65536)
    unit_scores: str = param("dense", "how units are ranked: dense (MaxP: the unit's best "
                             "stored passage vector, LongRAG's), hybrid (BM25 + dense, best "
                             "member), bm25 (best member) or text (BM25 over whole units)",
                             choices=(*SCORERS, "text"))
    hybrid_weight: float = options.hybrid_weight()
    k: int = param(4, "k: units read", low=1, high=8)
    # 1000: on 60 training questions EM/F1 0.117/0.151 in 7.4 s a question against
    # 0.100/0.155 in 15.6 s at 2000 (fp32 on 2 cores; docs/benchmarks/longrag-best.md,
    # "LongRAG in half the time"): the 135M reader gains nothing from the second thousand tokens
    context_tokens: int = param(1000, "the reader's context cap, in tokens: the units' "
                                "documents are read best first until it is reached",
                                low=64, high=32768)
    # 2, LongRAG's: on 30 training questions one turn answered as well for less (EM 0.222
    # vs 0.172, within noise at this size), docs/benchmarks/longrag-best.md,
    # "LongRAG's reader: context cap and turns"
    turns: int = param(2, "reader turns: 2 (a long answer, then the short answer extracted "
                       "from it: LongRAG's) or 1 (the short answer at once)", low=1, high=2)
    long_answer_tokens: int = param(48, "longest long answer (first turn), in model tokens",
                                    low=8, high=512)
    bi_encoder: str = options.bi_encoder("the units' MaxP scores")
    index_passage_tokens: int = options.passage_tokens("MaxP chunk size: the passages of the "
                                                       "dense index (shared with flat)")
    # on, 500 tokens: on the training questions the long reader read 19% fewer tokens in 24%
    # less time with the answer as often in what it read (AR@read 0.68 both) and EM/F1 +0.04
    # / +0.057; 150 and 300 cut answers out (docs/benchmarks/reader.md,
    # "The sentence cut")
    prune: PruneConfig = options.prune(mode=BUDGET, tokens=500)
    reader: ReaderConfig = options.reader("the long reader", max_passage_tokens=4096)

    def __post_init__(self) -> None:
        check_config(self)

    def units(self) -> UnitConfig:
        return UnitConfig("clusters", cluster_algorithm="longrag",
                          cluster_tokens=self.unit_tokens)

    def indexed_passages(self) -> UnitConfig:
        return UnitConfig("passages", chunker=Chunker(self.index_passage_tokens))


@dataclass(frozen=True)
class LongRAGResources(Resources):
    reader: Reader
    units: Clusters  # the long retrieval units
    unit_text: BM25 | None  # unit_scores="text": BM25 over the units' own text
    documents: DocumentScores  # scores the units (MaxP) and orders their members
    pruner: SentenceScorer | None = None  # the sentence cut's scorer (prune on)


class LongRAGParadigm(Paradigm):
    name = "longrag"

    @classmethod
    def resources(cls, config: LongRAGConfig) -> LongRAGResources:
        text = config.unit_scores == "text"
        return LongRAGResources(
            Reader(config.reader), Clusters(config.units()),
            BM25(config.units()) if text else None,
            DocumentScores("bm25" if text else config.unit_scores, config.hybrid_weight,
                           config.indexed_passages(), config.bi_encoder),
            pruner=SentenceScorer.of(config))

    def steps(self, question: str):
        cfg, uses = self.config, self.uses
        # with "text", BM25 over whole units ranks them; the documents' BM25 scores order
        # their members
        documents = uses.documents
        found = run_stage(LongUnitRetriever(*uses.units, self.corpus, documents,
                                            uses.unit_text), question, (), cfg.k)
        yield found
        context = run_stage(ReaderContext(self.corpus, cfg.context_tokens, documents=documents),
                            question, found.candidates, cfg.k)
        yield context
        yield from self.read(question, context.candidates)

    def reader_steps(self, question, candidates, *, sentences=False):
        """One answer, or (two turns) a long answer and the short answer drawn from it."""
        cfg = self.config
        if cfg.turns == 1:
            yield answer(question, candidates, cfg.reader, self.uses.reader,
                         sentences=sentences)
            return
        long = answer(question, candidates, cfg.reader, self.uses.reader,
                      purpose="long answer", template=LONG_ANSWER,
                      max_new_tokens=cfg.long_answer_tokens, sentences=sentences)
        yield long
        yield extract_answer(question, long, cfg.reader, self.uses.reader)


SPEC = ParadigmSpec(
    name=LongRAGParadigm.name, label="LongRAG (long units → long reader)",
    description="Documents grouped into long units, MaxP retrieval of the top k units, and a "
                "long reader answering in two turns (long answer, then short answer).",
    config=LongRAGConfig, paradigm=LongRAGParadigm)
