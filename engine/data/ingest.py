"""A corpus a user adds: checked at once, read in the background, stored under the data
directory as `corpora/<name>/<name>.jsonl` (one `id, title, text, links` row a document)
with a `meta.json` beside it, so it is a named corpus from then on, for the app, the CLI and
`load_corpus`, across restarts.

`check_source` refuses at once what can be told without reading the whole file: a name that
is malformed or taken, a path outside the allowed root, a file over the size limit, a type
no loader reads, a zip whose member paths escape its folder. `ingest` then reads it (any
format `read_dataset` understands, or a .zip of .txt/.md files) and refuses an empty corpus
or duplicate document ids, naming the line. Nothing is written until the whole corpus is
read, and then atomically, so a refused or failed file leaves every prepared corpus as it
was.
"""

from __future__ import annotations

import collections
import json
import logging
import re
import shutil
import time
import zipfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

from engine.cache import atomic_path, write_json_atomic
from engine.data.loaders import read_dataset
from engine.data.loaders.archives import Reading, checked, max_upload_bytes
from engine.data.loaders.collections import is_beir_zip
from engine.data.loaders.user import FOLDER_KINDS, FOLDER_SUFFIXES, file_documents, said
from engine.data.merge import merge_documents
from engine.documents import Corpus, Document
from engine.errors import ConfigError, DataFormatError
from engine.paths import data_dir

logger = logging.getLogger(__name__)

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
# rows, a zip of files, or one page of a user's own (HTML, PDF, text)
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet", ".zip", *FOLDER_SUFFIXES)
def corpora_dir() -> Path:
    return data_dir() / "corpora"


def stored_path(name: str) -> Path:
    """Where the stored corpus `name` is (whether or not it exists)."""
    return corpora_dir() / name / f"{name}.jsonl"


@dataclass(frozen=True)
class StoredCorpus:
    """What `meta.json` records of an added corpus."""

    name: str
    source: str  # the file it was read from (its name, for an upload)
    documents: int
    added: float  # seconds since the epoch
    # where its dense indexes are encoded and served when not here, as added (kept across
    # restarts): {"ray", "workers", "shards"} or {"qdrant", "collection"}
    serving: dict = field(default_factory=dict)
    # a test collection's corpus: {"format": "beir" | "trec", "splits": {split: questions}}
    # (engine.data.collection_store keeps its judged questions beside it)
    collection: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return stored_path(self.name)


def stored_corpora() -> list[StoredCorpus]:
    """Every added corpus in the data directory, by name (a folder without a readable
    meta.json, left by a process that died mid-write, is skipped with a warning)."""
    found = []
    root = corpora_dir()
    for meta in sorted(root.glob("*/meta.json")) if root.exists() else ():
        try:
            found.append(StoredCorpus(**json.loads(meta.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError) as err:
            logger.warning("skipping the damaged corpus folder %s: %s", meta.parent, err)
    return [c for c in found if c.path.exists()]


def check_name(name: str, taken: set[str]) -> str:
    """`name` stripped, if it can name a new corpus; else a ConfigError saying why."""
    name = (name or "").strip()
    if not NAME_RE.fullmatch(name):
        raise ConfigError(f"Corpus name {name!r} is not usable: give 1-40 letters, digits, "
                          "'-' or '_', starting with a letter or digit (e.g. 'my-notes').")
    if name.lower() in {t.lower() for t in taken}:
        raise ConfigError(f"A corpus named {name!r} exists already; pick another name, or "
                          "remove that corpus first.")
    return name


def check_source(source: str | Path, *, root: Path | None = None,
                 max_bytes: int | None = None) -> Path:
    """The file or folder to read a new corpus from, refused at once when it is outside
    `root` (a server-side path, relative ones taken from `root`; None: an upload), missing,
    of a type no loader reads, over `max_bytes`, or a zip whose members escape its folder.
    A folder under `root` may not link to files outside it."""
    path = Path(source)
    if root is not None:
        allowed = root.resolve()
        path = (path if path.is_absolute() else allowed / path).resolve()
        if not path.is_relative_to(allowed):
            raise ConfigError(f"{str(source)!r} is outside the folder corpora may be read "
                              f"from ({allowed}); copy it there, or start the app with "
                              "--corpus-root set to a folder that holds it.")
    if not path.exists():
        fix = (f"give a path under {root.resolve()}" if root is not None
               else "upload the file again")
        raise ConfigError(f"No such file or folder: {str(source)!r}; {fix}.")
    if path.is_file() and path.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"{path.name!r}: a corpus is read from "
                          f"{', '.join(SUFFIXES)} or a folder of {FOLDER_KINDS} files, not "
                          f"{path.suffix or 'a file without a suffix'!r}.")
    if path.is_dir() and root is not None:
        for member in path.rglob("*"):
            if not member.resolve().is_relative_to(allowed):
                raise ConfigError(f"{member.relative_to(path).as_posix()!r} in "
                                  f"{str(source)!r} links outside the folder corpora may be "
                                  f"read from ({allowed}); copy the file in instead.")
    limit = max_upload_bytes() if max_bytes is None else max_bytes
    size, unpacked = _size(path)
    if size > limit:
        raise ConfigError(f"{path.name!r} is {megabytes(size)}{unpacked}, over the "
                          f"{megabytes(limit)} limit for an added corpus; split it, or raise "
                          "the limit with --max-upload-mb (FUNNEL_MAX_UPLOAD_MB).")
    return path


def _size(path: Path) -> tuple[int, str]:
    """(bytes, how they were counted) of a file, a folder or a zip's unpacked members."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()), " in all"
    if path.suffix.lower() == ".zip":
        # every file member, a collection's corpus, queries and qrels too (checked once:
        # one escaping the folder, or past the caps, is refused there)
        return sum(info.file_size for info in _zip_members(path)), " unpacked"
    return path.stat().st_size, ""


def megabytes(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB"


def _zip_members(path: Path) -> list[zipfile.ZipInfo]:
    """The file members of a zip (macOS's __MACOSX folder aside); refuses it whole if any
    member's path escapes, or what it declares is past the caps
    (engine.data.loaders.archives.checked: the size limit, the compression ratio)."""
    infos = checked(path, max_upload_bytes())
    return [i for i in infos if not i.is_dir() and _member_path(i).parts[0] != "__MACOSX"]


def _member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    return PurePosixPath(info.filename.replace("\\", "/"))


def read_documents(path: Path) -> list[Document]:
    """Every document of `path` (a .zip of .txt, .md, .html and .pdf files, one such file,
    or what `read_dataset` reads), refusing an empty corpus and duplicate ids."""
    if path.suffix.lower() == ".zip" and not is_beir_zip(path):
        documents = _read_zip(path)
    elif path.suffix.lower() in FOLDER_SUFFIXES:
        documents, skipped = file_documents([(path.name, path.read_bytes)], path.stem)
        if skipped:
            raise DataFormatError(path.name, f"yields no document: {skipped[0].why}")
    else:
        documents = merge_documents(read_dataset(path).documents)  # QA paragraphs by title
    if not documents:
        raise DataFormatError(path, "holds no documents with text",
                              fix="give rows with id, title and a non-empty text")
    return documents


def _read_zip(path: Path) -> list[Document]:
    """The documents of a zip's .txt, .md, .html and .pdf members
    (engine.data.loaders.user.file_documents: what else it holds is skipped and said),
    each streamed against the archive's running count."""
    members = sorted(_zip_members(path), key=lambda i: _member_path(i).as_posix())
    reading = Reading(path, max_upload_bytes())  # streamed, every byte counted
    with zipfile.ZipFile(path) as archive:
        documents, skipped = file_documents(
            ((_member_path(info).as_posix(), lambda info=info: reading.read(archive, info))
             for info in members), path.stem)
    if not documents:
        raise DataFormatError(path.name, f"the zip holds no {FOLDER_KINDS} file with text"
                              + (f"; skipped: {said(skipped)}" if skipped else ""))
    counts = collections.Counter(doc.id for doc in documents)
    twice = sorted(doc_id for doc_id, count in counts.items() if count > 1)
    if twice:
        base = twice[0].split("#")[0]
        names = [_member_path(i).as_posix() for i in members
                 if _member_path(i).with_suffix("").as_posix() == base]
        raise DataFormatError(path.name, f"members {' and '.join(map(repr, names))} would "
                              f"both be document {twice[0]!r}", fix="rename one of them")
    return documents


def ingest(name: str, source: Path, *, original: str = "", serving: dict | None = None
           ) -> Corpus:
    """Read `source`, store it as corpus `name` (atomically: a failure writes nothing) and
    return it as `load_corpus(name)` would; `original` names the uploaded file in the
    record (default: the source's name), `serving` where its dense indexes are served."""
    return store(name, read_documents(source), original or source.name, serving=serving)


def store(name: str, documents: list[Document], source: str, *, serving: dict | None = None,
          collection: dict | None = None, beside: dict[str, str] | None = None) -> Corpus:
    """Store `documents` (read from `source`) as corpus `name`, with files `beside` it
    ({file name: text}: a collection's questions) and its record, atomically: a failure
    leaves no folder. Returns the corpus as `load_corpus(name)` would."""
    started = time.monotonic()
    stored_as = (stored_path(name).name,)
    documents = [replace(doc, sources=stored_as) for doc in documents]
    corpus = Corpus(name, tuple(documents))  # refuses duplicate ids before anything is written
    folder = corpora_dir() / name
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_path(stored_path(name)) as tmp, open(tmp, "w", encoding="utf-8") as out:
            for doc in documents:
                out.write(json.dumps({"id": doc.id, "title": doc.title, "text": doc.text,
                                      "links": list(doc.links)}, ensure_ascii=False) + "\n")
        for file, text in (beside or {}).items():
            with atomic_path(folder / file) as tmp:
                tmp.write_text(text, encoding="utf-8")
        stored = StoredCorpus(name, source, len(documents), time.time(), dict(serving or {}),
                              dict(collection or {}))
        write_json_atomic(folder / "meta.json", asdict(stored))  # last: the folder counts
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    logger.info("corpus %r: %d documents from %s stored in %.1f s", name, len(documents),
                stored.source, time.monotonic() - started)
    return corpus


def shown_as(err: Exception, path: Path, name: str) -> str:
    """`err`'s message naming the file as the user knows it (`name`) instead of where the
    server keeps it (/tmp/gradio/<hex>/notes.jsonl)."""
    return str(err).replace(str(path), name)


def remove_stored(name: str) -> None:
    """Delete the stored corpus `name` (its caches are fingerprinted: they go unused)."""
    folder = corpora_dir() / name
    if folder.is_dir():
        shutil.rmtree(folder)
