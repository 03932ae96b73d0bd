"""Zip archives read with bounds, before and while they are read: a corpus's zip of text
files, a BEIR collection's zip.

`checked` refuses an archive before any member is read when what it declares is past a cap:
its unpacked size (the added-corpus limit, --max-upload-mb) or its compression ratio (a
1 MB zip of 1 GB of NULs is a bomb; text packs 3-10x). `Reading` then streams each member in
chunks against a running count of every byte unpacked; a member whose header lies about its
size is stopped at what it declared (zipfile unpacks no further, and its CRC then fails);
`extract` writes members to a folder the same way, never holding one whole.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from engine.errors import ConfigError, DataFormatError

DEFAULT_MAX_BYTES = 2 * 1024**3
RATIO_ENV = "FUNNEL_MAX_ZIP_RATIO"
DEFAULT_MAX_RATIO = 100.0  # unpacked over packed bytes; a member under RATIO_FLOOR aside
RATIO_FLOOR = 1024**2  # members smaller than this pack as they may (a page of spaces)
CHUNK = 1024**2


def max_upload_bytes() -> int:
    """The size limit of an added corpus: `$FUNNEL_MAX_UPLOAD_MB`, default 2 GB."""
    value = os.environ.get("FUNNEL_MAX_UPLOAD_MB", "")
    try:
        return int(float(value) * 1024**2) if value else DEFAULT_MAX_BYTES
    except ValueError:
        raise ConfigError(f"FUNNEL_MAX_UPLOAD_MB={value!r} is not a number of megabytes; "
                          "set it to e.g. 2048.") from None


def max_ratio() -> float:
    """The largest compression ratio an archive may declare: `$FUNNEL_MAX_ZIP_RATIO`,
    default 100."""
    value = os.environ.get(RATIO_ENV, "")
    try:
        ratio = float(value) if value else DEFAULT_MAX_RATIO
    except ValueError:
        ratio = 0.0
    if ratio < 1:
        raise ConfigError(f"{RATIO_ENV}={value!r} is not a ratio of 1 or more; set it to "
                          f"e.g. {DEFAULT_MAX_RATIO:g}.")
    return ratio


def _mb(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB"


def checked(path: Path, limit: int) -> list[zipfile.ZipInfo]:
    """The members of zip `path`, once none points outside the archive's folder and what
    it declares is within the caps: `limit` bytes unpacked in all (the added-corpus limit)
    and `max_ratio()` unpacked over packed bytes, for the whole archive and for each member
    of a megabyte or more.

    Raises:
        DataFormatError: not a readable zip, a member escaping its folder, or declaring
            more than a cap (both figures and the setting named); nothing is unpacked.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except zipfile.BadZipFile as err:
        raise DataFormatError(path.name, f"not a readable zip file ({err})") from None
    for info in infos:  # refused whole, before any member is read
        member = PurePosixPath(info.filename.replace("\\", "/"))
        if member.is_absolute() or ".." in member.parts or ":" in info.filename:
            raise DataFormatError(path.name, f"member {info.filename!r} points outside the "
                                  "archive's folder; nothing was read",
                                  fix="zip the files with paths relative to one folder")
    unpacked = sum(i.file_size for i in infos)
    packed = max(sum(i.compress_size for i in infos), 1)
    if unpacked > limit:
        raise DataFormatError(path.name, f"declares {_mb(unpacked)} unpacked, over the "
                              f"{_mb(limit)} limit for an added corpus; nothing was unpacked",
                              fix="split it, or raise the limit with --max-upload-mb "
                                  "(FUNNEL_MAX_UPLOAD_MB)")
    ratio, what, cap = unpacked / packed, "it", max_ratio()
    for info in infos:  # the worst member of a megabyte or more, if worse than the whole
        own = info.file_size / max(info.compress_size, 1)
        if info.file_size >= RATIO_FLOOR and own > ratio:
            ratio, what = own, f"member {info.filename!r}"
    if ratio > cap:
        raise DataFormatError(path.name, f"{what} unpacks {ratio:,.0f} times larger than it "
                              f"is packed, past the cap of {cap:g} (a zip bomb, or data "
                              "far more repetitive than text); nothing was unpacked",
                              fix=f"zip the files again, or raise {RATIO_ENV}")
    return infos


class Reading:
    """Members of one checked archive read in chunks against a running count of every byte
    unpacked, stopped at `limit` (and each at its declared size: zipfile's own bound)."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit, self.count = path, limit, 0

    def chunks(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo):
        """The bytes of member `info`, CHUNK at a time.

        Raises:
            DataFormatError: when the running count passes the limit, or the member's data
                does not match its header (the rest is never unpacked).
        """
        with archive.open(info) as member:
            while chunk := _chunk(member, self.path, info):
                self.count += len(chunk)
                if self.count > self.limit:
                    raise DataFormatError(self.path.name, f"member {info.filename!r} unpacks "
                                          f"past the {_mb(self.limit)} limit for an added "
                                          "corpus; nothing was added",
                                          fix="split it, or raise --max-upload-mb")
                yield chunk

    def read(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
        """Member `info`'s bytes (a text document: held as its text once within bounds)."""
        return b"".join(self.chunks(archive, info))

    def extract(self, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo],
                into: Path) -> None:
        """Members `infos` (`checked`: none escapes the folder) written under folder
        `into`, streamed."""
        for info in infos:
            target = into / PurePosixPath(info.filename.replace("\\", "/"))
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for chunk in self.chunks(archive, info):
                    out.write(chunk)


def _chunk(member, path: Path, info: zipfile.ZipInfo) -> bytes:
    """The next CHUNK of a member; zipfile stops at the declared size itself, and a member
    whose data does not match its header fails its CRC there."""
    try:
        return member.read(CHUNK)
    except zipfile.BadZipFile as err:
        raise DataFormatError(path.name, f"member {info.filename!r} does not unpack to what "
                              f"its header declares ({err}); nothing was added",
                              fix="zip the files again") from None


def unpacked_into(path: Path, into: Path, limit: int) -> None:
    """Zip `path` checked (`checked`) and unpacked under `into`, streamed and counted;
    whatever was written is removed when it is refused midway."""
    infos = checked(path, limit)
    try:
        with zipfile.ZipFile(path) as archive:
            Reading(path, limit).extract(archive, infos, into)
    except (DataFormatError, zipfile.BadZipFile, OSError) as err:
        for child in into.iterdir():
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
        if isinstance(err, DataFormatError):
            raise
        raise DataFormatError(path.name, f"not a readable zip ({err})") from None
