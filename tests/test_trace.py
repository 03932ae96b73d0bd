"""Trace records, pipeline plumbing and paradigm configs, with fake deterministic stages."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from engine.config import config_from_dict
from engine.documents import Question
from engine.errors import ConfigError
from engine.paradigms.base import MAX_QUESTION_CHARS, check_question
from engine.paradigms.flat import FlatConfig
from engine.paradigms.funnel import FunnelConfig
from engine.paradigms.registry import PARADIGMS
from engine.readers.reader import ReaderConfig
from engine.service.store import make_paradigm
from engine.stages.base import Stage, run_stage
from engine.stages.expand import chunk_documents, expand_to_documents
from engine.text import count_tokens
from engine.trace import RunTrace, gold_lost_at
from engine.trace_details import (
    BestChunk,
    ClassifierCall,
    QueryDecision,
    ReadCount,
    ReaderAttention,
    StageDetails,
    WeighedSentence,
)
from engine.units.chunking import Chunker
from tests.fakes import WordOverlapRanker, clusters, sample_trace


def test_expansion_and_later_chunking_keep_lineage(tiny_corpus):
    docs = expand_to_documents(tiny_corpus, clusters(tiny_corpus))
    assert [d.unit.id for d in docs] == ["Danube", "Budapest", "Vienna", "Georges Seurat",
                                         "A Sunday Afternoon"]
    assert docs[0].parents == ("c0",) and docs[3].parents == ("c1",)
    assert [d.rank for d in docs] == [1, 2, 3, 4, 5]
    passages = chunk_documents(tiny_corpus, docs[:2], Chunker(8))
    assert passages[0].unit.id == "Danube#0" and passages[0].parents == ("c0", "Danube")
    doc = tiny_corpus.by_id["Budapest"]
    for p in passages:
        if p.unit.doc_ids == ("Budapest",):
            start, end = p.unit.span
            assert doc.text[start:end] == p.unit.text


def test_run_stage_times_and_records(tiny_corpus):
    docs = expand_to_documents(tiny_corpus, clusters(tiny_corpus))
    result = run_stage(WordOverlapRanker(), "the capital of hungary", docs, 2)
    assert result.name == "overlap" and result.n_in == 5 and result.seconds >= 0
    assert result.candidates[0].unit.id == "Budapest"
    assert [c.rank for c in result.candidates] == [1, 2]
    assert result.details == StageDetails(note="fake")


def test_gold_flags_metrics_and_where_gold_was_lost(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    first, second = trace.gold_flags
    assert any(first.answer) and any(first.support)
    assert not any(second.answer)  # the river stage dropped both Seurat documents
    assert gold_lost_at(trace) == "rivers"
    assert trace.metrics["EM"] == 1.0 and trace.metrics["F1"] == 1.0
    assert trace.metrics["AR@1"] == 0.0


def test_trace_round_trips_through_json(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    again = RunTrace.from_json(trace.to_json())
    assert again == trace
    assert json.loads(again.to_json()) == json.loads(trace.to_json())


def test_a_trace_saved_before_llm_steps_loads_with_its_totals(tiny_corpus):
    """Traces saved by earlier versions kept reader totals, not steps: they still open, and
    their totals survive as one answer step."""
    old = json.loads(sample_trace(tiny_corpus).to_json())
    for key in ("llm_steps", "corpus"):
        del old[key]
    old |= {"reader_input_tokens": 310, "reader_seconds": 0.75, "llm_calls": 1}
    trace = RunTrace.from_json(json.dumps(old))
    (step,) = trace.llm_steps
    assert (step.purpose, step.prompt_tokens, step.answer) == ("answer", 310, "Georges Seurat")
    assert (trace.reader_input_tokens, trace.reader_seconds, trace.llm_calls) == (310, 0.75, 1)
    assert trace.corpus == {}


def test_totals_are_counted_from_the_llm_steps(tiny_corpus):
    from dataclasses import replace

    from tests.fakes import answer_step

    trace = sample_trace(tiny_corpus)
    two = replace(trace, llm_steps=(replace(answer_step(0.25, 100), purpose="long answer"),
                                    answer_step(0.5, 30)))
    assert (two.llm_calls, two.reader_input_tokens, two.reader_seconds) == (2, 130, 0.75)
    assert two.seconds == sum(s.seconds for s in trace.stages) + 0.75
    data = json.loads(two.to_json())
    assert (data["llm_calls"], data["reader_input_tokens"]) == (2, 130)
    assert RunTrace.from_json(two.to_json()) == two


def test_configs_round_trip_and_refuse_bad_values():
    config = FunnelConfig(K=5, reader=ReaderConfig(lr=2, aggregation="last6"))
    from dataclasses import asdict

    assert config_from_dict(FunnelConfig, json.loads(json.dumps(asdict(config)))) == config
    with pytest.raises(ConfigError, match=re.escape("Unknown option(s) Q for FunnelConfig. "
                                                    "Valid options: ")):
        config_from_dict(FunnelConfig, {"Q": 1})
    with pytest.raises(ConfigError, match=re.escape("K=0 is out of range; allowed: 1 to 200")):
        FunnelConfig(K=0)
    with pytest.raises(ConfigError, match=re.escape("k=80 is out of range")):
        FlatConfig(M=100, k=80)
    with pytest.raises(ConfigError, match="Unknown aggregation scheme 'sum'"):
        config_from_dict(FlatConfig, {"reader": {"aggregation": "sum"}})


def test_unknown_paradigm_and_bad_questions(tiny_corpus):
    with pytest.raises(ConfigError, match=re.escape("Unknown paradigm 'graph'. Choose from: "
                                                    f"{', '.join(sorted(PARADIGMS))}.")):
        make_paradigm("graph", tiny_corpus)
    with pytest.raises(ConfigError, match="The question is empty"):
        check_question("   \n")
    with pytest.raises(ConfigError, match=f"the limit is {MAX_QUESTION_CHARS:,}"):
        check_question("why " * (MAX_QUESTION_CHARS // 4 + 1))
    assert check_question("  Who?  ") == "Who?"


def test_an_empty_answer_scores_zero_and_a_run_not_yet_answered_scores_nothing(tiny_corpus):
    from dataclasses import replace

    from engine.paradigms.base import annotate
    from tests.fakes import answer_step, sample_trace

    trace = sample_trace(tiny_corpus)
    silent = replace(answer_step(), output="", answer="")
    scored = annotate(replace(trace, answer="", llm_steps=(silent,)), trace.gold)
    assert (scored.metrics["EM"], scored.metrics["F1"], scored.metrics["refined_EM"]) == (
        0.0, 0.0, 0.0)  # counted as a miss, not left out of the means
    streaming = annotate(replace(trace, answer="", llm_steps=()), trace.gold)
    assert "EM" not in streaming.metrics and "AR@4" in streaming.metrics



def test_a_question_naming_no_supporting_document_has_no_gold_document_recall(tiny_corpus):
    """A user's QA file with answers only: no gold-document recall at any cut (the CLI
    showed 0.000, as if every gold document were lost), while one naming them keeps it, and
    the evaluation's table leaves the column out."""
    from engine.eval.summary import summarise
    from engine.paradigms.base import annotate
    from tests.fakes import sample_trace

    trace = sample_trace(tiny_corpus)
    assert trace.metrics["gold_doc_recall@" + trace.stages[0].name] == 1.0
    answers_only = replace(trace.gold, supporting_titles=())
    scored = annotate(replace(trace, metrics={}), answers_only)
    assert [k for k in scored.metrics if k.startswith("gold_doc")] == []
    assert "AR@" + trace.stages[0].name in scored.metrics and "EM" in scored.metrics
    row = {"paradigm": "fake", "metrics": scored.metrics, "span_answer": True, "seconds": {},
           "reader_tokens": 0}
    assert not any(k.startswith("gold_doc") for k in summarise([row])["fake"])


# --- typed records ---------------------------------------------------------------------------


LEGACY = Path(__file__).parent / "data" / "legacy_trace.json"


def test_a_trace_stored_before_typed_records_still_loads_every_record():
    """tests/data/legacy_trace.json was written by the code before StageDetails existed
    (every note in free-form `extras`): a query decision, DR-RAG's cfs and cis calls (cis
    with its fallback), summarisation's sentences, LongRAG's best chunks and context tokens,
    post-ranking attention with its settings, and an answer step's attention and read count."""
    trace = RunTrace.from_json(LEGACY.read_text(encoding="utf-8"))
    stage = {s.name: s for s in trace.stages}
    decision = stage["classify"].details.decision
    assert decision == QueryDecision(retrieve=True, probability=0.93, threshold=0.5)
    assert "P(needs retrieval)" in stage["classify"].details.note
    cfs, cis = stage["cfs"].details, stage["cis"].details
    assert [(c.d1, c.d2, c.kept) for c in cfs.calls] == [
        ("Georges Seurat", "A Sunday Afternoon", True), ("Pointillism", "Danube", True)]
    assert all(isinstance(c, ClassifierCall) for c in cis.calls) and len(cis.calls) == 6
    assert cis.note == "no pair accepted: kept the top one"
    summary = stage["summary"].details
    assert summary.sentences and all(isinstance(s, WeighedSentence) for s in summary.sentences)
    assert summary.tokens == sum(count_tokens(s.text) for s in summary.sentences if s.kept)
    assert summary.tokens_in > summary.tokens
    chunk = stage["units"].details.best_chunk("u0")
    assert chunk.id == "A Sunday Afternoon#0" and chunk.cosine == 0.6123
    assert stage["context"].details.tokens == 23 and "23 of 30" in stage["context"].details.note
    post = stage["postranker"]
    assert post.settings == {"attention_weight": 0.5, "aggregation": "eq3", "lr": 2}
    read = post.details.attention
    assert len(read.cells) == len(read.passages) == len(post.candidates)
    assert read.input_tokens == 55 and read.scores == (0.5,) * len(post.candidates)
    (step,) = trace.llm_steps
    assert step.capped == ReadCount(read=1, offered=len(post.candidates))
    assert step.attention.answered_from == read.passages[:1]
    assert trace.read == post.candidates[:1]
    # saved again, it round-trips in the new form
    again = RunTrace.from_json(trace.to_json())
    assert again == trace and "extras" not in trace.to_json()


def test_typed_records_round_trip_through_json(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    attention = ReaderAttention(cells=(((0.1, 0.2),), ((0.3, 0.4),)), passages=("a", "b"),
                                top_tokens=(("x",), ()), answered_from=("b",), scores=(1.0, 2.0))
    details = StageDetails(
        note="n", tokens=3, tokens_in=9,
        decision=QueryDecision(retrieve=False, probability=0.1, threshold=0.5),
        calls=(ClassifierCall("a", "A", "b", "B", 0.7, 0.5, True),),
        sentences=(WeighedSentence("a", "A sentence.", 0.4, True),),
        best_chunks=(BestChunk("u", "a#0", "A", "text", 0.9),), attention=attention)
    stage = replace(trace.stages[-1], details=details, settings={"budget": 3})
    step = replace(trace.llm_steps[0], attention=attention, capped=ReadCount(1, 2))
    trace = replace(trace, stages=(*trace.stages[:-1], stage), llm_steps=(step,))
    assert RunTrace.from_json(trace.to_json()) == trace


def test_run_stage_records_the_stage_settings_and_haystack(tiny_corpus):
    from engine.models.loading import load_bi_encoder
    from engine.stages.summarise import ExtractiveSummariser

    assert Stage.settings(WordOverlapRanker()) == {} and WordOverlapRanker().haystack is None
    summariser = ExtractiveSummariser(load_bi_encoder("minilm"), max_tokens=16)
    result = run_stage(summariser, "q", (), 1)
    assert result.settings == {"max_tokens": 16, "sentence_scorer": "minilm"}
    assert result.n_in == 0


def test_a_runs_status_is_answered_failed_or_no_candidates_and_survives_json():
    from engine.trace import failed_run
    from tests.fakes import gold_run, ranked_stage

    gold = Question("q1", "Who painted it?", answers=("Georges Seurat",))
    answered = gold_run(gold, ranked_stage("dense", ("Georges Seurat", "He painted it.")))
    empty = gold_run(gold, ranked_stage("dense"), said="")
    failed = failed_run(gold, "flat", {"k": 4}, RuntimeError("out of memory"))
    assert [r.status for r in (answered, empty, failed)] == [
        "answered", "no candidates", "failed"]
    back = RunTrace.from_json(failed.to_json())
    assert (back.status, back.error, back.gold) == ("failed", "RuntimeError: out of memory",
                                                    gold)
    assert back.metrics == {} and back.stages == ()
