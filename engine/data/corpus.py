"""Named corpora: the packaged Wikipedia summaries, the pooled corpus, or a path.

- `wiki`: 10,033 English Wikipedia lead summaries (default; works on a fresh machine).
- `pooled`: `wiki` plus every paragraph of the QA files in the shared data directory, so
  dataset questions are answered from a real haystack rather than their own paragraphs.
  Documents are keyed by title; paragraphs sharing a title are merged.
- a corpus added by name (engine.data.ingest: uploaded or read from a server-side path and
  stored under the data directory).
- any path `read_dataset` understands: that file's or folder's documents.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path

from engine.data.loaders import read_dataset
from engine.data.loaders.jsonio import load_json
from engine.documents import Corpus, Document
from engine.errors import ConfigError, DataFormatError
from engine.models.packaged import wiki_summaries_path
from engine.paths import POOLED_FILES

logger = logging.getLogger(__name__)

NAMED_CORPORA = ("wiki", "pooled")


_SPACE_RE = re.compile(r"\s+")


def load_corpus(spec: str = "wiki") -> Corpus:
    """The corpus named by `spec`: "wiki", "pooled", an added corpus's name, or a path to a
    dataset/corpus file or folder."""
    from engine.data.ingest import NAME_RE, stored_corpora, stored_path

    if spec == "wiki":
        return Corpus("wiki", tuple(read_wiki_summaries()))
    if spec == "pooled":
        return pooled_corpus()
    if NAME_RE.fullmatch(spec) and stored_path(spec).exists():
        return Corpus(corpus_name(spec), tuple(read_dataset(stored_path(spec)).documents))
    path = Path(spec)
    if not path.exists():
        names = [*NAMED_CORPORA, *(c.name for c in stored_corpora())]
        raise ConfigError(f"Unknown corpus {spec!r}: not one of {', '.join(names)} and no "
                          "such file or folder. Give a corpus's name or an existing path.")
    dataset = read_dataset(path)
    return Corpus(corpus_name(spec), tuple(merge_documents(dataset.documents)))


def corpus_name(spec: str) -> str:
    """The name `load_corpus(spec)` gives its corpus: a named or added corpus's name, a
    path's stem."""
    return spec if spec in NAMED_CORPORA else Path(spec).stem


def read_wiki_summaries(path: Path | None = None) -> list[Document]:
    """Documents from the packaged summaries file: id = title, text = the lead extract."""
    path = path or wiki_summaries_path()
    data = load_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, "expected a JSON object keyed by title")
    documents = []
    for key, item in data.items():
        if not isinstance(item, dict) or not isinstance(item.get("extract"), str):
            raise DataFormatError(path, "missing or not a string", field=f"{key}.extract")
        title = str(item.get("title") or key).strip()
        if item["extract"].strip():
            documents.append(Document(id=title, title=title, text=item["extract"].strip(),
                                      sources=("wiki",)))
    return documents


def pooled_corpus(data_root: Path | None = None) -> Corpus:
    """Wikipedia summaries plus every paragraph of the shared QA files, merged by title."""
    from engine.qa_data import require

    data_root = data_root or require(POOLED_FILES, "the pooled corpus needs the QA "
                                     "paragraphs")
    documents = read_wiki_summaries()
    for name in POOLED_FILES:
        documents.extend(read_dataset(data_root / name).documents)
    return Corpus("pooled", tuple(merge_documents(documents)))


def merge_documents(documents: Iterable[Document]) -> list[Document]:
    """One document per id, in first-seen order; distinct texts of an id are joined.

    A text equal to, or contained in, one already kept (whitespace-normalised) is dropped,
    so the same paragraph shipped by two datasets appears once; sources and links are
    unioned so each document remembers every file it came from.
    """
    merged: dict[str, list[Document]] = {}
    for doc in documents:
        merged.setdefault(doc.id, []).append(doc)
    return [_merge_group(group) for group in merged.values()]


def _merge_group(group: list[Document]) -> Document:
    if len(group) == 1:
        return group[0]
    texts: list[str] = []
    normal: list[str] = []
    for doc in sorted(group, key=lambda d: -len(d.text)):  # longest first: containment
        key = _SPACE_RE.sub(" ", doc.text).strip()
        if not any(key in kept for kept in normal):
            texts.append(doc.text.strip())
            normal.append(key)
    order = {id(doc): i for i, doc in enumerate(group)}  # restore first-seen order
    texts.sort(key=lambda t: min(order[id(d)] for d in group if d.text.strip() == t))
    first = group[0]
    return Document(
        id=first.id, title=first.title, text="\n\n".join(texts),
        sources=tuple(dict.fromkeys(s for d in group for s in d.sources)),
        links=tuple(dict.fromkeys(link for d in group for link in d.links)),
    )
