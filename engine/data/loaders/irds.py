"""Test collections by the name the field gives them: ir_datasets ids
(`irds:beir/nfcorpus/test`, as PyTerrier and ir_measures name them), read through
ir_datasets from its local cache (`$IR_DATASETS_HOME`, default ~/.ir_datasets).

Nothing is downloaded: before a document is read, every file the dataset would fetch is
looked for where ir_datasets keeps it, and a dataset with any missing is refused naming
each file and where to put it (`MissingFiles`). A dataset ir_datasets has no name for is
refused naming the id. The collection read is the engine's (engine.data.loaders
.collections.Collection): its documents, its queries judged in its qrels as the questions,
graded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.data.loaders.collections import Collection, own_document
from engine.documents import Document, judged_question
from engine.errors import ConfigError, DataFormatError, ResourceMissingError

logger = logging.getLogger(__name__)

PREFIX = "irds:"


def is_irds(name: object) -> bool:
    return isinstance(name, str) and name.strip().startswith(PREFIX)


def dataset_id(name: str) -> str:
    """The ir_datasets id of `irds:<id>`."""
    return name.strip()[len(PREFIX):].strip().strip("/")


class MissingFiles(ResourceMissingError):
    """A dataset whose files are not in ir_datasets' cache: `files` is (where to put each,
    where ir_datasets would fetch it from)."""

    def __init__(self, name: str, files: list[tuple[Path, str]]) -> None:
        self.files = files
        listed = "; ".join(f"{path}" + (f" (ir_datasets fetches it from {url})" if url else "")
                           for path, url in files)
        super().__init__(f"{name} is not in ir_datasets' cache here, and nothing is "
                         f"downloaded: put {listed}. IR_DATASETS_HOME moves the cache.")


def _load(name: str) -> Any:
    import ir_datasets

    ident = dataset_id(name)
    try:
        return ir_datasets.load(ident)
    except KeyError:
        raise ConfigError(f"{name!r}: ir_datasets has no dataset {ident!r}; its ids read "
                          "like irds:beir/nfcorpus/test (ir_datasets.readthedocs.io lists "
                          "them).") from None


def missing_files(dataset: Any) -> list[tuple[Path, str]]:
    """The files `dataset` would download that are not where ir_datasets keeps them, each
    (its path, the first mirror's URL): a download counts as there when its own file is,
    or a cache or extraction made from it is."""
    from ir_datasets.util import Cache, Download, LocalDownload, ZipExtractCache

    found: list[tuple[Path, str]] = []
    seen: set[int] = set()

    def walk(value: Any, covered: bool) -> None:
        if id(value) in seen or value is None or isinstance(value, str | bytes | int | float):
            return
        seen.add(id(value))
        if isinstance(value, Download):
            path = value._cache_path
            if not covered and not (path and Path(path).exists()):
                found.append((Path(path) if path else Path("?"),
                              next(iter(getattr(m, "url", "") for m in value.mirrors), "")))
            return
        if isinstance(value, LocalDownload):
            if not covered and not value._path.exists():
                found.append((value._path, ""))
            return
        if isinstance(value, Cache):
            covered = covered or value._path.exists()
        if isinstance(value, ZipExtractCache):
            covered = covered or Path(value.extract_path).exists()
        children = value.values() if isinstance(value, dict) else \
            value if isinstance(value, list | tuple) else \
            vars(value).values() if hasattr(value, "__dict__") else ()
        for child in children:
            if type(child).__module__.startswith("ir_datasets") or \
                    isinstance(child, dict | list | tuple):
                walk(child, covered)

    walk(dataset, False)
    return sorted(set(found))


def read_irds(name: str, drop_unknown: bool = False) -> Collection:
    """The collection `irds:<id>` names, read from ir_datasets' cache: its documents (title
    and text where it has them), its queries with judgments as questions (the judgments of
    documents it lacks refused, or with `drop_unknown` left out).

    Raises:
        ConfigError: an id ir_datasets does not know, or one without docs, queries and
            qrels.
        MissingFiles: files it would download are not here.
    """
    dataset = _load(name)
    if not (dataset.has_docs() and dataset.has_queries() and dataset.has_qrels()):
        raise ConfigError(f"{name!r} is no test collection: it lacks "
                          + ", ".join(part for part, has in (
                              ("documents", dataset.has_docs()),
                              ("queries", dataset.has_queries()),
                              ("qrels", dataset.has_qrels())) if not has)
                          + "; name a split that has all three, e.g. irds:beir/nfcorpus/test.")
    missing = missing_files(dataset)
    if missing:
        raise MissingFiles(name, missing)
    documents = tuple(_document(doc) for doc in dataset.docs_iter())
    by_id = {d.id: d for d in documents}
    queries = {q.query_id: _query_text(q) for q in dataset.queries_iter()}
    judgments: dict[str, dict[str, int]] = {}
    dropped: list[str] = []
    for qrel in dataset.qrels_iter():
        if qrel.doc_id not in by_id:
            if not drop_unknown:
                raise DataFormatError(name, f"its qrels judge document {qrel.doc_id!r}, "
                                      "which its corpus lacks", fix="add --drop-unknown to "
                                      "leave such judgments out")
            dropped.append(f"{qrel.query_id}/{qrel.doc_id}")
            continue
        if qrel.query_id in queries:
            judgments.setdefault(qrel.query_id, {})[qrel.doc_id] = int(qrel.relevance)
    if dropped:  # as a BEIR or TREC collection's are said (engine.data.loaders.collections)
        logger.warning("%s: left out %d judgments of documents the corpus lacks: %s", name,
                       len(dropped), ", ".join(dropped))
    ident = dataset_id(name)
    questions = tuple(judged_question(qid, queries[qid], grades, name,
                                      own_document(qid, queries[qid], by_id))
                      for qid, grades in judgments.items())
    split = ident.rsplit("/", 1)[-1] if "/" in ident else "test"
    return Collection(ident.replace("/", "-"), "irds", split, documents, questions, judgments)


def _document(doc: Any) -> Document:
    title = str(getattr(doc, "title", "") or "")
    text = str(getattr(doc, "text", "") or getattr(doc, "body", "") or "")
    return Document(id=str(doc.doc_id), title=title, text=text or title)


def _query_text(query: Any) -> str:
    return str(getattr(query, "text", "") or getattr(query, "title", "") or "")
