"""The paradigms, each a small class over stages, and the registry that builds them by name.

- `funnel` (FunnelRAG): BM25 over clusters (K) -> documents of those clusters pre-ranked by
  a cross-encoder (N) -> later chunking into passages -> FiD attention post-ranking (H),
  answer decoded over the H passages.
- `flat`: dense retrieval over early-chunked passages (M) -> cross-encoder rerank (k) ->
  the same reader answers over the k passages.

Defaults are scaled to the pooled corpus (23k documents) and recorded in bench/README.md.
Every config is a frozen dataclass that round-trips through JSON, so a saved run records
the exact funnel.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from engine.chunking import Chunker
from engine.errors import ConfigError, check_choice, check_range
from engine.fid import FiDReader, ReaderConfig
from engine.metrics import answer_recall_at, exact_match, f1_score, gold_document_recall
from engine.pipeline import chunk_documents, expand_to_documents, run_stage
from engine.trace import RunTrace, StageResult, gold_flags
from engine.types import Corpus, Question
from engine.units import UnitConfig

MAX_QUESTION_CHARS = 2_000


@dataclass(frozen=True)
class FunnelConfig:
    cluster_algorithm: str = "longrag"
    cluster_tokens: int = 2048  # S
    K: int = 10  # clusters from BM25
    N: int = 8  # documents kept by the pre-ranker
    H: int = 4  # passages kept by the post-ranker
    passage_tokens: int = 100
    # the bi-encoder, not the trained cross-encoder: on dev500 it keeps far more gold
    # documents (bench/preranker_recall.py; the cross-encoder's failure is in bench/README.md)
    preranker: str = "bi-encoder"
    # mean_tokens, not eq3: on HotpotQA *train* paragraphs it finds the supporting ones best
    # (recall@2 0.40 vs eq3 0.23, random 0.18; bench/fid_scoring.py, bench/README.md).
    reader: ReaderConfig = field(default_factory=lambda: ReaderConfig(aggregation="mean_tokens"))

    def __post_init__(self) -> None:
        check_range("K", self.K, 1, 200)
        check_range("N", self.N, 1, 200)
        check_range("H", self.H, 1, 50)
        UnitConfig("clusters", cluster_algorithm=self.cluster_algorithm,
                   cluster_tokens=self.cluster_tokens)
        Chunker(self.passage_tokens)


@dataclass(frozen=True)
class FlatConfig:
    M: int = 50  # passages from dense retrieval
    k: int = 4  # passages kept by the reranker and read
    passage_tokens: int = 100
    bi_encoder: str = "minilm"
    # "bi-encoder" re-scores with the model that retrieved: the order stays the dense one.
    # A cross-encoder (a folder, hub id or "trained") is what the paradigm is built for, but
    # none available offline beats that order (bench/README.md)
    reranker: str = "bi-encoder"
    reader: ReaderConfig = field(default_factory=ReaderConfig)

    def __post_init__(self) -> None:
        check_range("M", self.M, 1, 1000)
        check_range("k", self.k, 1, min(self.M, 50))
        Chunker(self.passage_tokens)


class Paradigm(ABC):
    """A retrieval funnel that turns a question into a RunTrace."""

    name: str
    config: Any

    def __init__(self, corpus: Corpus, config: Any) -> None:
        self.corpus, self.config = corpus, config

    def run(self, question: str | Question) -> RunTrace:
        """Run the funnel; with a Question, gold flags and metrics are filled in too."""
        *_, trace = self.stream(question)
        return trace

    def stream(self, question: str | Question) -> Iterator[RunTrace]:
        """Yield the trace after every stage (answer empty), then the finished trace."""
        gold = question if isinstance(question, Question) else None
        text = check_question(gold.text if gold else question)
        stages: list[StageResult] = []
        for step in self._steps(text):
            if isinstance(step, StageResult):
                stages.append(step)
                partial = RunTrace(question=text, paradigm=self.name,
                                   config=asdict(self.config), stages=tuple(stages))
                yield annotate(partial, gold) if gold else partial
        answer, tokens, reader_seconds = step
        trace = RunTrace(question=text, paradigm=self.name, config=asdict(self.config),
                         stages=tuple(stages), answer=answer, reader_input_tokens=tokens,
                         reader_seconds=reader_seconds, llm_calls=1 if answer else 0)
        yield annotate(trace, gold) if gold else trace

    @abstractmethod
    def _steps(self, question: str) -> Iterator[StageResult | tuple[str, int, float]]:
        """Yield each StageResult as it finishes, then (answer, reader input tokens,
        answer seconds)."""


class FunnelParadigm(Paradigm):
    name = "funnel"

    @cached_property
    def clusters(self):
        """The cluster BM25 index, loaded (and verified) once per paradigm, not per question."""
        from engine.bm25 import bm25_index

        cfg = self.config
        return bm25_index(self.corpus, UnitConfig(
            "clusters", cluster_algorithm=cfg.cluster_algorithm,
            cluster_tokens=cfg.cluster_tokens))

    @cached_property
    def preranker(self):
        from engine.stages.rerank import make_reranker

        return make_reranker(self.config.preranker)

    def _steps(self, question: str):
        from engine.stages.retrievers import BM25Retriever

        cfg = self.config
        first = run_stage(BM25Retriever(self.clusters), question, (), cfg.K)
        yield first
        documents = expand_to_documents(self.corpus, first.candidates)
        pre = run_stage(self.preranker, question, documents, cfg.N)
        yield pre
        passages = chunk_documents(self.corpus, pre.candidates, Chunker(cfg.passage_tokens))
        post = run_stage(_post_ranker(cfg.reader), question, passages, cfg.H)
        answer_seconds = post.extras.get("answer_seconds", 0.0)
        yield replace(post, seconds=max(0.0, post.seconds - answer_seconds))
        yield post.extras.get("answer", ""), post.extras.get("input_tokens", 0), answer_seconds


class FlatParadigm(Paradigm):
    name = "flat"

    @cached_property
    def index(self):
        """The dense passage index, loaded (and verified) once per paradigm."""
        from engine.dense import dense_index

        cfg = self.config
        passages = UnitConfig("passages", chunker=Chunker(cfg.passage_tokens))
        return dense_index(self.corpus, passages, model=cfg.bi_encoder)

    @cached_property
    def reranker(self):
        from engine.stages.rerank import make_reranker

        return make_reranker(self.config.reranker, name="reranker", granularity="passages")

    def _steps(self, question: str):
        from engine.stages.postrank import reader_extras
        from engine.stages.retrievers import DenseRetriever

        cfg = self.config
        first = run_stage(DenseRetriever(self.index), question, (), cfg.M)
        yield first
        ranked = run_stage(self.reranker, question, first.candidates, cfg.k)
        out = _reader(cfg.reader).read(question, [(c.unit.title, c.unit.text)
                                                  for c in ranked.candidates])
        # the reader's attention over the k passages it read, for the same heatmap as funnel
        reading = reader_extras(ranked.candidates, out)
        yield replace(ranked, extras={**ranked.extras, **reading})
        yield out.answer, out.input_tokens, out.encode_seconds + out.score_seconds \
            + out.answer_seconds


def _reader(config: ReaderConfig) -> FiDReader:
    return _READERS.setdefault(config, FiDReader(config))


def _post_ranker(config: ReaderConfig):
    from engine.stages.postrank import FiDPostRanker

    return FiDPostRanker(_reader(config))


_READERS: dict[ReaderConfig, FiDReader] = {}

PARADIGMS: dict[str, tuple[type[Paradigm], type]] = {
    "funnel": (FunnelParadigm, FunnelConfig),
    "flat": (FlatParadigm, FlatConfig),
}


def make_paradigm(name: str, corpus: Corpus, config: dict | None = None) -> Paradigm:
    """Build paradigm `name` over `corpus` from a JSON-style config dict (defaults if None)."""
    check_choice("paradigm", name, PARADIGMS)
    cls, config_cls = PARADIGMS[name]
    return cls(corpus, config_from_dict(config_cls, config or {}))


def config_from_dict(config_cls: type, values: dict) -> Any:
    """A config dataclass from a dict; unknown keys are refused with the valid ones listed."""
    valid = {f.name for f in fields(config_cls)}
    unknown = sorted(set(values) - valid)
    if unknown:
        raise ConfigError(f"Unknown option(s) {', '.join(unknown)} for {config_cls.__name__}. "
                          f"Valid options: {', '.join(sorted(valid))}.")
    values = dict(values)
    if isinstance(values.get("reader"), dict):
        values["reader"] = config_from_dict(ReaderConfig, values["reader"])
    try:
        return config_cls(**values)
    except TypeError as err:
        raise ConfigError(f"Bad option value for {config_cls.__name__}: {err}") from None


def check_question(text: str) -> str:
    """The question, stripped; empty or oversized questions are refused."""
    text = (text or "").strip()
    if not text:
        raise ConfigError("The question is empty. Type a question, e.g. "
                          "'Who painted A Sunday Afternoon on the Island of La Grande Jatte?'.")
    if len(text) > MAX_QUESTION_CHARS:
        raise ConfigError(f"The question has {len(text):,} characters; the limit is "
                          f"{MAX_QUESTION_CHARS:,}. Shorten it.")
    return text


def annotate(trace: RunTrace, gold: Question) -> RunTrace:
    """Gold flags per stage and the metrics of a run whose gold is known."""
    flags = tuple(gold_flags(stage, gold) for stage in trace.stages)
    final = trace.stages[-1].candidates
    recall = answer_recall_at([c.unit.text for c in final], gold.answers, (1, 2, 3, 4))
    metrics = {f"AR@{k}": float(hit) for k, hit in recall.items()}
    for stage, stage_flags in zip(trace.stages, flags, strict=True):
        # at every cut: does anything the stage kept still hold the answer, and how many
        # of the gold documents survive
        metrics[f"AR@{stage.name}"] = float(any(stage_flags.answer))
        docs = [c.unit.doc_ids for c in stage.candidates]
        metrics[f"gold_doc_recall@{stage.name}"] = gold_document_recall(
            docs, gold.supporting_titles, len(docs)) if gold.supporting_titles else 0.0
    if trace.answer:
        metrics["EM"] = exact_match(trace.answer, gold.answers)
        metrics["F1"] = f1_score(trace.answer, gold.answers)
    return replace(trace, gold=gold, gold_flags=flags, metrics=metrics)
