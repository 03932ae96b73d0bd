"""A user's own pipeline stored: its trace files or TREC run files as saved runs or as an
evaluation beside the paradigms' (the CLI's import-runs and import-traces, the Sessions
tab's import and the API's import_traces all store through here).

What a file is comes from its content, not its name: OpenInference traces (engine.eval.traces,
OTLP/JSON or Phoenix's spans), a TREC run file or a qrels file (engine.eval.imports); a file
none of them reads is refused with why each refused it. An import is stored whole or not at
all: the evaluation and every run in one transaction (engine.store.evaluations.store_whole),
saved sessions in one transaction (SessionStore.save_all), so a refused file, an error or a
kill midway leaves nothing half-stored.

A trace file may hold several pipelines' traces (their `service.name`s differ): each is a
paradigm of the evaluation, named as engine.eval.traces.paradigm_names says (`label` names
one pipeline, or prefixes several).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import shorten

from engine.documents import Corpus, Dataset
from engine.errors import ConfigError, DataFormatError
from engine.eval.imports import imported_runs, read_qrels, read_run
from engine.store.evaluations import IMPORTED
from engine.store.sessions import SessionStore
from engine.trace import RunTrace

__all__ = ["IMPORTED", "Imported", "file_kind", "import_files", "store_imported"]

TRACES, RUN, QRELS = "traces", "run", "qrels"
FORMATS = {TRACES: "OpenInference traces (OTLP/JSON or Phoenix's spans)",
           RUN: "a TREC run file (qid Q0 docid rank score tag)",
           QRELS: "a TREC qrels file (qid 0 docid relevance)"}


def store_imported(runs: Sequence[RunTrace], dataset: Dataset, dataset_file: str,
                   label: str, sources: list[str], store: SessionStore,
                   corpus: Corpus | None = None) -> tuple[int, dict]:
    """Store `runs` (every one a question of `dataset`, read from `sources`) as one finished
    evaluation, each run under its own paradigm (one per pipeline), at their questions'
    positions in the QA file, beside the paradigms' evaluations, in one transaction;
    returns (its id, its summary). Two runs of one question by one pipeline are refused,
    naming both traces. Traces carry their own documents, so `corpus` is None for them."""
    from engine.eval.summary import row, summarise
    from engine.store.evaluations import EvaluationStore

    positions = {q.id: i for i, q in enumerate(dataset.questions)}  # as evaluations count
    paradigms = list(dict.fromkeys(run.paradigm for run in runs))
    _refuse_repeats(runs)
    found = [(positions[trace.gold.id], trace, {**row(trace), "paradigm": trace.paradigm})
             for trace in runs]
    found.sort(key=lambda item: item[0])
    summary = summarise([r for _, _, r in found])
    pipelines = {run.paradigm: run.config.get("pipeline", "") for run in runs}
    name = label if len(paradigms) > 1 and label else ", ".join(paradigms)
    evaluation = EvaluationStore(store).store_whole(
        found, summary, dataset=dataset_file, paradigms=paradigms,
        configs={p: {"imported": sources, "pipeline": pipelines[p]} for p in paradigms},
        corpus=corpus.name if corpus else f"{name} (as traced)",
        corpus_fingerprint=corpus.fingerprint if corpus else "",
        code_version=IMPORTED, name=f"{name} (imported)")
    return evaluation, summary


def _refuse_repeats(runs: Sequence[RunTrace]) -> None:
    """Two traces of one question by one pipeline cannot both be its run: refused by
    their trace ids (before anything is stored)."""
    first: dict[tuple[str, str], RunTrace] = {}
    for run in runs:
        key = (run.gold.id if run.gold else run.question, run.paradigm)
        if key in first:
            a, b = first[key].config, run.config
            raise ConfigError(
                f"{b.get('imported', 'the file')}: {run.paradigm!r} answered "
                f"{shorten(run.question, 80)!r} twice (traces {a.get('trace_id', '?')} and "
                f"{b.get('trace_id', '?')}); an evaluation keeps one run per question and "
                "pipeline. Keep one trace per question, give each pipeline its own "
                "service.name, or import without a dataset to keep every run as a session.")
        first[key] = run


@dataclass(frozen=True)
class Imported:
    """What an import stored: an evaluation (with a QA file) or saved sessions (without)."""

    runs: int
    evaluation: int | None = None
    sessions: tuple[int, ...] = ()
    summary: dict = field(default_factory=dict)
    already: int = 0  # runs left out as saved before (the same file imported again)
    paradigms: tuple[str, ...] = ()  # one per pipeline the files held


def file_kind(name: str, text: str) -> str:
    """What an import file is, read from its content: TRACES, RUN or QRELS. JSON is read
    as traces only (no other format is JSON) and refused with that reader's reason; a file
    of lines none of them reads is refused naming each format tried and why it refused."""
    from engine.eval.spans import read_spans

    readers = {TRACES: lambda: read_spans(text, name), RUN: lambda: read_run(text, name),
               QRELS: lambda: read_qrels(text, name)}
    fix = ("give trace files (OTLP/JSON or Phoenix's spans), or TREC run files, one per "
           "stage, and a qrels file")
    if text.lstrip()[:1] in ("{", "["):  # JSON: of the formats read, only traces are
        try:
            readers[TRACES]()
        except DataFormatError as err:
            raise DataFormatError(name, f"JSON, so read as {FORMATS[TRACES]}, which it is "
                                  f"not: {_reason(err)}", fix=fix) from None
        return TRACES
    refusals = []
    for kind in (RUN, QRELS, TRACES):
        try:
            readers[kind]()
        except DataFormatError as err:
            refusals.append(f"as {FORMATS[kind]}: {_reason(err)}")
            continue
        return kind
    raise DataFormatError(name, "no format an import reads fits it; tried " +
                          "; ".join(refusals), fix=fix)


def _reason(err: DataFormatError) -> str:
    """An error's line, field and problem, without its file's name or its fix."""
    where = f"line {err.line}: " if err.line is not None else ""
    return where + (f"field {err.field!r}: " if err.field else "") + err.problem


def import_files(files: Sequence[tuple[str, str]], store: SessionStore, *,
                 dataset: Dataset | None, dataset_name: str, label: str,
                 corpus: Callable[[], Corpus], searched: int = 0) -> Imported:
    """Store a pipeline's files ((name, text)): OpenInference trace files
    (engine.eval.traces), or TREC run files, one per stage in the order given, and a qrels
    file, whose docids `corpus()` holds. With `dataset` the runs are an evaluation (every
    question must be one of it); trace files without it are saved as sessions. `searched`:
    how many units the traced pipeline's retrievers search, where no span says it. Stored
    whole or not at all."""
    from engine.eval.traces import traced_runs, unmatched

    if not files:
        raise ConfigError("Give trace files (OTLP/JSON or Phoenix's spans), or a TREC run "
                          "file per stage.")
    kinds = [file_kind(name, text) for name, text in files]
    traces = [pair for pair, kind in zip(files, kinds, strict=True) if kind == TRACES]
    if traces and len(traces) != len(files):
        other = next(name for (name, _), kind in zip(files, kinds, strict=True)
                     if kind != TRACES)
        raise ConfigError(f"{other} is not a trace file while {traces[0][0]} is: import "
                          "trace files or TREC run files, not both at once.")
    if traces:
        runs = traced_runs(traces, dataset, label, searched)
        paradigms = tuple(dict.fromkeys(run.paradigm for run in runs))
        if dataset is None:
            fresh = [run for run in runs if store.saved_as(run) is None]
            ids = store.save_all(fresh, [f"{run.paradigm}: {shorten(run.question, 60)}"
                                         for run in fresh])
            return Imported(len(fresh), sessions=tuple(ids), already=len(runs) - len(fresh),
                            paradigms=paradigms)
        missing = unmatched(runs)
        if missing:
            raise ConfigError(f"{len(missing)} of {len(runs)} traced questions are not in "
                              f"{dataset_name}, e.g. {shorten(missing[0], 80)!r}: pick the "
                              "dataset the pipeline answered, or none to save them as runs.")
        evaluation, summary = store_imported(runs, dataset, dataset_name, label,
                                             [name for name, _ in files], store)
        return Imported(len(runs), evaluation, summary=summary, paradigms=paradigms)
    qrels_files = [pair for pair, kind in zip(files, kinds, strict=True) if kind == QRELS]
    stages = [(Path(n).stem.removesuffix(".run"), n, t)
              for (n, t), kind in zip(files, kinds, strict=True) if kind == RUN]
    if not stages:
        raise ConfigError(f"{', '.join(n for n, _ in qrels_files)}: qrels name what is "
                          "relevant; give the run files (one per stage) beside them.")
    qrels = None
    for name, text in qrels_files:
        qrels = {**(qrels or {}), **read_qrels(text, name)}
    if dataset is None:
        raise ConfigError("TREC run files name questions by id: pick the dataset they "
                          "answer.")
    searched_corpus = corpus()
    paradigm = " ".join(str(label or "").split()) or "imported"
    runs = imported_runs(stages, dataset, searched_corpus, qrels, paradigm=paradigm)
    evaluation, summary = store_imported(runs, dataset, dataset_name, paradigm,
                                         [f"{s}={n}" for s, n, _ in stages], store,
                                         searched_corpus)
    return Imported(len(runs), evaluation, summary=summary, paradigms=(paradigm,))
