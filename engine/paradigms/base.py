"""What every paradigm shares: steps in, a RunTrace out.

A paradigm is a generator of steps: each `StageResult` (a ranking stage, timed by
`run_stage`) and each `LLMStep` (a generator call: an answer, a long answer, a HyDE
pseudo-document) is yielded as it finishes. `Paradigm.stream` turns the steps into a
trace after every step; the run's answer is that of its last "answer" step, and reader
tokens and LLM calls are counted from the steps. With a `Question`, gold flags and metrics
are filled in too.

What a paradigm needs prepared (indexes, models) is declared as `Need`s (engine.paradigms
.needs, below this module, as are `StageAt` and `Progress`), so the
app can prepare them in the background and say what a paradigm still waits for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from copy import copy
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

from engine.config import Option, describe
from engine.documents import Candidate, Corpus, Question
from engine.errors import ConfigError
from engine.metrics import (
    answer_in,
    answer_recall_at,
    at_stage,
    document_ranking,
    exact_match,
    f1_score,
    gold_document_recall,
    ir_measures_by_stage,
    refined_exact_match,
)
from engine.paradigms.needs import Need, StageAt, needs_of
from engine.readers.reader import answer
from engine.stages.base import leaving_out, run_stage
from engine.stages.classify import QUERY
from engine.stages.prune import SentencePruner
from engine.trace import LLMStep, RunTrace, StageResult, gold_flags, gold_sentences_held

# a question longer than this is refused as pasted by mistake; a test collection's queries
# can be whole arguments (BEIR's ArguAna: up to 5,500 characters, 103 of 1,406 over 2,000)
MAX_QUESTION_CHARS = 8_000

Step = StageResult | LLMStep


class Paradigm(ABC):
    """A retrieval paradigm over one corpus with one config, handed what it uses: its
    `resources(config)` loaded (engine.service.store.make_paradigm loads them from the
    process's store), so its steps look nothing up."""

    name: ClassVar[str]

    def __init__(self, corpus: Corpus, config: Any, uses: Any = None, *,
                 retrieval_only: bool = False) -> None:
        self.corpus, self.config, self.uses = corpus, config, uses
        self.retrieval_only = retrieval_only  # stop after the last cut: no reader

    @classmethod
    def resources(cls, config: Any) -> Any:
        """What this paradigm runs on with `config`: a frozen dataclass of
        engine.paradigms.resources objects (a `Resources`), loaded into `self.uses` before
        it runs (None: nothing)."""
        return None

    @classmethod
    def needs(cls, config: Any) -> tuple[Need, ...]:
        """What this paradigm needs prepared to run with `config`: its resources' needs."""
        resources = cls.resources(config)
        return needs_of(resources) if resources is not None else ()

    @abstractmethod
    def steps(self, question: str) -> Iterator[Step]:
        """Yield every stage result and LLM call as it finishes."""

    def read(self, question: str, candidates: Sequence[Candidate]) -> Iterator[Step]:
        """What `steps` yields after its last cut: the sentence cut when the config's
        `prune` is on (a retrieval-only run makes it too: it is a cut), then the reader's
        steps (`reader_steps`) over what it kept, none in a retrieval-only run."""
        pruner = getattr(self.uses, "pruner", None)
        cut = pruner is not None  # on no candidates too: every run of a config has its cuts
        if cut:
            pruned = run_stage(SentencePruner(pruner, self.config.prune,
                                              self.config.prune.scorer),
                               question, candidates, len(candidates))
            yield pruned
            candidates = pruned.candidates
        if not self.retrieval_only:
            # after a cut, the heatmap's rows are the sentences read (asked only then, so a
            # plugin's reader_steps without the keyword still reads uncut passages)
            yield from self.reader_steps(question, candidates,
                                         **({"sentences": True} if cut else {}))

    def reader_steps(self, question: str, candidates: Sequence[Candidate], *,
                     sentences: bool = False) -> Iterator[LLMStep]:
        """The reader over the final candidates: one answer step (LongRAG reads in two
        turns). Re-answering a run with other passages calls this alone. `sentences`: the
        candidates are what a sentence cut left, and the attention is kept per sentence."""
        yield answer(question, candidates, self.config.reader, self.uses.reader,
                     sentences=sentences)

    def run(self, question: str | Question) -> RunTrace:
        """Run the paradigm; with a Question, gold flags and metrics are filled in too."""
        *_, trace = self.stream(question)
        return trace

    def stream(self, question: str | Question) -> Iterator[RunTrace]:
        """Yield the trace after every step; the last one is the finished run."""
        gold = question if isinstance(question, Question) else None
        text = check_question(gold.text if gold else question)
        corpus = {"name": self.corpus.name, "fingerprint": self.corpus.fingerprint,
                  "documents": len(self.corpus)}
        trace = RunTrace(question=text, paradigm=self.name, config=asdict(self.config),
                         stages=(), corpus=corpus)
        runner = self
        if gold is not None and gold.judged_only and not self.retrieval_only:
            # a test collection's query has no answer to find: its run stops after the last
            # cut (a copy stops, so a paradigm shared between runs keeps its reader)
            runner = copy(self)
            runner.retrieval_only = True
        # a test collection's query that is itself a corpus document (ArguAna's) takes no
        # cut's place, as in BEIR; set around each step alone, so it stays this run's
        own = frozenset({gold.own_document}) if gold is not None and gold.own_document \
            else frozenset()
        steps = runner.steps(text)
        while True:
            with leaving_out(own):
                step = next(steps, None)
            if step is None:
                return
            if isinstance(step, StageResult):
                trace = replace(trace, stages=(*trace.stages, step))
            else:
                trace = replace(trace, llm_steps=(*trace.llm_steps, step))
                if step.purpose == "answer":
                    trace = replace(trace, answer=step.answer)
            yield annotate(trace, gold) if gold else trace


# how the service makes paradigm `name` over a corpus from a JSON-style config, handed what
# it uses (engine.service.store.make_paradigm); evaluation code that makes paradigms in other
# processes (Ray workers) is given it
MakeParadigm = Callable[[str, Corpus, "dict | None"], Paradigm]


@dataclass(frozen=True)
class ParadigmSpec:
    """A paradigm as the rest of the engine and the app see it."""

    name: str
    label: str
    description: str
    config: type  # a frozen dataclass of `engine.config.param` fields
    paradigm: type[Paradigm]

    def options(self) -> list[Option]:
        return describe(self.config)

    def needs(self, config: object | None = None) -> tuple[Need, ...]:
        """What the paradigm needs prepared with `config` (its defaults when None)."""
        return self.paradigm.needs(config if config is not None else self.config())


@dataclass(frozen=True)
class RerankerSpec:
    """A re-ranker a plugin adds, named in any paradigm's re-ranker option (flat's and
    best's `reranker`, funnel's `preranker`) as the built-in ones are. `make(corpus,
    passages, granularity=..., name=...)` returns the stage (an engine.stages.base.Reranker
    over candidates of that granularity, called `name` in traces).

    `resources(at)` (a `StageAt`) declares what the stage reads as a paradigm declares it:
    a `Resources` dataclass of engine.paradigms.resources objects (`BM25(at.units)`,
    `Dense(at.units, at.bi_encoder)`, ...), or None. The app then prepares them in the
    background with the paradigm that names the re-ranker (they are among its needs), and
    `make` is handed them loaded as `uses=` (an engine.paradigms.needs.Uses: one field
    per resource, and `uses.stand_in`, what stands in for one of them, None when every one
    is the real thing)."""

    name: str
    description: str
    make: Callable[..., object]
    resources: Callable[[StageAt], Any] | None = None


@dataclass(frozen=True)
class RetrieverSpec:
    """A first-stage retriever a plugin adds, named in flat's `retriever` option.
    `make(corpus, passages)` returns the stage (an engine.stages.base.Stage whose `run`
    ignores the candidates it is given and returns the top `k` units of `passages`, an
    engine.units.build.UnitConfig, of `corpus`); it is made once per corpus (and again
    when a resource that stood in is replaced by the real one) and kept. `resources(at)`
    declares what it reads, handed to `make` loaded as `uses=`, as for a `RerankerSpec`."""

    name: str
    description: str
    make: Callable[..., object]
    resources: Callable[[StageAt], Any] | None = None


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
    """Gold flags per stage and the metrics of a run whose gold is known. A question without
    answers (a test collection's query) has no answer measures: they are left out, not 0."""
    flags = tuple(gold_flags(stage, gold) for stage in trace.stages)
    metrics: dict[str, float] = {}
    ranked = [s for s in trace.stages if s.granularity != QUERY]
    if trace.stages and gold.answers:
        # what the reader read: the last ranking stage's units (none when a query
        # classification skipped retrieval)
        final = ranked[-1].candidates if ranked else ()
        recall = answer_recall_at([c.unit.text for c in final], gold.answers, (1, 2, 3, 4))
        metrics = {f"AR@{k}": float(hit) for k, hit in recall.items()}
        # everything the reader reads (a token cap may read fewer); a run whose query
        # classification skipped retrieval read nothing, so none of the answer: 0, as in
        # AR@k (its mean was once over the questions that retrieved alone: best's "AR@4
        # 0.2" beside "answer recall of all the reader read 1.000")
        metrics["AR@read"] = float(answer_in([c.unit.text for c in trace.read],
                                             gold.answers)) if ranked else 0.0
    if ranked and gold.supporting_titles:  # nDCG, MRR, MAP, R@k, P@k of every cut (trec_eval's)
        judged = bool(gold.judgments)  # a collection's: graded, partial
        # a collection's query that is itself a corpus document (ArguAna's) is left out of
        # its own measured rankings, as BEIR does (ignore_identical_ids): a cluster or a
        # group holding it is in its cut
        own = gold.own_document
        rankings = {s.name: [d for d in document_ranking([c.unit.doc_ids for c in s.candidates])
                             if not (own and d == own)]
                    for s in ranked}
        for name, measured in ir_measures_by_stage(rankings, gold.grades, judged).items():
            metrics.update({at_stage(measure, name): round(value, 4)
                            for measure, value in measured.items()})
    for stage, stage_flags in zip(trace.stages, flags, strict=True):
        if stage.granularity == QUERY:
            continue
        # at every cut: does anything the stage kept still hold the answer, and how many
        # of the gold documents survive
        if gold.answers:
            metrics[at_stage("AR", stage.name)] = float(any(stage_flags.answer))
        docs = [c.unit.doc_ids for c in stage.candidates]
        if gold.supporting_sentences:  # the sentence-level gold (HotpotQA's): how many held
            held = gold_sentences_held(stage, gold)
            metrics[at_stage("gold_sent_recall", stage.name)] = round(sum(held) / len(held), 4)
        if gold.supporting_titles:  # a question naming none has no such recall (shown "-")
            metrics[at_stage("gold_doc_recall", stage.name)] = gold_document_recall(
                docs, gold.supporting_titles, len(docs)) if docs \
                else 0.0  # a stage that kept nothing keeps no gold
    if trace.answered and gold.answers:
        metrics["EM"] = exact_match(trace.answer, gold.answers)
        metrics["F1"] = f1_score(trace.answer, gold.answers)
        metrics["refined_EM"] = refined_exact_match(trace.answer, gold.answers)
    return replace(trace, gold=gold, gold_flags=flags, metrics=metrics)
