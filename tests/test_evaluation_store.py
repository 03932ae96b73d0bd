"""Stored evaluations in a real DuckDB file: create, add a question's runs at a time,
finish, list, reopen a run exactly, survive a restart, delete; bad ids named."""

from __future__ import annotations

from dataclasses import replace

import duckdb
import pytest

from engine.errors import ConfigError
from engine.eval.summary import row
from engine.store.evaluations import EvaluationStore
from engine.store.sessions import SessionStore
from tests.fakes import sample_trace

META = {"dataset": "hotpotqa/dev500_contexts.jsonl", "questions": 3,
        "paradigms": ["fake", "other"], "configs": {"fake": {"K": 5}, "other": {}},
        "corpus": "tiny", "corpus_fingerprint": "abc123", "code_version": "deadbeef"}


@pytest.fixture()
def store(tmp_path):
    s = SessionStore(tmp_path / "sessions.duckdb")
    yield s
    s.close()


def _runs(tiny_corpus):
    first = sample_trace(tiny_corpus)
    return [first, replace(first, paradigm="other", answer="Seurat")]


def test_an_evaluation_stores_each_question_and_reopens_its_runs(store, tiny_corpus):
    evaluations = EvaluationStore(store)
    evaluation_id = evaluations.create(**META)
    runs = _runs(tiny_corpus)
    for position in range(2):  # two of the three planned questions, then cancelled
        evaluations.add(evaluation_id, position, runs, [row(t) for t in runs])
    running = evaluations.get(evaluation_id)
    assert (running.state, running.done, running.questions) == ("running", 2, 3)
    assert running.name == "hotpotqa/dev500_contexts.jsonl: fake, other"
    evaluations.finish(evaluation_id, "cancelled", {"fake": {"EM": 0.5}})
    done = evaluations.list()[0]
    assert (done.state, done.summary, done.paradigms) == ("cancelled", {"fake": {"EM": 0.5}},
                                                          ("fake", "other"))
    assert (done.corpus_fingerprint, done.code_version) == ("abc123", "deadbeef")
    rows = evaluations.rows(evaluation_id)
    assert [(r["position"], r["paradigm"]) for r in rows] == [
        (0, "fake"), (0, "other"), (1, "fake"), (1, "other")]
    assert evaluations.trace(evaluation_id, 1, "other") == runs[1]
    assert evaluations.traces(evaluation_id) == [runs[0], runs[1]] * 2


def test_a_question_is_stored_whole_or_not_at_all(store, tiny_corpus):
    evaluations = EvaluationStore(store)
    evaluation_id = evaluations.create(**META)
    runs = _runs(tiny_corpus)
    evaluations.add(evaluation_id, 0, runs, [row(t) for t in runs])
    with pytest.raises(duckdb.ConstraintException):  # stored already: nothing more lands
        evaluations.add(evaluation_id, 0, runs[::-1], [row(t) for t in runs[::-1]])
    assert len(evaluations.rows(evaluation_id)) == 2


def test_a_restart_marks_runs_left_running_as_interrupted(tmp_path, tiny_corpus):
    path = tmp_path / "sessions.duckdb"
    first = SessionStore(path)
    evaluation_id = EvaluationStore(first).create(**META)
    first.close()
    again = SessionStore(path)
    evaluations = EvaluationStore(again)
    assert evaluations.mark_interrupted() == 1
    assert evaluations.get(evaluation_id).state == "interrupted"
    assert evaluations.mark_interrupted() == 0
    again.close()


def test_bad_ids_and_states_are_named(store, tiny_corpus):
    evaluations = EvaluationStore(store)
    evaluation_id = evaluations.create(**META)
    with pytest.raises(ConfigError, match="No evaluation with id 99. Stored ids: 1"):
        evaluations.get(99)
    with pytest.raises(ConfigError, match="Evaluation ids are numbers; got 'x'"):
        evaluations.rows("x")
    with pytest.raises(ConfigError, match="no run of question 7 by 'fake': it has no stored "
                                          "run yet"):
        evaluations.trace(evaluation_id, 7, "fake")
    runs = _runs(tiny_corpus)
    for position in (0, 2):
        evaluations.add(evaluation_id, position, runs, [row(t) for t in runs])
    with pytest.raises(ConfigError, match="no run of question 7 by 'fake': its questions are "
                                          "at positions 0 to 2, run by fake, other"):
        evaluations.trace(evaluation_id, 7, "fake")
    with pytest.raises(ConfigError, match="state='running'"):
        evaluations.finish(evaluation_id, "running", {})
    with pytest.raises(ConfigError, match="limit is 200"):
        evaluations.create(**{**META, "name": "n" * 201})
    evaluations.delete(evaluation_id)
    assert evaluations.list() == []
    with pytest.raises(ConfigError, match="No evaluation with id 1. Stored ids: none yet"):
        evaluations.delete(evaluation_id)
