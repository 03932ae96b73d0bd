"""A user's own pipeline in, from its OpenInference traces: our runs sent as spans come back
as the same runs; traces of a real LlamaIndex pipeline (made by its OpenInference
instrumentation, bench/llamaindex_traces.py) become runs with gold tracking; files that are
not traces are refused by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.documents import Dataset, Question
from engine.errors import ConfigError, DataFormatError
from engine.eval.spans import read_spans
from engine.eval.traces import NOT_SAID, searched_in, traced_runs, unmatched
from tests.fakes import gold_run, ranked_stage

LLAMAINDEX = Path(__file__).parent / "data" / "llamaindex_train100.otlp.jsonl"
# the same runs' spans as a real Phoenix's client read them back (spans.get_spans)
LLAMAINDEX_PHOENIX = LLAMAINDEX.with_name("llamaindex_train100.phoenix.json")
GOLD = Question("q1", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
                supporting_titles=("Georges Seurat", "A Sunday Afternoon"))


def _otlp_json(*runs) -> str:
    """`runs` as the OTLP/JSON request the SDK's exporter would send (protobuf's JSON
    mapping: ids in base64), through engine.service.otel as the app sends them."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.service.otel import Tracing

    exporter = InMemorySpanExporter()
    tracing = Tracing("unused", exporter=exporter)
    for run in runs:
        tracing.send(run)
    return json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans())))


def _ours() -> tuple:
    first = ranked_stage("first", ("Paul Signac", "He painted dots."),
                         ("Georges Seurat", "Georges Seurat painted it."),
                         ("A Sunday Afternoon", "A painting."))
    return (gold_run(GOLD, first, ranked_stage("kept", ("Georges Seurat", "Georges Seurat "
                                                        "painted it.")), paradigm="mine"),
            gold_run(GOLD, first, said="Paul Signac", paradigm="other"))


def test_our_runs_sent_as_spans_come_back_as_the_same_runs_and_measures():
    ours = _ours()
    dataset = Dataset("qa", "test", (GOLD,), ())
    back = traced_runs([("ours.json", _otlp_json(*ours))], dataset, label="back")
    assert len(back) == 2
    for sent, run in zip(ours, back, strict=True):
        assert (run.question, run.answer, run.paradigm) == (sent.question, sent.answer, "back")
        assert [s.name for s in run.stages] == [s.name for s in sent.stages]
        for a, b in zip(sent.stages, run.stages, strict=True):
            assert [(c.unit.id, c.unit.doc_ids, c.score) for c in a.candidates] == [
                (c.unit.id, c.unit.doc_ids, pytest.approx(c.score)) for c in b.candidates]
            assert b.seconds == pytest.approx(a.seconds, abs=1e-6)
            # how many it searched, from the metadata our spans write
            assert (b.n_in, b.settings["searched"]) == (a.n_in, "the span's metadata (n_in)")
        assert run.config["pipeline"] == "funnel-explorer"  # the spans' service.name
        assert [(s.prompt_tokens, s.output_tokens) for s in run.llm_steps] == [(10, 2)]
        assert run.metrics == pytest.approx(sent.metrics)
    assert back[1].metrics["EM"] == 0.0 and back[0].metrics["EM"] == 1.0


@pytest.mark.parametrize(("text", "error"), [
    ("", "the file is empty"),
    ('{"resourceSpans": []}\nnot json\n', "line 2: not JSON"),
    ('{"spans": []}\n', "line 1: neither an OTLP request"),
    ('{"context": {"span_id": "ab"}, "name": "x"}\n{"x": 1}\n',
     "line 1: field 'context.trace_id': missing"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "01", "spanId": "02", '
     '"startTimeUnixNano": "soon"}]}]}]}',
     r"field 'resourceSpans\[0\].scopeSpans\[0\].spans\[0\].startTimeUnixNano': 'soon' is "
     "not a time"),
    # a field of another type is named by its path and what was expected (it raised an
    # AttributeError from deep inside the reading)
    ('{"resourceSpans": "x"}', r"line 1: field 'resourceSpans': expected a list of "
                               r'resources, got a string \("x"\)'),
    ('{"resourceSpans": [{"scopeSpans": {"spans": []}}]}',
     r"field 'resourceSpans\[0\].scopeSpans': expected a list of scopes, got an object"),
    ('{"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": '
     '"svc"}]}, "scopeSpans": []}]}',
     r"field 'resourceSpans\[0\].resource.attributes\[0\].value': expected an object"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}',
     r"field 'resourceSpans\[0\].scopeSpans\[0\].spans\[0\]': expected an object, got a "
     "number"),
    ('[{"context": {"trace_id": "a", "span_id": "b"}, "attributes": ["x"]}]',
     "field 'attributes': expected an object, got a list"),
])
def test_a_file_that_is_not_traces_is_refused_by_line_and_field(text, error):
    with pytest.raises(DataFormatError, match=error):
        read_spans(text, "traces.jsonl")


def test_a_trace_without_a_retriever_is_refused_by_its_trace_id():
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "chat", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                           {"key": "input.value", "value": {"stringValue": "Hi?"}}]}
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    with pytest.raises(DataFormatError, match="trace 0af7651916cd43dd8448eb211c80319c "
                                              r"\('chat'\) has no RETRIEVER or RERANKER"):
        traced_runs([("chat.json", text)])


def test_the_cli_stores_traces_as_an_evaluation_or_as_sessions(tmp_path, capsys):
    """`funnel-engine import-traces FILE --dataset QA`: one evaluation of the traced runs
    at their questions' positions; without --dataset, saved sessions; a question the QA
    file lacks stores nothing."""
    from engine.cli.main import main
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore

    other = Question("q2", "Which river flows through Budapest?", answers=("Danube",),
                     supporting_titles=("Danube",))
    second = gold_run(other, ranked_stage("first", ("Danube", "The Danube flows there.")),
                      said="Danube", paradigm="mine")
    traces = tmp_path / "traces.json"
    traces.write_text(_otlp_json(_ours()[0], second))
    qa = tmp_path / "qa.jsonl"
    qa.write_text("\n".join(json.dumps({
        "question_id": q.id, "question_text": q.text,
        "answers_objects": [{"spans": list(q.answers)}],
        "contexts": [{"id": "0", "title": q.supporting_titles[0], "is_supporting": True,
                      "paragraph_text": q.answers[0]}]}) for q in (other, GOLD)))
    db = tmp_path / "s.duckdb"
    assert main(["import-traces", str(traces), "--dataset", str(qa), "--db", str(db),
                 "--label", "llamaindex"]) == 0
    assert "stored 2 traced runs of llamaindex as evaluation 1" in capsys.readouterr().out
    store = SessionStore(db)
    evaluations = EvaluationStore(store)
    assert [(r["question_id"], r["paradigm"]) for r in evaluations.rows(1)] == [
        ("q2", "llamaindex"), ("q1", "llamaindex")]  # the QA file's order
    assert evaluations.trace(1, 0, "llamaindex").metrics["AR@first"] == 1.0
    store.close()

    assert main(["import-traces", str(traces), "--db", str(db)]) == 0
    assert "saved 2 traced runs as sessions 1-2" in capsys.readouterr().out

    qa.write_text(qa.read_text().splitlines()[0])  # Budapest only
    assert main(["import-traces", str(traces), "--dataset", str(qa), "--db", str(db)]) == 2
    assert "1 of 2 traced questions are not in" in capsys.readouterr().err
    store = SessionStore(db)
    assert len(EvaluationStore(store).list()) == 1 and len(store.list()) == 2
    store.close()


def test_a_real_llamaindex_pipelines_traces_become_funnels_with_gold_tracking():
    """Three train100 questions through LlamaIndex's BM25 retriever (10), its
    SentenceTransformerRerank (4) and an LLM behind llama.cpp's server, traced by
    openinference-instrumentation-llama-index (bench/llamaindex_traces.py made the file)."""
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    dataset = read_dataset(shared_data_dir() / "hotpotqa" / "train100.json")
    runs = traced_runs([(LLAMAINDEX.name, LLAMAINDEX.read_text(encoding="utf-8"))], dataset,
                       label="llamaindex")
    assert [r.question for r in runs] == [q.text for q in dataset.questions[:3]]
    assert unmatched(runs) == []
    for run in runs:
        retrieve, rerank = run.stages  # the folded _retrieve and the CHAIN spans are no stages
        assert (retrieve.name, rerank.name) == ("BM25Retriever", "SentenceTransformerRerank")
        assert (len(retrieve.candidates), rerank.n_in, len(rerank.candidates)) == (10, 10, 4)
        assert rerank.settings["top_k"] == 4
        # nothing says how many BM25 searched: unknown, not "10 of 10"
        assert searched_in(retrieve) is None and retrieve.settings["searched"] == NOT_SAID
        assert rerank.settings["searched"] == "its input documents"
        assert run.config["pipeline"] == "llamaindex-rag"  # its resource's service.name
        assert run.paradigm == "llamaindex"
        # the reranker kept 4 of the retriever's nodes, rescored
        assert {c.unit.id for c in rerank.candidates} <= {c.unit.id for c in retrieve.candidates}
        assert [c.score for c in rerank.candidates] == sorted(
            (c.score for c in rerank.candidates), reverse=True)
        (call,) = run.llm_steps  # the model's one call, not its predict/chat wrappers
        assert call.model == "smollm2-gguf" and call.prompt_tokens > 100
        assert run.question in call.prompt and call.output.strip() == run.answer
        # gold by the nodes' metadata titles: the dataset's supporting documents
        assert 0.0 <= run.metrics["gold_doc_recall@SentenceTransformerRerank"] <= \
            run.metrics["gold_doc_recall@BM25Retriever"]
        assert "nDCG@10@BM25Retriever" in run.metrics and "EM" in run.metrics
    assert sum(r.metrics["gold_doc_recall@BM25Retriever"] for r in runs) >= 2


def test_phoenixs_export_of_the_same_spans_gives_the_same_runs():
    """Phoenix nests attributes (and a document's metadata) and writes times as ISO
    strings; its export and the collector's file are one set of runs."""
    def runs(path: Path) -> list:
        return traced_runs([(path.name, path.read_text(encoding="utf-8"))])

    def seen(run) -> tuple:
        return (run.question, run.answer, [(s.name, s.n_in, s.settings, [
            (c.unit.id, c.unit.doc_ids, c.unit.text, c.score) for c in s.candidates])
            for s in run.stages], [(s.prompt, s.output, s.prompt_tokens) for s in run.llm_steps])

    phoenix, collector = runs(LLAMAINDEX_PHOENIX), runs(LLAMAINDEX)
    assert len(phoenix) == 3
    assert [seen(r) for r in phoenix] == [seen(r) for r in collector]
    assert [s.seconds for s in phoenix[0].stages] == pytest.approx(
        [s.seconds for s in collector[0].stages], abs=1e-5)


def test_an_imported_run_is_not_answered_again_by_our_reader(explorer):
    (run,) = traced_runs([("ours.json", _otlp_json(_ours()[0]))], label="theirs")
    with pytest.raises(ConfigError, match="run of 'theirs' was imported .*ours.json.* not "
                                          "here to read again. Re-answer a run"):
        explorer.runs.reanswer(run, [run.stages[0].candidates[0].unit.id])
    with pytest.raises(ConfigError, match="imported .* Attribute a run of one of our"):
        explorer.runs.ablation(run)


def test_how_many_a_stage_searched_is_what_the_span_or_the_importer_says():
    """A retriever's metadata (`using_metadata({"corpus_size": ...})`) or the corpus size
    given at import; a reranker without input documents re-ranked what the stage before
    kept; a retriever's top_k from its metadata."""
    def span(n, parent, kind, attributes):
        return {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": f"{n:016x}",
                "parentSpanId": parent, "name": kind.lower(), "startTimeUnixNano": str(n),
                "endTimeUnixNano": str(n + 1), "attributes": [
                    {"key": k, "value": {"stringValue": v} if isinstance(v, str) else
                     {"intValue": str(v)}}
                    for k, v in {"openinference.span.kind": kind, **attributes}.items()]}

    docs = {f"retrieval.documents.{i}.document.id": f"d{i}" for i in range(3)}
    reranked = {"reranker.output_documents.0.document.id": "d1", "reranker.top_k": 1}
    spans = [span(1, "", "CHAIN", {"input.value": "Which river?"}),
             span(2, f"{1:016x}", "RETRIEVER", {**docs, "metadata": json.dumps(
                 {"corpus_size": 14033, "top_k": 3})}),
             span(3, f"{1:016x}", "RETRIEVER", docs),
             span(4, f"{1:016x}", "RERANKER", reranked)]
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    (run,) = traced_runs([("t.json", text)])
    told, untold, rerank = run.stages
    assert (told.n_in, told.settings["searched"], told.settings["top_k"]) == (
        14033, "the span's metadata (corpus_size)", 3)
    assert searched_in(untold) is None  # its output's 3 would be a lie
    assert (rerank.n_in, rerank.settings["searched"]) == (3, "what retriever 2 kept")
    assert (run.paradigm, run.config["pipeline"]) == ("imported", "not named in the trace")
    (given,) = traced_runs([("t.json", text)], label="mine", searched=500)
    assert [s.n_in for s in given.stages] == [14033, 500, 3]  # the span wins
    assert given.stages[1].settings["searched"] == "the corpus size given at import"
