"""A user's own corpus: JSONL / CSV / Parquet rows `id, title, text[, links]`, or a folder
of .txt / .md files (id = relative path, title = first Markdown heading or file name).

`links` is a list of target ids or titles (JSONL, Parquet) or a `|`-separated string (CSV).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from engine.data.loaders.jsonio import Record, iter_jsonl, read_text
from engine.documents import Document
from engine.errors import DataFormatError

FOLDER_SUFFIXES = (".txt", ".md")


def documents_from_rows(path: Path, rows: Iterator[tuple[int, object]], fmt: str) -> list[Document]:
    """Documents from (line, row) pairs; every row needs an id and text, and a title,
    which may be empty (as in many test collections' corpora: BEIR's ArguAna). Rows
    sharing an id are parts of one document (load_corpus joins them) and must share its
    title: two titles under one id are two documents with a duplicate id, refused."""
    source = path.name
    documents = []
    first: dict[str, tuple[int, str]] = {}  # id -> (the line that used it first, its title)
    for line, row in rows:
        rec = Record(path, line, row, fmt)
        links = rec.obj.get("links") or ()
        if isinstance(links, str):
            links = _split_links(rec, links)
        if not isinstance(links, list | tuple) or not all(isinstance(x, str) for x in links):
            raise rec.error("expected a list of ids or titles", field="links")
        doc_id = str(rec.get("id", (str, int))).strip()
        if not doc_id:
            raise rec.error("is empty", field="id")
        title = rec.get("title", str, "").strip()
        line_before, title_before = first.setdefault(doc_id, (line, title))
        if title != title_before:
            raise rec.error(f"{doc_id!r} is already the id of line {line_before}, titled "
                            f"{title_before!r}; give each document its own id (rows of one "
                            "document share its id and title)", field="id")
        documents.append(Document(id=doc_id, title=title, text=rec.text("text"),
                                  sources=(source,), links=tuple(links)))
    return documents


def _split_links(rec: Record, value: str) -> list[str]:
    value = value.strip()
    if value.startswith("["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise rec.error("is not a valid JSON list", field="links") from None
    return [part.strip() for part in value.split("|") if part.strip()]


def read_jsonl(path: Path) -> list[Document]:
    return documents_from_rows(path, iter_jsonl(path), "jsonl corpus")


def read_csv(path: Path) -> list[Document]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    missing = {"id", "title", "text"} - set(reader.fieldnames or ())
    if missing:
        raise DataFormatError(path, "missing column(s) in the header", line=1,
                              field=", ".join(sorted(missing)),
                              fix="CSV corpora need the columns id,title,text[,links]")
    rows = ((reader.line_num, row) for row in reader)
    return documents_from_rows(path, rows, "csv corpus")


def read_parquet(path: Path) -> list[Document]:
    import pyarrow.parquet as pq  # heavy; only for Parquet corpora

    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise DataFormatError(path, f"not a readable Parquet file: {err}") from None
    rows = ((index + 1, row) for index, row in enumerate(table.to_pylist()))
    return documents_from_rows(path, rows, "parquet corpus (line = row number)")


def read_folder(path: Path) -> list[Document]:
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in FOLDER_SUFFIXES
                   and p.is_file())
    if not files:
        raise DataFormatError(path, "folder holds no .txt or .md files")
    documents = []
    for file in files:
        text = read_text(file).strip()
        if text:
            documents.append(text_document(file.relative_to(path).with_suffix("").as_posix(),
                                           file.name, text, path.name))
    return documents


def text_document(doc_id: str, filename: str, text: str, source: str) -> Document:
    """A document from one .txt/.md file: id = its relative path without the suffix, title =
    a Markdown file's first heading, else the file name."""
    name = Path(filename)
    first = text.splitlines()[0].strip()
    if name.suffix.lower() == ".md" and first.startswith("#"):
        title = first.lstrip("#").strip() or name.stem
    else:
        title = name.stem.replace("_", " ")
    return Document(id=doc_id, title=title, text=text, sources=(source,))
