"""A user's own corpus: JSONL / CSV / Parquet rows `id, title, text[, links]`, or a folder
of .txt / .md files (id = relative path, title = first Markdown heading or file name), HTML
pages (a document per section) and PDFs (a document per page: engine.data.loaders.pages).

`links` is a list of target ids or titles (JSONL, Parquet) or a `|`-separated string (CSV).
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from engine.data.loaders import pages
from engine.data.loaders.jsonio import Record, decode_text, iter_jsonl, read_text
from engine.documents import Document
from engine.errors import DataFormatError

logger = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md")
# what a folder or a zip of files is read from: text, Markdown, HTML pages and PDFs
FOLDER_SUFFIXES = (*TEXT_SUFFIXES, *pages.HTML_SUFFIXES, *pages.PDF_SUFFIXES)
FOLDER_KINDS = ".txt, .md, .html or .pdf"


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
    """The documents of every .txt, .md, .html and .pdf file under folder `path` (the files
    skipped are logged, each with why)."""
    files = sorted(p for p in path.rglob("*") if p.is_file())
    documents, skipped = file_documents(
        ((f.relative_to(path).as_posix(), f.read_bytes) for f in files), path.name,
        shown=lambda name: str(path / name))
    if not documents:
        raise DataFormatError(path, f"folder holds no {FOLDER_KINDS} file with text"
                              + (f"; skipped: {said(skipped)}" if skipped else ""))
    return documents


def file_documents(files, source: str, shown=None) -> tuple[list[Document],
                                                              list[pages.Skipped]]:
    """(documents, what was skipped and why) of `files`, (relative name, a function giving
    its bytes) each: .txt and .md as text (one that holds an HTML page as HTML), .html and
    .htm by section, .pdf by page (engine.data.loaders.pages); any other file, and one that
    yields no text, skipped with its reason. A file is read only once it is one of these;
    `shown(name)` names it in errors (default "<source>:<name>", a zip's member)."""
    documents: list[Document] = []
    skipped: list[pages.Skipped] = []
    for name, read in files:
        path = PurePosixPath(name)
        if path.suffix.lower() not in FOLDER_SUFFIXES:
            skipped.append(pages.Skipped(name, f"not a {FOLDER_KINDS} file"))
            continue
        raw = read()
        if path.suffix.lower() in TEXT_SUFFIXES and not pages.looks_like_html(raw):
            text = decode_text(raw, shown(name) if shown else f"{source}:{name}").strip()
            found, why = ([text_document(path.with_suffix("").as_posix(), path.name, text,
                                         source)], "") if text else ([], "empty")
        else:
            found, why = pages.page_documents(name, raw, source)
        documents.extend(found)
        if why:
            skipped.append(pages.Skipped(name, why))
    if skipped:
        logger.warning("%s: skipped %d file(s): %s", source, len(skipped), said(skipped))
    return documents, skipped


def said(skipped: list[pages.Skipped], most: int = 8) -> str:
    """The files skipped, with why, the first `most` of them."""
    more = f" and {len(skipped) - most} more" if len(skipped) > most else ""
    return "; ".join(map(str, skipped[:most])) + more


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
