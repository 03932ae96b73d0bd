"""A user's own pipeline in, from its OpenInference traces: each trace one run like ours.

A pipeline instrumented with OpenInference (LangChain, LlamaIndex, Haystack, DSPy, ... or
this engine's own runs, engine.service.otel) leaves one trace per question, read from
OTLP/JSON or Phoenix's spans by engine.eval.spans.

A trace becomes a `RunTrace`: its root span's input is the question and its output the
answer; each RETRIEVER span a stage of the documents it returned
(`retrieval.documents.N.document.{id,score,content,metadata}`), each RERANKER span a stage
of its output documents (`reranker.output_documents`), in the order they started, a span
inside another of the same kind (LlamaIndex's `retrieve` around `_retrieve`) folded into it;
each innermost LLM span (the call the model answered, inside a framework's `predict` and
`chat` wrappers) a reader call with its prompt, output, model and token counts. A document
counts as part of the documents its metadata names (`documents`, as this engine writes),
else of the one its metadata `title` names (QA files name supporting documents by title),
else of its own id: that is what gold supporting documents are matched against. A question
that a QA file holds (same text, up to case and spacing) gets its gold answers and
supporting documents, and the run is measured as ours are.

How many candidates a stage searched (its `n_in`) is what the span says: its `metadata`
(`n_in` as this engine writes it, or `searched` / `corpus_size` set by the user through
OpenInference's `using_metadata`), a reranker's input documents, else for a reranker what
the stage before kept and for a retriever the corpus size the importer gives; a stage
whose searched count nothing says keeps n_in 0 and says so (`settings["searched"]`), never
its own output's count. `reranker.top_k`, or a `top_k` in the metadata, is kept as the
stage's top_k.

Which pipeline made a run is its spans' `service.name` (or Phoenix project), kept in its
config as "pipeline"; a file holding several pipelines' traces gives one paradigm per
pipeline (`paradigm_names`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from engine.documents import Candidate, Dataset, Unit
from engine.errors import DataFormatError
from engine.eval.spans import Span, otlp_spans, read_spans
from engine.paradigms.base import annotate
from engine.text import question_key
from engine.trace import LLMStep, RunTrace, StageResult

__all__ = ["Span", "otlp_spans", "paradigm_names", "read_spans", "run_of", "searched_in",
           "traced_runs", "unmatched"]

RETRIEVER, RERANKER, LLM = "RETRIEVER", "RERANKER", "LLM"
# a framework's retrievers return chunks; this engine's own spans say what they ranked
PASSAGES, GRANULARITIES = "passages", ("clusters", "documents", "passages")
DOCUMENT_LISTS = ("retrieval.documents.", "reranker.output_documents.",
                  "reranker.input_documents.")
UNNAMED = "imported"  # the paradigm of one pipeline that names itself nowhere, unlabelled
NOT_SAID = "not in the trace"  # settings["searched"] of a stage whose n_in nothing says
SEARCHED_KEYS = ("n_in", "searched", "corpus_size")  # of a span's metadata, in this order


def paradigm_names(pipelines: Sequence[str], label: str = "") -> dict[str, str]:
    """The paradigm each pipeline's runs are stored as ({pipeline: paradigm}; "" is traces
    that name no pipeline). One pipeline: `label` names it, else its own name, else
    "imported". Several: each its own name, or with `label` "LABEL: name" (a label never
    merges two pipelines: their runs of one question would be one paradigm's twice)."""
    label = " ".join(str(label or "").split())
    named = list(dict.fromkeys(pipelines))
    if len(named) <= 1:
        return {p: label or p or UNNAMED for p in named}
    own = {p: p or "unnamed" for p in named}
    return {p: f"{label}: {own[p]}" if label else own[p] for p in named}


def traced_runs(files: Sequence[tuple[str, str]], dataset: Dataset | None = None,
                label: str = "", searched: int = 0) -> list[RunTrace]:
    """The runs of every trace in `files` ((file name, text)), in the order their root spans
    started, each as its pipeline's paradigm (`paradigm_names`: `label` names one pipeline,
    prefixes several); those whose question `dataset` holds annotated against its gold.
    `searched`: how many units the pipeline's retrievers search (its corpus's size), where
    a span does not say. A trace without a RETRIEVER or RERANKER span, or without a
    question, is refused by its file and trace id."""
    spans: dict[str, list[tuple[str, Span]]] = {}
    for name, text in files:
        for span in read_spans(text, name):
            spans.setdefault(span.trace_id, []).append((name, span))
    pipelines = {trace: _pipeline_of([s for _, s in found]) for trace, found in spans.items()}
    names = paradigm_names(list(pipelines.values()), label)
    questions = {question_key(q.text): q for q in dataset.questions} if dataset else {}
    runs = [_run([s for _, s in found], found[0][0], names[pipelines[trace]],
                 pipelines[trace], searched) for trace, found in spans.items()]
    runs.sort(key=lambda pair: pair[0])
    return [annotate(run, questions[question_key(run.question)])
            if question_key(run.question) in questions else run for _, run in runs]


def searched_in(stage: StageResult) -> int | None:
    """How many candidates a stage searched: its n_in, or None where an imported trace
    does not say (shown as unknown, never as its output's count)."""
    return None if stage.settings.get("searched") == NOT_SAID else stage.n_in


def _pipeline_of(spans: list[Span]) -> str:
    """The pipeline one trace's spans name (its first span that names one)."""
    return next((s.pipeline for s in spans if s.pipeline), "")


def unmatched(runs: Sequence[RunTrace]) -> list[str]:
    """The questions of `runs` that no QA file's question gave gold to."""
    return [run.question for run in runs if run.gold is None]


def run_of(spans: list[Span], name: str, label: str = "") -> RunTrace:
    """The run of one trace's `spans` (engine.eval.traces's rules), as paradigm `label`
    (default: the pipeline its spans name, else "imported"); refused by `name` and trace
    id when it has no ranking span or no question."""
    pipeline = _pipeline_of(spans)
    return _run(spans, name, label or pipeline or UNNAMED, pipeline)[1]


def _run(spans: list[Span], name: str, label: str, pipeline: str = "",
         searched: int = 0) -> tuple[float, RunTrace]:
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
    stages: list[StageResult] = []
    steps = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.span_id in listing and not _inside_same_kind(span, parents, listing):
            stages.append(_stage(span, stages, searched))
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
    config = {"imported": name, "trace_id": root.trace_id, "root": root.name,
              "pipeline": pipeline or "not named in the trace"}
    run = RunTrace(question, label, config, tuple(stages), tuple(steps), answer,
                   corpus={"name": f"{label} (as traced)", "fingerprint": "",
                           "documents": searched or len({c.unit.id for s in stages
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


def _stage(span: Span, before: list[StageResult], searched: int) -> StageResult:
    attrs = span.attributes
    metadata = _metadata(attrs)
    if span.kind == RETRIEVER:
        candidates = _documents(attrs, "retrieval.documents")
        settings = {}
    else:
        candidates = _documents(attrs, "reranker.output_documents")
        settings = {key.removeprefix("reranker."): attrs[key]
                    for key in ("reranker.model_name", "reranker.top_k") if key in attrs}
    top_k = metadata.get("top_k", metadata.get("similarity_top_k"))
    if _count(top_k) is not None and "top_k" not in settings:
        settings["top_k"] = top_k
    n_in, said = _searched(span, metadata, before, searched)
    base = _stage_name(span)
    taken = [s.name for s in before]
    name, n = base, 2
    while name in taken:
        name, n = f"{base} {n}", n + 1
    granularity = candidates[0].unit.granularity if candidates else PASSAGES
    return StageResult(name, granularity, n_in, tuple(candidates), span.seconds,
                       settings={"span kind": span.kind, "searched": said, **settings})


def _searched(span: Span, metadata: dict, before: list[StageResult],
              searched: int) -> tuple[int, str]:
    """(how many candidates a stage searched, what says so)."""
    for key in SEARCHED_KEYS:
        if _count(metadata.get(key)) is not None:
            return _count(metadata[key]), f"the span's metadata ({key})"
    if span.kind == RERANKER:
        listed = len(_documents(span.attributes, "reranker.input_documents"))
        if listed:
            return listed, "its input documents"
        if before:
            return len(before[-1].candidates), f"what {before[-1].name} kept"
    elif searched:
        return searched, "the corpus size given at import"
    return 0, NOT_SAID


def _count(value: Any) -> int | None:
    """A count a span's attribute gives (a whole number, or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value >= 0 else None
    text = str(value).strip() if isinstance(value, int | str) else ""
    return int(text) if text.isdigit() else None


def _metadata(attrs: dict[str, Any]) -> dict[str, Any]:
    """A span's `metadata` (OpenInference: a JSON object as a string; Phoenix nests it)."""
    found: dict[str, Any] = {}
    raw = attrs.get("metadata")
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            found.update(parsed)
    found.update({k.removeprefix("metadata."): v for k, v in attrs.items()
                  if k.startswith("metadata.")})
    return found


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
