"""Nuggets and the scores of answers judged by them (engine.judging.nuggets)."""

from __future__ import annotations

import json

import pytest

from engine.errors import ConfigError, DataFormatError
from engine.judging.nuggets import (
    assignment_file,
    gold_nuggets,
    nugget_file,
    nugget_scores,
    read_nugget_file,
)
from engine.store.nuggets import Nugget

SET = "mydocs (questions)"
JUDGED = [("vital", "support"), ("vital", "partial_support"), ("vital", "not_support"),
          ("okay", "support"), ("okay", "partial_support")]


def test_scores_count_partial_support_as_half_but_in_the_strict_forms():
    scores = nugget_scores(JUDGED)
    assert (scores.nuggets, scores.vital_nuggets) == (5, 3)
    assert scores.all == pytest.approx((1 + 0.5 + 0 + 1 + 0.5) / 5)
    assert scores.all_strict == pytest.approx(2 / 5)
    assert scores.vital == pytest.approx(1.5 / 3)
    assert scores.vital_strict == pytest.approx(1 / 3)
    # vital nuggets weigh 1, okay ones 0.5
    assert scores.weighted == pytest.approx((1.5 + 0.5 * 1.5) / (3 + 0.5 * 2))
    assert scores.weighted_strict == pytest.approx((1 + 0.5 * 1) / (3 + 0.5 * 2))
    assert set(scores.as_row()) == {"nuggets_all", "nuggets_all_strict", "nuggets_vital",
                                    "nuggets_vital_strict", "nuggets_weighted",
                                    "nuggets_weighted_strict"}


def test_a_question_without_vital_nuggets_has_no_vital_score_and_a_bad_label_is_refused():
    scores = nugget_scores([("okay", "support"), ("okay", "not_support")])
    assert (scores.vital, scores.vital_strict) == (None, None)
    assert scores.weighted == pytest.approx(0.5)  # okay nuggets alone: their mean
    assert nugget_scores([]).all is None
    with pytest.raises(ConfigError, match="assignment='yes'.*support .2., partial_support"):
        nugget_scores([("vital", "yes")])


def test_the_track_scorer_reads_our_assignment_file_and_gives_the_same_scores():
    """castorini's nuggetizer (the TREC RAG track's scorer) reads the assignment file we
    write and computes All and Vital, strict and not, as we do."""
    metrics = pytest.importorskip("nuggetizer.core.metrics")
    nuggets = [Nugget(SET, "q1", f"fact {n}", importance, "ann")
               for n, (importance, _) in enumerate(JUDGED)]
    answers = [("q1", "flat", "An answer.", list(zip(nuggets, [lbl for _, lbl in JUDGED],
                                                     strict=True))),
               ("q1", "funnel", "Another.", [(n, "support") for n in nuggets])]
    for line, (_, _, _, judged) in zip(
            assignment_file(answers, {"q1": "Who?"}).splitlines(), answers, strict=True):
        record = json.loads(line)
        theirs = metrics.calculate_nugget_scores(record["qid"], record["nuggets"])
        ours = nugget_scores([(n.importance, label) for n, label in judged])
        assert (theirs.all_score, theirs.strict_all_score, theirs.vital_score,
                theirs.strict_vital_score) == pytest.approx(
            (ours.all, ours.all_strict, ours.vital, ours.vital_strict))
        assert record["response_length"] == len(record["answer_text"].split())


def test_a_nugget_needs_text_of_at_most_40_words_and_a_known_importance():
    with pytest.raises(ConfigError, match="'q1' has no text"):
        Nugget(SET, "q1", "  ", "vital", "ann")
    with pytest.raises(ConfigError, match="has 41 words.*at most 40"):
        Nugget(SET, "q1", " ".join(["word"] * 41), "vital", "ann")
    with pytest.raises(ConfigError, match="importance='must'"):
        Nugget(SET, "q1", "Seurat painted it", "must", "ann")
    with pytest.raises(ConfigError, match="needs its author"):
        Nugget(SET, "q1", "Seurat painted it", "okay", " ")


def test_gold_answers_become_vital_nuggets_once_each():
    found = gold_nuggets(SET, {"q1": ["Georges Seurat", "Georges Seurat ", ""],
                               "q2": ["Danube"]})
    assert [(n.question_id, n.text, n.importance, n.author) for n in found] == [
        ("q1", "Georges Seurat", "vital", "gold"), ("q2", "Danube", "vital", "gold")]


def test_a_nugget_file_goes_out_and_comes_back_in_the_tracks_layout():
    nuggets = [Nugget(SET, "q1", "Seurat devised pointillism", "vital", "ann"),
               Nugget(SET, "q2", "The Danube flows through Vienna", "okay", "ann"),
               Nugget(SET, "q1", "He painted La Grande Jatte", "okay", "ann")]
    text = nugget_file(nuggets, {"q1": "Who devised pointillism?"})
    first = json.loads(text.splitlines()[0])
    assert first == {"qid": "q1", "query": "Who devised pointillism?", "nuggets": [
        {"text": "Seurat devised pointillism", "importance": "vital"},
        {"text": "He painted La Grande Jatte", "importance": "okay"}]}
    back = read_nugget_file(text, "n.jsonl", SET, {"q1", "q2"}, "imported")
    assert sorted((n.question_id, n.text, n.importance) for n in back) == sorted(
        (n.question_id, n.text, n.importance) for n in nuggets)
    assert {n.author for n in back} == {"imported"}
    ok = read_nugget_file('{"qid": "q1", "nuggets": [{"text": "x y", "importance": "ok"}]}',
                          "n.jsonl", SET, {"q1"}, "imported")
    assert ok[0].importance == "okay"  # some of the track's tools write "ok"


@pytest.mark.parametrize(("text", "message"), [
    ('{"qid": "q9", "nuggets": [{"text": "x"}]}', "line 1: field 'qid': names question "
                                                  "'q9', which the question set"),
    ('{"qid": "q1", "nuggets": "x"}', "line 1: field 'nuggets': is not a nugget file's"),
    ('{"qid": "q1", "nuggets": [{"text": ""}]}', "nugget 1: The nugget for question 'q1' "
                                                 "has no text"),
    ('{"qid": "q1", "nuggets": [{"text": "x", "importance": "high"}]}',
     "importance='high'"),
    ('{"qid": "q1", "nuggets": ["x"]}', "nugget 1: it is not an object"),
    ('{"qid": "q1", "nuggets": []}', "holds no nuggets"),
    ('{"qid": "q1", "nuggets": [}', "line 1: invalid JSON"),
])
def test_a_bad_nugget_file_is_refused_by_line_and_field(text, message):
    with pytest.raises(DataFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_nugget_file(text, "n.jsonl", SET, {"q1"}, "imported")


@pytest.fixture
def nuggets(tmp_path):
    from engine.store.nuggets import NuggetStore
    from engine.store.sessions import SessionStore

    return NuggetStore(SessionStore(tmp_path / "sessions.duckdb"))


def test_an_edit_or_a_merge_replaces_nuggets_and_keeps_what_was_assigned_to_them(nuggets):
    from engine.store.nuggets import Assignment

    first = nuggets.add(Nugget(SET, "q1", "Seurat devised pointillism", "vital", "ann",
                               ("Georges Seurat",)))
    second = nuggets.add(Nugget(SET, "q1", "Signac worked with him", "okay", "ann",
                                ("Paul Signac",)))
    other = nuggets.add(Nugget(SET, "q2", "The Danube flows through Vienna", "vital", "bo"))
    nuggets.assign(Assignment(first, 7, "q1", "flat", "support", "ann", seconds=3.0))
    edited = nuggets.edit(first, "bo", text="Seurat and Signac devised pointillism")
    assert [n.id for n in nuggets.nuggets(SET, "q1")] == [second, edited]
    assert nuggets.nugget(edited).sources == ("Georges Seurat",)
    assert nuggets.nugget(edited).author == "bo"
    merged = nuggets.merge([second, edited], "Seurat and Signac devised it", "vital", "ann")
    assert [(n.id, n.sources) for n in nuggets.nuggets(SET, "q1")] == [
        (merged, ("Paul Signac", "Georges Seurat"))]
    assert len(nuggets.nuggets(SET, with_replaced=True)) == 5
    # the assignment made before the edit still names the text it was made against
    (kept,) = nuggets.assignments(7)
    assert kept.nugget_id == first and kept.seconds == 3.0
    with pytest.raises(ConfigError, match=f"No current nugget with id {first}: it was edited"):
        nuggets.edit(first, "ann", importance="okay")
    with pytest.raises(ConfigError, match="different questions cannot be merged"):
        nuggets.merge([merged, other], "x", "vital", "ann")
    with pytest.raises(ConfigError, match="needs two nuggets or more"):
        nuggets.merge([merged, merged], "x", "vital", "ann")
    assert nuggets.remove(other).text.startswith("The Danube")
    assert nuggets.nuggets(SET, "q2") == []


def test_assignments_are_kept_per_assessor_undone_and_only_for_the_answer_s_question(nuggets):
    from engine.store.nuggets import Assignment

    nugget_ids = nuggets.add_all([Nugget(SET, "q1", "Seurat", "vital", "gold"),
                                  Nugget(SET, "q2", "Danube", "vital", "gold")])
    assert nugget_ids == 2
    q1, q2 = (n.id for n in nuggets.nuggets(SET))
    nuggets.assign(Assignment(q1, 7, "q1", "flat", "support", "ann"))
    nuggets.assign(Assignment(q1, 7, "q1", "flat", "partial_support", "bo"))  # both kept
    nuggets.assign(Assignment(q2, 7, "q2", "flat", "not_support", "ann"))
    nuggets.assign(Assignment(q1, 7, "q1", "flat", "not_support", "ann"))  # ann changes it
    assert nuggets.labels(7, "ann") == {("q1", "flat"): {q1: "not_support"},
                                        ("q2", "flat"): {q2: "not_support"}}
    assert nuggets.labels(7, "bo") == {("q1", "flat"): {q1: "partial_support"}}
    assert nuggets.assessors(7) == {"ann": 3, "bo": 1}
    undone = nuggets.undo("ann", 7)
    assert (undone.nugget_id, undone.assignment) == (q1, "not_support")
    assert nuggets.labels(7, "ann")[("q1", "flat")] == {q1: "support"}
    assert nuggets.undo("ann", 8) is None
    with pytest.raises(ConfigError, match="belongs to question 'q2', not to 'q1'"):
        nuggets.assign(Assignment(q2, 7, "q1", "flat", "support", "ann"))
    with pytest.raises(ConfigError, match="assignment='supported'"):
        Assignment(q1, 7, "q1", "flat", "supported", "ann")


def _answered(paradigm: str, qid: str, question: str, said: str):
    from engine.documents import Question
    from engine.trace import LLMStep, RunTrace

    return RunTrace(question, paradigm, {}, (), (LLMStep("answer", "fake", "p", said, 9, 2,
                                                          0.1, answer=said),),
                    answer=said, gold=Question(qid, question))


def _evaluation_of_a_question_set(data_dir):
    """A question set of two questions over an added corpus, and one stored evaluation of
    it by flat and funnel with their answers."""
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judging import Judging
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore

    store("docs", [Document(d, d, d) for d in "ab"], "docs.jsonl")
    sessions = SessionStore(data_dir / "sessions.duckdb")
    Judging(sessions).add_questions("docs", "support",
                                    text="Who devised pointillism?\nWhere is Vienna?\n")
    said = {("flat", "q1"): "Seurat, with Signac", ("funnel", "q1"): "Monet",
            ("flat", "q2"): "On the Danube", ("funnel", "q2"): "In Austria, on the Danube"}
    questions = {"q1": "Who devised pointillism?", "q2": "Where is Vienna?"}
    runs = [(n, _answered(p, q, questions[q], said[p, q]))
            for n, q in enumerate(questions) for p in ("flat", "funnel")]
    evaluation = EvaluationStore(sessions).store_whole(
        [(n, t, {"paradigm": t.paradigm, "question_id": t.gold.id}) for n, t in runs], {},
        dataset="docs (support)", paradigms=["flat", "funnel"], configs={}, corpus="docs",
        corpus_fingerprint="", code_version="test")
    return sessions, evaluation


def test_a_question_set_s_answers_are_assigned_one_at_a_time_and_scored_per_paradigm(
        data_dir):
    from engine.service.nuggets import Nuggets

    sessions, evaluation = _evaluation_of_a_question_set(data_dir)
    service = Nuggets(sessions)
    seurat = service.add_nugget("docs (support)", "q1", "Seurat  devised it", "vital", "ann")
    signac = service.add_nugget("docs (support)", "q1", "Signac helped", "okay", "ann")
    danube = service.add_nugget("docs (support)", "q2", "Vienna is on the Danube", "vital",
                                "ann")
    assert service.store.nugget(seurat).text == "Seurat devised it"
    with pytest.raises(ConfigError, match="Question 'q9' is not one of docs .support."):
        service.add_nugget("docs (support)", "q9", "x", "vital", "ann")
    with pytest.raises(ConfigError, match="has no gold answers to make nuggets of"):
        service.add_gold_nuggets("docs (support)")
    first = service.to_assign(evaluation, "ann")
    assert (first.answer.question_id, first.answer.paradigm, first.done, first.answers) == (
        "q1", "flat", 0, 4)
    assert [n.id for n in first.nuggets] == [seurat, signac]
    for qid, paradigm, nugget, label in [
            ("q1", "flat", seurat, "support"), ("q1", "flat", signac, "support"),
            ("q1", "funnel", seurat, "not_support"), ("q1", "funnel", signac, "not_support"),
            ("q2", "flat", danube, "support"), ("q2", "funnel", danube, "partial_support")]:
        service.assign(evaluation, qid, paradigm, nugget, label, "ann", seconds=2.0)
    assert service.to_assign(evaluation, "ann").answer is None
    assert service.to_assign(evaluation, "bo").done == 0  # each assessor's own progress
    scores = service.nugget_scores(evaluation, "ann")
    assert scores.unassigned == 0
    assert scores.per_paradigm["flat"]["vital"] == pytest.approx(1.0)
    assert scores.per_paradigm["funnel"]["vital"] == pytest.approx((0 + 0.5) / 2)
    assert scores.per_paradigm["funnel"]["vital_strict"] == pytest.approx(0.0)
    assert scores.per_paradigm["flat"]["answers"] == 2
    with pytest.raises(ConfigError, match="no answer of question 'q2' by 'best'"):
        service.assign(evaluation, "q2", "best", danube, "support", "ann")
    undone = service.undo_assignment(evaluation, "ann")
    assert (undone.paradigm, undone.assignment) == ("funnel", "partial_support")
    later = service.nugget_scores(evaluation, "ann")
    assert later.unassigned == 1  # counted as not supported
    assert later.per_paradigm["funnel"]["vital"] == pytest.approx(0.0)
    # the track's scorer reads the assignment file and agrees, answer by answer
    metrics = pytest.importorskip("nuggetizer.core.metrics")
    lines = [json.loads(line) for line in service.export_assignments(evaluation, "ann")
             .splitlines()]
    assert [(r["qid"], r["run_id"]) for r in lines] == [
        ("q1", "flat"), ("q1", "funnel"), ("q2", "flat"), ("q2", "funnel")]
    theirs = [metrics.calculate_nugget_scores(r["qid"], r["nuggets"]).vital_score
              for r in lines]
    assert theirs == [s.vital for _, s in later.per_answer]


def test_nuggets_go_out_and_back_in_as_a_nugget_file_and_a_gold_qa_file_seeds_them(
        data_dir, tmp_path):
    from engine.service.nuggets import Nuggets

    sessions, evaluation = _evaluation_of_a_question_set(data_dir)
    service = Nuggets(sessions)
    service.add_nugget("docs (support)", "q1", "Seurat devised it", "vital", "ann")
    text = service.export_nuggets("docs (support)")
    assert json.loads(text)["query"] == "Who devised pointillism?"
    assert service.import_nuggets("docs (support)", text, "n.jsonl", "bo") == 1
    assert [n.author for n in service.nuggets("docs (support)", "q1")] == ["ann", "bo"]
    with pytest.raises(DataFormatError, match="which the question set docs .support. lacks"):
        service.import_nuggets("docs (support)", text.replace('"q1"', '"q7"'), "n.jsonl",
                               "bo")
    qa = tmp_path / "qa.jsonl"
    qa.write_text("\n".join(json.dumps({"question_id": f"h{n}", "question_text": question,
                                        "answers_objects": [{"spans": [answer]}],
                                        "contexts": []})
                            for n, (question, answer) in enumerate(
                                [("Who painted it?", "Seurat"), ("Which river?", "Danube")])))
    assert service.add_gold_nuggets(str(qa)) == 2
    assert service.add_gold_nuggets(str(qa)) == 0  # only for questions without nuggets
    assert [(n.question_id, n.text, n.author) for n in service.nuggets(str(qa))] == [
        ("h0", "Seurat", "gold"), ("h1", "Danube", "gold")]


def test_an_evaluation_without_answers_or_without_nuggets_is_refused_naming_the_fix(
        data_dir, tmp_path):
    from engine.service.nuggets import Nuggets
    from engine.store.evaluations import EvaluationStore
    from engine.trace import RunTrace

    sessions, evaluation = _evaluation_of_a_question_set(data_dir)
    service = Nuggets(sessions)
    runs = EvaluationStore(sessions).stored_runs(evaluation)
    retrieval = EvaluationStore(sessions).store_whole(
        [(n, RunTrace(t.question, t.paradigm, {}, (), gold=t.gold), row)
         for n, row, t in runs], {}, dataset="docs (support)", paradigms=["flat", "funnel"],
        configs={}, corpus="docs", corpus_fingerprint="", code_version="test")
    with pytest.raises(ConfigError, match=f"Evaluation {retrieval} has no stored answers to "
                                          "judge: it ran retrieval only"):
        service.stored_answers(retrieval)
    with pytest.raises(ConfigError, match=f"No question of evaluation {evaluation} has "
                                          "nuggets yet"):
        service.to_assign(evaluation, "ann")
    with pytest.raises(ConfigError, match="type your name in the Assessor box"):
        service.to_assign(evaluation, " ")
    with pytest.raises(ConfigError, match="Author 'llm:x:y': names starting llm: or "
                                          "generated: are the judges'"):
        service.add_nugget("docs (support)", "q1", "Seurat", "vital", "llm:x:y")
    # a preset's runs are its own answers, under the name the evaluation lists them by
    preset = EvaluationStore(sessions).store_whole(
        [(n, t, {**row, "paradigm": f"my-{t.paradigm}"}) for n, row, t in runs], {},
        dataset="docs (support)", paradigms=["my-flat", "my-funnel"], configs={},
        corpus="docs", corpus_fingerprint="", code_version="test")
    assert [a.paradigm for a in service.stored_answers(preset)] == [
        "my-flat", "my-funnel", "my-flat", "my-funnel"]


def test_nuggets_are_written_assigned_and_scored_on_the_command_line(data_dir, tmp_path,
                                                                     capsys):
    from engine.cli.main import main

    _, evaluation = _evaluation_of_a_question_set(data_dir)
    db = ["judge", "--db", str(data_dir / "sessions.duckdb")]
    assert main([*db, "nuggets", "docs (support)", "--add", "q1", "Seurat devised it",
                 "--author", "ann"]) == 0
    assert main([*db, "nuggets", "docs (support)", "--add", "q2", "On the Danube",
                 "--importance", "okay", "--author", "ann"]) == 0
    said = capsys.readouterr().out
    assert "nugget 1 written for question q1" in said
    assert said.splitlines()[-1] == "2\tq2\tokay\tann\tOn the Danube"
    assert main([*db, "nuggets", "docs (support)", "--export"]) == 0
    exported = tmp_path / "nuggets.jsonl"
    exported.write_text(capsys.readouterr().out)
    assert [json.loads(line)["qid"] for line in exported.read_text().splitlines()] == [
        "q1", "q2"]
    for qid, paradigm, nugget, key in [("q1", "flat", "1", "2"), ("q1", "funnel", "1", "0"),
                                       ("q2", "flat", "2", "1"), ("q2", "funnel", "2", "2")]:
        assert main([*db, "assign", str(evaluation), qid, paradigm, nugget, key,
                     "--assessor", "ann"]) == 0
    assert "4 of 4 answers assigned by ann" in capsys.readouterr().out.splitlines()[-1]
    assert main([*db, "scores", str(evaluation)]) == 0
    said = capsys.readouterr().out
    # flat: q1 vital supported, q2 okay partial; funnel: q1 not, q2 supported
    assert "flat\t2\t0.750\t0.500\t1.000\t1.000" in said
    assert "funnel\t2\t0.500\t0.500\t0.000\t0.000" in said
    assert main([*db, "scores", str(evaluation), "--export"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["nuggets"][0][
        "assignment"] == "support"
    assert main([*db, "assign", str(evaluation), "q1", "flat", "1", "maybe",
                 "--assessor", "ann"]) == 2
    assert "assignment='maybe': use support (2)" in capsys.readouterr().err
