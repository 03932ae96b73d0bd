"""Every corpus as the Corpora tab and the `list_corpora` endpoint show it (`CorpusRow`): its
origin, state, size, fingerprint, what is built for it on disk, where its dense index is
served and which paradigms can answer over it now. engine.service.corpora.Corpora.rows
lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.data.corpus import NAMED_CORPORA
from engine.data.ingest import StoredCorpus, stored_corpora
from engine.paradigms.registry import PARADIGMS
from engine.service.preparation import Preparation


@dataclass(frozen=True)
class CorpusRow:
    """One corpus as the Corpora view and `list_corpora` show it."""

    name: str
    origin: str  # "started with" | "packaged" | "added"
    status: str  # "ready" | "preparing" | "failed" | "not loaded"
    documents: int | None
    fingerprint: str  # first 12 hex digits; "" until it was loaded once
    built: tuple[str, ...] = ()  # cache kinds on disk for it (bm25, dense, clusters, ...)
    disk_bytes: int = 0  # its stored file plus those caches
    progress: tuple[str, ...] = field(default=())  # its preparation's lines while loaded
    error: str = ""
    answering: tuple[str, ...] = ()  # the paradigms that can answer over it now
    served_by: str = ""  # where its dense index is served when not here: "2 Ray shards at ..."
    judged: str = ""  # a test collection's splits: "test (1,401 judged questions)"


def corpus_rows(names: list[str], preparations: dict[str, Preparation],
                fingerprints: dict[str, str], default: str) -> list[CorpusRow]:
    """Every corpus of `names` with its state, size and what is built for it:
    `preparations` are the loaded ones by name, `fingerprints` each corpus's as it was
    last loaded (a loaded one's recorded there now), `default` the start-up corpus."""
    from engine.cache import entries_built_from
    from engine.service.store import process_store

    states = {}  # first, so that a corpus ready here is stored below
    for name in names:
        preparation = preparations.get(name)
        corpus = preparation.corpus if preparation is not None else None
        if corpus is not None:
            fingerprints[name] = corpus.fingerprint
        states[name] = (preparation, corpus, _status(preparation))
    stored = {c.name: c for c in stored_corpora()}
    built = entries_built_from(set(fingerprints.values()))
    rows = []
    for name, (preparation, corpus, status) in states.items():
        fingerprint = fingerprints.get(name, "")
        entries = built.get(fingerprint, [])
        record: StoredCorpus | None = stored.get(name)
        disk = sum(size for _, size, _ in entries)
        if record is not None and record.path.exists():
            disk += record.path.stat().st_size
        corpus_task = preparation.tasks["corpus"] if preparation is not None else None
        rows.append(CorpusRow(
            name=name,
            origin=("started with" if name == default else
                    "packaged" if name in NAMED_CORPORA else "added"),
            status=status,
            documents=(len(corpus) if corpus is not None else
                       record.documents if record is not None else None),
            fingerprint=fingerprint[:12],
            built=tuple(sorted({_built(kind, folder) for kind, _, folder in entries})),
            disk_bytes=disk,
            progress=tuple(preparation.status_lines(own=True)) if preparation else (),
            served_by=process_store().served_by(fingerprint, name) if fingerprint else "",
            error=(corpus_task.error if corpus_task is not None
                   and corpus_task.state == "failed" else ""),
            answering=tuple(p for p in PARADIGMS if preparation is not None
                            and corpus is not None and not preparation.missing(p)),
            judged=_judged(record)))
    return rows


def _judged(record: StoredCorpus | None) -> str:
    """The splits of an added test collection, as its row names them."""
    if record is None or not record.collection:
        return ""
    # a test collection's splits come judged; a question set of one's own is judged later,
    # in the Judge tab, so its count is of questions only
    judged = "judged " if record.collection.get("format") != "questions" else ""
    return ", ".join(f"{split} ({n:,} {judged}question{'' if n == 1 else 's'})"
                     for split, n in record.collection.get("splits", {}).items())


def _built(kind: str, folder: Path) -> str:
    """A cache entry's kind as the Corpora view lists it: an approximate dense index with
    the recall measured when it was built."""
    from engine.index.faiss_index import recall_note

    note = recall_note(folder) if kind == "dense" else ""
    return f"dense (approximate: HNSW, {note})" if note else kind


def _status(preparation: Preparation | None) -> str:
    if preparation is None:
        return "not loaded"
    if preparation.tasks["corpus"].state == "failed":
        return "failed"
    # its own tasks, as its progress list shows them: the start-up corpus is ready while
    # the process's classifiers still train
    return "preparing" if preparation.busy(own=True) else "ready"
