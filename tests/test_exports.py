"""Exports to ragas, RAGChecker and FlashRAG: the field names and types their documentation
gives (ragas SingleTurnSample, RAGChecker RAGResult, FlashRAG Item with its output)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.documents import Question
from engine.errors import ConfigError
from engine.eval.exports import FORMATS, export, export_files, without_gold
from engine.trace import LLMStep
from engine.trace_details import ReadCount
from tests.fakes import gold_run, ranked_stage, sample_trace


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
                               "response", "reference", "reference_context_ids", "run_id",
                               "paradigm", "retrieved_passage_ids", "answer_cut",
                               "id_spaces", "corpus"}
        assert set(sample["id_spaces"]) == {"retrieved_context_ids", "reference_context_ids",
                                            "retrieved_passage_ids", "run_id"}
        assert sample["reference_context_ids"] == list(trace.gold.supporting_titles)
        assert sample["paradigm"] == trace.paradigm
        assert sample["corpus"] == trace.corpus["name"]  # what the run searched
        assert sample["user_input"] == trace.question and sample["response"] == trace.answer
        assert sample["reference"] == "Georges Seurat"
        assert all(isinstance(c, str) for c in sample["retrieved_contexts"])
    assert [len(s["retrieved_contexts"]) for s in samples] == [2, 1]  # what each reader read
    # the documents read, in the references' id space (ragas's IDBasedContextRecall)
    assert samples[1]["retrieved_context_ids"] == list(
        traces[1].stages[-1].candidates[0].unit.doc_ids)


def test_ragas_names_passages_beside_documents_and_each_run_by_its_paradigm():
    """Four passages of three documents read: four contexts, four passage ids in their
    order, three document ids (each once, best first: IDBasedContextRecall's); the run id
    is the run's (paradigm and question), also in a file of one paradigm."""
    gold = Question("q1", "Who painted A Sunday Afternoon?", ("Georges Seurat",),
                    ("A Sunday Afternoon", "Georges Seurat"))
    read = ranked_stage("rerank", ("A Sunday Afternoon", "It hangs in Chicago."),
                        ("Georges Seurat", "Seurat was a French painter."),
                        ("A Sunday Afternoon", "Seurat painted it from 1884."),
                        ("Paris", "Paris is the capital of France."))
    step = LLMStep("answer", "m", "p", "Georges Seu", 10, 24, 0.1, answer="Georges",
                   answer_cut=True)
    run = replace(gold_run(gold, read), llm_steps=(step,), answer="Georges")
    (sample,) = [json.loads(line) for line in
                 export_files([run], "ragas")["ragas.fake.jsonl"].splitlines()]
    assert len(sample["retrieved_contexts"]) == 4
    assert sample["retrieved_passage_ids"] == ["A Sunday Afternoon#0", "Georges Seurat#1",
                                               "A Sunday Afternoon#2", "Paris#3"]
    assert sample["retrieved_context_ids"] == ["A Sunday Afternoon", "Georges Seurat", "Paris"]
    assert sample["run_id"] == "fake/q1" and sample["paradigm"] == "fake"
    assert sample["response"] == "Georges" and sample["answer_cut"] is True
    assert "document" in sample["id_spaces"]["retrieved_context_ids"]
    assert "one per retrieved_contexts" in sample["id_spaces"]["retrieved_passage_ids"]
    again = json.loads(export([run, run], "ragas").splitlines()[1])
    assert again["run_id"] == "fake/q1#2"  # the same question run again keeps its own id


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


def test_ragchecker_leaves_out_runs_without_gold_and_gives_every_run_its_own_id(traces):
    typed = replace(traces[0], gold=None)
    again = replace(traces[0], config={"K": 7})  # the same question and paradigm, rerun
    results = json.loads(export([typed, traces[0], again], "ragchecker"))["results"]
    assert [r["query_id"] for r in results] == ["q1", "q1#2"]  # the typed run left out
    assert without_gold([typed, traces[0], again]) == 1
    with pytest.raises(ConfigError, match="RAGChecker needs a gold answer.*'0'"):
        export([typed], "ragchecker")  # nothing to score at all: refused by name


def test_ragas_puts_runs_without_gold_last_and_a_file_per_paradigm(traces, tiny_corpus):
    typed = replace(traces[0], gold=None)
    samples = [json.loads(line) for line in export([typed, traces[0]], "ragas").splitlines()]
    assert "reference" in samples[0] and "reference" not in samples[1]
    texts = {d.id: d.text for d in tiny_corpus.documents}
    files = export_files(traces, "ragas", documents=texts.get)
    assert sorted(files) == ["ragas.fake.jsonl", "ragas.other.jsonl"]
    (sample,) = [json.loads(line) for line in files["ragas.fake.jsonl"].splitlines()]
    assert sample["reference_contexts"] == [texts[t] for t in traces[0].gold.supporting_titles]


def test_flashrag_items_carry_output_with_retrieval_result(traces, tiny_corpus):
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
    assert item["metadata"]["corpus"] == tiny_corpus.name  # what the run searched


def test_unknown_format_and_nothing_to_export_are_named(traces):
    with pytest.raises(ConfigError, match=f"Unknown export format 'csv'.*{', '.join(FORMATS)}"):
        export(traces, "csv")
    with pytest.raises(ConfigError, match="Nothing to export"):
        export([], "ragas")


def test_trec_files_give_trec_evals_measures_as_each_run_has_them(tmp_path):
    """The per-stage run files and the qrels, read back by ir_measures (trec_eval's code),
    score each stage as the run's own metrics say."""
    import ir_measures

    from engine.documents import Question
    from engine.eval.exports import export_files
    from tests.fakes import gold_run, ranked_stage

    gold = Question("5a8b 57f2", "Who painted it?", answers=("Georges Seurat",),
                    supporting_titles=("Georges Seurat", "A Sunday Afternoon"))
    runs = [gold_run(gold, ranked_stage("first", ("Paul Signac", "x"), ("Georges Seurat", "y"),
                                        ("A Sunday Afternoon", "z")),
                     ranked_stage("kept", ("Georges Seurat", "y")), paradigm=name)
            for name in ("flat", "funnel")]
    files = export_files(runs, "trec")
    assert sorted(files) == ["flat.first.run", "flat.kept.run", "funnel.first.run",
                             "funnel.kept.run", "qrels.txt"]
    assert files["qrels.txt"].splitlines() == ["5a8b_57f2 0 Georges_Seurat 1",
                                               "5a8b_57f2 0 A_Sunday_Afternoon 1"]
    assert files["flat.first.run"].splitlines()[1] == (
        "5a8b_57f2 Q0 Georges_Seurat 2 2 flat.first")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")))
    for stage in ("first", "kept"):
        run = list(ir_measures.read_trec_run(str(tmp_path / f"flat.{stage}.run")))
        measured = ir_measures.calc_aggregate(
            [ir_measures.parse_measure(m) for m in ("nDCG@10", "RR", "R@4", "P@4")], qrels, run)
        for measure, value in measured.items():
            assert runs[0].metrics[f"{measure}@{stage}"] == pytest.approx(value, abs=1e-4)
    with pytest.raises(ConfigError, match="Unknown export format 'trek'"):
        export_files(runs, "trek")
