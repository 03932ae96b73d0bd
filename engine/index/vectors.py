"""Bi-encoder vectors cached by text content, so no text is ever encoded twice.

Each encoder (its identity and precision) has a folder of shards under
`<data_dir>/cache/vectors/<encoder>/`; a shard is an ordinary fingerprinted cache entry
(engine.cache: written atomically, verified on load) holding the sha256 keys of the texts
it encoded and their vectors. `VectorStore.encode` looks every text up in the shards, encodes
only the missing ones and writes them as new shards of at most SHARD_TEXTS texts, one at
least every SHARD_SECONDS (an interrupted or killed build keeps all but its last seconds).
So a corpus that adds a QA file's paragraphs to an indexed corpus encodes just those
paragraphs, and a damaged shard is deleted and its texts encoded again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine.cache import MANIFEST, CacheInvalid, fingerprint, load_or_build, verify
from engine.paths import data_dir

logger = logging.getLogger(__name__)

VECTORS_VERSION = 1
KEY_BYTES = 16  # of a text's sha256: collisions are out of reach at any corpus size
SHARD_TEXTS = 8192  # texts a shard holds at most: a minute or two of encoding here
# a shard is written at least this often while encoding, so a build killed on a slow or
# busy CPU (8,192 texts took 5 minutes beside other work) loses at most this much of it
SHARD_SECONDS = 30.0
SLICE_TEXTS = 1024  # texts encoded between two progress reports
Progress = Callable[[int, int], None]
Encode = Callable[[list[str]], np.ndarray]


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """Each text's content key: the first KEY_BYTES of its sha256, as fixed-width bytes."""
    return np.array([hashlib.sha256(t.encode("utf-8")).digest()[:KEY_BYTES] for t in texts],
                    dtype=f"S{KEY_BYTES}")


class VectorStore:
    """The vectors one encoder has made, by text content."""

    def __init__(self, encoder: dict) -> None:
        """`encoder` names the encoder's weights and precision (a JSON-able dict)."""
        self.encoder = {"encoder": encoder, "version": VECTORS_VERSION}
        self.kind = f"vectors/{fingerprint(self.encoder)[:24]}"

    @property
    def folder(self) -> Path:
        return data_dir() / "cache" / self.kind

    def _shards(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(keys, vectors) of every verified shard; damaged ones are deleted."""
        shards = []
        if not self.folder.is_dir():
            return shards
        for entry in sorted(p for p in self.folder.iterdir() if not p.name.startswith(".")):
            try:
                manifest_key = _manifest_key(entry)
                verify(entry, manifest_key)
                shards.append((np.load(entry / "keys.npy"),
                               np.load(entry / "vectors.npy", mmap_mode="r")))
            except (CacheInvalid, OSError, ValueError, KeyError) as err:
                logger.warning("Vector shard %s is damaged (%s); deleting it, its texts will "
                               "be encoded again.", entry, err)
                shutil.rmtree(entry, ignore_errors=True)
        return shards

    def missing(self, texts: Sequence[str]) -> list[int]:
        """Positions of the texts never encoded (the first of each repeated text)."""
        keys = text_keys(texts)
        seen = np.zeros(len(keys), dtype=bool)
        for shard_keys, _ in self._shards():
            seen |= np.isin(keys, shard_keys)
        first: dict[bytes, int] = {}
        for position in np.flatnonzero(~seen).tolist():
            first.setdefault(keys[position].tobytes(), position)
        return list(first.values())

    def encode(self, texts: Sequence[str], encode: Encode, *, slice_size: int | None = None,
               shard_size: int | None = None, progress: Progress | None = None,
               out: np.ndarray | None = None) -> np.ndarray:
        """Vectors of `texts` (float32, a row each), encoding only texts never seen.

        Args:
            texts: what to embed.
            encode: the encoder, `list[str] -> (n, dim) float32`.
            slice_size: texts encoded between two progress reports (SLICE_TEXTS).
            shard_size: texts encoded between two shards written, so an interrupted build
                resumes from its last shard instead of from nothing (SHARD_TEXTS).
            progress: called as `progress(done, total)` over the texts to encode.
            out: where to write the vectors (a float32 array or memory-mapped file of
                shape (len(texts), dim)), filled slice by slice and returned; by default
                a new array.
        """
        slice_size, shard_size = slice_size or SLICE_TEXTS, shard_size or SHARD_TEXTS
        keys = text_keys(texts)
        found: dict[bytes, np.ndarray] = {}
        for shard_keys, shard_vectors in self._shards():
            for row in np.flatnonzero(np.isin(shard_keys, keys)):
                found[shard_keys[row].tobytes()] = shard_vectors[row]
        missing = list(dict.fromkeys(k for k in keys.tolist() if k not in found))
        logger.info("Vectors: %d texts, %d to encode, the others encoded before (by an "
                    "earlier build, or by one that was stopped: its shards are kept)",
                    len(texts), len(missing))
        if missing:
            first = {k: i for i, k in reversed(list(enumerate(keys.tolist())))}
            todo = [texts[first[k]] for k in missing]
            written, parts, since = 0, [], time.monotonic()
            for start in range(0, len(todo), slice_size):
                parts.append(np.asarray(encode(todo[start:start + slice_size]),
                                        dtype=np.float32))
                done = min(start + slice_size, len(todo))
                if (done - written >= shard_size or done == len(todo)
                        or time.monotonic() - since >= SHARD_SECONDS):
                    made = np.concatenate(parts)
                    self._write(np.array(missing[written:done], dtype=keys.dtype), made)
                    found.update(zip(missing[written:done], made, strict=True))
                    written, parts, since = done, [], time.monotonic()
                if progress:
                    progress(done, len(todo))
        if not len(texts):
            return np.zeros((0, 0), dtype=np.float32) if out is None else out
        if out is None:
            return np.ascontiguousarray(np.stack([found[k] for k in keys.tolist()]),
                                        dtype=np.float32)
        for start in range(0, len(keys), slice_size):  # never a second whole matrix
            out[start:start + slice_size] = np.stack(
                [found[k] for k in keys[start:start + slice_size].tolist()])
        return out

    def _write(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        key = {**self.encoder, "texts": hashlib.sha256(keys.tobytes()).hexdigest()}

        def build(folder: Path) -> None:
            np.save(folder / "keys.npy", keys)
            np.save(folder / "vectors.npy", vectors)

        load_or_build(self.kind, key, build, lambda folder: None)


def _manifest_key(entry: Path) -> dict:
    """The key a shard was written under, checked against the shard's folder name."""
    key = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))["key"]
    if fingerprint(key)[:24] != entry.name:
        raise CacheInvalid("its key does not match its folder")
    return key
