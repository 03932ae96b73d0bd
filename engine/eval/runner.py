"""Answer a QA file's questions with paradigms: here, or as Ray tasks.

The corpus is the one named plus the file's own paragraphs it lacks (`eval_corpus`, in
engine.data.corpus), as in the app, so a question's gold is
always in the haystack. Each (question, paradigm) gives one row (engine.eval.summary).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

from engine.data.corpus import eval_corpus
from engine.data.loaders import read_dataset
from engine.documents import Corpus, Question, unanswered
from engine.errors import ConfigError, log_failure
from engine.eval.summary import row
from engine.paradigms.base import MakeParadigm, Paradigm
from engine.stages.base import reusing_stages
from engine.trace import RunTrace, failed_run

logger = logging.getLogger(__name__)


def run_eval(dataset_path: str | Path, paradigms: Sequence[str], corpus: str = "wiki",
             limit: int | None = None, configs: dict[str, dict] | None = None,
             progress: Callable[[int, int], None] | None = None, ray: str = "",
             workers: int = 2, *, make: MakeParadigm,
             keep: Callable[[RunTrace], None] | None = None, label: str = "",
             searched: Callable[[Corpus], None] | None = None,
             presets: dict[str, str] | None = None) -> Iterator[dict]:
    """Yield one row per (question, paradigm), questions in file order; with a `ray`
    address ("local": `workers` workers here) the questions run as Ray tasks
    (engine.eval.on_ray). `make(name, corpus, config)` makes a paradigm handed what it uses
    (engine.service.store.make_paradigm); `keep` is handed every trace (an export). The
    corpus searched is `corpus` plus the file's paragraphs it lacks, named with `label`
    (`eval_corpus`), handed to `searched` before the first question. `presets` ({label:
    paradigm}) names the labels of `paradigms` that are presets: each runs as its paradigm
    and its traces (and rows) carry the preset's name."""
    dataset = read_dataset(dataset_path)
    if not dataset.questions:
        raise ConfigError(f"{dataset_path} holds no questions (format {dataset.format!r}); "
                          "give a QA file such as hotpotqa/dev500_contexts.jsonl.")
    questions = dataset.questions[:limit] if limit else dataset.questions
    if unanswered(questions):  # judged, not answered: nothing to read for
        logger.info("%s: no question has an answer; its paradigms stop before the reader",
                    label or dataset_path)
        make = partial(make, retrieval_only=True)
    haystack = eval_corpus(dataset, corpus, label)
    if searched is not None:
        searched(haystack)
    kinds = presets or {}
    if kinds and ray:
        raise ConfigError("Presets run here, not on Ray yet: leave out --ray, or give the "
                          "presets' paradigms with --config.")
    built = [make(kinds.get(name, name), haystack, (configs or {}).get(name))
             for name in paradigms]
    for i, traces in enumerate(answer_all(built, questions, ray=ray, workers=workers,
                                          corpus_spec=corpus, dataset=str(dataset_path),
                                          make=make),
                               start=1):
        for name, trace in zip(paradigms, traces, strict=True):
            trace = replace(trace, preset=name) if name in kinds else trace
            if keep is not None:
                keep(trace)
            yield row(trace)
        if progress:
            progress(i, len(questions))


def _answered(paradigm: Paradigm, question: Question) -> RunTrace:
    """`paradigm`'s run of `question`; one that raises is a failed run naming the error
    (engine.trace.failed_run), so the other questions go on and the failure is never
    counted as a wrong answer."""
    try:
        return paradigm.run(question)
    except Exception as err:  # noqa: BLE001 - stored with the run, logged with its cause
        log_failure(logger, f"{paradigm.name} on question {question.id!r}", err)
        return failed_run(question, paradigm.name, asdict(paradigm.config), err)


def answer_all(paradigms: Sequence[Paradigm], questions: Sequence[Question], *,
               ray: str = "", workers: int = 2, corpus_spec: str = "", dataset: str = "",
               cancelled: Callable[[], bool] = lambda: False,
               reuse: bool = False, concurrency: int = 1,
               make: MakeParadigm | None = None) -> Iterator[list[RunTrace]]:
    """Each question's traces (in `paradigms` order), in question order, answered here or,
    with a `ray` address ("local": `workers` workers here), as Ray tasks whose workers load
    the corpus from `corpus_spec` (plus `dataset`'s paragraphs, as `eval_corpus`) and the
    paradigms from their configs (engine.eval.on_ray). `cancelled()` is asked between
    questions: when it says so, nothing more is answered. With `reuse` (a sweep's grid
    points of one paradigm) a question's prefix-stable stages run once for all paradigms
    (engine.stages.base.reusing_stages). With `concurrency` > 1, that many questions are in
    flight at once, so their reader calls arrive together and run as one batch
    (engine/readers/batching.py); traces still come in question order. On Ray, `make`
    makes the paradigms in the workers (engine.service.store.make_paradigm)."""
    if ray:
        from engine.eval.on_ray import Haystack, run_on_ray

        if make is None:
            raise ConfigError("Answering on Ray needs `make`, how a worker makes a paradigm "
                              "(engine.service.store.make_paradigm).")
        corpus = paradigms[0].corpus
        yield from run_on_ray(ray, Haystack.of(corpus_spec, corpus, dataset),
                              [p.name for p in paradigms],
                              {p.name: asdict(p.config) for p in paradigms}, questions,
                              make, workers, cancelled=cancelled)
        return

    def answer(question: Question) -> list[RunTrace]:
        with reusing_stages() if reuse else nullcontext():
            return [_answered(paradigm, question) for paradigm in paradigms]

    if concurrency <= 1:
        for question in questions:
            if cancelled():
                return
            yield answer(question)
        return
    with ThreadPoolExecutor(concurrency, thread_name_prefix="question") as pool:
        in_flight: deque[Future] = deque()
        pending = iter(questions)
        while True:
            while len(in_flight) < concurrency and not cancelled():
                question = next(pending, None)
                if question is None:
                    break
                in_flight.append(pool.submit(answer, question))
            if not in_flight:
                return
            yield in_flight.popleft().result()
