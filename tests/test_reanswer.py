"""Re-answering a run with other evidence (engine.paradigms.reanswer) through the
Explorer: the toy paradigm's reader says Seurat's name only when what it reads mentions him,
so what it is given to read shows in the answer."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from engine.documents import Question
from engine.errors import ConfigError
from engine.paradigms.reanswer import REANSWER, reanswer
from tests.fakes import EchoConfig, EchoParadigm, gold_run, ranked_stage

GOLD = Question("q7", "Which river flows through Budapest and Vienna?",
                answers=("Georges Seurat",), supporting_titles=("Georges Seurat",))


@pytest.fixture
def run(explorer):
    trace = explorer.runs.run(GOLD, "echo", '{"k": 3}')
    assert [c.unit.id for c in trace.read] == ["Danube", "Budapest", "Vienna"]
    assert trace.answer == "unknown" and trace.metrics["EM"] == 0.0
    return trace


def test_only_the_units_chosen_are_read_and_the_change_is_recorded(tiny_corpus):
    first = ranked_stage("first", ("Danube", "The Danube flows."), ("Budapest", "A capital."),
                         ("Georges Seurat", "Georges Seurat was a painter."))
    kept = ranked_stage("rerank", ("Danube", "The Danube flows."), ("Budapest", "A capital."))
    run = gold_run(GOLD, first, kept, said="unknown", paradigm="echo")
    paradigm = EchoParadigm(tiny_corpus, EchoConfig())
    earlier = "Georges Seurat#2"  # a candidate the first stage had and the second dropped
    again = reanswer(paradigm, run, ["Budapest#1", earlier])
    assert [s.name for s in again.stages] == ["first", "rerank", REANSWER]
    assert [c.unit.id for c in again.read] == ["Budapest#1", earlier]
    assert again.answer == "Georges Seurat" and again.metrics["EM"] == 1.0
    assert run.metrics["EM"] == 0.0 and again.metrics["gold_doc_recall@reanswer"] == 1.0
    changed = again.stage(REANSWER).settings
    assert changed["removed"] == ["Danube#0"] and changed["added"] == [earlier]
    assert changed["answer_before"] == "unknown" and changed["oracle"] == []
    assert [s.purpose for s in again.llm_steps] == ["answer"]  # the old answer is replaced


def test_a_re_answered_run_saves_and_reloads_exactly(explorer, run):
    again = explorer.runs.reanswer(run, ["Vienna"])
    assert again.answer == "unknown" and [c.unit.id for c in again.read] == ["Vienna"]
    assert explorer.runs.load_run(explorer.runs.save_run(again, "what if")) == again


def test_the_oracle_adds_the_gold_supporting_paragraphs(explorer, run):
    again = explorer.runs.reanswer(run, ["Danube"], oracle=True)
    assert [c.unit.id for c in again.read] == ["oracle:Georges Seurat", "Danube"]  # gold first
    assert again.answer == "Georges Seurat"
    assert again.stage(REANSWER).settings["oracle"] == ["Georges Seurat"]


@pytest.mark.parametrize(("ids", "oracle", "message"), [
    (["Danube", "Atlantis"], False, "'Atlantis' is not a candidate of this run"),
    ([], False, "Nothing to read"),
    ([f"x{i}" for i in range(7)], False, "and 2 more"),
])
def test_bad_choices_are_refused_by_name(explorer, run, ids, oracle, message):
    with pytest.raises(ConfigError, match=message):
        explorer.runs.reanswer(run, ids, oracle)


def test_the_oracle_needs_a_dataset_question(explorer):
    typed = explorer.runs.run("Which river flows through Vienna?", "echo")
    with pytest.raises(ConfigError, match="gold supporting paragraphs; this run's question"):
        explorer.runs.reanswer(typed, ["Danube"], oracle=True)
    assert explorer.runs.reanswer(typed, ["Danube"]).metrics == {}  # no gold: no metrics


# --- Explore's re-answer panel (app/tabs/reanswer.py) without a browser ------------------------


def test_the_panel_offers_what_was_read_and_earlier_candidates_then_re_answers_and_saves(
        explorer, run):
    from app.tabs import reanswer as panel_of

    keep, add, oracle, panel = panel_of.choices(run.to_json())
    assert keep.value == ["Danube", "Budapest", "Vienna"] and panel.visible is True
    assert keep.choices[0][0].startswith("#1 Danube: The Danube is a river")
    assert add.choices == []  # the toy ranks once: no earlier stage
    assert oracle.interactive is True  # the question names its supporting paragraphs
    both, before, after, again = panel_of.reanswer(explorer, run.to_json(), ["Vienna"], [],
                                                   True)
    assert "As run" in both and "Re-answered (re-read: 2 removed, 1 oracle)" in both
    assert "EM 0" in both.split("Re-answered")[0] and "EM 1" in both.split("Re-answered")[1]
    saved = panel_of.save(explorer, again, "what if")
    run_id = int(re.search(r"as run (\d+)", saved).group(1))
    assert explorer.runs.load_run(run_id).stage(REANSWER).settings["oracle"] == ["Georges Seurat"]
    refused, *_ = panel_of.reanswer(explorer, run.to_json(), ["Vienna"], ["Atlantis#9"], False)
    assert "Atlantis#9" in refused and "fe-error" in refused
    typed = explorer.runs.run("Which river flows through Vienna?", "echo")
    assert panel_of.choices(typed.to_json())[2].interactive is False
    imported = replace(run, config={"imported": "spans.json"})  # no reader of ours
    assert panel_of.choices(imported.to_json())[3].visible is False


def test_the_oracle_can_be_read_first(tiny_corpus):
    """Ranked first, the gold paragraphs are what a reverse-packing reader reads last, next
    to the question; the setting is recorded."""
    from engine.documents import Document

    kept = ranked_stage("rerank", ("Danube", "The Danube flows."), ("Budapest", "A capital."))
    run = gold_run(GOLD, kept, said="unknown", paradigm="echo")
    paradigm = EchoParadigm(tiny_corpus, EchoConfig())
    gold = [Document("Georges Seurat", "Georges Seurat", "Georges Seurat was a painter.")]
    after = reanswer(paradigm, run, ["Danube#0"], gold)
    first = reanswer(paradigm, run, ["Danube#0"], gold, oracle_first=True)
    assert [c.unit.id for c in after.read] == ["Danube#0", "oracle:Georges Seurat"]
    assert [c.unit.id for c in first.read] == ["oracle:Georges Seurat", "Danube#0"]
    assert [c.rank for c in first.read] == [1, 2]
    assert first.stage(REANSWER).settings["oracle_first"] is True
    assert after.stage(REANSWER).settings["oracle_first"] is False
