"""Saved runs in a real DuckDB file: round trip, listing, delete, export, migrations, and
what survives a killed writer or a damaged file."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from engine.errors import ConfigError
from engine.store.schema import MIGRATIONS
from engine.store.sessions import SessionStore, SessionStoreError
from engine.trace import RunTrace
from tests.fakes import sample_trace

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def store(tmp_path):
    s = SessionStore(tmp_path / "sessions.duckdb")
    yield s
    s.close()


def test_saved_run_reopens_exactly_and_lists_newest_first(store, tiny_corpus):
    trace = sample_trace(tiny_corpus)
    first = store.save(trace, "seurat", "drops gold at the river stage")
    second = store.save(trace)
    assert store.load(first) == trace
    runs = store.list()
    assert [r.id for r in runs] == [second, first]
    assert runs[1].name == "seurat" and runs[1].notes == "drops gold at the river stage"
    assert runs[0].name == trace.question  # no name given: the question names it
    assert runs[1].answer == "Georges Seurat" and runs[1].reader_tokens == 42
    assert runs[1].metrics == trace.metrics
    assert (runs[1].corpus, runs[1].corpus_fingerprint) == ("tiny", tiny_corpus.fingerprint)


def test_values_are_parameters_not_sql(store, tiny_corpus):
    trace = sample_trace(tiny_corpus)
    name = "x'); DROP TABLE runs; --"
    run_id = store.save(trace, name, notes="<script>alert(1)</script>")
    assert store.list()[0].name == name
    assert store.load(run_id) == trace


def test_delete_and_unknown_ids(store, tiny_corpus):
    keep = store.save(sample_trace(tiny_corpus), "keep")
    gone = store.save(sample_trace(tiny_corpus), "gone")
    store.delete(gone)
    assert [r.id for r in store.list()] == [keep]
    with pytest.raises(ConfigError, match=rf"No saved run with id {gone}.*Saved ids: {keep}"):
        store.load(gone)
    with pytest.raises(ConfigError, match="No saved run"):
        store.delete(gone)
    with pytest.raises(ConfigError, match="'abc' is not a number"):
        store.load("abc")
    assert [r.id for r in store.list()] == [keep]


def test_oversized_name_is_refused_and_nothing_is_saved(store, tiny_corpus):
    with pytest.raises(ConfigError, match="limit is 200"):
        store.save(sample_trace(tiny_corpus), "n" * 201)
    assert store.list() == []


def test_exports_hold_every_selected_run(store, tiny_corpus):
    trace = sample_trace(tiny_corpus)
    a = store.save(trace, "a, with comma")
    b = store.save(trace, "b")
    lines = store.export_jsonl().splitlines()
    assert [json.loads(x)["id"] for x in lines] == [b, a]
    assert RunTrace.from_json(json.dumps(json.loads(lines[1])["trace"])) == trace
    rows = list(csv.DictReader(io.StringIO(store.export_csv([a]))))
    assert len(rows) == 1 and rows[0]["name"] == "a, with comma"
    assert json.loads(rows[0]["metrics"]) == {k: round(v, 4) for k, v in trace.metrics.items()}
    assert rows[0]["seconds"] == f"{trace.seconds:.3f}"  # not sixteen decimals
    from dataclasses import replace

    plain = store.save(replace(trace, gold=None, metrics={}), "no gold")
    (row,) = csv.DictReader(io.StringIO(store.export_csv([plain])))
    assert row["metrics"] == ""  # not an empty "{}"
    with pytest.raises(ConfigError, match="No saved run with id 999"):
        store.export_csv([999])


def test_saved_runs_export_to_the_rag_evaluation_tools(store, tiny_corpus):
    trace = sample_trace(tiny_corpus)
    a = store.save(trace, "a")
    store.save(trace, "b")
    assert store.export("jsonl", [a]) == store.export_jsonl([a])
    assert len(store.export("ragas").splitlines()) == 2  # every saved run
    (result,) = json.loads(store.export("ragchecker", [a]))["results"]
    assert result["query"] == trace.question and result["gt_answer"] == "Georges Seurat"
    (item,) = [json.loads(line) for line in store.export("flashrag", [a]).splitlines()]
    assert item["output"]["pred"] == trace.answer
    with pytest.raises(ConfigError, match="Unknown export format 'xml'"):
        store.export("xml")
    with pytest.raises(ConfigError, match="No saved run with id 999"):
        store.export("ragas", [999])


def test_ragchecker_refuses_a_saved_run_without_gold_by_its_id_and_name(store, tiny_corpus):
    from dataclasses import replace

    typed = store.save(replace(sample_trace(tiny_corpus), gold=None), "typed question")
    with pytest.raises(ConfigError, match=f"and saved run {typed} 'typed question' "
                                          r"\('Who painted"):
        store.export("ragchecker", [typed])


def test_migrations_apply_once_and_upgrade_an_old_file(tmp_path, tiny_corpus):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))  # a file made by the first schema version only
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                "description VARCHAR NOT NULL, applied TIMESTAMPTZ NOT NULL "
                "DEFAULT current_timestamp)")
    for statement in MIGRATIONS[0][2]:
        con.execute(statement)
    con.execute("INSERT INTO schema_migrations (version, description) VALUES (1, 'runs')")
    trace = sample_trace(tiny_corpus)
    con.execute("INSERT INTO runs (name, question, paradigm, trace) VALUES (?, ?, ?, ?)",
                ["old", trace.question, trace.paradigm, trace.to_json()])
    con.close()
    store = SessionStore(path)
    assert store.schema_version() == MIGRATIONS[-1][0]
    (old,) = store.list()
    assert old.name == "old" and store.load(old.id) == trace
    assert old.metrics == {} and old.reader_tokens == 0  # columns added later stay empty
    assert old.corpus == "" and old.corpus_fingerprint == ""
    store.close()
    again = SessionStore(path)  # reopening applies nothing twice
    assert again.schema_version() == MIGRATIONS[-1][0] and len(again.list()) == 1
    again.close()


def test_a_damaged_file_is_reported_and_left_untouched(tmp_path):
    path = tmp_path / "sessions.duckdb"
    path.write_bytes(b"this is not a duckdb database" * 100)
    before = path.read_bytes()
    expected = r"sessions\.duckdb.*left untouched.*FUNNEL_DATA_DIR"
    with pytest.raises(SessionStoreError, match=expected):
        SessionStore(path)
    assert path.read_bytes() == before


def test_a_database_another_process_holds_names_it_and_the_way_out(tmp_path):
    """Issue 67: the lock message said "move it aside"; the running app holds it."""
    import subprocess
    import sys

    path = tmp_path / "sessions.duckdb"
    store = SessionStore(path)
    try:
        opened = subprocess.run(
            [sys.executable, "-c", "import sys\nfrom engine.store.sessions import "
             "SessionStore\ntry:\n    SessionStore(sys.argv[1])\nexcept Exception as e:\n"
             "    print(e)", str(path)], capture_output=True, text=True, check=True)
    finally:
        store.close()
    said = opened.stdout
    assert f"in use by another process (PID {os.getpid()}" in said, said
    assert "Use that app (or stop it first)" in said and "--data-dir" in said
    assert "aside" not in said and oct(path.stat().st_mode & 0o777) == "0o600"


WRITER = """
import sys
from engine.store.sessions import SessionStore
from engine.trace import RunTrace
store = SessionStore(sys.argv[1])
trace = RunTrace.from_json(sys.stdin.read())
i = 0
while True:
    store.save(trace, f"run {i}")
    i += 1
    if i == 5:
        print("ready", flush=True)
"""


def test_killing_a_writer_mid_save_loses_nothing_saved_before(tmp_path, tiny_corpus):
    path = tmp_path / "sessions.duckdb"
    trace = sample_trace(tiny_corpus)
    store = SessionStore(path)
    kept = store.save(trace, "saved before")
    store.close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    writer.stdin.write(trace.to_json())
    writer.stdin.close()
    assert writer.stdout.readline().strip() == "ready"
    time.sleep(0.2)  # saving continuously: the kill lands inside or between saves
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    store = SessionStore(path)
    runs = store.list()
    assert store.load(kept) == trace
    names = [r.name for r in reversed(runs)]
    assert names[0] == "saved before" and len(names) >= 6
    assert names[1:] == [f"run {i}" for i in range(len(names) - 1)]  # no torn rows
    assert all(store.load(r.id) == trace for r in runs[:3])
    store.close()


def test_the_cli_exports_saved_runs_for_other_tools(tmp_path, tiny_corpus, capsys):
    """`funnel-engine sessions export FORMAT DIR`: ragas a file per paradigm, trec a qrels
    file and a run per stage; a bad format or id is refused, nothing written."""
    from engine.cli.main import main

    path = tmp_path / "sessions.duckdb"
    store = SessionStore(path)
    trace = sample_trace(tiny_corpus)
    first, _ = store.save(trace, "a"), store.save(trace, "rerun")
    store.close()
    assert main(["sessions", "export", "trec", str(tmp_path / "trec"), "--db", str(path)]) == 0
    written = sorted(p.name for p in (tmp_path / "trec").iterdir())
    assert written == ["fake.overlap.run", "fake.rivers.run", "qrels.txt"]
    assert main(["sessions", "export", "ragas", str(tmp_path / "ragas"), "--db", str(path),
                 "--ids", str(first)]) == 0
    (ragas,) = (tmp_path / "ragas").iterdir()
    assert ragas.name == "ragas.fake.jsonl" and len(ragas.read_text().splitlines()) == 1
    assert main(["sessions", "export", "xml", str(tmp_path / "x"), "--db", str(path)]) == 2
    assert main(["sessions", "export", "csv", str(tmp_path / "x"), "--db", str(path),
                 "--ids", "3,x"]) == 2
    assert "not '3,x'" in capsys.readouterr().err and not (tmp_path / "x").exists()
