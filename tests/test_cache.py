from __future__ import annotations

import json
import logging

import pytest

from engine.cache import entry_dir, load_or_build
from engine.index.bm25 import bm25_index
from engine.units.build import UnitConfig

KEY = {"corpus": "abc", "version": 1}


def _build(folder):
    (folder / "value.txt").write_text("42")


def _load(folder):
    return int((folder / "value.txt").read_text())


def test_built_once_then_loaded(data_dir):
    calls = []

    def build(folder):
        calls.append(folder)
        _build(folder)

    assert load_or_build("demo", KEY, build, _load) == 42
    assert load_or_build("demo", KEY, build, _load) == 42
    assert len(calls) == 1
    folder = entry_dir("demo", KEY)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["key"] == KEY and "value.txt" in manifest["files"]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temp left


def test_a_different_key_is_a_different_entry():
    load_or_build("demo", KEY, _build, _load)
    assert entry_dir("demo", {**KEY, "version": 2}) != entry_dir("demo", KEY)


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete_manifest", "bad_manifest"])
def test_damaged_entries_are_rebuilt_with_a_warning(damage, caplog):
    load_or_build("demo", KEY, _build, _load)
    folder = entry_dir("demo", KEY)
    if damage == "truncate":
        (folder / "value.txt").write_text("")
    elif damage == "flip":
        (folder / "value.txt").write_text("43")
    elif damage == "delete_manifest":
        (folder / "manifest.json").unlink()
    else:
        (folder / "manifest.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="engine.cache"):
        assert load_or_build("demo", KEY, _build, _load) == 42
    assert "stale or damaged" in caplog.text
    assert (folder / "manifest.json").exists()


def test_a_failing_build_leaves_nothing_behind():
    def broken(folder):
        (folder / "value.txt").write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        load_or_build("demo", KEY, broken, _load)
    folder = entry_dir("demo", KEY)
    assert not folder.exists()
    assert list(folder.parent.iterdir()) == []


def test_a_loader_failure_marks_the_entry_damaged(caplog):
    load_or_build("demo", KEY, _build, _load)
    calls = []

    def picky(folder):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("unreadable")
        return _load(folder)

    with caplog.at_level(logging.WARNING, logger="engine.cache"):
        assert load_or_build("demo", KEY, _build, picky) == 42
    assert "unreadable" in caplog.text


def test_damaged_bm25_index_is_rebuilt_and_still_searches(tiny_corpus, data_dir, caplog):
    bm25_index(tiny_corpus, UnitConfig("documents"))
    folder = next((data_dir / "cache" / "bm25").iterdir())
    target = next(p for p in (folder / "bm25").iterdir() if p.suffix == ".npy")
    target.write_bytes(target.read_bytes()[:10])
    with caplog.at_level(logging.WARNING, logger="engine.cache"):
        index = bm25_index(tiny_corpus, UnitConfig("documents"))
    assert "stale or damaged" in caplog.text
    assert index.search("Danube river", 1)[0].unit.id == "Danube"


def test_a_data_files_digest_is_read_once_until_the_file_changes(tmp_path, monkeypatch):
    import hashlib
    import os

    from engine import cache

    data = tmp_path / "train.jsonl"
    data.write_text("one\n")
    reads = []
    monkeypatch.setattr(cache, "_sha256", lambda path: reads.append(path) or
                        hashlib.sha256(path.read_bytes()).hexdigest())
    first = cache.file_sha256(data)
    assert first == hashlib.sha256(b"one\n").hexdigest()
    assert cache.file_sha256(data) == first and len(reads) == 1  # memoised
    data.write_text("two\n")  # same size; its modification time moved on (as if later)
    stat = data.stat()
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert cache.file_sha256(data) == hashlib.sha256(b"two\n").hexdigest()
    assert len(reads) == 2


def test_a_new_data_directory_is_its_owners_alone(tmp_path, monkeypatch):
    """Issue 67: the data directory (runs, corpora, caches, uploads) is made owner-only."""
    from engine.paths import data_dir

    monkeypatch.setenv("FUNNEL_DATA_DIR", str(tmp_path / "new" / "data"))
    assert oct(data_dir().stat().st_mode & 0o777) == "0o700"
