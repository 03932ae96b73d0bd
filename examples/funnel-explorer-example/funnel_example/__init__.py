"""A Funnel Explorer plugin: BM25 over passages, re-ranked by a re-ranker of its own."""
from dataclasses import dataclass

from engine.api import (
    BM25,
    BM25Retriever,
    Paradigm,
    ParadigmSpec,
    Reader,
    ReaderConfig,
    Reranker,
    RerankerSpec,
    Resources,
    UnitConfig,
    options,
    param,
    query_terms,
    run_stage,
)


class WordOverlapReranker(Reranker):
    """Candidates by the share of the query's words in their title and text."""
    def __init__(self, granularity: str = "passages", name: str = "word-overlap") -> None:
        self.granularity, self.name = granularity, name

    def scores(self, query, candidates):
        words = query_terms(query)
        return [len(words & query_terms(f"{c.unit.title} {c.unit.text}")) / max(1, len(words))
                for c in candidates]


@dataclass(frozen=True)
class OverlapConfig:
    M: int = param(20, "M: passages BM25 retrieves", low=1, high=200)
    k: int = param(4, "k: passages kept and read", low=1, high=20)
    reader: ReaderConfig = options.reader()  # the built-ins' shared option

    def __post_init__(self):
        options.check_kept(self, "k", "M", "the re-ranker cannot keep more than BM25 found")


@dataclass(frozen=True)
class OverlapResources(Resources):
    index: BM25
    reader: Reader


class OverlapParadigm(Paradigm):
    name = "overlap"  # the built-in stages, and the re-ranker above

    @classmethod
    def resources(cls, config):
        return OverlapResources(BM25(UnitConfig("passages")), Reader(config.reader))

    def steps(self, question):
        yield (found := run_stage(BM25Retriever(self.uses.index), question, (), self.config.M))
        kept = run_stage(WordOverlapReranker(), question, found.candidates, self.config.k)
        yield kept
        yield from self.read(question, kept.candidates)


OVERLAP = ParadigmSpec("overlap", "Word overlap (an example plugin)",
                       "BM25 over passages, re-ranked by query-word overlap, then the reader.",
                       OverlapConfig, OverlapParadigm)
WORD_OVERLAP = RerankerSpec("word-overlap", "the share of the query's words in each candidate",
                            lambda corpus, passages, **how: WordOverlapReranker(**how))
