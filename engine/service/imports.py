"""A user's own pipeline stored: its trace files or TREC run files as saved runs or as an
evaluation beside the paradigms' (the CLI's import-runs and import-traces, the Sessions
tab's import and the API's import_traces all store through here).

The files are read by engine.eval.traces (OpenInference traces) and engine.eval.imports
(TREC runs); nothing is stored when any file is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import shorten

from engine.documents import Corpus, Dataset
from engine.errors import ConfigError
from engine.eval.imports import imported_runs, read_qrels, read_run
from engine.store.sessions import SessionStore
from engine.trace import RunTrace

IMPORTED = "imported"  # what an imported evaluation's code version says: no code of ours


def store_imported(runs: Sequence[RunTrace], dataset: Dataset, dataset_file: str,
                   label: str, sources: list[str], store: SessionStore,
                   corpus: Corpus | None = None) -> tuple[int, dict]:
    """Store `runs` (every one a question of `dataset`, read from `sources`) as one finished
    evaluation of paradigm `label`, at their questions' positions in the QA file, beside
    the paradigms' evaluations; returns (its id, its summary). Traces carry their own
    documents, so `corpus` is None for them."""
    from engine.eval.summary import row, summarise
    from engine.store.evaluations import EvaluationStore

    positions = {q.id: i for i, q in enumerate(dataset.questions)}  # as evaluations count
    evaluations = EvaluationStore(store)
    evaluation = evaluations.create(
        dataset=dataset_file, questions=len(runs), paradigms=[label],
        configs={label: {"imported": sources}},
        corpus=corpus.name if corpus else f"{label} (as traced)",
        corpus_fingerprint=corpus.fingerprint if corpus else "",
        code_version=IMPORTED, name=f"{label} (imported)")
    rows = []
    for trace in runs:
        found = {**row(trace), "paradigm": label}
        evaluations.add(evaluation, positions[trace.gold.id], [trace], [found])
        rows.append(found)
    summary = summarise(rows)
    evaluations.finish(evaluation, "done", summary)
    return evaluation, summary


@dataclass(frozen=True)
class Imported:
    """What an import stored: an evaluation (with a QA file) or saved sessions (without)."""

    runs: int
    evaluation: int | None = None
    sessions: tuple[int, ...] = ()
    summary: dict = field(default_factory=dict)
    already: int = 0  # runs left out as saved before (the same file imported again)


def is_trace_file(text: str) -> bool:
    """Trace files are JSON (an object or a list); TREC run and qrels files are lines of
    words."""
    return text.lstrip()[:1] in ("{", "[")


def import_files(files: Sequence[tuple[str, str]], store: SessionStore, *,
                 dataset: Dataset | None, dataset_name: str, label: str,
                 corpus: Callable[[], Corpus]) -> Imported:
    """Store a pipeline's files ((name, text)): OpenInference trace files
    (engine.eval.traces), or TREC run files, one per stage in the order given (a file named
    qrels* is the qrels), whose docids `corpus()` holds. With `dataset` the runs are an
    evaluation (every question must be one of it); trace files without it are saved as
    sessions. Nothing is stored when any file is refused."""
    from engine.eval.traces import traced_runs, unmatched

    if not files:
        raise ConfigError("Give trace files (OTLP/JSON or Phoenix's spans), or a TREC run "
                          "file per stage.")
    label = " ".join(str(label or "").split()) or "imported"
    traces = [(name, text) for name, text in files if is_trace_file(text)]
    if traces and len(traces) != len(files):
        other = next(name for name, text in files if not is_trace_file(text))
        raise ConfigError(f"{other} is not a trace file while {traces[0][0]} is: import "
                          "trace files or TREC run files, not both at once.")
    if traces:
        runs = traced_runs(traces, dataset, label)
        if dataset is None:
            fresh = [run for run in runs if store.saved_as(run) is None]
            ids = tuple(store.save(run, name=f"{label}: {shorten(run.question, 60)}")
                        for run in fresh)
            return Imported(len(fresh), sessions=ids, already=len(runs) - len(fresh))
        missing = unmatched(runs)
        if missing:
            raise ConfigError(f"{len(missing)} of {len(runs)} traced questions are not in "
                              f"{dataset_name}, e.g. {shorten(missing[0], 80)!r}: pick the "
                              "dataset the pipeline answered, or none to save them as runs.")
        evaluation, summary = store_imported(runs, dataset, dataset_name, label,
                                             [name for name, _ in files], store)
        return Imported(len(runs), evaluation, summary=summary)
    qrels_files = [(n, t) for n, t in files if Path(n).name.lower().startswith("qrels")]
    stages = [(Path(n).stem.removesuffix(".run"), n, t) for n, t in files
              if (n, t) not in qrels_files]
    qrels = None
    for name, text in qrels_files:
        qrels = {**(qrels or {}), **read_qrels(text, name)}
    if dataset is None:
        for _, name, text in stages:  # a file that is no run is named as such first
            read_run(text, name)
        raise ConfigError("TREC run files name questions by id: pick the dataset they "
                          "answer.")
    searched = corpus()
    runs = imported_runs(stages, dataset, searched, qrels, paradigm=label)
    evaluation, summary = store_imported(runs, dataset, dataset_name, label,
                                         [f"{s}={n}" for s, n, _ in stages], store, searched)
    return Imported(len(runs), evaluation, summary=summary)
