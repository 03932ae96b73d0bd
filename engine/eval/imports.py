"""A pipeline of the user's in, from TREC run files: each file one stage, the runs as ours.

A pipeline that is not instrumented can still be looked at here: its stages written as TREC
run files (`qid Q0 docid rank score tag`, one file per stage, in the order they ran) and
the questions' relevance as a qrels file (`qid 0 docid relevance`) become runs like the
paradigms' (`RunTrace`), whose stages are the files' rankings of documents. A question of
the QA file gives each run its text and gold answers; the qrels, where given, name the
relevant documents (relevance > 0) in place of the file's supporting documents. Document
texts come from the corpus (its ids are the runs' docids), so the runs are measured as ours
are: answer recall and gold-document recall at each cut, trec_eval's nDCG, MRR, R@k and
P@k, and, stored, outcomes and paired comparisons against our paradigms on the same
questions. A file that is not TREC is refused by name, line and field; nothing is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from textwrap import shorten
from typing import TYPE_CHECKING

from engine.documents import Candidate, Corpus, Dataset, Unit
from engine.errors import ConfigError, DataFormatError
from engine.eval.exports import trec_id
from engine.paradigms.base import annotate
from engine.trace import RunTrace, StageResult
from engine.units.build import document_unit

if TYPE_CHECKING:
    from engine.store.sessions import SessionStore

RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_FIELDS = ("qid", "iteration", "docid", "relevance")


def _fields(name: str, line: str, n: int, expected: Sequence[str]) -> list[str]:
    parts = line.split()
    if len(parts) != len(expected):
        raise DataFormatError(name, f"a line has {len(expected)} fields "
                              f"({' '.join(expected)}), this one {len(parts)}: {line[:80]!r}",
                              line=n, fix="write one result per line, fields split by spaces")
    return parts


def _number(name: str, value: str, n: int, field: str, kind: type) -> float | int:
    try:
        return kind(value)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise DataFormatError(name, f"{value!r} is not {what}", line=n, field=field) from None


def read_run(text: str, name: str) -> dict[str, list[tuple[str, float]]]:
    """{qid: [(docid, score), ...] best first} of a TREC run file's `text` (`name` is how
    errors call it): ordered by rank, a document listed twice for a query refused."""
    found: dict[str, list[tuple[int, str, float]]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, _, docid, rank, score, _ = _fields(name, line, n, RUN_FIELDS)
        ranked = found.setdefault(qid, [])
        if any(docid == seen for _, seen, _ in ranked):
            raise DataFormatError(name, f"document {docid!r} is listed twice for query "
                                  f"{qid!r}", line=n, field="docid")
        ranked.append((_number(name, rank, n, "rank", int), docid,
                       _number(name, score, n, "score", float)))
    if not found:
        raise DataFormatError(name, "no run lines", fix="a TREC run file holds lines "
                              "'qid Q0 docid rank score tag'")
    return {qid: [(docid, score) for _, docid, score in sorted(ranked, key=lambda r: r[0])]
            for qid, ranked in found.items()}


def read_qrels(text: str, name: str) -> dict[str, tuple[str, ...]]:
    """{qid: relevant docids} of a qrels file's `text` (relevance above 0)."""
    found: dict[str, list[str]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, _, docid, relevance = _fields(name, line, n, QRELS_FIELDS)
        if _number(name, relevance, n, "relevance", int) > 0:
            found.setdefault(qid, []).append(docid)
    return {qid: tuple(dict.fromkeys(docs)) for qid, docs in found.items()}


def imported_runs(stages: Sequence[tuple[str, str, str]], dataset: Dataset, corpus: Corpus,
                  qrels: dict[str, tuple[str, ...]] | None = None,
                  paradigm: str = "imported") -> list[RunTrace]:
    """The runs of `stages` ((stage name, file name, run file text), in the order they ran)
    for every question of `dataset` that the first stage answered, annotated against its
    gold (the qrels' relevant documents where given). A docid the corpus lacks is refused by
    the file that names it."""
    rankings = [(stage, name, read_run(text, name)) for stage, name, text in stages]
    if not rankings:
        raise ConfigError("Give at least one run file (one per stage).")
    names = [stage for stage, _, _ in rankings]
    if len(set(names)) != len(names):
        raise ConfigError(f"Stage names must differ: {', '.join(names)}.")
    questions = {q.id: q for q in dataset.questions}
    first = rankings[0][2]
    unknown = sorted(set(first) - set(questions))
    if unknown:
        raise ConfigError(f"{rankings[0][1]} answers query {unknown[0]!r}, which "
                          f"{dataset.name} does not hold ({len(unknown)} such); give the QA "
                          "file the runs were made for.")
    # a docid with white space was written with underscores (engine.eval.exports.trec_id)
    by_id = {**{trec_id(d.id): d for d in corpus.documents}, **corpus.by_id}
    runs = []
    for qid in first:
        question = questions[qid]
        if qrels is not None:  # the corpus's ids, as the runs' docids are read
            question = replace(question, supporting_titles=tuple(
                by_id[d].id if d in by_id else d for d in qrels.get(qid, ())))
        results = tuple(_stage(stage, name, ranking.get(qid, []), corpus, by_id, qid)
                        for stage, name, ranking in rankings)
        runs.append(annotate(RunTrace(question.text, paradigm, {"imported": names},
                                      results, corpus={"name": corpus.name,
                                                       "fingerprint": corpus.fingerprint,
                                                       "documents": len(corpus)}), question))
    return runs


def _stage(stage: str, name: str, ranked: list[tuple[str, float]], corpus: Corpus,
           by_id: dict, qid: str) -> StageResult:
    candidates = []
    for rank, (docid, score) in enumerate(ranked, start=1):
        doc = by_id.get(docid)
        if doc is None:
            raise DataFormatError(name, f"document {docid!r} (query {qid!r}) is not in "
                                  f"corpus {corpus.name!r}", field="docid",
                                  fix="the runs' docids must be the corpus's document ids")
        unit: Unit = document_unit(doc)
        candidates.append(Candidate(unit, score, rank))
    return StageResult(stage, "documents", len(candidates), tuple(candidates), 0.0)


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
        code_version="imported", name=f"{label} (imported)")
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
