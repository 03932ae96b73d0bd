"""Named presets (issue 55): stored, checked as a run checks its options, exported and
imported whole, owned, and run by name through the Explorer and the command line, the run's
trace naming its preset."""

from __future__ import annotations

import json

import pytest

from engine.errors import ConfigError, DataFormatError
from engine.service.presets import Presets
from engine.store.presets import Preset, PresetStore, read_presets
from engine.store.sessions import SessionStore


def test_presets_are_stored_checked_exported_and_imported_whole(tmp_path, echo):
    presets = Presets(SessionStore(tmp_path / "a.duckdb"))
    saved = presets.save_preset("loud-one", "echo", '{"k": 1, "voice": "loud"}',
                                notes="the toy, loud")
    assert (saved.paradigm, saved.config, saved.source) == ("echo", {"k": 1, "voice": "loud"},
                                                           "typed")
    for name, paradigm, config, says in [
            ("x", "nope", "{}", "Unknown paradigm 'nope'"),
            ("x", "echo", '{"k": 99}', "preset 'x': k=99 is out of range"),
            ("x", "echo", '{"colour": 1}', "colour"),
            ("bad name!", "echo", "{}", "Preset name 'bad name!' is not usable"),
            ("loud-one", "echo", "{}", "A preset named 'loud-one' exists already")]:
        with pytest.raises(ConfigError, match=says):
            presets.save_preset(name, paradigm, config)
    assert presets.save_preset("loud-one", "echo", '{"k": 3}', replace=True).config == {
        "k": 3}
    text = presets.export_presets()
    other = Presets(SessionStore(tmp_path / "b.duckdb"))
    other.save_preset("kept", "echo", "{}")
    assert other.import_presets(text, "mine.json") == (1, 0)
    assert other.import_presets(text, "mine.json") == (0, 1)  # stored ones left alone
    assert [p.name for p in other.list_presets()] == ["kept", "loud-one"]
    bad = json.loads(text) + [{"name": "two", "paradigm": "echo", "config": {"k": 0}}]
    with pytest.raises(ConfigError, match="mine.json: preset 'two': k=0 is out of range"):
        other.import_presets(json.dumps(bad), "mine.json")
    assert [p.name for p in other.list_presets()] == ["kept", "loud-one"]  # nothing stored
    with pytest.raises(DataFormatError, match="field 'config': entry 1: missing"):
        read_presets('[{"name": "x", "paradigm": "echo"}]', "p.json")
    with pytest.raises(DataFormatError, match="p.json, line 1: not JSON"):
        read_presets("{nope", "p.json")
    with pytest.raises(ConfigError, match="No preset named 'gone'; saved presets: kept, "
                                          "loud-one"):
        PresetStore(other.store.store).get("gone")


def test_a_preset_is_its_owners_to_replace_or_remove(tmp_path, users_file, echo):
    from engine.service.door import Door, NotAllowed
    from engine.store.users import Users

    acting = ["annotator"]
    presets = Presets(SessionStore(tmp_path / "s.duckdb"),
                      Door(Users(users_file), who=lambda: acting[0]))
    assert presets.save_preset("mine", "echo", "{}").owner == "annotator"
    acting[0] = "annotator2"
    with pytest.raises(NotAllowed, match="remove_preset of preset 'mine' needs the admin "
                                         r"role or its owner \(annotator\)"):
        presets.remove_preset("mine")
    with pytest.raises(NotAllowed, match="save_preset of preset 'mine'"):
        presets.save_preset("mine", "echo", '{"k": 1}', replace=True)
    acting[0] = "viewer"
    with pytest.raises(NotAllowed, match="save_preset needs the annotator role"):
        presets.save_preset("theirs", "echo", "{}")
    acting[0] = "admin"
    presets.remove_preset("mine")
    assert presets.list_presets() == []


def test_a_run_by_preset_runs_its_paradigm_and_options_and_its_trace_names_it(explorer):
    explorer.presets.save_preset("loud", "echo", '{"voice": "loud", "k": 1}')
    trace = explorer.runs.run("Who painted A Sunday Afternoon?", "flat", preset="loud")
    assert (trace.paradigm, trace.preset) == ("echo", "loud")
    assert trace.answer == trace.answer.upper() and len(trace.stages[0].candidates) == 1
    over = explorer.runs.run("Who painted A Sunday Afternoon?", "", '{"k": 2}', preset="loud")
    assert len(over.stages[0].candidates) == 2  # the run's own options over the preset's
    run_id = explorer.runs.save_run(trace, "by preset")
    assert explorer.runs.load_run(run_id).preset == "loud"  # a saved run says which made it
    with pytest.raises(ConfigError, match="No preset named 'quiet'"):
        explorer.runs.run("Who painted A Sunday Afternoon?", "echo", preset="quiet")
    assert Preset("ok", "echo", {}).record()["name"] == "ok"


def test_a_preset_carries_the_corpus_it_was_made_over(explorer):
    """Issue 67: picking a preset left the corpus on wiki. A preset keeps its corpus, a
    run by it searches that corpus unless the run names another, and an export keeps it."""
    from engine.store.presets import read_presets

    saved = explorer.presets.save_preset("over-tiny", "echo", "{}", corpus="tiny")
    assert saved.corpus == "tiny"
    trace = explorer.runs.run("Who painted A Sunday Afternoon?", "", preset="over-tiny")
    assert trace.corpus.get("name") == "tiny"
    explorer.presets.save_preset("over-gone", "echo", "{}", corpus="no-such-corpus")
    with pytest.raises(ConfigError, match="no-such-corpus"):
        explorer.runs.run("Who painted A Sunday Afternoon?", "", preset="over-gone")
    (back,) = read_presets(explorer.presets.export_presets(["over-tiny"]))
    assert back.corpus == "tiny"


def test_presets_from_the_command_line_and_ask_by_preset(tmp_path, echo, capsys,
                                                         tiny_corpus):
    from engine.cli.main import main

    db = str(tmp_path / "s.duckdb")
    corpus = tmp_path / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": d.id, "title": d.title, "text": d.text})
                                for d in tiny_corpus.documents))
    assert main(["presets", "--db", db, "save", "loud", "--paradigm", "echo", "--config",
                 '{"voice": "loud"}']) == 0
    assert main(["presets", "--db", db, "save", "bad", "--paradigm", "echo", "--config",
                 '{"k": 0}']) == 2
    assert "preset 'bad': k=0 is out of range" in capsys.readouterr().err
    assert main(["presets", "--db", db, "list"]) == 0
    assert capsys.readouterr().out.startswith('loud\techo\t{"voice": "loud"}')
    assert main(["ask", "Who painted A Sunday Afternoon?", "--corpus", str(corpus),
                 "--preset", "loud", "--db", db]) == 0
    said = capsys.readouterr().out
    assert said.startswith("echo (preset loud): Who painted")
    exported = tmp_path / "p.json"
    assert main(["presets", "--db", db, "export"]) == 0
    exported.write_text(capsys.readouterr().out)
    assert main(["presets", "--db", str(tmp_path / "t.duckdb"), "import",
                 str(exported)]) == 0
    assert "imported 1 presets" in capsys.readouterr().out


def test_eval_runs_presets_beside_paradigms_each_listed_by_its_name(tmp_path, echo, capsys,
                                                                   tiny_corpus):
    """`eval --preset`: each preset runs as its paradigm with its options and is listed
    under its own name beside the plain paradigm (two presets of one paradigm too); its
    rows and traces carry the name."""
    from engine.cli.main import main
    from tests.fakes import qa_file

    db = str(tmp_path / "s.duckdb")
    corpus = tmp_path / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": d.id, "title": d.title, "text": d.text})
                                for d in tiny_corpus.documents))
    presets = Presets(SessionStore(db))
    presets.save_preset("loud", "echo", '{"voice": "loud"}')
    presets.save_preset("one", "echo", '{"k": 1}')
    presets.store.store.close()
    rows = tmp_path / "rows.jsonl"
    assert main(["eval", "--dataset", qa_file(tmp_path / "qa.jsonl"), "--corpus", str(corpus),
                 "--paradigm", "echo", "--preset", "loud,one", "--db", db, "--out",
                 str(rows), "--json"]) == 0
    found = [json.loads(line) for line in rows.read_text().splitlines()]
    by = {}
    for row in found:
        by.setdefault(row["paradigm"], []).append(row)
    assert set(by) == {"echo", "loud", "one"} and all(len(r) == 3 for r in by.values())
    assert all(r["answer"] == r["answer"].upper() for r in by["loud"])
    assert all(r["docs_to_reader"] <= 1 for r in by["one"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"echo", "loud", "one"} <= set(summary)
    assert main(["eval", "--dataset", str(tmp_path / "qa.jsonl"), "--corpus", str(corpus),
                 "--preset", "quiet", "--db", db]) == 2
    assert "No preset named 'quiet'" in capsys.readouterr().err
