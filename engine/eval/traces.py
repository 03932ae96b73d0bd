"""A user's own pipeline in, from its OpenInference traces: each trace one run like ours.

A pipeline instrumented with OpenInference (LangChain, LlamaIndex, Haystack, DSPy, ... or
this engine's own runs, engine.service.otel) leaves one trace per question. Two spellings
of those traces are read:

- OTLP/JSON, what an OpenTelemetry collector's file exporter writes and an OTLP/HTTP
  receiver gets: `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`, one such
  request per line or one per file;
- Phoenix's spans, as its client returns them (`Client().spans.get_spans(...)`, written as
  a JSON list or one span per line): `{"name", "context": {"trace_id", "span_id"},
  "parent_id", "span_kind", "start_time", "end_time", "attributes"}`.

A trace becomes a `RunTrace`: its root span's input is the question and its output the
answer; each RETRIEVER span a stage of the documents it returned
(`retrieval.documents.N.document.{id,score,content,metadata}`), each RERANKER span a stage
of its output documents (`reranker.output_documents`; the input documents' count is its
`n_in`), in the order they started, a span inside another of the same kind (LlamaIndex's
`retrieve` around `_retrieve`) folded into it; each innermost LLM span (the call the model
answered, inside a framework's `predict` and `chat` wrappers) a reader call with its prompt,
output, model and token counts. A document counts as part of the documents its metadata
names (`documents`, as this engine writes), else of the one its metadata `title` names
(QA files name supporting documents by title), else of its own id: that is what gold
supporting documents are matched against. A question that a QA file holds (same text, up to
case and spacing) gets its gold answers and supporting documents, and the run is measured
as ours are. A file neither spelling reads is refused by name, line and field.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from engine.documents import Candidate, Dataset, Unit
from engine.errors import DataFormatError
from engine.paradigms.base import annotate
from engine.text import question_key
from engine.trace import LLMStep, RunTrace, StageResult

RETRIEVER, RERANKER, LLM = "RETRIEVER", "RERANKER", "LLM"
KIND = "openinference.span.kind"
# a framework's retrievers return chunks; this engine's own spans say what they ranked
PASSAGES, GRANULARITIES = "passages", ("clusters", "documents", "passages")
DOCUMENT_LISTS = ("retrieval.documents.", "reranker.output_documents.",
                  "reranker.input_documents.")
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
        yield from _otlp_spans(record, name, line)
    elif isinstance(record, dict) and isinstance(record.get("context"), dict):
        yield _phoenix_span(record, name, line)
    else:
        raise DataFormatError(name, "neither an OTLP request ('resourceSpans') nor a "
                              "Phoenix span ('context')", line=line, fix=FORMAT_FIX)


def _required(record: dict, key: str, name: str, line: int | None) -> Any:
    value = record.get(key)
    if value in (None, ""):
        raise DataFormatError(name, "missing", line=line, field=key, fix=FORMAT_FIX)
    return value


def otlp_spans(request: dict, name: str, line: int | None = None) -> Iterator[Span]:
    """The spans of one OTLP/JSON ExportTraceServiceRequest (`name`, `line`: how errors
    call it)."""
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
        raise DataFormatError(name, "not an OTLP request ('resourceSpans')", line=line,
                              fix=FORMAT_FIX)
    return _otlp_spans(request, name, line)


def _otlp_spans(request: dict, name: str, line: int | None) -> Iterator[Span]:
    for resource in request["resourceSpans"] or ():
        for scope in resource.get("scopeSpans") or ():
            for raw in scope.get("spans") or ():
                attributes = _flat({item.get("key", ""): _otlp_value(item.get("value") or {})
                                    for item in raw.get("attributes") or ()})
                yield Span(_id(_required(raw, "traceId", name, line)),
                           _id(_required(raw, "spanId", name, line)),
                           _id(raw.get("parentSpanId") or ""),
                           str(raw.get("name", "")), str(attributes.get(KIND, "")).upper(),
                           _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano", name,
                                  line),
                           _nanos(raw.get("endTimeUnixNano"), "endTimeUnixNano", name, line),
                           attributes)


def _phoenix_span(raw: dict, name: str, line: int | None) -> Span:
    context = raw["context"]
    attributes = _flat(raw.get("attributes") or {})
    kind = raw.get("span_kind") or attributes.get(KIND, "")
    return Span(str(_required(context, "trace_id", name, line)),
                str(_required(context, "span_id", name, line)), str(raw.get("parent_id") or ""),
                str(raw.get("name", "")), str(kind).upper(),
                _iso(raw.get("start_time"), "start_time", name, line),
                _iso(raw.get("end_time"), "end_time", name, line), attributes)


def _id(value: str) -> str:
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
        return int(value["intValue"])  # a string in JSON (64 bits)
    if "arrayValue" in value:
        return [_otlp_value(v) for v in (value["arrayValue"].get("values") or ())]
    if "kvlistValue" in value:
        return {kv.get("key", ""): _otlp_value(kv.get("value") or {})
                for kv in value["kvlistValue"].get("values") or ()}
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


def traced_runs(files: Sequence[tuple[str, str]], dataset: Dataset | None = None,
                label: str = "imported") -> list[RunTrace]:
    """The runs of every trace in `files` ((file name, text)), in the order their root spans
    started, as paradigm `label`; those whose question `dataset` holds annotated against
    its gold. A trace without a RETRIEVER or RERANKER span, or without a question, is
    refused by its file and trace id."""
    spans: dict[str, list[tuple[str, Span]]] = {}
    for name, text in files:
        for span in read_spans(text, name):
            spans.setdefault(span.trace_id, []).append((name, span))
    questions = {question_key(q.text): q for q in dataset.questions} if dataset else {}
    runs = [_run([s for _, s in found], found[0][0], label) for found in spans.values()]
    runs.sort(key=lambda pair: pair[0])
    return [annotate(run, questions[question_key(run.question)])
            if question_key(run.question) in questions else run for _, run in runs]


def unmatched(runs: Sequence[RunTrace]) -> list[str]:
    """The questions of `runs` that no QA file's question gave gold to."""
    return [run.question for run in runs if run.gold is None]


def run_of(spans: list[Span], name: str, label: str) -> RunTrace:
    """The run of one trace's `spans` (engine.eval.traces's rules), as paradigm `label`;
    refused by `name` and trace id when it has no ranking span or no question."""
    return _run(spans, name, label)[1]


def _run(spans: list[Span], name: str, label: str) -> tuple[float, RunTrace]:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids]
    root = min(roots, key=lambda s: s.start)
    where = f"trace {root.trace_id}"
    parents = {s.span_id: s for s in spans}
    wrapping_a_call = {s.parent_id for s in spans
                       if s.kind == LLM and s.parent_id in parents
                       and parents[s.parent_id].kind == LLM}
    ranking = [s for s in spans if s.kind in (RETRIEVER, RERANKER)]
    # of nested spans of one kind, the outermost that lists documents is the stage
    listing = {s.span_id for s in ranking if any(k.startswith(DOCUMENT_LISTS)
                                                 for k in s.attributes)} or {
        s.span_id for s in ranking}
    stages, steps = [], []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.span_id in listing and not _inside_same_kind(span, parents, listing):
            stages.append(_stage(span, [s.name for s in stages]))
        elif span.kind == LLM and span.span_id not in wrapping_a_call:
            steps.append(_llm_step(span))
    if not stages:
        raise DataFormatError(name, f"{where} ({root.name!r}) has no RETRIEVER or RERANKER "
                              "span", fix="trace the pipeline with an OpenInference "
                              "instrumentor, which marks its retrievers and rerankers")
    question = _text(root.attributes.get("input.value")) or _first_query(spans)
    if not question:
        raise DataFormatError(name, f"{where} names no question", field="input.value",
                              fix="the root span's input, or a retriever's, is the question")
    answer = _text(root.attributes.get("output.value"))
    if steps and not answer:
        answer = steps[-1].answer
    if steps:  # the run's answer is its last answer step's
        steps[-1] = replace(steps[-1], answer=answer or steps[-1].answer)
    run = RunTrace(question, label, {"imported": name, "trace_id": root.trace_id,
                                     "root": root.name}, tuple(stages), tuple(steps), answer,
                   corpus={"name": f"{label} (as traced)", "fingerprint": "",
                           "documents": len({c.unit.id for s in stages
                                             for c in s.candidates})})
    return root.start, run


def _inside_same_kind(span: Span, parents: dict[str, Span], among: set[str]) -> bool:
    """Whether an ancestor of `span` in `among` is of its kind."""
    parent = parents.get(span.parent_id)
    while parent is not None:
        if parent.kind == span.kind and parent.span_id in among:
            return True
        parent = parents.get(parent.parent_id)
    return False


def _stage(span: Span, taken: list[str]) -> StageResult:
    attrs = span.attributes
    if span.kind == RETRIEVER:
        candidates = _documents(attrs, "retrieval.documents")
        n_in = len(candidates)
        settings = {}
    else:
        candidates = _documents(attrs, "reranker.output_documents")
        n_in = len(_documents(attrs, "reranker.input_documents")) or len(candidates)
        settings = {key.removeprefix("reranker."): attrs[key]
                    for key in ("reranker.model_name", "reranker.top_k") if key in attrs}
    base = _stage_name(span)
    name, n = base, 2
    while name in taken:
        name, n = f"{base} {n}", n + 1
    granularity = candidates[0].unit.granularity if candidates else PASSAGES
    return StageResult(name, granularity, n_in, tuple(candidates), span.seconds,
                       settings={"span kind": span.kind, **settings})


def _stage_name(span: Span) -> str:
    """A span's name as a stage's: a method's span (LlamaIndex's
    "SentenceTransformerRerank._postprocess_nodes") by its class."""
    owner, dot, method = span.name.partition(".")
    if dot and owner.isidentifier() and method.isidentifier():
        return owner
    return span.name or span.kind.lower()


def _documents(attrs: dict[str, Any], prefix: str) -> list[Candidate]:
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + "."):
            index, _, field = key[len(prefix) + 1:].partition(".")
            if not index.isdigit():
                continue
            doc = found.setdefault(int(index), {"metadata": {}})
            field = field.removeprefix("document.")
            if field.startswith("metadata."):  # Phoenix nests the metadata's JSON
                doc["metadata"][field.removeprefix("metadata.")] = value
            elif field == "metadata" and isinstance(value, str):
                try:
                    doc["metadata"].update(json.loads(value))
                except (json.JSONDecodeError, TypeError, ValueError):
                    pass  # metadata that is not a JSON object names nothing
            else:
                doc[field] = value
    candidates = []
    for rank, (index, doc) in enumerate(sorted(found.items()), start=1):
        metadata = doc["metadata"]
        doc_id = str(doc.get("id") or f"{prefix}#{index}")
        title = str(metadata.get("title") or doc_id)
        named = metadata.get("documents")
        doc_ids = tuple(map(str, named)) if isinstance(named, list) and named else (title,)
        score = doc.get("score")
        granularity = metadata.get("granularity")
        unit = Unit(doc_id, title, str(doc.get("content") or ""), doc_ids,
                    granularity if granularity in GRANULARITIES else PASSAGES)
        candidates.append(Candidate(unit, float(score) if score is not None else 0.0, rank))
    return candidates


def _llm_step(span: Span) -> LLMStep:
    attrs = span.attributes
    prompt = _messages(attrs, "llm.input_messages") or _text(attrs.get("input.value"))
    output = _messages(attrs, "llm.output_messages") or _text(attrs.get("output.value"))
    return LLMStep("answer", str(attrs.get("llm.model_name") or span.name), prompt, output,
                   int(attrs.get("llm.token_count.prompt") or 0),
                   int(attrs.get("llm.token_count.completion") or 0), span.seconds,
                   answer=output.strip())


def _messages(attrs: dict[str, Any], prefix: str) -> str:
    found: dict[int, str] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + ".") and key.endswith(".message.content"):
            index = key[len(prefix) + 1:].split(".", 1)[0]
            if index.isdigit():
                found[int(index)] = str(value)
    return "\n\n".join(text for _, text in sorted(found.items()))


def _text(value: Any) -> str:
    """A span's input or output as text: a string as it is, a JSON object's one text
    (LangChain writes {"question": ...} or {"input": ...})."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value.strip()
        if not isinstance(parsed, dict):  # "1942" is an answer, not a number to read
            return parsed.strip() if isinstance(parsed, str) else value.strip()
        value = parsed
    if isinstance(value, dict):
        for key in ("query", "question", "input", "query_str", "output", "answer", "response"):
            if isinstance(value.get(key), str):
                return value[key].strip()
        texts = [v for v in value.values() if isinstance(v, str)]
        return texts[0].strip() if len(texts) == 1 else ""
    return ""


def _first_query(spans: list[Span]) -> str:
    for span in sorted(spans, key=lambda s: s.start):
        if span.kind in (RETRIEVER, RERANKER):
            text = _text(span.attributes.get("input.value")) or _text(
                span.attributes.get("reranker.query"))
            if text:
                return text
    return ""
