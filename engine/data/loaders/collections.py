"""Test collections as the field keeps them: a corpus, its questions and graded judgments,
often partial, and no answers.

- A BEIR folder (or its zip): `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl`
  (`_id`, `text`) and `qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`, with a header).
  BEIR, MTEB's retrieval tasks and LoTTE ship this way.
- TREC topics, in the classic tagged format (`<top>`, `<num>`, `<title>`) or tab-separated
  (`id<TAB>text`, as TREC DL's), with a qrels file (`query-id 0 doc-id grade`), beside a
  corpus read as any corpus is.

Grades stay grades (0 is judged not relevant, a missing pair is unjudged). Every problem is
refused by file, line and field before anything is kept: a judgment naming a query or a
document the collection lacks, a grade that is not an integer, an id given twice, a corpus
row without `_id`. The qrels beside imported TREC runs (engine.eval.imports) are read by the
same reader, not strictly (`parse_qrels`).
"""

from __future__ import annotations

import logging
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from engine.data.loaders import user
from engine.data.loaders.jsonio import Record, iter_jsonl, read_text
from engine.documents import Document, Question, judged_question
from engine.errors import DataFormatError

logger = logging.getLogger(__name__)

SPLITS = ("test", "dev", "train")
BEIR_FILES = ("corpus.jsonl", "queries.jsonl")
Judgments = dict[str, dict[str, int]]  # query id -> {document id: grade}


@dataclass(frozen=True)
class Collection:
    """A corpus, the questions of one split and their judgments."""

    name: str
    format: str  # "beir" | "trec"
    split: str
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    judgments: Judgments = field(default_factory=dict)

    def relevant(self, query_id: str, at_least: int = 1) -> dict[str, int]:
        """The documents judged at grade `at_least` or more for a query, with their grades."""
        return {doc: grade for doc, grade in self.judgments.get(query_id, {}).items()
                if grade >= at_least}


def is_beir_folder(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in BEIR_FILES) \
        and (path / "qrels").is_dir()


def is_beir_zip(path: Path) -> bool:
    """A zip holding a BEIR folder (its corpus.jsonl and queries.jsonl, at any depth)."""
    if not (path.is_file() and path.suffix.lower() == ".zip" and zipfile.is_zipfile(path)):
        return False
    with zipfile.ZipFile(path) as archive:
        names = {PurePosixPath(n).name for n in archive.namelist()}
    return set(BEIR_FILES) <= names


def trec_files(path: Path) -> tuple[Path, Path, Path] | None:
    """(topics, qrels, corpus) of a TREC collection's folder: one file named topics.*, one
    named qrels.* and a corpus (corpus.jsonl, .csv or .parquet); None for any other path."""
    if not path.is_dir():
        return None
    found = [sorted(p for p in path.glob(f"{stem}*") if p.is_file())
             for stem in ("topics", "qrels", "corpus")]
    if not all(found) or len(found[0]) > 1 or len(found[1]) > 1:
        return None
    corpora = [p for p in found[2] if p.suffix.lower() in (".jsonl", ".csv", ".parquet")]
    return (found[0][0], found[1][0], corpora[0]) if len(corpora) == 1 else None


def is_collection(path: Path) -> bool:
    """A BEIR folder or zip, or a TREC collection's folder (`read_collection` reads it)."""
    return is_beir_folder(path) or is_beir_zip(path) or trec_files(path) is not None


def read_collection(path: str | Path, split: str | None = None,
                    drop_unknown: bool = False) -> Collection:
    """The collection at `path`: a BEIR folder or zip (`read_beir`), or a folder of TREC
    topics, qrels and a corpus (`read_trec`, its corpus read as any corpus is)."""
    path = Path(path)
    files = trec_files(path)
    if files is None:
        return read_beir(path, split, drop_unknown)
    topics, qrels, corpus = files
    read = {".jsonl": user.read_jsonl, ".csv": user.read_csv, ".parquet": user.read_parquet}
    return read_trec(topics, qrels, read[corpus.suffix.lower()](corpus), path.name,
                     split or "test", drop_unknown)


def read_beir(path: str | Path, split: str | None = None,
              drop_unknown: bool = False) -> Collection:
    """A BEIR folder, or a zip holding one (at its top or one folder down); `split` None
    reads test, else dev, else train, whichever it has first. `drop_unknown` leaves out,
    with a warning naming them, judgments of documents the corpus lacks (BEIR's own
    ArguAna judges 5 such documents) instead of refusing the file."""
    return _beir(Path(path), lambda found: [split or found[0]], drop_unknown)[0]


def read_beir_splits(path: str | Path, drop_unknown: bool = False) -> list[Collection]:
    """Every split a BEIR folder or zip judges (test, dev, train, then any other), its
    corpus and queries read once."""
    return _beir(Path(path), lambda found: found, drop_unknown)


def _beir(path: Path, pick, drop_unknown: bool) -> list[Collection]:
    if not path.exists():
        raise DataFormatError(path, "no such file or folder")
    if path.is_file() and path.suffix.lower() == ".zip":
        with tempfile.TemporaryDirectory(prefix="beir-") as tmp:
            try:
                return _read_beir_folder(_unzipped(path, Path(tmp)), pick, path.stem, path,
                                         drop_unknown)
            except DataFormatError as err:  # named as a member of the zip, not where unpacked
                raise _in_zip(err, path, Path(tmp)) from None
    return _read_beir_folder(path, pick, path.name, path, drop_unknown)


def _in_zip(err: DataFormatError, archive: Path, unpacked: Path) -> DataFormatError:
    """`err` naming the zip's member ("tinybeir.zip:tinybeir/qrels/dev.tsv") for the file
    unpacked from it."""
    try:
        member = Path(str(err.path)).relative_to(unpacked).as_posix()
    except ValueError:
        return err
    return DataFormatError(f"{archive.name}:{member}", err.problem, line=err.line,
                           field=err.field, fix=err.fix)


def _unzipped(path: Path, into: Path) -> Path:
    from engine.data.loaders.archives import max_upload_bytes, unpacked_into

    unpacked_into(path, into, max_upload_bytes())  # bounded before and while it unpacks
    for folder in (into, *sorted(p for p in into.iterdir() if p.is_dir())):
        if is_beir_folder(folder):
            return folder
    raise DataFormatError(path, "holds no BEIR folder", fix=_BEIR_FIX)


_BEIR_FIX = "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv"


def _read_beir_folder(folder: Path, pick, name: str, shown: Path,
                      drop_unknown: bool) -> list[Collection]:
    """The collections of the splits `pick(found splits)` names, found: those the qrels
    folder judges, test, dev and train first."""
    if not folder.is_dir():
        raise DataFormatError(shown, "is not a folder or a zip", fix=_BEIR_FIX)
    missing = [n for n in (*BEIR_FILES, "qrels") if not (folder / n).exists()]
    if missing:
        raise DataFormatError(shown, f"lacks {', '.join(missing)}", fix=_BEIR_FIX)
    judged = {p.stem for p in (folder / "qrels").glob("*.tsv")}
    found = [*(s for s in SPLITS if s in judged), *sorted(judged - set(SPLITS))]
    splits = pick(found or ["test"])
    for split in splits:
        if split not in judged:
            raise DataFormatError(folder / "qrels" / f"{split}.tsv",
                                  f"no judgments for split {split!r}",
                                  fix=f"pick one of: {', '.join(found) or 'none found'}")
    documents = tuple(beir_corpus(folder / "corpus.jsonl"))
    queries = beir_queries(folder / "queries.jsonl")
    by_id = {d.id: d for d in documents}
    known = set(by_id)
    collections = []
    for split in splits:
        judgments = read_qrels(folder / "qrels" / f"{split}.tsv", queries=set(queries),
                               documents=known, drop_unknown=drop_unknown)
        questions = tuple(judged_question(qid, queries[qid], grades, name,
                                          own_document(qid, queries[qid], by_id))
                          for qid, grades in judgments.items())
        collections.append(Collection(name, "beir", split, documents, questions, judgments))
    return collections


def own_document(qid: str, text: str, documents: dict[str, Document]) -> str:
    """`qid` when the corpus holds a document of that id and the query's text (ArguAna's
    queries are its documents), else "": ids alone can meet by chance (TREC DL numbers its
    queries and its passages alike)."""
    doc = documents.get(qid)
    return qid if doc is not None and " ".join(doc.text.split()) == " ".join(text.split()) \
        else ""


def beir_corpus(path: Path) -> list[Document]:
    """corpus.jsonl: every row an `_id` (string or number) and `text`; `title` may be empty
    (many BEIR corpora have none)."""
    documents, seen = [], {}
    for line, row in iter_jsonl(path):
        rec = Record(path, line, row, "beir corpus")
        doc_id = _id(rec, seen)
        title = rec.get("title", str, "")
        documents.append(Document(id=doc_id, title=title.strip(), text=rec.text("text"),
                                  sources=(path.parent.name,)))
    if not documents:
        raise DataFormatError(path, "holds no documents")
    return documents


def beir_queries(path: Path) -> dict[str, str]:
    """queries.jsonl: {query id: text}."""
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line, row in iter_jsonl(path):
        rec = Record(path, line, row, "beir queries")
        queries[_id(rec, seen)] = rec.text("text").strip()
    if not queries:
        raise DataFormatError(path, "holds no queries")
    return queries


def _id(rec: Record, seen: dict[str, int]) -> str:
    """The record's `_id`, refused when missing, blank or given on an earlier line."""
    value = str(rec.get("_id", (str, int))).strip()
    if not value:
        raise rec.error("is empty", field="_id")
    before = seen.setdefault(value, rec.line or 0)
    if before != (rec.line or 0):
        raise rec.error(f"{value!r} is already the id of line {before}; ids must be unique",
                        field="_id")
    return value


# --- judgments ------------------------------------------------------------------------------

_BEIR_HEADER = ("query-id", "corpus-id", "score")
TREC_QRELS = ("qid", "iteration", "docid", "relevance")  # a TREC qrels line's fields
UNKNOWN_FIX = ("add the document to the corpus, or leave out the judgments of documents it "
               "lacks: --drop-unknown, or that box in the Corpora tab")
GRADE_FIX = "grade each judgment 0 (not relevant), 1, 2, ..."


def read_qrels(path: Path, queries: set[str] | None = None,
               documents: set[str] | None = None, drop_unknown: bool = False) -> Judgments:
    """A test collection's judgments from a BEIR qrels TSV (`query-id corpus-id score`,
    header first) or a TREC qrels file (`query-id iteration doc-id grade`,
    whitespace-separated), read strictly (`parse_qrels`); every query and document named
    must be among `queries` and `documents` where those are given (with `drop_unknown`,
    judgments of unknown documents are left out and named in a warning)."""
    return parse_qrels(read_text(path), path, queries=queries, documents=documents,
                       drop_unknown=drop_unknown)


def parse_qrels(text: str, name: object, *, strict: bool = True,
                queries: set[str] | None = None, documents: set[str] | None = None,
                drop_unknown: bool = False) -> Judgments:
    """{query id: {document id: grade}} of a qrels file's `text` (`name` is how errors call
    it), grades kept as they are (0: judged not relevant). A line that is not a judgment,
    a grade that is not an integer, and a query or a document not among `queries` and
    `documents` (where given; with `drop_unknown` an unknown document's judgments are left
    out and named in a warning) are refused by line and field.

    `strict`, a test collection's qrels: BEIR's TSV or TREC's lines, and a pair judged
    twice or a file without judgments is refused. Not strict, the qrels beside imported
    TREC runs (engine.eval.imports): TREC's four whitespace-separated fields only (a run
    file's six are refused), a pair judged twice keeps its first grade, and no lines are
    no judgments."""
    qid_field, doc_field, grade_field = _BEIR_HEADER if strict else (TREC_QRELS[0],
                                                                     *TREC_QRELS[2:])
    judgments: Judgments = {}
    dropped: list[str] = []
    where: dict[tuple[str, str], int] = {}
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t") if strict and "\t" in raw else raw.split()
        if strict and line == 1 and tuple(f.lower() for f in fields) == _BEIR_HEADER:
            continue
        qid, doc, grade = _judgment(name, line, raw, fields, strict)
        try:
            value = int(grade)
        except ValueError:
            raise DataFormatError(name, f"{grade!r} is not an integer grade", line=line,
                                  field=grade_field, fix=GRADE_FIX) from None
        if queries is not None and qid not in queries:
            raise DataFormatError(name, f"names query {qid!r}, which the queries lack",
                                  line=line, field=qid_field)
        if documents is not None and doc not in documents and drop_unknown:
            dropped.append(f"{doc} (line {line})")
            continue
        if documents is not None and doc not in documents:
            raise DataFormatError(name, f"names document {doc!r}, which the corpus lacks",
                                  line=line, field=doc_field, fix=UNKNOWN_FIX)
        first = where.setdefault((qid, doc), line)
        if first != line and strict:
            raise DataFormatError(name, f"judges query {qid!r} and document {doc!r} again "
                                  f"(first on line {first})", line=line, field=doc_field)
        if first == line:
            judgments.setdefault(qid, {})[doc] = value
    if dropped:
        logger.warning("%s: left out %d judgments of documents the corpus lacks: %s", name,
                       len(dropped), ", ".join(dropped))
    if strict and not judgments:
        raise DataFormatError(name, "holds no judgments")
    return judgments


def _judgment(name: object, line: int, raw: str, fields: list[str],
              strict: bool) -> tuple[str, str, str]:
    """(query id, document id, grade) of a qrels line's fields: TREC's four, or, strictly
    read, BEIR's three too."""
    if len(fields) == 4:
        return fields[0], fields[2], fields[3]
    if strict and len(fields) == 3:
        return fields[0], fields[1], fields[2]
    if strict:
        raise DataFormatError(name, f"expected 3 fields (query-id, corpus-id, score) or 4 "
                              f"(query-id, iteration, doc-id, grade), got {len(fields)}: "
                              f"{raw[:80]!r}", line=line,
                              fix="write one judgment per line: BEIR's fields split by tabs, "
                                  "TREC's by spaces")
    raise DataFormatError(name, f"a line has 4 fields ({' '.join(TREC_QRELS)}), this one "
                          f"{len(fields)}: {raw[:80]!r}", line=line,
                          fix="write one judgment per line, fields split by spaces")


# --- TREC topics ------------------------------------------------------------------------------

_TOPIC = re.compile(r"<top>(.*?)</top>", re.S | re.I)
# a field runs to the next tag, opening or closing: `<num> Number: 301` (TREC) as
# `<num>176</num>` (FIRE, as Anserini's TrecTopicReader reads both)
_NUM = re.compile(r"<num>\s*(?:Number:)?\s*([^\s<]+)", re.I)
_TITLE = re.compile(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=</?\w+>|$)", re.S | re.I)


def read_topics(path: str | Path) -> dict[str, str]:
    """TREC topics: {topic id: its title (the short query)}, from the classic tagged format
    or a tab-separated file of `id<TAB>text`."""
    path = Path(path)
    text = read_text(path)
    topics: dict[str, str] = {}
    lines: dict[str, int] = {}
    if "<top>" in text.lower():
        for match in _TOPIC.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            num, title = _NUM.search(match.group(1)), _TITLE.search(match.group(1))
            if num is None:
                raise DataFormatError(path, "a topic without a number", line=line,
                                      field="<num>")
            if title is None or not title.group(1).strip():
                raise DataFormatError(path, f"topic {num.group(1)!r} has no title", line=line,
                                      field="<title>")
            _add_topic(path, topics, lines, num.group(1), " ".join(title.group(1).split()),
                       line)
    else:
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            if "\t" not in raw:
                raise DataFormatError(path, "expected `id<TAB>text` or <top> topics",
                                      line=line)
            qid, query = raw.split("\t", 1)
            _add_topic(path, topics, lines, qid.strip(), query.strip(), line)
    if not topics:
        raise DataFormatError(path, "holds no topics")
    return topics


def _add_topic(path: Path, topics: dict[str, str], lines: dict[str, int], qid: str,
               text: str, line: int) -> None:
    if not text:
        raise DataFormatError(path, f"topic {qid!r} has no text", line=line, field="text")
    first = lines.setdefault(qid, line)
    if first != line:
        raise DataFormatError(path, f"topic {qid!r} is already given on line {first}",
                              line=line, field="id")
    topics[qid] = text


def read_trec(topics: str | Path, qrels: str | Path, documents: list[Document],
              name: str = "", split: str = "test", drop_unknown: bool = False) -> Collection:
    """TREC topics and qrels over a corpus read apart (any corpus format): the judged topics
    become the questions."""
    topics_path = Path(topics)
    found = read_topics(topics_path)
    judgments = read_qrels(Path(qrels), queries=set(found),
                           documents={d.id for d in documents}, drop_unknown=drop_unknown)
    source = name or topics_path.stem
    by_id = {d.id: d for d in documents}
    questions = tuple(judged_question(qid, found[qid], grades, source,
                                      own_document(qid, found[qid], by_id))
                      for qid, grades in judgments.items())
    return Collection(source, "trec", split, tuple(documents), questions, judgments)
