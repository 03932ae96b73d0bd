"""Runs out as OpenInference traces: the spans a run becomes, read back from the
OpenTelemetry SDK's in-memory exporter (the SDK and the semantic conventions are the real
packages)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.documents import Question
from engine.service.otel import emit
from tests.conftest import torch_single_thread
from tests.fakes import gold_run, ranked_stage


@pytest.fixture
def spans():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def test_a_run_is_a_chain_with_a_retriever_a_reranker_and_an_llm_span(spans):
    tracer, exporter = spans
    gold = Question("q1", "Who painted it?", answers=("Georges Seurat",),
                    supporting_titles=("Georges Seurat",))
    run = gold_run(gold, ranked_stage("dense", ("Paul Signac", "He painted dots."),
                                      ("Georges Seurat", "He painted it.")),
                   ranked_stage("reranker", ("Georges Seurat", "He painted it.")),
                   seconds=0.5)
    emit(run, tracer, ended_ns=10_000_000_000)
    found = {s.name: s for s in exporter.get_finished_spans()}
    assert set(found) == {"fake: run", "dense", "reranker", "reader: answer"}
    kinds = {n: s.attributes["openinference.span.kind"] for n, s in found.items()}
    assert kinds == {"fake: run": "CHAIN", "dense": "RETRIEVER", "reranker": "RERANKER",
                     "reader: answer": "LLM"}
    root = found["fake: run"]
    assert all(s.parent.span_id == root.context.span_id for n, s in found.items() if s is not root)
    assert root.attributes["output.value"] == "Georges Seurat"
    assert json.loads(root.attributes["metadata"])["gold"]["answers"] == ["Georges Seurat"]
    dense = found["dense"].attributes
    assert [dense[f"retrieval.documents.{i}.document.id"] for i in (0, 1)] == [
        "Paul Signac#0", "Georges Seurat#1"]
    assert dense["retrieval.documents.1.document.score"] == pytest.approx(0.9)
    assert dense["retrieval.documents.1.document.content"] == "He painted it."
    reranker = found["reranker"].attributes
    assert reranker["reranker.top_k"] == 1 and reranker["reranker.query"] == run.question
    assert reranker["reranker.input_documents.1.document.id"] == "Georges Seurat#1"
    assert reranker["reranker.output_documents.0.document.id"] == "Georges Seurat#0"
    llm = found["reader: answer"].attributes
    assert (llm["llm.token_count.prompt"], llm["llm.token_count.completion"]) == (10, 2)
    assert {s.status.status_code.name for s in found.values()} == {"OK"}
    # a stage that opens the units before it into others lists no input it did not rank
    opened = gold_run(gold, ranked_stage("dense", ("Georges Seurat", "He painted it.")),
                      replace(ranked_stage("preranker", ("Georges Seurat", "x")),
                              granularity="documents", n_in=7))
    exporter.clear()
    emit(opened, tracer)
    (pre,) = [s for s in exporter.get_finished_spans() if s.name == "preranker"]
    assert not any(k.startswith("reranker.input_documents") for k in pre.attributes)
    assert json.loads(pre.attributes["metadata"])["n_in"] == 7
    # the run's own timings, end to end, ending when asked
    assert root.end_time == 10_000_000_000 and found["reader: answer"].end_time == root.end_time
    assert root.end_time - root.start_time == pytest.approx(0.52e9, rel=1e-6)


def test_every_run_the_explorer_makes_is_sent_once_finished(prepared, monkeypatch):
    """A run sends one CHAIN span with its stages and reader call once it has finished;
    nothing is sent without a collector named (the default)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.service.explorer import Explorer
    from engine.service.otel import Tracing, tracing_from

    exporter = InMemorySpanExporter()
    explorer = Explorer(*prepared, tracing=Tracing("memory", exporter=exporter))
    run = explorer.runs.run("Who painted A Sunday Afternoon?", "echo")
    roots = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert [s.name for s in roots] == ["echo: run"]  # streamed stages are not sent
    assert roots[0].attributes["output.value"] == run.answer
    children = [s for s in exporter.get_finished_spans() if s.parent is not None]
    assert [s.name for s in children] == [*(st.name for st in run.stages), "reader: answer"]
    monkeypatch.delenv("FUNNEL_OTLP_ENDPOINT", raising=False)
    assert tracing_from("") is None  # off by default


def test_a_long_retrieval_keeps_every_document_up_to_the_cap():
    """OpenTelemetry keeps 128 attributes a span by default: a 60-passage retrieval lost
    its first documents until the app's tracer raised the limit (found in a real Phoenix)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.service.otel import MAX_DOCUMENTS, Tracing

    many = ranked_stage("dense", *((f"Doc {i}", f"text {i}") for i in range(MAX_DOCUMENTS + 20)))
    run = gold_run(Question("q", "Who?", answers=("x",), supporting_titles=("Doc 3",)), many)
    exporter = InMemorySpanExporter()
    Tracing("memory", exporter=exporter).send(run)
    (dense,) = [s for s in exporter.get_finished_spans() if s.name == "dense"]
    ids = [dense.attributes.get(f"retrieval.documents.{i}.document.id")
           for i in range(MAX_DOCUMENTS + 20)]
    assert ids[:MAX_DOCUMENTS] == [f"Doc {i}#{i}" for i in range(MAX_DOCUMENTS)]
    assert set(ids[MAX_DOCUMENTS:]) == {None}  # past the cap, not sent
    assert json.loads(dense.attributes["metadata"])["kept"] == MAX_DOCUMENTS + 20


def test_a_failed_run_is_an_errored_chain_naming_what_failed(spans):
    from opentelemetry.trace import StatusCode

    from engine.trace import failed_run

    tracer, exporter = spans
    gold = Question("q1", "Who painted it?", answers=("Georges Seurat",))
    emit(failed_run(gold, "flat", {}, RuntimeError("out of memory")), tracer)
    (root,) = exporter.get_finished_spans()
    assert root.status.status_code == StatusCode.ERROR
    assert root.status.description == "RuntimeError: out of memory"


# --- span ids stay unique across trainings and restarts -----------------------------------

def spans_around_trainings() -> list[list[int]]:
    """[trace id, span id] of each span of three runs sent around two trainings of the query
    classifier, as the app trains at start and again on Retrain (both seeded alike)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.models.query_classifier import QueryClassifierConfig
    from engine.service.otel import Tracing
    from engine.train.fit_query_classifier import _fit
    from engine.train.query_data import QueryExample

    exporter = InMemorySpanExporter()
    tracing = Tracing("http://unused", exporter=exporter)
    gold = Question("q1", "Who painted it?", answers=("Georges Seurat",))
    run = gold_run(gold, ranked_stage("dense", ("Georges Seurat", "He painted it.")))
    examples = [QueryExample("Who painted La Grande Jatte?", 1, "knowledge", False),
                QueryExample("Say hello in French.", 0, "task", False)]
    config = QueryClassifierConfig(epochs=1, batch_size=2, max_length=16)
    tracing.send(run)
    for _ in range(2):
        _fit(examples, config)
        tracing.send(run)
    return [[s.context.trace_id, s.context.span_id] for s in exporter.get_finished_spans()]


RESTARTED = """
import json, torch
torch.set_num_threads(1)
from tests.test_otel import spans_around_trainings
print(json.dumps(spans_around_trainings()))
"""


one_thread = pytest.fixture(torch_single_thread)


@pytest.mark.training
def test_span_ids_never_repeat_across_trainings_and_a_restart(one_thread):
    """Training seeds its own generators: the global `random` OpenTelemetry draws ids from
    was reseeded by each fit, so runs after two trainings, or after a restart that trained
    again, reused earlier runs' trace and span ids (and were lost or merged in Phoenix).
    This process trains twice, then another (a restart) does the same."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch")
    ids = spans_around_trainings()
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", RESTARTED], cwd=root, capture_output=True,
                         text=True, check=True, timeout=600)
    ids += json.loads(out.stdout.strip().splitlines()[-1])
    traces = {trace for trace, _ in ids}
    assert len(ids) == 2 * 3 * 3  # two processes, three runs, three spans a run
    assert len({span for _, span in ids}) == len(ids)
    assert len(traces) == 2 * 3
