"""Read any supported file or folder into a Dataset (questions, documents, or both).

`read_dataset(path)` sniffs the format from the file's suffix and its first record, so a
user never has to name it; `FORMATS` lists what is understood.
"""

from __future__ import annotations

from pathlib import Path

from engine.data.loaders import collections, qa, user
from engine.data.loaders.jsonio import Record, iter_json_array, iter_jsonl, load_json, read_text
from engine.documents import Dataset, Document, Question, with_judgments
from engine.errors import DataFormatError

__all__ = ["FORMATS", "read_dataset"]

FORMATS = {
    "hotpotqa-contexts": "JSONL with question_id, question_text, answers_objects, contexts",
    "hotpotqa": "JSON list with _id, question, answer, supporting_facts, context",
    "musique": "JSON list or JSONL with id, question, answer, paragraphs",
    "squad": "SQuAD JSON with data[].paragraphs[].qas[]",
    "nq-open": "JSONL with question, answer (a string or a list)",
    "title-text": "JSON list of {title, text}",
    "beir": "a BEIR folder or zip: corpus.jsonl, queries.jsonl, qrels/<split>.tsv",
    "trec": "a folder of TREC topics.*, qrels.* and a corpus.jsonl/.csv/.parquet",
    "judged": "JSONL with id, text, judgments [[doc-id, grade], ...][, answers]",
    "corpus": "JSONL / CSV / Parquet with id, title, text[, links], or a folder of .txt/.md",
}

_FIX = "see `python -m engine formats` for the supported layouts"


def read_dataset(path: str | Path, split: str | None = None,
                 drop_unknown: bool = False) -> Dataset:
    """Read a QA file, a test collection or a corpus into a Dataset; raises DataFormatError
    on bad input. A collection's `split` (None: test, else dev, else train) and
    `drop_unknown` (leave out judgments of documents its corpus lacks) as `read_collection`."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "no such file or folder")
    if collections.is_collection(path):
        found = collections.read_collection(path, split, drop_unknown)
        return Dataset(found.name, found.format, found.questions, found.documents, found.split)
    if path.is_dir():
        return _corpus_only(path, user.read_folder(path))
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _corpus_only(path, user.read_csv(path))
    if suffix == ".parquet":
        return _corpus_only(path, user.read_parquet(path))
    if suffix == ".jsonl":
        return _read_jsonl(path)
    if suffix == ".json":
        return _read_json(path)
    raise DataFormatError(path, f"unsupported file type {suffix!r}",
                          fix="use .json, .jsonl, .csv, .parquet or a folder of .txt/.md")


def _read_jsonl(path: Path) -> Dataset:
    rows = list(iter_jsonl(path))
    if not rows:
        raise DataFormatError(path, "file holds no records")
    keys = rows[0][1].keys() if isinstance(rows[0][1], dict) else set()
    if {"id", "text", "judgments"} <= keys:
        return _from_items(path, "judged", rows, _judged)
    if {"question_text", "contexts"} <= keys:
        return _from_items(path, "hotpotqa-contexts", rows, qa.parse_hotpotqa_contexts)
    if {"question", "paragraphs"} <= keys:
        return _from_items(path, "musique", rows, qa.parse_musique)
    if {"question", "answer"} <= keys:
        return _from_items(path, "nq-open", rows,
                           lambda rec: qa.parse_nq_open(rec, rec.line))
    if {"id", "title", "text"} <= keys:
        return _corpus_only(path, user.documents_from_rows(path, iter(rows), "jsonl corpus"))
    if keys & {"title", "text"}:  # meant as a corpus: name what its rows lack
        missing = sorted({"id", "title", "text"} - set(keys))
        raise DataFormatError(path, "missing in a corpus row", line=rows[0][0],
                              field=", ".join(missing), fix="every row needs id, title and text")
    raise DataFormatError(path, f"unrecognised JSONL record with keys {sorted(keys)}",
                          line=rows[0][0], fix=_FIX)


def _read_json(path: Path) -> Dataset:
    text = read_text(path)
    if text.lstrip().startswith("{"):
        return _read_squad(path)
    items = list(iter_json_array(path, text))
    if not items:
        raise DataFormatError(path, "file holds an empty list")
    keys = items[0][1].keys() if isinstance(items[0][1], dict) else set()
    if {"supporting_facts", "context"} <= keys:
        return _from_items(path, "hotpotqa", items, qa.parse_hotpotqa)
    if {"paragraphs", "question"} <= keys:
        return _from_items(path, "musique", items, qa.parse_musique)
    if {"title", "text"} <= keys:
        docs = []
        for line, item in items:
            rec = Record(path, line, item, "title-text")
            docs.append((rec.text("title"), rec.text("text")))
        return Dataset(path.stem, "title-text", (),
                       tuple(qa.paragraphs_to_documents(docs, qa.source_name(path))))
    raise DataFormatError(path, f"unrecognised JSON item with keys {sorted(keys)}",
                          line=items[0][0], fix=_FIX)


def _read_squad(path: Path) -> Dataset:
    questions: list[Question] = []
    paragraphs: list[qa.Paragraph] = []
    for question, found in qa.parse_squad(path, load_json(path)):
        paragraphs.extend(found)
        if question is not None:
            questions.append(question)
    return Dataset(path.stem, "squad", tuple(questions),
                   tuple(qa.paragraphs_to_documents(paragraphs, qa.source_name(path))))


def _from_items(path: Path, fmt: str, items, parse) -> Dataset:
    questions: list[Question] = []
    paragraphs: list[qa.Paragraph] = []
    for line, item in items:
        question, found = parse(Record(path, line, item, fmt))
        questions.append(question)
        paragraphs.extend(found)
    return Dataset(path.stem, fmt, tuple(questions),
                   tuple(qa.paragraphs_to_documents(paragraphs, qa.source_name(path))))


def _judged(rec: Record) -> tuple[Question, list]:
    """A judged question: its judgments as [document id, integer grade] pairs."""
    grades: dict[str, int] = {}
    for pair in rec.get("judgments", list):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], int)
                and isinstance(pair[0], (str, int)) and str(pair[0]).strip()):
            raise rec.error(f"{pair!r} is not a [document id, integer grade] pair",
                            field="judgments")
        grades[str(pair[0])] = pair[1]
    answers = qa._strings(rec, "answers") if "answers" in rec.obj else ()
    own = str(rec.get("own_document", (str, int), ""))  # the corpus document it is
    return with_judgments(Question(str(rec.get("id", (str, int))), rec.text("text"), answers,
                                   source=qa.source_name(rec.path), own_document=own),
                          grades), []


def _corpus_only(path: Path, documents: list[Document]) -> Dataset:
    if not documents:
        raise DataFormatError(path, "holds no documents")
    return Dataset(path.stem, "corpus", (), tuple(documents))
