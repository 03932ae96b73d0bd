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

A stage's candidates in (`n_in`): the first stage searched the corpus (its size); a later
one re-ranked what the stage before kept when its documents are among them, else it too
searched the corpus. Each file's `tag` (the system that made it, one per file) is kept in
the runs' config.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.data.loaders.collections import Judgments, parse_qrels
from engine.documents import Candidate, Corpus, Dataset, Unit, with_judgments
from engine.errors import ConfigError, DataFormatError
from engine.eval.exports import trec_id
from engine.paradigms.base import annotate
from engine.trace import RunTrace, StageResult
from engine.units.lazy import document_unit

RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")


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
    errors call it): ordered by rank, a document listed twice for a query refused, as is a
    file of two systems' runs (two tags)."""
    return _read_run(text, name)[0]


def run_tag(text: str, name: str) -> str:
    """The system a TREC run file's lines name (its `tag`)."""
    return _read_run(text, name)[1]


def _read_run(text: str, name: str) -> tuple[dict[str, list[tuple[str, float]]], str]:
    found: dict[str, list[tuple[int, str, float]]] = {}
    first_tag = None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, _, docid, rank, score, tag = _fields(name, line, n, RUN_FIELDS)
        if first_tag is None:
            first_tag = tag
        elif tag != first_tag:
            raise DataFormatError(name, f"{tag!r}, while earlier lines name {first_tag!r}: "
                                  "one file holds one system's run", line=n, field="tag",
                                  fix="write each system's (each pipeline's) run to a file "
                                      "of its own")
        ranked = found.setdefault(qid, [])
        if any(docid == seen for _, seen, _ in ranked):
            raise DataFormatError(name, f"document {docid!r} is listed twice for query "
                                  f"{qid!r}", line=n, field="docid")
        ranked.append((_number(name, rank, n, "rank", int), docid,
                       _number(name, score, n, "score", float)))
    if not found:
        raise DataFormatError(name, "no run lines", fix="a TREC run file holds lines "
                              "'qid Q0 docid rank score tag'")
    return ({qid: [(docid, score) for _, docid, score in sorted(ranked, key=lambda r: r[0])]
             for qid, ranked in found.items()}, first_tag or "")


def read_qrels(text: str, name: str) -> Judgments:
    """{qid: {docid: grade}} of a qrels file's `text`, graded judgments kept as they are
    (0: judged not relevant); a pair judged twice keeps its first grade. The test
    collections' reader, not strict (engine.data.loaders.collections.parse_qrels). A file
    with no line is refused: the runs it came with would be measured against nothing."""
    if not any(line.strip() for line in text.splitlines()):
        raise DataFormatError(name, "no qrels lines",
                              fix="give the qrels file of the runs' questions (qid iteration "
                                  "docid relevance, one judgment per line)")
    return parse_qrels(text, name, strict=False)


def imported_runs(stages: Sequence[tuple[str, str, str]], dataset: Dataset, corpus: Corpus,
                  qrels: dict[str, dict[str, int]] | None = None,
                  paradigm: str = "imported") -> list[RunTrace]:
    """The runs of `stages` ((stage name, file name, run file text), in the order they ran)
    for every question of `dataset` that the first stage answered, annotated against its
    gold (the qrels' graded judgments where given). A docid the corpus lacks is refused by
    the file that names it."""
    rankings = [(stage, name, read_run(text, name)) for stage, name, text in stages]
    tags = {stage: run_tag(text, name) for stage, name, text in stages}
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
        if qrels is not None:  # the corpus's ids, as the runs' docids are read; graded
            question = with_judgments(question, {by_id[d].id if d in by_id else d: g
                                                 for d, g in qrels.get(qid, {}).items()})
        results: list[StageResult] = []
        for stage, name, ranking in rankings:
            results.append(_stage(stage, name, ranking.get(qid, []), corpus, by_id, qid,
                                  results[-1] if results else None))
        config = {"imported": names, "pipeline": paradigm, "tags": tags}
        runs.append(annotate(RunTrace(question.text, paradigm, config, tuple(results),
                                      corpus={"name": corpus.name,
                                                       "fingerprint": corpus.fingerprint,
                                                       "documents": len(corpus)}), question))
    return runs


def _stage(stage: str, name: str, ranked: list[tuple[str, float]], corpus: Corpus,
           by_id: dict, qid: str, before: StageResult | None) -> StageResult:
    candidates = []
    for rank, (docid, score) in enumerate(ranked, start=1):
        doc = by_id.get(docid)
        if doc is None:
            raise DataFormatError(name, f"document {docid!r} (query {qid!r}) is not in "
                                  f"corpus {corpus.name!r}", field="docid",
                                  fix="the runs' docids must be the corpus's document ids")
        unit: Unit = document_unit(doc)
        candidates.append(Candidate(unit, score, rank))
    kept = {c.unit.id for c in before.candidates} if before is not None else set()
    if before is not None and {c.unit.id for c in candidates} <= kept:
        n_in, said = len(before.candidates), f"what {before.name} kept"
    else:
        n_in, said = len(corpus), f"the corpus {corpus.name!r}"
    return StageResult(stage, "documents", n_in, tuple(candidates), 0.0,
                       settings={"searched": said})
