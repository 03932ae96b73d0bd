"""Regressions between runs: each shared question classed on one metric, failed runs left
out, fewer seconds an improvement; where two runs part."""

from __future__ import annotations

from engine.documents import Question
from engine.eval.regressions import changes, first_divergence
from tests.fakes import gold_run, ranked_stage


def _row(qid: str, em: float, seconds: float = 1.0, status: str = "answered") -> dict:
    return {"question_id": qid, "question": f"question {qid}", "position": int(qid[1:]),
            "paradigm": "p", "metrics": {"EM": em, "F1": em}, "span_answer": True,
            "seconds": {"answer": seconds}, "status": status}


def test_each_shared_question_is_classed_and_failed_runs_are_left_out():
    a = [_row("q0", 1), _row("q1", 0), _row("q2", 1), _row("q3", 0), _row("q4", 1)]
    b = [_row("q0", 0), _row("q1", 1), _row("q2", 1), _row("q3", 0),
         _row("q4", 0, status="failed")]
    found = changes(a, b, "EM")
    assert found.counts == {"improved": 1, "regressed": 1, "stayed right": 1,
                            "stayed wrong": 1}
    assert [q.question_id for q in found.questions][:2] == ["q0", "q1"]  # worst first
    assert (found.questions[0].a, found.questions[0].b, found.questions[0].change) == (
        1.0, 0.0, "regressed")
    faster = changes([_row("q0", 1, seconds=2.0)], [_row("q0", 1, seconds=0.5)], "seconds")
    assert faster.counts == {"improved": 1}


def test_two_runs_part_at_the_first_cut_whose_candidates_differ():
    gold = Question("q1", "Who painted it?", answers=("Georges Seurat",))
    first = ranked_stage("dense", ("Georges Seurat", "a"), ("Paul Signac", "b"))
    same = gold_run(gold, first, ranked_stage("rerank", ("Georges Seurat", "a")))
    other = gold_run(gold, first, ranked_stage("rerank", ("Paul Signac", "b")))
    assert first_divergence(same, other) == 1
    assert first_divergence(same, same) is None
    assert first_divergence(same, gold_run(gold, first)) == 1  # one has no second cut
