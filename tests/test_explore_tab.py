"""What a new user tripped on in Explore and the Corpora tab (issue 35), through the tabs'
callbacks without a browser: a real Explorer over the tiny corpus, the toy paradigm 'echo'
and a real DuckDB file. tests/test_explore_live.py tries the same in Chromium and over the
API."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from app.tabs import corpora, explore
from engine.errors import ConfigError
from engine.paradigms.base import MAX_QUESTION_CHARS
from engine.paradigms.needs import Need
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from tests.fakes import EchoParadigm
from tests.test_corpora import corpus_only, settled, tiny_rows, write_jsonl

QUESTION = "Who painted A Sunday Afternoon?"
KEYS = [("echo", "k"), ("echo", "voice")]  # the echo panel's widgets, in order
VIEWS = slice(1, 8)  # banner, answer, funnel, timing, heatmap, tables, trace JSON


def asked(explorer, text, k=1, build_first=False) -> list[tuple]:
    """Every yield of Explore's run callback for `text` through echo with option k."""
    return list(explore.ask(explorer, KEYS, build_first, text, None, "echo", "layers", "",
                            explore.NO_PRESET, k, "plain"))


def test_a_refused_run_clears_the_last_runs_answer_and_figures(explorer):
    *_, done = asked(explorer, QUESTION)
    assert "Georges Seurat" in done[2] and done[3] is not None and json.loads(done[7])
    for text, k, message in [("   ", 1, "The question is empty"),
                             (QUESTION, 99, "k=99 is out of range")]:
        *_, refused = asked(explorer, text, k)
        assert message in refused[0]
        # nothing of the last run stands under the refusal as if it were this question's
        assert refused[VIEWS] == ("", "", None, None, None, "", "")


def test_a_new_run_clears_the_last_runs_views_at_once_and_says_it_is_under_way(explorer):
    *_, done = asked(explorer, QUESTION)
    assert "Running" not in done[0]  # the finished run's notice says nothing is running
    first, *stages, last = asked(explorer, QUESTION)
    # before anything of the new run: the last run's answer and figures are gone
    assert first[VIEWS] == explore.CLEARED and "Running <b>echo</b>" in first[0]
    assert "1 stage done" in stages[0][0] and "Georges Seurat" in last[2]
    assert "Running" not in last[0]
    # the browser does the same the moment Run is pressed (RUNNING_JS): the notice and the
    # views but the trace JSON
    assert '</div>`, "", "", null, null, null, ""]' in explore.RUNNING_JS
    assert "fe-running" in explore.running_box("echo") and "fe-running" in explore.RUNNING_JS


def test_a_question_over_the_limit_is_refused_by_the_one_rule_the_api_follows(explorer):
    text = "Seurat " * 3_000  # 21,000 characters: the UI once cut it and ran, the API refused
    with pytest.raises(ConfigError) as api:
        explorer.runs.run(text, "echo")
    *_, refused = asked(explorer, text)
    assert f"limit is {MAX_QUESTION_CHARS:,}" in str(api.value)
    assert str(api.value).replace("'", "&#x27;") in refused[0]
    assert refused[VIEWS] == explore.CLEARED


def test_save_clears_name_and_notes_and_the_same_run_is_not_saved_twice(explorer):
    *_, done = asked(explorer, QUESTION)
    message, name, notes = explore.save_current(explorer, done[7], "first", "my notes")
    run_id = explorer.runs.saved_runs()[0].id
    assert f"Saved as run {run_id}." in message and (name, notes) == ("", "")
    again, name, notes = explore.save_current(explorer, done[7], "", "")
    assert f"already saved as run {run_id} (&#x27;first&#x27;)" in again
    assert len(explorer.runs.saved_runs()) == 1
    # a new run starts with an empty name and notes: nothing carries over to its save
    start = asked(explorer, QUESTION)[0]
    assert start[-3:] == ("", "", "")
    *_, other = asked(explorer, QUESTION)
    assert "Saved as run" in explore.save_current(explorer, other[7], "second", "")[0]
    assert [r.notes for r in explorer.runs.saved_runs()] == ["", "my notes"]


@pytest.fixture
def slow_index(monkeypatch):
    """echo with k > 1 needs an index estimated at 15 minutes here (as another
    passage_tokens needs a new dense index); k = 1 one of 5 s. Returns the k of each
    index prepared."""
    built = []

    def needs(cls, config):
        return (Need(f"echo index {config.k}", f"echo index (k={config.k})",
                     lambda corpus, progress, store: built.append(config.k), slow=True,
                     build_seconds=lambda corpus: 900.0 if config.k > 1 else 5.0),)

    monkeypatch.setattr(EchoParadigm, "needs", classmethod(needs))
    return built


def test_a_run_needing_a_long_build_asks_first_naming_it_and_its_estimate(explorer,
                                                                          slow_index):
    built = slow_index
    # a run reads only what is built: a 5-second build is asked about too
    with pytest.raises(BuildNeeded, match=r"echo index \(k=1\): about 5 s on this machine"):
        explorer.runs.run(QUESTION, "echo", '{"k": 1}')
    with pytest.raises(BuildNeeded, match=r"echo index \(k=3\): about 15 min on this "
                                          "machine"):
        explorer.runs.run(QUESTION, "echo", '{"k": 3}')
    *_, asking = asked(explorer, QUESTION, k=3)
    assert "echo index (k=3): about 15 min on this machine" in asking[0]
    assert "Build and run" in asking[0] and asking[VIEWS] == explore.CLEARED
    assert asking[8].visible is True and built == []  # the button that confirms it
    runs = asked(explorer, QUESTION, k=3, build_first=True)
    assert built == [3]  # built first, in its turn in the build queue
    # said while it builds, before the first stage (the views are left as they are)
    assert "Building first: echo index (k=3)" in runs[1][0] and runs[1][2] == gr.skip()
    assert "Building first: echo index (k=3)" in runs[-1][0]
    assert json.loads(runs[-1][7])["config"]["k"] == 3 and runs[-1][8].visible is False
    # built by a run, it is not asked about again in this process
    assert explorer.runs.run(QUESTION, "echo", '{"k": 3}').answer == "Georges Seurat"


def test_a_confirmed_build_takes_its_turn_with_the_other_long_builds(explorer, slow_index):
    """A confirmed run's 15-minute build waits while another long build (a training, a
    corpus's dense index) runs, instead of doubling the load on the two cores."""
    import threading

    from engine.service.builds import BUILDS

    built, answers = slow_index, []
    with BUILDS.turn("training elsewhere", 1_800):
        run = threading.Thread(target=lambda: answers.append(
            explorer.runs.run(QUESTION, "echo", '{"k": 3}', build=True).answer))
        run.start()
        run.join(1.0)
        assert run.is_alive() and built == []  # waiting for its turn
    run.join(30)
    assert built == [3] and answers == ["Georges Seurat"]


def test_another_passage_size_asks_before_its_dense_index_is_built(explorer, monkeypatch):
    """flat's real needs and the estimate Evaluate uses (engine.index.dense.build_seconds),
    with the encoder made slow enough here for the tiny corpus to take minutes."""
    from engine.index import encoding

    for precision in encoding.ENCODE_TOKENS_PER_SECOND:
        monkeypatch.setitem(encoding.ENCODE_TOKENS_PER_SECOND, precision, 1.0)
    with pytest.raises(BuildNeeded, match=r"dense index \(minilm, 60-token passages\): "
                                          r"about \d+ min on this machine") as needed:
        explorer.runs.paradigm("flat", '{"passage_tokens": 60}')
    assert needed.value.seconds >= 60
    assert explorer.runs.paradigm("flat", '{"passage_tokens": 60}', build=True).config \
        .passage_tokens == 60


# --- the Corpora tab --------------------------------------------------------------------


@pytest.fixture
def with_corpora(prepared, tmp_path):
    return Explorer(*prepared, corpus_root=tmp_path, preparing=corpus_only)


def choices_of(update: gr.Dropdown) -> list[str]:
    return [value for _, value in update.choices]


def value_set(update: gr.Dropdown) -> str | None:
    """The value an update sets ("unchanged" when it leaves the value as it is)."""
    return update.constructor_args.get("value", "unchanged")


def test_remove_asks_first_then_every_corpus_choice_drops_it(with_corpora, tmp_path):
    explorer = with_corpora
    explorer.catalog.add_corpus("gone", write_jsonl(tmp_path / "g.jsonl", tiny_rows()), upload=True)
    settled(explorer, "gone")
    tabs = ("gone", "tiny", "gone", "gone", "tiny")  # Explore, Compare, Annotate, ... chose
    *views, pending = corpora.remove_asked(explorer, "gone", None, *tabs)
    assert "Press Remove again to remove corpus <b>gone</b>" in views[0]
    assert pending == "gone" and "gone" in explorer.catalog.corpus_names()  # nothing removed yet
    *views, pending = corpora.remove_asked(explorer, "gone", pending, *tabs)
    assert "Removed corpus <b>gone</b>" in views[0] and pending is None
    removable, *choices = views[3:]
    assert value_set(removable) is None and "gone" not in choices_of(removable)
    for shown, choice in zip(tabs, choices, strict=True):
        assert "gone" not in choices_of(choice)
        # a tab that had chosen it falls back to the start-up corpus; the others keep theirs
        assert value_set(choice) == ("tiny" if shown == "gone" else "unchanged")
    # pressed again (the dropdown once kept the name: Gradio raised "not in the list")
    *views, pending = corpora.remove_asked(explorer, None, None, *tabs)
    assert "Choose an added corpus to remove" in views[0] and pending is None


def test_a_corpus_that_failed_to_load_is_not_offered_for_running_questions(with_corpora,
                                                                          tmp_path):
    explorer = with_corpora
    explorer.catalog.add_corpus("broken", write_jsonl(tmp_path / "b.jsonl", [{"id": "a"}]),
                                upload=True)
    assert settled(explorer, "broken").status == "failed"
    _, _, _, removable, *choices = corpora.refreshed(explorer, ["broken", "tiny", "broken"])
    assert "broken" in choices_of(removable)  # it can still be taken off the list
    asked, *_ = corpora.remove_asked(explorer, "broken", None, "tiny", "tiny")
    assert "it failed to load, so nothing of it was stored" in asked
    # the table's last tick once nothing is prepared: the "being read" message gives way
    # to how the corpus added last ended
    assert corpora.refreshed(explorer, ["broken", "tiny", "tiny"], ticked=True)[0] == ""
    refused = corpora.refreshed(explorer, ["broken", "tiny", "tiny"], ticked=True,
                                watched="broken")[0]
    assert "Corpus &#x27;broken&#x27; was refused and nothing of it was stored: b.jsonl, " \
        "line 1" in refused and "the name is free" in refused
    assert "is ready" in corpora.refreshed(explorer, ["tiny", "tiny", "tiny"], ticked=True,
                                           watched="tiny")[0]
    assert corpora.refreshed(explorer, ["broken", "tiny", "tiny"])[0] == gr.skip()
    assert all("broken" not in choices_of(c) for c in choices)
    assert [value_set(c) for c in choices] == ["unchanged", "tiny"]  # it falls back
    assert "broken" not in corpora.offered(explorer.catalog.corpora())
