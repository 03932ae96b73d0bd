"""Plugins by entry point: the example package installed with pip adds paradigms,
re-rankers (one fusing BM25's and the dense index's ranks, which it declares and is handed),
a retriever, a reader backend and an encoder that answer through the API like the built-ins,
importing nothing of the engine but engine.api; a broken plugin is named with its error and
left out, and everything else still loads."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from engine import plugins
from engine.models import encoders
from engine.paradigms import registry
from engine.paradigms.base import RerankerSpec
from engine.readers import backends
from tests.fakes import ECHO, qa_file, served

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "funnel-explorer-example"
# what the example adds
ADDED = ("overlap", "fusion", "word-overlap", "rrf", "title-match", "best-sentence",
         "hashed-words")
QUESTION = "Which river flows through Budapest?"
PLUGIN_READER = '"reader": {"backend": "best-sentence"}'  # the example's: no model to run


def _pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q",
                           *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example plugin package installed into a folder of its own, on this process's
    path and its subprocesses' (PYTHONPATH): no other test, nor another pytest-xdist
    worker's processes, sees it (a user who installed it keeps theirs, used as it is)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        had_it = bool(distribution("funnel-explorer-example"))
    except PackageNotFoundError:
        had_it = False
    for name in ADDED:  # loaded at start if it was installed then
        registry.unload_plugin(name)
    target = tmp_path_factory.mktemp("example-plugin")
    if not had_it:
        _pip("install", "--no-deps", "--no-build-isolation", "--target", str(target),
             str(EXAMPLE))
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(target))  # and import caches invalidated
        patch.setenv("PYTHONPATH", str(target), prepend=os.pathsep)
        try:
            new = registry.load_plugins()
            yield {p.name: p for p in new}
        finally:
            for name in ADDED:
                registry.unload_plugin(name)
            for module in [m for m in sys.modules if m.split(".")[0] == "funnel_example"]:
                del sys.modules[module]


@pytest.fixture
def live(example, tiny_corpus, tmp_path):
    """(an Explorer over the tiny corpus, its app served here, a gradio_client)."""
    from engine.service.preparation import Preparation

    prep = Preparation("tiny", dense=False, load=lambda progress: tiny_corpus).run()
    with served(prep, tmp_path / "runs.duckdb") as (explorer, _, client):
        yield explorer, client


def test_the_example_plugin_adds_a_paradigm_and_a_reranker_from_its_package(example):
    assert {n: (p.kind, p.package, p.error) for n, p in example.items()} == {
        "overlap": ("paradigm", "funnel-explorer-example", ""),
        "fusion": ("paradigm", "funnel-explorer-example", ""),
        "word-overlap": ("reranker", "funnel-explorer-example", ""),
        "rrf": ("reranker", "funnel-explorer-example", ""),
        "title-match": ("retriever", "funnel-explorer-example", ""),
        "best-sentence": ("generator", "funnel-explorer-example", ""),
        "hashed-words": ("encoder", "funnel-explorer-example", "")}
    assert "overlap" in registry.names() and "word-overlap" in registry.RERANKERS
    assert "best-sentence" in backends.BACKENDS and "hashed-words" in encoders.ENCODERS
    assert "title-match" in registry.RETRIEVERS
    assert [o.choices for o in registry.spec("flat").options() if o.name == "retriever"] == [
        ("dense", "bm25", "title-match")]  # flat's form offers it
    assert [o.name for o in registry.spec("overlap").options()][:3] == ["M", "k", "reader.model"]
    # the built-ins come through the same loader, from no package
    built_in = [p.name for p in registry.PLUGINS if p.package == plugins.BUILT_IN]
    assert {"funnel", "flat", "longrag", "drrag", "best", "transformers", "onnx", "openai"} <= set(
        built_in) and built_in == [ep.name for ep in plugins._BUILTINS]


@pytest.mark.parametrize("first", ["engine.readers.reader", "engine.paradigms.registry"])
def test_a_process_started_with_the_plugin_installed_loads_it(example, first):
    """A fresh start (the app's, the CLI's) imports the plugin while the backends' table
    loads; the plugin's own ReaderConfig asks for that table (it once deadlocked there)."""
    done = subprocess.run([sys.executable, "-c", f"import {first}\n"
                           "from engine.paradigms import registry\n"
                           "from engine.readers import backends\n"
                           "print(sorted(registry.PARADIGMS), sorted(backends.BACKENDS))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'overlap'" in done.stdout and "'best-sentence'" in done.stdout


@pytest.mark.live
def test_a_plugin_paradigm_reranker_and_backend_answer_over_the_api_and_in_an_evaluation(
        live, tmp_path):
    explorer, client = live
    trace = json.loads(client.predict(QUESTION, "overlap", '{"M": 6, "k": 2}', build=True,
                                      api_name="/run"))  # read by the packaged reader
    assert [s["name"] for s in trace["stages"]] == ["bm25", "word-overlap"]
    assert len(trace["stages"][-1]["candidates"]) == 2 and trace["llm_calls"] == 1
    assert trace["llm_steps"][0]["model"] == "smollm2" and trace["answer"]
    assert "Danube" in trace["stages"][-1]["candidates"][0]["unit"]["text"]
    # the plugin's re-ranker by name in a built-in paradigm's option (the runs after this
    # read with the plugin's backend: what they test is before the reader)
    flat = json.loads(client.predict(QUESTION, "flat", '{"M": 6, "k": 2, "reranker": '
                                     f'"word-overlap", {PLUGIN_READER}}}', build=True,
                                     api_name="/run"))
    assert [s["name"] for s in flat["stages"]] == ["dense", "reranker"]
    reader = {"reader": {"backend": "best-sentence"}}
    evaluation = explorer.evaluations.evaluate(qa_file(tmp_path / "qa.jsonl", n=2),
                                               ["overlap", "flat"],
                                               {"overlap": reader, "flat": reader})
    deadline = time.monotonic() + 300
    while explorer.evaluations.evaluation_status(evaluation).state == "running":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    status = explorer.evaluations.evaluation_status(evaluation)
    assert (status.state, status.done) == ("done", 2) and set(status.means) == {
        "overlap", "flat"}
    # the plugin's backend reads for a built-in paradigm: its sentence, no model loaded
    read = json.loads(client.predict(QUESTION, "flat", '{"M": 6, "k": 2, "reader": '
                                     '{"backend": "best-sentence"}}', build=True, api_name="/run"))
    (step,) = read["llm_steps"]
    read_words = set(re.findall(r"\w+", " ".join(
        f"{c['unit']['title']} {c['unit']['text']}" for c in read["stages"][-1]["candidates"])))
    assert "Danube" in step["output"] and set(re.findall(r"\w+", step["output"])) <= read_words
    # the funnel's post-ranker reads attention, which that backend declares it cannot give
    with pytest.raises(Exception, match="'best-sentence' backend cannot give"):
        client.predict(QUESTION, "funnel", '{"attention_weight": 0.5, "reader": '
                       '{"backend": "best-sentence"}}', build=True, api_name="/run")
    # the plugin's first stage in a built-in paradigm: the documents the question names
    titled = json.loads(client.predict(QUESTION, "flat", '{"M": 6, "k": 2, "retriever": '
                                       f'"title-match", {PLUGIN_READER}}}', build=True,
                                       api_name="/run"))
    assert [s["name"] for s in titled["stages"]] == ["title-match", "reranker"]
    assert {c["unit"]["title"] for c in titled["stages"][0]["candidates"]} == {"Budapest"}
    # the plugin's encoder builds a dense index that flat searches (its words, hashed)
    hashed = json.loads(client.predict(QUESTION, "flat", '{"M": 6, "k": 2, "bi_encoder": '
                                       f'"hashed-words", {PLUGIN_READER}}}', build=True,
                                       api_name="/run"))
    assert "Danube" in hashed["stages"][0]["candidates"][0]["unit"]["text"]
    scores = [[c["score"] for c in t["stages"][0]["candidates"]] for t in (hashed, flat)]
    assert scores[0] != scores[1]  # another encoder's cosines
    rows = [row for row in explorer.catalog.models() if row.role.endswith("(plugin)")]
    assert {(r.name, r.status) for r in rows} == {
        ("overlap", "ready"), ("fusion", "ready"), ("word-overlap", "ready"),
        ("rrf", "ready"), ("title-match", "ready"), ("best-sentence", "ready")}
    # the encoder's row is with the encoders, once:
    (built,) = [r for r in explorer.catalog.models() if r.name == "hashed-words"]
    assert built.source == "plugin" and any("dense index" in t for t in built.built)


def test_the_example_imports_nothing_of_the_engine_but_its_plugin_api():
    imported = {node.module if isinstance(node, ast.ImportFrom) else alias.name
                for path in sorted((EXAMPLE / "funnel_example").glob("*.py"))
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names}
    assert {m for m in imported if m.split(".")[0] == "engine"} == {"engine.api"}
    assert imported - {"engine.api"} <= {"collections", "dataclasses", "numpy", "time", "zlib",
                                         "funnel_example.rrf"}


def _rrf(candidates, *rankings):
    """Reciprocal rank fusion by hand: each candidate's sum of 1 / (60 + its rank) over
    `rankings` (lists of unit ids, best first)."""
    return {c: sum(1 / (60 + ranking.index(c) + 1) for ranking in rankings)
            for c in candidates}


@pytest.mark.live  # the served app, a dense build and the packaged reader
def test_the_rrf_reranker_fuses_bm25_and_dense_ranks_through_the_engine(live, tiny_corpus):
    """In flat (its dense top 6 re-ranked by "rrf") and in the example's own paradigm, the
    re-ranker's scores are RRF computed by hand from BM25's ranking (its own search) and the
    dense one (the first stage's) of the candidates; what it declared is what the app
    prepares for the paradigm using it."""
    from engine.index.bm25 import bm25_index
    from engine.service.preparation import Preparation
    from engine.units.build import UnitConfig

    explorer, client = live
    bm25 = {c.unit.id: c.score for c in bm25_index(tiny_corpus, UnitConfig("passages"))
            .search(QUESTION, 100)}
    runs = (("flat", f'{{"M": 6, "k": 6, "reranker": "rrf", {PLUGIN_READER}}}', 6),
            ("fusion", f'{{"M": 6, "k": 3, {PLUGIN_READER}}}', 3))
    for paradigm, config, k in runs:
        trace = json.loads(client.predict(QUESTION, paradigm, config, build=True, api_name="/run"))
        first, fused = trace["stages"]
        assert (first["name"], fused["name"]) == ("dense", "reranker" if paradigm == "flat"
                                                  else "rrf")
        dense = [c["unit"]["id"] for c in first["candidates"]]
        lexical = sorted(dense, key=lambda i: -bm25.get(i, 0.0))  # ties: the dense order
        assert lexical != dense  # two rankings to fuse
        expected = _rrf(dense, lexical, dense)
        best = sorted(dense, key=lambda i: -expected[i])[:k]
        assert [c["unit"]["id"] for c in fused["candidates"]] == best
        assert [c["score"] for c in fused["candidates"]] == pytest.approx(
            [expected[i] for i in best], abs=1e-12)
        assert "stand_in" not in fused["settings"]
    assert trace["paradigm"] == "fusion" and trace["llm_calls"] == 1  # then the reader
    # the paradigm using it waits for BM25 over its passages; the dense index and the
    # stage are made last, BM25 standing in meanwhile
    prep = Preparation("tiny", load=lambda progress: tiny_corpus)
    waits = prep.needs["fusion"]
    assert any(key.startswith("bm25") and '"passages"' in key for key in waits)
    assert not any(key.startswith("dense") for key in waits)
    assert [t.stand_in for t in prep.tasks.values() if t.name.startswith("dense minilm")] == [
        "BM25 over the same passages"]


BAD_CONFIG = ECHO.__class__(name="bad", label="Bad", description="k above its range",
                            config=type("BadConfig", (), {}), paradigm=ECHO.paradigm)


@pytest.mark.parametrize(("value", "error"), [
    ("no_such_plugin_module:SPEC", "ModuleNotFoundError: No module named 'no_such_plugin"),
    ("tests.fakes:qa_file", "names a function, not a ParadigmSpec"),
    ("tests.test_plugins:BAD_CONFIG", "its config is not a dataclass"),
    ("engine.paradigms.flat:SPEC", "its paradigm name 'flat' is taken already")])
def test_a_broken_plugin_is_named_with_its_error_and_left_out(value, error):
    before = dict(registry.PARADIGMS)
    (loaded,) = plugins.load(plugins.PARADIGM_GROUP, registry._add_paradigm, [
        (EntryPoint("broken", value, plugins.PARADIGM_GROUP), "broken-package")])
    assert error in loaded.error and loaded.package == "broken-package"
    assert registry.PARADIGMS == before  # nothing half-registered; the others unchanged


CLASH = RerankerSpec("bm25", "a plugin re-ranker named like a built-in", lambda *a, **k: None)


def test_a_plugin_reranker_cannot_take_a_built_in_name():
    """(LoadedResources.ranker looks plugins up first: a plugin "bm25" would replace the stored
    scores the preparation builds for the built-in one.)"""
    (loaded,) = plugins.load(plugins.RERANKER_GROUP, registry._add_reranker, [
        (EntryPoint("bm25", "tests.test_plugins:CLASH", plugins.RERANKER_GROUP), "pkg")])
    assert "'bm25' is taken already" in loaded.error and "bm25" not in registry.RERANKERS


def test_the_status_line_and_the_models_table_name_a_plugin_left_out(explorer, monkeypatch):
    broken = plugins.Plugin("broken", plugins.PARADIGM_GROUP, "broken-package",
                            "no_such_plugin_module:SPEC",
                            "ModuleNotFoundError: No module named 'no_such_plugin_module'")
    monkeypatch.setattr(registry, "PLUGINS", [*registry.PLUGINS, broken])
    assert explorer.catalog.status()[0] == (
        "plugin 'broken' (no_such_plugin_module:SPEC, from broken-package): left out, "
        "ModuleNotFoundError: No module named 'no_such_plugin_module'")
    assert any("plugin 'broken'" in line for line in explorer.catalog.failures())
    (row,) = [r for r in explorer.catalog.models() if r.name == "broken"]
    assert row.role == "paradigm (plugin)" and row.status.startswith("left out: Module")


@pytest.mark.parametrize("configured", [False, True], ids=["at start", "logging set up"])
def test_a_plugin_left_out_at_start_is_a_warning_of_a_named_logger(tmp_path, configured):
    """At start, plugins load while the app's modules are imported, before it sets up its
    log: the line still has its level and logger (not Python's last resort, which writes
    the message alone), and once logging is set up it is written once, by its handler."""
    dist = tmp_path / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{plugins.PARADIGM_GROUP}]\n"
                                           "broken = no_such_plugin_module:SPEC\n")
    setup = ("import logging; logging.basicConfig(format='%(levelname)s|%(name)s|%(message)s')\n"
             if configured else "")
    done = subprocess.run([sys.executable, "-c", setup + "import engine.paradigms.registry"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              filter(None, (str(tmp_path), os.environ.get("PYTHONPATH"))))})
    assert done.returncode == 0, done.stderr[-2000:]
    message = ("plugin 'broken' (no_such_plugin_module:SPEC, from broken-plugin) left out: "
               "ModuleNotFoundError: No module named 'no_such_plugin_module'")
    lines = [line for line in done.stderr.splitlines() if "'broken'" in line]
    assert lines == [f"WARNING|engine.plugins|{message}" if configured
                     else f"WARNING engine.plugins: {message}"]
