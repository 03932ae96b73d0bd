"""A paradigm of the example plugin: dense top-M passages, re-ranked to k by reciprocal rank
fusion (funnel_example.rrf) over the indexes it declares, then the reader."""
from dataclasses import dataclass

from engine.api import (
    BM25,
    Dense,
    DenseRetriever,
    Paradigm,
    ParadigmSpec,
    Reader,
    ReaderConfig,
    UnitConfig,
    options,
    param,
    run_stage,
)
from funnel_example.rrf import RRF, Rankings


@dataclass(frozen=True)
class FusionConfig:
    M: int = param(50, "M: passages from dense retrieval", low=1, high=1000)
    k: int = param(4, "k: passages RRF keeps and the reader reads", low=1, high=50)
    reader: ReaderConfig = options.reader()

    def __post_init__(self):
        options.check_kept(self, "k", "M", "RRF cannot keep more passages than were found")


@dataclass(frozen=True)
class FusionUses(Rankings):  # the re-ranker's indexes, and the reader
    reader: Reader


class FusionParadigm(Paradigm):
    name = "fusion"

    @classmethod
    def resources(cls, config):
        passages = UnitConfig("passages")
        return FusionUses(BM25(passages), Dense(passages), Reader(config.reader))

    def steps(self, question):
        yield (found := run_stage(DenseRetriever(self.uses.dense), question, (), self.config.M))
        yield (kept := run_stage(RRF(self.uses), question, found.candidates, self.config.k))
        yield from self.read(question, kept.candidates)


FUSION = ParadigmSpec("fusion", "Dense, then RRF (an example plugin)", "Dense top-M passages, "
                      "re-ranked by reciprocal rank fusion of BM25 and the dense index.",
                      FusionConfig, FusionParadigm)
