"""Imports stored whole or not at all: a trace file of two pipelines (two service.names) is
two paradigms of one evaluation; an error or a SIGKILL midway leaves nothing half-stored
(the per-question import left an evaluation marked running with some of its runs), for
evaluations, saved sessions and labels alike."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from engine.store.evaluations import EvaluationStore
from engine.store.sessions import SessionStore

LLAMAINDEX = Path(__file__).parent / "data" / "llamaindex_train100.otlp.jsonl"
ROOT = Path(__file__).resolve().parent.parent


def as_pipeline(text: str, service: str) -> str:
    """The same questions' traces as another pipeline made them: its service.name and
    trace ids of its own."""
    lines = []
    for line in text.splitlines():
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for attribute in resource["resource"]["attributes"]:
                if attribute["key"] in ("service.name", "openinference.project.name"):
                    attribute["value"] = {"stringValue": service}
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["traceId"] = span["traceId"][::-1]
        lines.append(json.dumps(request))
    return "\n".join(lines) + "\n"


def _counts(db: Path) -> tuple[list, int, int]:
    """(evaluations as (state, paradigms, questions stored), runs of evaluations, saved
    runs) in the file at `db`."""
    store = SessionStore(db)
    try:
        evaluations = [(e.state, e.paradigms, e.done) for e in EvaluationStore(store).list()]
        ((runs,),) = store.execute("SELECT count(*) FROM evaluation_runs")
        return evaluations, runs, len(store.list())
    finally:
        store.close()


def test_a_file_of_two_pipelines_is_two_paradigms_of_one_evaluation(tmp_path, capsys):
    """The command of the report: `import-traces FILE --dataset hotpotqa/train100.json
    --label L` on two pipelines' traces of the same questions raised DuckDB's
    ConstraintException and left a running evaluation with half its runs."""
    from engine.cli.main import main

    text = LLAMAINDEX.read_text(encoding="utf-8")
    both = tmp_path / "two_pipelines.jsonl"
    both.write_text(text + as_pipeline(text, "haystack-rag"), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    args = ["import-traces", str(both), "--dataset", "hotpotqa/train100.json", "--db", str(db)]
    assert main([*args, "--label", "L"]) == 0
    assert ("stored 6 traced runs of L: llamaindex-rag, L: haystack-rag as evaluation 1"
            in capsys.readouterr().out)
    assert main(args) == 0  # unlabelled: each pipeline by its service.name
    assert "of llamaindex-rag, haystack-rag as evaluation 2" in capsys.readouterr().out
    assert _counts(db)[:2] == ([("done", ("llamaindex-rag", "haystack-rag"), 3),
                                ("done", ("L: llamaindex-rag", "L: haystack-rag"), 3)], 12)
    store = SessionStore(db)
    evaluations = EvaluationStore(store)
    rows = evaluations.rows(2)
    assert [(r["position"], r["paradigm"]) for r in rows] == [
        (p, name) for p in range(3) for name in ("haystack-rag", "llamaindex-rag")]
    run = evaluations.trace(2, 0, "haystack-rag")
    assert run.config["pipeline"] == "haystack-rag"
    assert evaluations.get(2).configs["haystack-rag"]["pipeline"] == "haystack-rag"
    # the same questions, the same spans: the two pipelines measure alike
    assert run.metrics == evaluations.trace(2, 0, "llamaindex-rag").metrics
    store.close()


def test_one_pipeline_answering_a_question_twice_is_refused_by_both_traces(tmp_path, capsys):
    from engine.cli.main import main

    text = LLAMAINDEX.read_text(encoding="utf-8")
    twice = tmp_path / "twice.jsonl"
    twice.write_text(text + as_pipeline(text, "llamaindex-rag"), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    assert main(["import-traces", str(twice), "--dataset", "hotpotqa/train100.json",
                 "--db", str(db)]) == 2
    err = capsys.readouterr().err
    first = json.loads(text.splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert "'llamaindex-rag' answered" in err and "twice (traces" in err
    assert first["traceId"] in err and first["traceId"][::-1] in err
    assert _counts(db) == ([], 0, 0)


class FailingAfter:
    """A DuckDB connection whose statements starting with `prefix` fail after `after` of
    them ran (a disk that fills up midway)."""

    def __init__(self, connection, prefix: str, after: int) -> None:
        self.connection, self.prefix, self.after, self.seen = connection, prefix, after, 0

    def execute(self, sql, params=None):
        if sql.startswith(self.prefix):
            self.seen += 1
            if self.seen > self.after:
                raise duckdb.IOException("injected: no space left on device")
        return self.connection.execute(sql, params or [])

    def __getattr__(self, name):
        return getattr(self.connection, name)


@pytest.fixture()
def failing(tmp_path):
    """A store whose next statements of a kind fail midway: failing(prefix, after)."""
    store = SessionStore(tmp_path / "s.duckdb")
    real = store._con

    def arm(prefix: str, after: int) -> SessionStore:
        store._con = FailingAfter(real, prefix, after)
        return store

    yield arm
    store._con = real
    store.close()


def test_an_error_midway_stores_nothing_of_an_evaluation_or_of_sessions(failing, tmp_path):
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir
    from engine.service.imports import import_files

    text = LLAMAINDEX.read_text(encoding="utf-8")
    files = [("two.jsonl", text + as_pipeline(text, "haystack-rag"))]
    dataset = read_dataset(shared_data_dir() / "hotpotqa" / "train100.json")
    store = failing("INSERT INTO evaluation_runs", 4)
    with pytest.raises(duckdb.IOException, match="injected"):
        import_files(files, store, dataset=dataset, dataset_name="train100", label="",
                     corpus=lambda: None)
    assert store._con.seen == 5  # the evaluation's row and four runs were written, then
    store = failing("INSERT INTO runs", 2)
    with pytest.raises(duckdb.IOException, match="injected"):  # as sessions
        import_files(files, store, dataset=None, dataset_name="", label="",
                     corpus=lambda: None)
    store._con = store._con.connection
    assert EvaluationStore(store).list() == [] and store.list() == []
    assert store.execute("SELECT count(*) FROM evaluation_runs") == [(0,)]
    imported = import_files(files, store, dataset=None, dataset_name="", label="",
                            corpus=lambda: None)  # then whole
    assert (imported.runs, len(store.list())) == (6, 6)


def test_an_error_midway_stores_no_label_of_a_labels_file(failing):
    from engine.store.labels import LabelStore

    lines = "".join(json.dumps({"question": f"q{i}?", "d1_id": "a", "d1_text": "A.",
                                "d2_id": "b", "d2_text": "B.", "label": i % 2}) + "\n"
                    for i in range(5))
    labels = LabelStore(failing("INSERT INTO labels", 3))
    with pytest.raises(duckdb.IOException, match="injected"):
        labels.import_jsonl(lines)
    labels.store._con = labels.store._con.connection
    assert labels.count() == 0
    assert labels.import_jsonl(lines) == (5, 0)


def _big_import(folder: Path, questions: int) -> tuple[Path, Path]:
    """A QA file of `questions` questions and a trace file of two pipelines answering each
    (twenty retrieved passages a trace): (QA file, trace file)."""
    qa, traces = folder / "qa.jsonl", folder / "big.otlp.jsonl"
    with qa.open("w", encoding="utf-8") as out:
        for i in range(questions):
            out.write(json.dumps({
                "question_id": f"q{i}", "question_text": f"Which river is number {i}?",
                "answers_objects": [{"spans": [f"River {i}"]}],
                "contexts": [{"id": "0", "title": f"River {i}", "is_supporting": True,
                              "paragraph_text": f"River {i} flows."}]}) + "\n")

    def value(v) -> dict:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    def span(trace: str, n: int, parent: str, kind: str, attributes: dict) -> dict:
        return {"traceId": trace, "spanId": f"{n:016x}", "parentSpanId": parent,
                "name": kind.lower(), "startTimeUnixNano": str(10**18 + n),
                "endTimeUnixNano": str(10**18 + n + 1000),
                "attributes": [{"key": k, "value": value(v)} for k, v in
                               {"openinference.span.kind": kind, **attributes}.items()]}

    with traces.open("w", encoding="utf-8") as out:
        for p, service in enumerate(("bm25-rag", "dense-rag")):
            for i in range(questions):
                trace = f"{p:02x}{i:030x}"
                documents = {}
                for d in range(20):
                    at = f"retrieval.documents.{d}.document."
                    documents.update({at + "id": f"p{i}-{d}", at + "score": 20 - d,
                                      at + "content": f"River {i + d} flows. " * 12,
                                      at + "metadata": json.dumps({"title": f"River {i + d}"})})
                out.write(json.dumps({"resourceSpans": [{
                    "resource": {"attributes": [{"key": "service.name",
                                                 "value": value(service)}]},
                    "scopeSpans": [{"spans": [
                        span(trace, 2 * i + 1, "", "CHAIN", {
                            "input.value": f"Which river is number {i}?",
                            "output.value": f"River {i}"}),
                        span(trace, 2 * i + 2, f"{2 * i + 1:016x}", "RETRIEVER",
                             documents)]}]}]}) + "\n")
    return qa, traces


@pytest.mark.slow
def test_a_kill_midway_leaves_nothing_half_stored(tmp_path):
    """The import runs in a process of its own, SIGKILLed once its debug log says the first
    runs were written (inside the transaction); the database then holds no evaluation and
    no run, nothing marked interrupted, and the same import afterwards stores whole."""
    qa, traces = _big_import(tmp_path, 800)
    db = tmp_path / "s.duckdb"
    command = [sys.executable, "-m", "engine", "-v", "import-traces", str(traces),
               "--dataset", str(qa), "--db", str(db)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen = []
    for line in process.stderr:
        seen.append(line)
        if "statements of a transaction applied, not yet committed" in line:
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, "".join(seen[-5:])
    written = next(line for line in seen if "not yet committed" in line)
    assert " 200 of 1601 statements" in written  # the evaluation's row, then runs
    assert _counts(db) == ([], 0, 0)
    store = SessionStore(db)
    assert EvaluationStore(store).mark_interrupted() == 0
    store.close()

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _counts(db)[:2] == ([("done", ("bm25-rag", "dense-rag"), 800)], 1600)


def test_a_label_names_one_pipeline_and_prefixes_several():
    from engine.eval.traces import paradigm_names

    assert paradigm_names(["a"], "") == {"a": "a"}
    assert paradigm_names([""], "") == {"": "imported"}
    assert paradigm_names(["a"], "  my   run ") == {"a": "my run"}
    assert paradigm_names(["a", "b"], "L") == {"a": "L: a", "b": "L: b"}
    assert paradigm_names(["a", ""], "") == {"a": "a", "": "unnamed"}


@pytest.mark.parametrize(("name", "text", "said"), [
    # JSON of another shape: by the field's path and what was expected
    ("odd.json", '{"resourceSpans": "x"}',
     "odd.json: JSON, so read as OpenInference traces (OTLP/JSON or Phoenix's spans), which "
     "it is not: line 1: field 'resourceSpans': expected a list of resources, got a string "
     '("x") (give trace files'),
    ("odd.json", '[{"context": {"trace_id": "a", "span_id": "b"}, "attributes": 3}]',
     "read as OpenInference traces (OTLP/JSON or Phoenix's spans), which it is not: line 1: "
     "field 'attributes': expected an object, got a number (3)"),
    # no JSON, named .json: tried as TREC first (its content), then the rest
    ("run.json", "Q1 Q0 doc json 1.0 mine\n",
     "run.json: no format an import reads fits it; tried as a TREC run file (qid Q0 docid "
     "rank score tag): line 1: field 'rank': 'json' is not an integer; as a TREC qrels file "
     "(qid 0 docid relevance): line 1: a line has 4 fields (qid iteration docid relevance), "
     "this one 6: 'Q1 Q0 doc json 1.0 mine'; as OpenInference traces (OTLP/JSON or "
     "Phoenix's spans): line 1: not JSON"),
])
def test_a_file_no_format_reads_is_refused_with_each_format_tried(tmp_path, name, text, said):
    from engine.errors import DataFormatError
    from engine.service.imports import import_files

    store = SessionStore(tmp_path / "s.duckdb")
    with pytest.raises(DataFormatError) as refused:
        import_files([(name, text)], store, dataset=None, dataset_name="", label="",
                     corpus=lambda: None)
    assert said in str(refused.value)
    assert store.list() == []
    store.close()


def test_files_are_told_apart_by_their_content_not_their_names():
    from engine.service.imports import QRELS, RUN, TRACES, file_kind

    assert file_kind("a.txt", LLAMAINDEX.read_text(encoding="utf-8")) == TRACES
    assert file_kind("traces.json", "q1 Q0 d1 1 2.5 mine\n") == RUN
    assert file_kind("judged.json", "q1 0 d1 1\n") == QRELS
