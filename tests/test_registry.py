"""A paradigm is declared once: the toy 'echo' paradigm, registered the way a real one is,
shows up in the CLI, the API (a live in-process Gradio server and the real gradio_client)
and the UI's choices and generated parameter panels."""

from __future__ import annotations

import json

import pytest

from engine.config import describe
from engine.errors import ConfigError
from engine.paradigms.registry import PARADIGMS, make_config, spec
from engine.service.store import make_paradigm
from tests.conftest import TINY_DOCS
from tests.fakes import served

QUESTION = "Who painted A Sunday Afternoon?"


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x}) for t, x in TINY_DOCS))
    return path


def test_registered_paradigm_runs_and_leaves_again(echo, tiny_corpus):
    assert spec("echo") is echo and "echo" in PARADIGMS
    trace = make_paradigm("echo", tiny_corpus, {"k": 1, "voice": "loud"}).run(QUESTION)
    assert trace.paradigm == "echo" and trace.answer == "GEORGES SEURAT"
    assert len(trace.stages[0].candidates) == 1 and trace.llm_calls == 1
    assert trace.corpus["fingerprint"] == tiny_corpus.fingerprint


def test_unregistered_after_the_test():
    assert "echo" not in PARADIGMS
    with pytest.raises(ConfigError, match="Unknown paradigm 'echo'"):
        spec("echo")


def test_the_cli_runs_it_and_lists_it_in_errors(echo, corpus_file, capsys):
    from engine.cli.main import main

    assert main(["ask", QUESTION, "--paradigm", "echo", "--corpus", str(corpus_file),
                 "--config", '{"k": 3}']) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"echo: {QUESTION}") and "answer: Georges Seurat" in out
    assert "LLM call (answer, echo)" in out and "3 of 5" in out
    assert main(["ask", QUESTION, "--paradigm", "nope", "--corpus", str(corpus_file)]) == 2
    assert "Choose from: best, drrag, echo, flat, funnel, longrag." in capsys.readouterr().err
    assert main(["ask", QUESTION, "--paradigm", "echo", "--corpus", str(corpus_file),
                 "--config", '{"k": "three"}']) == 2
    assert "Option 'k' must be an integer, got 'three' (str)" in capsys.readouterr().err


@pytest.fixture
def live_echo(echo, tiny_corpus, tmp_path):
    """The app with 'echo' registered, served in this process, and a gradio_client."""
    from engine.service.preparation import Preparation
    from engine.service.tasks import Task

    prep = Preparation("tiny", dense=False)
    prep.tasks = {"corpus": Task("corpus", "corpus 'tiny'", lambda progress: tiny_corpus)}
    prep.run()
    with served(prep, tmp_path / "runs.duckdb") as (_, demo, client):
        yield demo, client


@pytest.mark.live
def test_the_api_runs_it_validates_its_options_and_logs_refusals_in_one_line(live_echo,
                                                                            caplog, capfd):
    from gradio_client.exceptions import AppError

    _, client = live_echo
    trace = json.loads(client.predict(QUESTION, "echo", '{"k": 1}', api_name="/run"))
    assert trace["paradigm"] == "echo" and trace["config"] == {"k": 1, "voice": "plain"}
    assert trace["llm_calls"] == 1 and trace["answer"] == "Georges Seurat"
    assert client.predict(api_name="/status")["ready"]["echo"] is True
    caplog.set_level("INFO", logger="app")
    capfd.readouterr()
    for config, message in [('{"k": "ten"}', "Option 'k' must be an integer, got 'ten' (str)"),
                            ('{"k": 9}', "k=9 is out of range; allowed: 1 to 8"),
                            ('{"voice": "whisper"}', "Unknown voice 'whisper'. Choose from: "
                                                     "plain, loud.")]:
        with pytest.raises(AppError, match=message.replace("(", r"\(").replace(")", r"\)")):
            client.predict(QUESTION, "echo", config, api_name="/run")
    refusals = [r.getMessage() for r in caplog.records if r.name == "app"]
    assert len(refusals) == 3 and all(r.startswith("refused: ") for r in refusals)
    assert "Traceback" not in capfd.readouterr().err  # refused input: no traceback


def test_the_ui_offers_it_with_panels_generated_from_its_config(echo):
    from unittest.mock import MagicMock

    from app.ui import build_app
    from engine.service.door import Door

    explorer = MagicMock()
    explorer.door = Door()  # no logins
    explorer.catalog.datasets.return_value = {}
    explorer.catalog.status.return_value = []
    explorer.catalog.ready.return_value = True
    demo = build_app(explorer)
    components = {c["id"]: c for c in demo.config["components"]}
    radios = [c for c in components.values() if c.get("props", {}).get("elem_id") == "fe-paradigm"]
    (radio,) = radios
    assert ["Echo (a toy)", "echo"] in [list(choice) for choice in radio["props"]["choices"]]
    by_elem = {c["props"].get("elem_id"): c for c in components.values()
               if c.get("props", {}).get("elem_id")}
    k, voice = by_elem["fe-echo-k"], by_elem["fe-echo-voice"]
    # a number box that does not clamp: an out-of-range value reaches the engine's check
    assert k["type"] == "number" and k["props"].get("minimum") is None
    assert k["props"].get("maximum") is None
    assert k["props"]["info"] == "k: documents kept by the overlap ranker (1 to 8)"
    assert voice["type"] == "dropdown"
    assert [c[1] for c in voice["props"]["choices"]] == ["plain", "loud"]
    assert "fe-compare-echo-k" in by_elem  # the Compare tab gets a panel too
    assert by_elem["fe-params-echo"]["props"]["visible"] is False  # funnel is chosen first


def test_every_builtin_option_is_declared_with_help_and_limits():
    for name, found in PARADIGMS.items():
        options = describe(found.config)
        assert options, name
        for option in options:
            assert option.help, f"{name}.{option.name} has no help text"
            if option.type in (int, float) and not option.choices:
                assert option.low is not None and option.high is not None, option.name
        assert make_config(name) == found.config()  # defaults pass their own checks
