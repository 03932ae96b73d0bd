"""Spans out of a trace file: OTLP/JSON or Phoenix's spans, each field checked as it is read.

Two spellings of OpenInference traces are read (engine.eval.traces makes runs of them):

- OTLP/JSON, what an OpenTelemetry collector's file exporter writes and an OTLP/HTTP
  receiver gets: `{"resourceSpans": [{"resource": {...}, "scopeSpans": [{"spans": [...]}]}]}`,
  one such request per line or one per file;
- Phoenix's spans, as its client returns them (`Client().spans.get_spans(...)`, written as
  a JSON list or one span per line): `{"name", "context": {"trace_id", "span_id"},
  "parent_id", "span_kind", "start_time", "end_time", "attributes"}`.

Each span keeps the pipeline that made it: its resource's `service.name`, else its
`openinference.project.name` (Phoenix's project; a Phoenix span names it only where the
span's attributes do). A file of another shape is refused by name, line and the path of
the field that is wrong (`resourceSpans[0].scopeSpans`), saying what was expected.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.errors import DataFormatError

KIND = "openinference.span.kind"
SERVICE, PROJECT = "service.name", "openinference.project.name"
FORMAT_FIX = ("give OTLP/JSON (a collector's file exporter: 'resourceSpans' per line) or "
              "Phoenix's spans (Client().spans.get_spans, as JSON)")


@dataclass(frozen=True)
class Span:
    """One span, its attributes flattened to OpenInference's dotted names."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: str
    start: float  # seconds since the epoch
    end: float
    attributes: dict[str, Any]
    pipeline: str = ""  # the service (or Phoenix project) that made it; "" if unnamed

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


def read_spans(text: str, name: str) -> list[Span]:
    """Every span of a trace file's `text` (`name` is how errors call it), either
    spelling, in the file's order."""
    spans = [span for n, record in _records(text, name) for span in _spans(record, name, n)]
    if not spans:
        raise DataFormatError(name, "no spans", fix=FORMAT_FIX)
    return spans


def _records(text: str, name: str) -> Iterator[tuple[int | None, Any]]:
    """(line, record) of a JSON document (a list is its items) or of JSON lines."""
    stripped = text.strip()
    if not stripped:
        raise DataFormatError(name, "the file is empty", fix=FORMAT_FIX)
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if whole is not None:  # one document: its line is known when it is one line
        line = 1 if "\n" not in stripped else None
        yield from ((line, item) for item in (whole if isinstance(whole, list) else [whole]))
        return
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(name, f"not JSON: {err.msg}", line=n,
                                      fix=FORMAT_FIX) from None


def _spans(record: Any, name: str, line: int | None) -> Iterator[Span]:
    if isinstance(record, dict) and "resourceSpans" in record:
        yield from otlp_spans(record, name, line)
    elif isinstance(record, dict) and isinstance(record.get("context"), dict):
        yield _phoenix_span(record, name, line)
    else:
        raise DataFormatError(name, "neither an OTLP request ('resourceSpans') nor a "
                              "Phoenix span ('context')", line=line, fix=FORMAT_FIX)


def _shown(value: Any) -> str:
    """A wrong value as an error names it: its JSON type and a short spelling."""
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")
    text = json.dumps(value, default=str)
    return f"{kind} ({text[:40] + '…' if len(text) > 40 else text})"


def _expect(value: Any, kind: type, what: str, path: str, name: str,
            line: int | None) -> Any:
    """`value` if it is a `kind` (None stands for an empty one), else refused by `path`."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise DataFormatError(name, f"expected {what}, got {_shown(value)}", line=line,
                              field=path, fix=FORMAT_FIX)
    return value


def _required(record: dict, key: str, path: str, name: str, line: int | None) -> Any:
    value = record.get(key)
    if value in (None, ""):
        raise DataFormatError(name, "missing", line=line, field=path, fix=FORMAT_FIX)
    if not isinstance(value, str | int):
        raise DataFormatError(name, f"expected an id (a string), got {_shown(value)}",
                              line=line, field=path, fix=FORMAT_FIX)
    return value


def otlp_spans(request: Any, name: str, line: int | None = None) -> Iterator[Span]:
    """The spans of one OTLP/JSON ExportTraceServiceRequest (`name`, `line`: how errors
    call it); every field is checked before a span is made of it."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise DataFormatError(name, "not an OTLP request ('resourceSpans')", line=line,
                              fix=FORMAT_FIX)
    resources = _expect(request["resourceSpans"], list, "a list of resources",
                        "resourceSpans", name, line)
    spans = []  # read whole first: a bad field anywhere refuses the request
    for r, resource in enumerate(resources):
        at = f"resourceSpans[{r}]"
        resource = _expect(resource, dict, "an object", at, name, line)
        pipeline = _pipeline(resource, at, name, line)
        scopes = _expect(resource.get("scopeSpans"), list, "a list of scopes",
                         f"{at}.scopeSpans", name, line)
        for s, scope in enumerate(scopes):
            where = f"{at}.scopeSpans[{s}]"
            scope = _expect(scope, dict, "an object", where, name, line)
            for n, raw in enumerate(_expect(scope.get("spans"), list, "a list of spans",
                                            f"{where}.spans", name, line)):
                spans.append(_otlp_span(raw, f"{where}.spans[{n}]", pipeline, name, line))
    return iter(spans)


def _pipeline(resource: dict, at: str, name: str, line: int | None) -> str:
    """A resource's `service.name`, else its `openinference.project.name` ("" if none)."""
    described = _expect(resource.get("resource"), dict, "an object", f"{at}.resource",
                        name, line)
    attributes = _attributes(described.get("attributes"), f"{at}.resource.attributes", name,
                             line)
    return str(attributes.get(SERVICE) or attributes.get(PROJECT) or "")


def _attributes(items: Any, at: str, name: str, line: int | None) -> dict[str, Any]:
    """OTLP's [{"key", "value": {"stringValue": ...}}] as {key: value}."""
    out = {}
    for i, item in enumerate(_expect(items, list, "a list of {key, value} objects", at, name,
                                     line)):
        item = _expect(item, dict, "a {key, value} object", f"{at}[{i}]", name, line)
        key = _expect(item.get("key"), str, "a string", f"{at}[{i}].key", name, line)
        value = _expect(item.get("value"), dict, "an object such as {\"stringValue\": ...}",
                        f"{at}[{i}].value", name, line)
        out[key] = _otlp_value(value)
    return out


def _otlp_span(raw: Any, at: str, pipeline: str, name: str, line: int | None) -> Span:
    raw = _expect(raw, dict, "an object", at, name, line)
    attributes = _flat(_attributes(raw.get("attributes"), f"{at}.attributes", name, line))
    return Span(_id(_required(raw, "traceId", f"{at}.traceId", name, line)),
                _id(_required(raw, "spanId", f"{at}.spanId", name, line)),
                _id(raw.get("parentSpanId") or ""),
                str(raw.get("name", "")), str(attributes.get(KIND, "")).upper(),
                _nanos(raw.get("startTimeUnixNano"), f"{at}.startTimeUnixNano", name, line),
                _nanos(raw.get("endTimeUnixNano"), f"{at}.endTimeUnixNano", name, line),
                attributes, pipeline)


def _phoenix_span(raw: dict, name: str, line: int | None) -> Span:
    context = raw["context"]
    attributes = _flat(_expect(raw.get("attributes"), dict, "an object", "attributes", name,
                               line))
    kind = raw.get("span_kind") or attributes.get(KIND, "")
    return Span(str(_required(context, "trace_id", "context.trace_id", name, line)),
                str(_required(context, "span_id", "context.span_id", name, line)),
                str(raw.get("parent_id") or ""), str(raw.get("name", "")), str(kind).upper(),
                _iso(raw.get("start_time"), "start_time", name, line),
                _iso(raw.get("end_time"), "end_time", name, line), attributes,
                str(attributes.get(PROJECT) or ""))


def _id(value: str | int) -> str:
    """A trace or span id as hex (OTLP/JSON writes hex; protobuf's JSON mapping base64)."""
    value = str(value)
    if len(value) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except ValueError:
        return value


def _otlp_value(value: dict) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])  # a string in JSON (64 bits)
        except (TypeError, ValueError):
            return None
    if isinstance(value.get("arrayValue"), dict):
        return [_otlp_value(v) for v in (value["arrayValue"].get("values") or ())
                if isinstance(v, dict)]
    if isinstance(value.get("kvlistValue"), dict):
        return {kv.get("key", ""): _otlp_value(kv.get("value") or {})
                for kv in value["kvlistValue"].get("values") or ()
                if isinstance(kv, dict) and isinstance(kv.get("value") or {}, dict)}
    return None


def _flat(attributes: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted names for nested attributes (Phoenix nests `retrieval.documents.0.document.id`
    as retrieval -> documents -> [0] -> document -> id); lists of plain values stay lists."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        at = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, at + "."))
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            out.update(_flat({str(i): v for i, v in enumerate(value)}, at + "."))
        else:
            out[at] = value
    return out


def _nanos(value: Any, field: str, name: str, line: int | None) -> float:
    try:
        return int(value) / 1e9
    except (TypeError, ValueError):
        raise DataFormatError(name, f"{value!r} is not a time in nanoseconds", line=line,
                              field=field) from None


def _iso(value: Any, field: str, name: str, line: int | None) -> float:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise DataFormatError(name, f"{value!r} is not an ISO time", line=line,
                              field=field) from None
