"""Dataset evaluation: run paradigms over a QA file's questions and summarise them.

The corpus defaults to the pooled corpus plus the file's own paragraphs, so a question is
answered from a real haystack. Each (question, paradigm) gives one row; the summary per
paradigm holds the paper-style means (AR@1..4, gold-document recall per stage, EM, F1),
seconds per stage, median total seconds, reader tokens and documents sent to the reader per
question.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

from engine.data.corpus import load_corpus, merge_documents
from engine.data.loaders import read_dataset
from engine.errors import ConfigError
from engine.metrics import has_span_answer
from engine.paradigms.base import Paradigm
from engine.paradigms.registry import make_paradigm
from engine.trace import RunTrace
from engine.types import Corpus, Dataset, Question

logger = logging.getLogger(__name__)


def eval_corpus(dataset: Dataset, spec: str = "pooled") -> Corpus:
    """Corpus `spec` plus the dataset's own documents (merged by id).

    When the corpus already holds every one of them (dev500 inside the pooled corpus), it is
    returned unchanged, so its cached indexes are reused instead of rebuilt.
    """
    base = load_corpus(spec)
    extra = [d for d in dataset.documents if not _holds(base, d)]
    if not extra:
        return base
    return Corpus(f"{base.name}+{dataset.name}",
                  tuple(merge_documents([*base.documents, *extra])))


def _holds(corpus: Corpus, doc) -> bool:
    kept = corpus.by_id.get(doc.id)
    return kept is not None and " ".join(doc.text.split()) in " ".join(kept.text.split())


def row(trace: RunTrace) -> dict:
    """The JSONL row of one run."""
    return {
        "question_id": trace.gold.id if trace.gold else "",
        "question": trace.question,
        "paradigm": trace.paradigm,
        "answer": trace.answer,
        "gold": list(trace.gold.answers) if trace.gold else [],
        "span_answer": has_span_answer(trace.gold) if trace.gold else False,
        "metrics": trace.metrics,
        "seconds": step_seconds(trace),
        "reader_tokens": trace.reader_input_tokens,
        "llm_calls": trace.llm_calls,
        "docs_to_reader": docs_to_reader(trace),
    }


def docs_to_reader(trace: RunTrace) -> int:
    """How many distinct documents the final stage sent to the reader."""
    if not trace.stages:
        return 0
    return len({d for c in trace.stages[-1].candidates for d in c.unit.doc_ids})


def step_seconds(trace: RunTrace) -> dict[str, float]:
    """Seconds of every stage, then of every LLM call by purpose ("answer", ...)."""
    seconds = {s.name: round(s.seconds, 4) for s in trace.stages}
    for step in trace.llm_steps:
        seconds[step.purpose] = round(seconds.get(step.purpose, 0.0) + step.seconds, 4)
    return seconds


def run_eval(dataset_path: str | Path, paradigms: Sequence[str], corpus: str = "pooled",
             limit: int | None = None, configs: dict[str, dict] | None = None,
             progress: Callable[[int, int], None] | None = None, ray: str = "",
             workers: int = 2) -> Iterator[dict]:
    """Yield one row per (question, paradigm), questions in file order; with a `ray`
    address ("local": `workers` workers here) the questions run as Ray tasks
    (engine.eval.on_ray)."""
    dataset = read_dataset(dataset_path)
    if not dataset.questions:
        raise ConfigError(f"{dataset_path} holds no questions (format {dataset.format!r}); "
                          "give a QA file such as hotpotqa/dev500_contexts.jsonl.")
    questions = dataset.questions[:limit] if limit else dataset.questions
    haystack = eval_corpus(dataset, corpus)
    built = [make_paradigm(name, haystack, (configs or {}).get(name)) for name in paradigms]
    for i, traces in enumerate(answer_all(built, questions, ray=ray, workers=workers,
                                          corpus_spec=corpus, dataset=str(dataset_path)),
                               start=1):
        yield from (row(trace) for trace in traces)
        if progress:
            progress(i, len(questions))


def answer_all(paradigms: Sequence[Paradigm], questions: Sequence[Question], *,
               ray: str = "", workers: int = 2, corpus_spec: str = "", dataset: str = "",
               cancelled: Callable[[], bool] = lambda: False) -> Iterator[list[RunTrace]]:
    """Each question's traces (in `paradigms` order), in question order, answered here or,
    with a `ray` address ("local": `workers` workers here), as Ray tasks whose workers load
    the corpus from `corpus_spec` (plus `dataset`'s paragraphs, as `eval_corpus`) and the
    paradigms from their configs (engine.eval.on_ray). `cancelled()` is asked between
    questions: when it says so, nothing more is answered."""
    if ray:
        from engine.eval.on_ray import Haystack, run_on_ray

        corpus = paradigms[0].corpus
        yield from run_on_ray(ray, Haystack.of(corpus_spec, corpus, dataset),
                              [p.name for p in paradigms],
                              {p.name: asdict(p.config) for p in paradigms}, questions,
                              workers, cancelled=cancelled)
        return
    for question in questions:
        if cancelled():
            return
        yield [paradigm.run(question) for paradigm in paradigms]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of `values` (the smallest value at or above it)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarise(rows: Sequence[dict]) -> dict[str, dict[str, float]]:
    """{paradigm: {metric: mean}} with AR over span-answer questions only (as LongRAG)."""
    summary: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["paradigm"] for r in rows):
        mine = [r for r in rows if r["paradigm"] == name]
        spans = [r for r in mine if r["span_answer"]]
        out: dict[str, float] = {"questions": len(mine)}
        for key in sorted({k for r in mine for k in r["metrics"]}):
            pool = spans if key.startswith("AR@") else mine
            values = [r["metrics"][key] for r in pool if key in r["metrics"]]
            if values:
                out[key] = round(statistics.fmean(values), 4)
        for stage in dict.fromkeys(s for r in mine for s in r["seconds"]):
            times = [r["seconds"][stage] for r in mine if stage in r["seconds"]]
            out[f"seconds_{stage}"] = round(statistics.fmean(times), 4)
            out[f"seconds_{stage}_median"] = round(statistics.median(times), 4)
            out[f"seconds_{stage}_p95"] = round(percentile(times, 0.95), 4)
        out["seconds_total_median"] = round(statistics.median(
            sum(r["seconds"].values()) for r in mine), 4)
        out["reader_tokens"] = round(statistics.fmean(r["reader_tokens"] for r in mine), 1)
        out["llm_calls"] = round(statistics.fmean(r.get("llm_calls", 0) for r in mine), 2)
        out["docs_to_reader"] = round(statistics.fmean(r.get("docs_to_reader", 0)
                                                       for r in mine), 2)
        summary[name] = out
    return summary
