"""Strict readers for JSON, JSONL and text files that report the line of every problem.

`json.load` forgets where an item started, so JSON arrays are decoded item by item with
`raw_decode`, keeping each item's line number for error messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.errors import DataFormatError

_WS = " \t\r\n"


def read_text(path: Path) -> str:
    """The file as UTF-8 text; a decoding error names the line and the byte."""
    return decode_text(path.read_bytes(), path)


def decode_text(data: bytes, path: object) -> str:
    """`data` (the bytes of `path`) as UTF-8 text, a byte-order mark dropped; a decoding
    error names the line and the byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataFormatError(
            path, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})",
            line=line, fix="re-save the file as UTF-8",
        ) from None


def load_json(path: Path) -> Any:
    """The whole file parsed as JSON; a syntax error names its line."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"invalid JSON: {err.msg}", line=err.lineno) from None


def iter_json_array(path: Path, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """(line, item) for each item of a top-level JSON array."""
    text = read_text(path) if text is None else text
    decoder = json.JSONDecoder()
    lines = _LineCounter(text)
    pos = _skip(text, 0)
    if pos >= len(text):
        raise DataFormatError(path, "the file is empty",
                              fix="give a JSON array of records ('[{...}, ...]')")
    if text[pos:pos + 1] != "[":
        raise DataFormatError(path, "expected a JSON array ('[' ...)", line=lines.at(pos))
    pos = _skip(text, pos + 1)
    if text[pos:pos + 1] == "]":
        return
    while True:
        try:
            item, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"invalid JSON: {err.msg}", line=err.lineno) from None
        yield lines.at(pos), item
        pos = _skip(text, end)
        if text[pos:pos + 1] == "]":
            _expect_end(path, text, _skip(text, pos + 1), lines)
            return
        if text[pos:pos + 1] != ",":
            raise DataFormatError(path, "invalid JSON: expected ',' or ']' between items",
                                  line=lines.at(pos))
        pos = _skip(text, pos + 1)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, object) for each non-blank line of a JSON Lines file (`jsonl_lines`)."""
    return jsonl_lines(read_text(path), path)


def jsonl_lines(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """(line, object) for each non-blank line of JSON Lines `text`, read from `path`.

    Lines end at "\n" only: `str.splitlines` would also break at U+2028/U+2029/U+0085,
    which JSON allows unescaped inside strings.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"invalid JSON: {err.msg}", line=number) from None


def _expect_end(path: Path, text: str, pos: int, lines: _LineCounter) -> None:
    if pos < len(text):
        raise DataFormatError(path, "invalid JSON: extra data after the closing ']'",
                              line=lines.at(pos))


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


class _LineCounter:
    """Line numbers of increasing positions, counting each newline once."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


# --- field access with located errors ---------------------------------------------------


class Record:
    """A parsed JSON object plus where it came from, for located field errors."""

    def __init__(self, path: Path, line: int | None, obj: Any, fmt: str, where: str = "") -> None:
        self.path, self.line, self.obj, self.fmt, self.where = path, line, obj, fmt, where
        if not isinstance(obj, dict):
            raise self.error(f"expected a JSON object for format {fmt!r}, "
                             f"got {type(obj).__name__}", field=where or None)

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        """Field `name`, which must be of `kind`; missing -> `default` or an error."""
        if name not in self.obj:
            if default is not ...:
                return default
            raise self.error(f"missing (required by format {self.fmt!r})", field=name)
        value = self.obj[name]
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.error(f"expected {names}, got {type(value).__name__}", field=name)
        return value

    def text(self, name: str, default: Any = ...) -> str:
        """A string field that must not be blank."""
        value = self.get(name, str, default)
        if value is not default and not str(value).strip():
            raise self.error("is empty", field=name)
        return value

    def error(self, problem: str, field: str | None = None) -> DataFormatError:
        """A DataFormatError located at this record (`where` prefixes the field path)."""
        if field and self.where and field != self.where:
            field = f"{self.where}.{field}"
        return DataFormatError(self.path, problem, line=self.line, field=field)
