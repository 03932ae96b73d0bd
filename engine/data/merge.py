"""Documents merged by id: the same paragraph shipped by several files kept once, the
distinct texts of an id joined. Named corpora (engine.data.corpus) and added ones
(engine.data.ingest) both merge what they read with `merge_documents`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.documents import Document

_SPACE_RE = re.compile(r"\s+")


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
