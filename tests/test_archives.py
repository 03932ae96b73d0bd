"""Zips bounded before and while they are read (issue 67: a 1 MB zip of 1 GB of NULs, under
the upload cap, took the app from 0.9 to 9 GB): refused by their declared size or ratio
before a byte is unpacked, and a member whose header lies stopped at the running count."""

from __future__ import annotations

import resource
import struct
import zipfile
import zlib

import pytest

from engine.data.ingest import check_source, read_documents
from engine.data.loaders.archives import Reading, checked
from engine.data.loaders.collections import read_beir
from engine.errors import DataFormatError


def _bomb(path, megabytes: int, name: str = "notes/zeros.txt") -> None:
    """A zip of `megabytes` MB of NULs, written a MB at a time (about 1 KB packed per MB)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open(name, "w", force_zip64=True) as member:
        for _ in range(megabytes):
            member.write(bytes(1024**2))


def test_a_zip_bomb_is_refused_by_its_ratio_before_memory_grows(tmp_path):
    bomb = tmp_path / "bomb.zip"
    _bomb(bomb, 1024)  # 1 GB of NULs in about 1 MB
    assert bomb.stat().st_size < 2 * 1024**2
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DataFormatError, match=r"bomb.zip: it unpacks 1,0\d\d "
                                              r"times larger .* cap of 100.*FUNNEL_MAX_ZIP_RATIO"):
        check_source(bomb)
    with pytest.raises(DataFormatError, match="times larger"):
        read_documents(bomb)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak  # in KB
    assert grown < 100 * 1024  # nothing like the gigabyte it holds


def test_a_zip_past_the_size_limit_is_refused_naming_both_and_the_setting(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("FUNNEL_MAX_UPLOAD_MB", "2")
    monkeypatch.setenv("FUNNEL_MAX_ZIP_RATIO", "100000")
    bomb = tmp_path / "big.zip"
    _bomb(bomb, 3)
    with pytest.raises(DataFormatError, match=r"declares 3.0 MB unpacked, over the 2.0 MB "
                                              r"limit.*--max-upload-mb"):
        checked(bomb, 2 * 1024**2)


def _lying(path, declared: int, real: bytes) -> None:
    """A zip whose one member says it unpacks to `declared` bytes and unpacks to `real`."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes/a.txt", real)
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        data[at + offset:at + offset + 4] = struct.pack("<I", declared)
    path.write_bytes(bytes(data))


def test_a_member_unpacking_past_its_declared_size_is_stopped_there(tmp_path):
    liar = tmp_path / "liar.zip"
    real = b"text " * 400_000  # 2 MB, declared as 1 KB
    _lying(liar, 1024, real)
    (info,) = checked(liar, 10 * 1024**2)
    assert info.file_size == 1024 and zlib.crc32(real)
    reading = Reading(liar, 10 * 1024**2)
    with zipfile.ZipFile(liar) as archive, \
            pytest.raises(DataFormatError, match=r"'notes/a.txt' does not unpack to what its "
                                                 r"header declares"):
        reading.read(archive, info)
    assert reading.count <= 1024  # stopped at its declared size, never past it


def test_a_beir_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    bomb = tmp_path / "beir.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("c/corpus.jsonl", '{"_id": "d1", "title": "", "text": "x"}\n')
        archive.writestr("c/queries.jsonl", '{"_id": "q1", "text": "x"}\n')
        with archive.open("c/qrels/test.tsv", "w", force_zip64=True) as member:
            for _ in range(200):
                member.write(bytes(1024**2))
    with pytest.raises(DataFormatError, match="times larger"):
        read_beir(bomb)
    assert not list(tmp_path.glob("beir-*"))
