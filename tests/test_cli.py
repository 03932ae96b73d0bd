"""The CLI as a user runs it: `python -m engine ...` in a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import TINY_DOCS

SEURAT = "Who painted A Sunday Afternoon on the Island of La Grande Jatte?"


def run(*args: str, env_dir, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True,
                          text=True, timeout=300,
                          env={**_env(), "FUNNEL_DATA_DIR": str(env_dir), **env})


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x}) for t, x in TINY_DOCS))
    return path


@pytest.mark.parametrize("granularity,expected", [("documents", "A Sunday Afternoon"),
                                                  ("passages", "A Sunday Afternoon"),
                                                  ("clusters", "more)")])
def test_search_prints_rank_score_title_snippet(corpus_file, data_dir, granularity, expected):
    result = run("search", SEURAT, "--granularity", granularity, "-k", "2", "--corpus",
                 str(corpus_file), "--S", "128", env_dir=data_dir)
    assert result.returncode == 0, result.stderr
    first, snippet = result.stdout.splitlines()[:2]
    rank, score, title = first.split(maxsplit=2)
    assert rank == "1" and float(score) > 0 and expected in title
    assert "Seurat" in snippet


def test_corpus_stats_json(corpus_file, data_dir):
    result = run("corpus-stats", "--corpus", str(corpus_file), "--S", "64", "128", "--json",
                 env_dir=data_dir)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout.splitlines()[-1])
    assert stats["documents"] == len(TINY_DOCS)
    assert stats["edges"]["title_mention"] > 0 and stats["edges"]["hyperlink"] == 0
    assert [(c["algorithm"], c["max_tokens"]) for c in stats["clusterings"]] == [
        ("funnelrag", 64), ("funnelrag", 128), ("longrag", 64), ("longrag", 128)]
    for c in stats["clusterings"]:
        assert sum(n for _, n in c["histogram"]) == c["clusters"]


def test_corpus_stats_table(corpus_file, data_dir):
    result = run("corpus-stats", "--corpus", str(corpus_file), env_dir=data_dir)
    assert result.returncode == 0, result.stderr
    assert "documents   8" in result.stdout and "title_mention" in result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith(("funnel", "longrag"))]
    assert len(rows) == 4


@pytest.mark.parametrize("args,message", [
    (("search", "   "), "The query is empty"),
    (("search", "x", "--corpus", "nowhere.jsonl"), "Unknown corpus 'nowhere.jsonl'"),
    (("search", "x", "-k", "0"), "k=0 is out of range"),
    (("search", "x", "--granularity", "clusters", "--S", "5"), "S (max cluster tokens)=5"),
])
def test_bad_input_exits_2_with_a_message(args, message, corpus_file, data_dir):
    if "--corpus" not in args:
        args = (*args, "--corpus", str(corpus_file))
    result = run(*args, env_dir=data_dir)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["eval", "import-traces"])
def test_an_unknown_dataset_names_the_listed_ones_the_missing_and_the_fetch(
        command, tmp_path, data_dir):
    """`--dataset hotpotqa` is neither a file nor a listed name: the error lists the
    datasets, which are missing from an empty data folder, and the command that gets them."""
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    args = ("eval", "--paradigm", "flat") if command == "eval" else ("import-traces", str(trace))
    result = run(*args, "--dataset", "hotpotqa", env_dir=data_dir,
                 FUNNEL_SHARED_DATA=str(tmp_path / "empty"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Did you mean 'HotpotQA dev500' or 'HotpotQA train100'?" in result.stderr
    assert "HotpotQA dev500 (missing)" in result.stderr
    assert "funnel-engine data fetch" in result.stderr


def test_malformed_corpus_names_file_and_line(tmp_path, data_dir):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "title": "A", "text": "fine"}\n{"id": "b", "title": "B"}\n')
    result = run("search", "x", "--corpus", str(bad), env_dir=data_dir)
    assert result.returncode == 2
    assert "bad.jsonl, line 2: field 'text': missing" in result.stderr


@pytest.mark.slow
def test_seurat_question_on_the_default_corpus(data_dir):
    result = run("search", SEURAT, "--granularity", "documents", env_dir=data_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].endswith(
        "A Sunday Afternoon on the Island of La Grande Jatte")


@pytest.mark.slow
def test_build_makes_the_dense_index_and_says_what_it_built(corpus_file, data_dir):
    # progress lines every 0 s instead of every 30 s: the tiny corpus encodes in one slice
    result = run("build", "--corpus", str(corpus_file), "--index", "hnsw", env_dir=data_dir,
                 FUNNEL_PROGRESS_SECONDS="0")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "approximate (HNSW, recall@100 1.000 vs exact at efSearch" in result.stdout
    assert re.search(r"INFO engine\.index\.dense: Dense: encoding: (\d+) of \1 passages "
                     r"\(100%\), [\d.]+/s, done in (?:\d+ s|a second)\n",
                     result.stderr), result.stderr
    entries = list((data_dir / "cache" / "dense").glob("*/manifest.json"))
    assert len(entries) == 1 and (entries[0].parent / "vectors.npy").is_file()


def test_build_refuses_a_bad_ray_address_and_worker_count(corpus_file, data_dir):
    pytest.importorskip("ray")
    result = run("build", "--corpus", str(corpus_file), "--ray", "local", "--workers", "0",
                 env_dir=data_dir)
    assert result.returncode == 2 and "workers=0 is out of range" in result.stderr
    for address, message in (("nohost", "is not host:port"),
                             ("127.0.0.1:9", "No Ray cluster answers at '127.0.0.1:9'")):
        result = run("build", "--corpus", str(corpus_file), "--ray", address,
                     env_dir=data_dir)
        assert result.returncode == 2 and message in result.stderr, result.stderr[-500:]


@pytest.mark.slow
def test_build_serves_the_index_from_a_qdrant_collection(corpus_file, data_dir, tmp_path,
                                                         monkeypatch, capsys, caplog):
    """`build`'s `main` in this process (the command as a process of its own: the tests
    above), so MiniLM is loaded once for the process, not for each command."""
    import logging

    from engine.cli.main import main

    pytest.importorskip("qdrant_client")
    where = tmp_path / "qdrant"
    monkeypatch.setenv("FUNNEL_PROGRESS_SECONDS", "0")
    with caplog.at_level(logging.INFO, logger="engine"):
        assert main(["build", "--corpus", str(corpus_file), "--qdrant", str(where)]) == 0
    said = capsys.readouterr()
    assert re.search(rf"served from Qdrant collection '[\w-]+' at {where} \(\d+ points",
                     said.out), said.out
    assert "Qdrant: writing" in caplog.text
    for settings, named in ((["--qdrant", str(where), "--collection", "bad name"],
                             "'bad name' is not 1-200 letters"),
                            (["--collection", "mine"], "Qdrant location '' is neither")):
        assert main(["build", "--corpus", str(corpus_file), *settings]) == 2
        said = capsys.readouterr()
        assert named in said.err, said.err[-500:]
        assert "passages," not in said.out  # refused before building


def test_data_dir_is_an_option_of_both_entry_points_and_says_its_variable(
        tmp_path, data_dir, monkeypatch, capsys):
    """Seen: --help named no data directory (FUNNEL_DATA_DIR was only in the README)."""
    import os

    from engine.cli.main import build_parser, main

    assert "--data-dir DIR" in build_parser().format_help()
    assert "FUNNEL_DATA_DIR" in build_parser().format_help()
    other = tmp_path / "other data"
    assert main(["--data-dir", str(other), "sessions", "export", "csv",
                 str(tmp_path / "out")]) == 0
    assert os.environ["FUNNEL_DATA_DIR"] == str(other.resolve())
    assert (other / "sessions.duckdb").is_file()  # the sessions database is the option's
    a_file = tmp_path / "a file"
    a_file.write_text("x")
    assert main(["--data-dir", str(a_file), "formats"]) == 2
    assert "--data-dir" in capsys.readouterr().err
    from app import main as app_main

    monkeypatch.setattr(sys, "argv", ["app.py", "--help"])
    with pytest.raises(SystemExit):
        app_main.main()
    said = capsys.readouterr().out
    assert "--data-dir DIR" in said and "FUNNEL_DATA_DIR" in said
    monkeypatch.setattr(sys, "argv", ["app.py", "--data-dir", str(a_file)])
    with pytest.raises(SystemExit):  # refused before anything starts
        app_main.main()
    assert "is a file; give a folder" in capsys.readouterr().err


def test_eval_progress_in_a_pipe_is_a_line_at_every_tenth_and_library_chatter_is_quiet(capsys):
    """Redrawn with \\r, the counts ran into one line in a file or a pipe; and the command
    line's log keeps faiss's loader lines out, as the app's does."""
    import logging

    from engine.cli import main as cli_main
    from engine.cli.run import _progress, _progress_done

    for done in range(1, 21):
        _progress(done, 20)
    _progress_done()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"{n}/20 questions" for n in range(2, 21, 2)]
    assert cli_main.main(["formats"]) == 0
    assert logging.getLogger("faiss.loader").getEffectiveLevel() == logging.WARNING
