"""Fingerprinted, atomically written, verified caches under the data directory.

A cache entry is a folder `<data_dir>/cache/<kind>/<fingerprint>/`. The fingerprint is a
sha256 of the entry's key (corpus fingerprint, builder config, format version). It is built
in a temporary folder beside it, `manifest.json` is written last (file sizes and sha256s),
and the folder is renamed into place, so a crash never leaves a half-written entry under
the real name. On load the manifest is checked against the files; a stale or damaged entry
is logged as a warning, deleted and rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from engine.paths import data_dir

logger = logging.getLogger(__name__)

T = TypeVar("T")
MANIFEST = "manifest.json"


class CacheInvalid(Exception):
    """A cache entry failed verification; the message says why."""


def fingerprint(key: Any) -> str:
    """sha256 of the canonical JSON of `key`."""
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def entry_dir(kind: str, key: Any) -> Path:
    """Where the cache entry of `kind` for `key` lives (may not exist yet)."""
    return data_dir() / "cache" / kind / fingerprint(key)[:24]


def load_or_build(kind: str, key: Any, build: Callable[[Path], None],
                  load: Callable[[Path], T]) -> T:
    """Load the verified cache entry for `key`, building it first if missing or invalid.

    Args:
        kind: cache family, e.g. "bm25" or "clusters"; one folder per kind.
        key: JSON-serialisable description of every input the entry depends on.
        build: writes the entry's files into the folder it is given.
        load: reads an entry folder; any exception it raises marks the entry damaged.
    """
    final = entry_dir(kind, key)
    if final.exists():
        try:
            verify(final, key)
            return load(final)
        except Exception as err:  # noqa: BLE001 - any failure means: do not trust it
            logger.warning("Cache %s is stale or damaged (%s); rebuilding it.", final, err)
            shutil.rmtree(final, ignore_errors=True)
    _build_atomically(final, key, build)
    return load(final)


def existing_entry(kind: str, key: Any) -> Path | None:
    """The verified cache entry of `kind` for `key`, or None when it is missing or damaged
    (never builds)."""
    folder = entry_dir(kind, key)
    try:
        verify(folder, key)
    except Exception:  # noqa: BLE001 - missing or damaged both mean: not available
        return None
    return folder


def entries_built_from(corpus_fingerprints: set[str]
                       ) -> dict[str, list[tuple[str, int, Path]]]:
    """{corpus fingerprint: [(kind, bytes on disk, entry folder)]} of the cache entries whose
    key names one of `corpus_fingerprints` (read from the manifests in one pass, not
    verified): what is built for each corpus, and its size."""
    found: dict[str, list[tuple[str, int, Path]]] = {f: [] for f in corpus_fingerprints}
    for manifest in sorted((data_dir() / "cache").glob(f"*/*/{MANIFEST}")):
        try:
            entry = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        key = entry.get("key")
        if isinstance(key, dict) and key.get("corpus") in found:
            size = sum(meta.get("size", 0) for meta in entry.get("files", {}).values())
            found[key["corpus"]].append((manifest.parent.parent.name, size, manifest.parent))
    return found


def verify(folder: Path, key: Any) -> None:
    """Raise CacheInvalid unless `folder` holds a complete entry for `key`."""
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CacheInvalid(f"unreadable manifest: {err}") from None
    if manifest.get("fingerprint") != fingerprint(key):
        raise CacheInvalid("fingerprint does not match its inputs")
    for name, meta in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != meta["size"]:
            raise CacheInvalid(f"{name} is missing or has the wrong size")
        if _sha256(path) != meta["sha256"]:
            raise CacheInvalid(f"{name} fails its checksum")


def owner_tag() -> str:
    """What names this process in a temporary name: its host and pid (a data directory may
    be shared with Ray workers on other machines)."""
    return f"{socket.gethostname().replace('-', '_')}-{os.getpid()}"


def verify_entry(folder: Path) -> None:
    """Raise CacheInvalid unless `folder` is a complete, intact entry for the key its own
    manifest names (for entries found by listing, like a model's trained versions)."""
    try:
        key = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["key"]
    except (OSError, ValueError, KeyError) as err:
        raise CacheInvalid(f"unreadable manifest: {err}") from None
    verify(folder, key)


def _build_atomically(final: Path, key: Any, build: Callable[[Path], None]) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{owner_tag()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        started = time.perf_counter()
        build(tmp)
        files = {
            p.relative_to(tmp).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
            for p in sorted(tmp.rglob("*")) if p.is_file()
        }
        manifest = {"fingerprint": fingerprint(key), "key": key, "files": files,
                    "build_seconds": round(time.perf_counter() - started, 3),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_json_atomic(tmp / MANIFEST, manifest)
        try:
            os.replace(tmp, final)
        except OSError:  # another process finished the same entry first: keep theirs
            verify(final, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed onto `path` when the block ends
    normally, removed when it raises, so readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.{owner_tag()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to `path` through a temporary file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        json.dump(obj, handle, ensure_ascii=False, default=str)


# what a process killed mid-write leaves: a build folder, a file being written, a download
_LEFTOVER = re.compile(r"^\.(?:tmp-.+|.+\.tmp|.+\.part)$")


def sweep_leftovers(root: Path | None = None) -> list[Path]:
    """Delete what processes of this host that are gone (killed mid-write) left half-written
    under the data directory: never read (nothing is read under a temporary name), they
    only take space. Returns what was deleted. A live process's, or another host's, stays."""
    host = socket.gethostname().replace("-", "_")
    removed = []
    for path in (root or data_dir()).rglob(".*"):
        match = _LEFTOVER.match(path.name)
        owner = re.search(rf"[-.]{re.escape(host)}-(\d+)-[0-9a-f]{{8}}", path.name)
        if not match or not owner or _alive(int(owner.group(1))):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    if removed:
        logger.info("removed %d half-written file(s) left by a process that was stopped: %s",
                    len(removed), ", ".join(p.name for p in removed[:5]))
    return removed


def interrupted(removed: list[Path], root: Path | None = None) -> list[str]:
    """What the half-written files `sweep_leftovers` removed were becoming, a line per kind
    of cache ("a dense index build"), for the app to say after a restart."""
    root = root or data_dir()
    kinds: dict[str, int] = {}
    for path in removed:
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            continue
        kind = parts[1] if len(parts) > 2 and parts[0] == "cache" else parts[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return [f"a {kind} build was stopped mid-way when the app last stopped ({count} "
            "half-written file(s) removed); it is made again from the start when next needed"
            for kind, count in sorted(kinds.items())]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


_FILE_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a data file a cache key names, read once per process for each path, inode,
    size and modification time: finding a trained model's cache entry for every question would
    otherwise re-read its training files (~85 ms for the query classifier's)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        _FILE_DIGESTS[key] = _sha256(path)
    return _FILE_DIGESTS[key]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
