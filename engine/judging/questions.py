"""A user's questions for their own corpus, read from a plain list.

A list is a text file with one question a line (blank lines and `#` comments skipped), a
CSV with a `question` column (and an optional `id`), or JSONL with a `question` (or
`text`) field (and an optional `id`). Questions without an id are numbered `q1`, `q2`, ...
in file order. A question given twice (case and spacing aside) is kept once and the others
are named in a warning; an id given twice, a blank question or a list past
`MAX_QUESTIONS` is refused by file, line and field, and nothing is kept.
"""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

from engine.data.loaders.jsonio import jsonl_lines
from engine.documents import Question
from engine.errors import DataFormatError
from engine.paradigms.base import MAX_QUESTION_CHARS

logger = logging.getLogger(__name__)

MAX_QUESTIONS = 10_000  # a judging round: at depth 5 over three systems, ~150,000 units
FORMATS = (".txt", ".csv", ".jsonl")


def read_question_list(path: str | Path, text: str | None = None) -> tuple[Question, ...]:
    """The questions of the list at `path` (or of `text`, named as `path`), in file order,
    duplicates left out (named in a warning)."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as err:
            raise DataFormatError(path, "is not UTF-8 text",
                                  fix="save the list as UTF-8") from err
    suffix = path.suffix.lower() if path.suffix.lower() in FORMATS else ".txt"
    rows = {".csv": _csv_rows, ".jsonl": _jsonl_rows}.get(suffix, _text_rows)(path, text)
    questions: list[Question] = []
    seen_text: dict[str, int] = {}
    seen_id: dict[str, int] = {}
    dropped: list[str] = []
    for line, qid, question in rows:
        question = " ".join(question.split())
        if not question:
            raise DataFormatError(path, "the question is blank", line=line, field="question")
        if len(question) > MAX_QUESTION_CHARS:
            raise DataFormatError(path, f"the question has {len(question):,} characters; the "
                                  f"limit is {MAX_QUESTION_CHARS:,}", line=line,
                                  field="question")
        key = question.casefold()
        if key in seen_text:
            dropped.append(f"line {line} (as line {seen_text[key]})")
            continue
        qid = qid or f"q{len(questions) + 1}"
        if qid in seen_id:
            raise DataFormatError(path, f"id {qid!r} is already the id of line {seen_id[qid]}",
                                  line=line, field="id")
        seen_text[key], seen_id[qid] = line, line
        questions.append(Question(qid, question, source=path.name))
        if len(questions) > MAX_QUESTIONS:
            raise DataFormatError(path, f"holds more than {MAX_QUESTIONS:,} questions",
                                  fix="split it into rounds of at most "
                                      f"{MAX_QUESTIONS:,}")
    if not questions:
        raise DataFormatError(path, "holds no questions",
                              fix="one question a line, a CSV `question` column or JSONL "
                                  "`question` fields")
    if dropped:
        logger.warning("%s: left out %d questions given twice: %s", path.name, len(dropped),
                       ", ".join(dropped[:20]) + (" ..." if len(dropped) > 20 else ""))
    return tuple(questions)


def _text_rows(path: Path, text: str):
    for line, raw in enumerate(text.splitlines(), start=1):
        if raw.strip() and not raw.lstrip().startswith("#"):
            yield line, "", raw


def _csv_rows(path: Path, text: str):
    reader = csv.DictReader(io.StringIO(text))
    if "question" not in (reader.fieldnames or ()):
        raise DataFormatError(path, "has no `question` column", line=1, field="question",
                              fix="name the questions' column `question`")
    for line, row in enumerate(reader, start=2):
        yield line, (row.get("id") or "").strip(), row.get("question") or ""


def _jsonl_rows(path: Path, text: str):
    for line, row in jsonl_lines(text, path):
        question = row.get("question", row.get("text")) if isinstance(row, dict) else None
        if not isinstance(question, str):
            raise DataFormatError(path, "needs a `question` (or `text`) string", line=line,
                                  field="question")
        qid = row.get("id", "")
        yield line, str(qid).strip() if isinstance(qid, str | int) else "", question
