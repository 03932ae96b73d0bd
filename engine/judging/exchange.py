"""Judgments out and in: TREC qrels (what trec_eval, ir_measures and every IR toolkit read)
and a JSONL that keeps who judged (assessor, pool, seconds, reasoning).

Qrels hold one grade per question and document, so they are written from one view of the
judgments (the published grades, or one assessor's) and read in as one assessor's. A JSONL
line is one judgment as the store keeps it. Either is read strictly: a line that is not a
judgment, a grade outside 0-3 or a question the set lacks is refused by file, line and
field, and nothing is kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from engine.data.loaders.collections import parse_qrels
from engine.data.loaders.jsonio import jsonl_lines
from engine.errors import DataFormatError
from engine.store.judgments import GRADES, MAX_ASSESSOR_CHARS, Judgment

FORMATS = ("qrels", "jsonl")
GRADE_FIX = "grade 0 (irrelevant), 1 (related), 2 (highly relevant) or 3 (perfectly relevant)"


def qrels_text(grades: Mapping[str, Mapping[str, int]]) -> str:
    """TREC qrels lines (`question 0 document grade`) of {question id: {document: grade}},
    split by tabs: trec_eval and ir_measures read them as they read spaces, and a user's
    document id may hold spaces (a file's path, a title)."""
    return "".join(f"{q}\t0\t{d}\t{g}\n" for q, docs in grades.items()
                   for d, g in docs.items())


def judgments_jsonl(judgments: Iterable[Judgment]) -> str:
    """One JSON line per judgment, oldest first, with who judged it."""
    return "".join(json.dumps({"question_id": j.question_id, "document_id": j.document_id,
                               "grade": j.grade, "assessor": j.assessor,
                               "pool_id": j.pool_id, "seconds": j.seconds,
                               "reasoning": j.reasoning}, ensure_ascii=False) + "\n"
                   for j in judgments)


def read_judgments(text: str, name: str, collection: str, questions: set[str],
                   assessor: str = "") -> list[Judgment]:
    """The judgments of a qrels file or a judgments JSONL (`name` says which, by its
    suffix) for question set `collection` (its question ids `questions`); a qrels file's
    are `assessor`'s, a JSONL line's its own `assessor` (else `assessor`)."""
    if name.lower().endswith(".jsonl"):
        found = [_jsonl_judgment(row, name, line, collection, questions, assessor)
                 for line, row in jsonl_lines(text, name)]
    else:
        if not assessor:
            raise DataFormatError(name, "qrels say no one's name",
                                  fix="name the assessor whose judgments they are")
        found = [Judgment(collection, q, d, g if g in GRADES else
                          _grade(g, name, _line_of(text, q, d)), assessor)
                 for q, docs in parse_qrels(text, name, queries=questions).items()
                 for d, g in docs.items()]
    if not found:
        raise DataFormatError(name, "holds no judgments")
    return found


def _jsonl_judgment(row: object, name: str, line: int, collection: str,
                    questions: set[str], assessor: str) -> Judgment:
    if not isinstance(row, dict):
        raise DataFormatError(name, "is not a JSON object", line=line)
    for key in ("question_id", "document_id"):
        if not isinstance(row.get(key), str | int) or not str(row[key]).strip():
            raise DataFormatError(name, f"needs a `{key}`", line=line, field=key)
    if str(row["question_id"]) not in questions:
        raise DataFormatError(name, f"names question {row['question_id']!r}, which the "
                              f"question set {collection} lacks", line=line,
                              field="question_id")
    who = str(row.get("assessor") or assessor).strip()
    if not who or len(who) > MAX_ASSESSOR_CHARS:
        raise DataFormatError(name, "says no one's name (or too long a one)", line=line,
                              field="assessor", fix="give each line an `assessor`")
    seconds = row.get("seconds")
    return Judgment(collection, str(row["question_id"]), str(row["document_id"]),
                    _grade(row.get("grade"), name, line), who, None,
                    float(seconds) if isinstance(seconds, int | float) else None,
                    str(row.get("reasoning") or ""))


def _line_of(text: str, question: str, document: str) -> int | None:
    """The line of a qrels file that judges `document` for `question`."""
    for line, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("\t") if "\t" in raw else raw.split()
        if fields and fields[0] == question and document in fields[1:-1]:
            return line
    return None


def _grade(value: object, name: str, line: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in GRADES:
        raise DataFormatError(name, f"grade {value!r} is outside 0-3", line=line,
                              field="grade", fix=GRADE_FIX)
    return value
