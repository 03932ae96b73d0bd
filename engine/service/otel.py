"""Runs out as OpenInference traces: a run's funnel as OpenTelemetry spans for Phoenix or any
OTLP collector, with the OpenInference semantic conventions' attribute names.

One run is a CHAIN span (the question in, the answer out; the paradigm, its config, the
corpus, the gold and the metrics as metadata), with a child span per stage and per LLM call:

- the first stage that ranks (a retriever: no candidates come in) is a RETRIEVER span with
  its `retrieval.documents` (id, score, content and the unit's documents as metadata);
- every later stage is a RERANKER span with its output documents, the query and its k
  (`reranker.top_k`), and its input documents where it ranks the units the stage before
  kept (a stage that opens clusters into documents says how many it ranked, `n_in`);
- a decision about the query (best's classifier) is a CHAIN span saying what it decided;
- every reader call is an LLM span: the model, the prompt, the output and the token counts.

Spans carry the times the run measured, laid end to end from the run's start (stages and
LLM calls in the order they ran). A document's content is cut at `MAX_CONTENT` characters
(a LongRAG unit holds thousands of tokens), and a list at its best `MAX_DOCUMENTS`
(the stage's metadata says how many it kept). Sending is off unless an endpoint is named
(`--otlp-endpoint`, `FUNNEL_OTLP_ENDPOINT`: Phoenix listens on http://127.0.0.1:6006);
spans leave in a background batch, so a run never waits on the collector.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from engine.documents import Candidate
from engine.stages.classify import QUERY
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLE = "FUNNEL_OTLP_ENDPOINT"
PROJECT = "funnel-explorer"  # the Phoenix project spans land in
MAX_CONTENT = 4_000
# documents listed per list (a flat search keeps up to 1,000 passages); each takes four
# attributes, and OpenTelemetry drops a span's attributes past its limit (128 by default:
# a 50-passage retrieval lost its first documents until the limit was raised)
MAX_DOCUMENTS = 100
MAX_ATTRIBUTES = 2 * 4 * MAX_DOCUMENTS + 64


def _documents(prefix: str, candidates: Sequence[Candidate]) -> dict[str, Any]:
    """OpenInference's flattened list of documents under `prefix` ("retrieval.documents")."""
    from openinference.semconv.trace import DocumentAttributes as D

    out: dict[str, Any] = {}
    for i, c in enumerate(candidates[:MAX_DOCUMENTS]):
        at = f"{prefix}.{i}."
        out[at + D.DOCUMENT_ID] = c.unit.id
        out[at + D.DOCUMENT_SCORE] = float(c.score)
        out[at + D.DOCUMENT_CONTENT] = c.unit.text[:MAX_CONTENT]
        out[at + D.DOCUMENT_METADATA] = json.dumps(
            {"title": c.unit.title, "rank": c.rank, "documents": list(c.unit.doc_ids),
             "granularity": c.unit.granularity})
    return out


def stage_attributes(trace: RunTrace, index: int) -> dict[str, Any]:
    """The attributes of stage `index`'s span (its kind decided by where it stands)."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import RerankerAttributes as R
    from openinference.semconv.trace import SpanAttributes as S

    stage = trace.stages[index]
    metadata = {"granularity": stage.granularity, "n_in": stage.n_in,
                "kept": len(stage.candidates), "settings": stage.settings,
                "note": stage.details.note}
    out: dict[str, Any] = {S.INPUT_VALUE: trace.question, S.METADATA: json.dumps(
        metadata, default=str)}
    if stage.granularity == QUERY:
        decision = stage.details.decision
        out[S.OPENINFERENCE_SPAN_KIND] = Kind.CHAIN.value
        out[S.OUTPUT_VALUE] = "retrieve" if decision is None or decision.retrieve else \
            "no retrieval"
        return out
    ranking = [i for i, s in enumerate(trace.stages) if s.granularity != QUERY]
    if index == ranking[0]:  # the first stage that ranks: it searched an index
        out[S.OPENINFERENCE_SPAN_KIND] = Kind.RETRIEVER.value
        out.update(_documents(S.RETRIEVAL_DOCUMENTS, stage.candidates))
        return out
    before = trace.stages[ranking[ranking.index(index) - 1]]
    out[S.OPENINFERENCE_SPAN_KIND] = Kind.RERANKER.value
    out[R.RERANKER_QUERY] = trace.question
    out[R.RERANKER_TOP_K] = len(stage.candidates)
    # its input is what the stage before kept, where the units are the same; a stage that
    # opens them (the funnel's documents of clusters, passages of documents) ranked n_in
    # units the trace does not list, and Phoenix would show the wrong ones as its input
    if before.granularity == stage.granularity:
        out.update(_documents(R.RERANKER_INPUT_DOCUMENTS, before.candidates))
    out.update(_documents(R.RERANKER_OUTPUT_DOCUMENTS, stage.candidates))
    return out


def run_attributes(trace: RunTrace) -> dict[str, Any]:
    """The CHAIN span of the whole run."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as S

    gold = trace.gold
    metadata = {"paradigm": trace.paradigm, "config": trace.config, "corpus": trace.corpus,
                "metrics": trace.metrics,
                "gold": None if gold is None else {
                    "id": gold.id, "answers": list(gold.answers),
                    "supporting": list(gold.supporting_titles)}}
    return {S.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value, S.INPUT_VALUE: trace.question,
            S.OUTPUT_VALUE: trace.answer, S.METADATA: json.dumps(metadata, default=str)}


def llm_attributes(trace: RunTrace, index: int) -> dict[str, Any]:
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as S

    step = trace.llm_steps[index]
    return {S.OPENINFERENCE_SPAN_KIND: Kind.LLM.value, S.LLM_MODEL_NAME: step.model,
            S.INPUT_VALUE: step.prompt, S.OUTPUT_VALUE: step.output,
            S.LLM_TOKEN_COUNT_PROMPT: step.prompt_tokens,
            S.LLM_TOKEN_COUNT_COMPLETION: step.output_tokens,
            S.LLM_TOKEN_COUNT_TOTAL: step.prompt_tokens + step.output_tokens,
            S.METADATA: json.dumps({"purpose": step.purpose, "answer": step.answer,
                                    "cached_tokens": step.cached_tokens})}


def emit(trace: RunTrace, tracer: Any, ended_ns: int | None = None) -> None:
    """Send `trace` as spans through an OpenTelemetry `tracer`, timed end to end so that the
    run ends at `ended_ns` (now by default)."""
    from opentelemetry import trace as otel

    spans = [(s.name, s.seconds, stage_attributes(trace, i))
             for i, s in enumerate(trace.stages)]
    spans += [(f"reader: {step.purpose}", step.seconds, llm_attributes(trace, i))
              for i, step in enumerate(trace.llm_steps)]
    total = sum(int(seconds * 1e9) for _, seconds, _ in spans)
    at = (ended_ns or time.time_ns()) - total
    ok = otel.Status(otel.StatusCode.OK)  # a run that ends has a trace; a failed one none
    root = tracer.start_span(f"{trace.paradigm}: run", start_time=at,
                             attributes=run_attributes(trace))
    context = otel.set_span_in_context(root)
    for name, seconds, attributes in spans:
        span = tracer.start_span(name, context=context, start_time=at, attributes=attributes)
        at += int(seconds * 1e9)
        span.set_status(ok)
        span.end(end_time=at)
    # a failed run (engine.trace.failed_run) is an errored CHAIN naming what failed
    root.set_status(otel.Status(otel.StatusCode.ERROR, trace.error) if trace.error else ok)
    root.end(end_time=at)


class Tracing:
    """Runs sent to the OTLP collector at `endpoint` (an HTTP base URL such as
    http://127.0.0.1:6006), in a background batch."""

    def __init__(self, endpoint: str, project: str = PROJECT, exporter: Any = None) -> None:
        """`exporter`: an OpenTelemetry span exporter to use instead of OTLP/HTTP to
        `endpoint` (the SDK's in-memory one, to read the spans back)."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        self.endpoint = endpoint.rstrip("/")
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": PROJECT,
                                      "openinference.project.name": project}),
            span_limits=SpanLimits(max_span_attributes=MAX_ATTRIBUTES))
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            url = self.endpoint if self.endpoint.endswith("/v1/traces") else \
                f"{self.endpoint}/v1/traces"
            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(url)))
            logger.info("Sending runs as OpenInference traces to %s", url)
        else:
            self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("funnel-explorer")

    def send(self, trace: RunTrace) -> None:
        """Queue `trace`'s spans; a collector that is down is logged, never raised."""
        try:
            emit(trace, self.tracer)
        except Exception:  # noqa: BLE001 - tracing must never fail a run
            logger.exception("could not send the run's spans to %s", self.endpoint)

    def flush(self) -> None:
        self.provider.force_flush()


def tracing_from(endpoint: str = "") -> Tracing | None:
    """A Tracing for `endpoint` or `$FUNNEL_OTLP_ENDPOINT`; None when neither is set."""
    endpoint = endpoint or os.environ.get(ENDPOINT_VARIABLE, "")
    return Tracing(endpoint) if endpoint else None
