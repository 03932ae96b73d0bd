"""Exports to ragas, RAGChecker and FlashRAG: the field names and types their documentation
gives (ragas SingleTurnSample, RAGChecker RAGResult, FlashRAG Item with its output)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.errors import ConfigError
from engine.eval.exports import FORMATS, export
from engine.trace_details import ReadCount
from tests.fakes import sample_trace


@pytest.fixture
def traces(tiny_corpus):
    """Two paradigms' runs of one dataset question, the second under a token cap that let
    its reader read one passage of two."""
    first = sample_trace(tiny_corpus)
    capped = replace(first.llm_steps[0], capped=ReadCount(read=1, offered=2))
    second = replace(first, paradigm="other", llm_steps=(capped,))
    return [first, second]


def test_ragas_is_jsonl_of_single_turn_samples(traces):
    lines = export(traces, "ragas").splitlines()
    samples = [json.loads(line) for line in lines]
    assert len(samples) == 2
    for sample, trace in zip(samples, traces, strict=True):
        assert set(sample) == {"user_input", "retrieved_contexts", "retrieved_context_ids",
                               "response", "reference", "run_id", "paradigm"}
        assert sample["paradigm"] == trace.paradigm
        assert sample["user_input"] == trace.question and sample["response"] == trace.answer
        assert sample["reference"] == "Georges Seurat"
        assert all(isinstance(c, str) for c in sample["retrieved_contexts"])
    assert [len(s["retrieved_contexts"]) for s in samples] == [2, 1]  # what each reader read
    assert samples[1]["retrieved_context_ids"] == [traces[1].stages[-1].candidates[0].unit.id]


def test_ragchecker_is_one_results_object_with_string_ids(traces):
    results = json.loads(export(traces, "ragchecker"))["results"]
    assert [r["query_id"] for r in results] == ["fake/q1", "other/q1"]  # mixed paradigms
    for r in results:
        assert set(r) == {"query_id", "query", "gt_answer", "response", "retrieved_context"}
        assert all(isinstance(r[k], str) for k in ("query_id", "query", "gt_answer",
                                                   "response"))
        assert all(set(doc) == {"doc_id", "text"} for doc in r["retrieved_context"])
    single = json.loads(export(traces[:1], "ragchecker"))["results"]
    assert single[0]["query_id"] == "q1"


def test_ragchecker_refuses_a_run_without_gold(traces):
    with pytest.raises(ConfigError, match="RAGChecker needs a gold answer.*'0'"):
        export([replace(traces[0], gold=None)], "ragchecker")


def test_flashrag_items_carry_output_with_retrieval_result(traces):
    items = [json.loads(line) for line in export(traces, "flashrag").splitlines()]
    assert isinstance(items, list) and len(items) == 2
    item = items[0]
    assert {"id", "question", "golden_answers", "metadata", "output"} <= set(item)
    assert item["golden_answers"] == ["Georges Seurat"]
    output = item["output"]
    assert set(output) == {"retrieval_result", "prompt", "pred", "metric_score"}
    assert output["pred"] == traces[0].answer and output["prompt"] == "Context: ..."
    first = traces[0].stages[-1].candidates[0].unit
    assert output["retrieval_result"][0] == {"id": first.id,
                                             "contents": f"{first.title}\n{first.text}"}
    assert set(output["metric_score"]) == {"em", "f1"}
    assert item["metadata"]["paradigm"] == "fake"


def test_unknown_format_and_nothing_to_export_are_named(traces):
    with pytest.raises(ConfigError, match=f"Unknown export format 'csv'.*{', '.join(FORMATS)}"):
        export(traces, "csv")
    with pytest.raises(ConfigError, match="Nothing to export"):
        export([], "ragas")
