"""Judging a corpus (issue 53): a question list read and refused by line, pools of the
paradigms' top documents, judgments stored with their assessors in a real DuckDB file."""

from __future__ import annotations

import pytest

from engine.documents import Candidate, Question, Unit
from engine.errors import ConfigError, DataFormatError
from engine.judging.pools import judging_estimate, pool_units
from engine.judging.questions import MAX_QUESTIONS, read_question_list
from engine.store.judgments import Judgment, JudgmentStore, PoolUnit
from engine.store.sessions import SessionStore
from engine.trace import RunTrace, StageResult


def test_a_question_list_reads_as_text_csv_or_jsonl_and_leaves_out_repeats(tmp_path, caplog):
    listed = tmp_path / "questions.txt"
    listed.write_text("# our support questions\nHow do I reset my password?\n\n"
                      "How do I  reset my password?\nWhich plans include SSO?\n")
    questions = read_question_list(listed)
    assert [(q.id, q.text) for q in questions] == [("q1", "How do I reset my password?"),
                                                   ("q2", "Which plans include SSO?")]
    assert "left out 1 questions given twice: line 4 (as line 2)" in caplog.text
    table = tmp_path / "questions.csv"
    table.write_text("id,question\nsso,Which plans include SSO?\n,Where are invoices?\n")
    assert [(q.id, q.text) for q in read_question_list(table)] == [
        ("sso", "Which plans include SSO?"), ("q2", "Where are invoices?")]
    lines = tmp_path / "questions.jsonl"
    lines.write_text('{"id": 7, "question": "Which plans include SSO?"}\n'
                     '{"text": "Where are invoices?"}\n')
    assert [q.id for q in read_question_list(lines)] == ["7", "q2"]
    # a line separator JSON allows inside a string does not end the line (jsonl_lines)
    lines.write_text('{"question": "Which plans\u2028include SSO?"}\n', encoding="utf-8")
    assert [q.text for q in read_question_list(lines)] == ["Which plans include SSO?"]


@pytest.mark.parametrize("name, text, message", [
    ("empty.txt", "\n# nothing\n", "empty.txt: holds no questions (one question a line"),
    ("bad.csv", "query\nx\n", "bad.csv, line 1: field 'question': has no `question` column"),
    ("bad.jsonl", '{"question": "a"}\n{"q": "b"}\n',
     "bad.jsonl, line 2: field 'question': needs a `question` (or `text`) string"),
    ("twice.csv", "id,question\na,one?\na,two?\n",
     "twice.csv, line 3: field 'id': id 'a' is already the id of line 2"),
    ("blank.csv", "id,question\na, \n", "blank.csv, line 2: field 'question': the question "
                                        "is blank"),
])
def test_a_bad_question_list_is_refused_by_line_and_field(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_question_list(path)


def test_a_question_list_past_the_limit_is_refused_naming_the_fix(tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("".join(f"question number {n}?\n" for n in range(MAX_QUESTIONS + 1)))
    with pytest.raises(DataFormatError, match=r"huge.txt: holds more than 10,000 questions "
                                              r"\(split it into rounds of at most 10,000\)"):
        read_question_list(path)


def _cut(paradigm: str, stage: str, docs: list[str], passages: bool = True) -> RunTrace:
    cands = tuple(Candidate(Unit(f"{d}#{i}" if passages else d, d.title(), f"text of {d}",
                                 (d,), "passages" if passages else "documents"), 1.0 / r, r)
                  for r, (i, d) in enumerate(enumerate(docs), start=1))
    first = StageResult("first", "passages", 100, cands + cands, 0.01)
    return RunTrace("q?", paradigm, {}, (first, StageResult(stage, "passages", 10, cands,
                                                            0.01)))


def test_a_pool_is_each_system_s_top_d_documents_deduplicated_minus_the_judged():
    runs = {"q1": [_cut("flat", "reranker", ["a", "b", "a", "c"]),
                   _cut("best", "repack", ["c", "d", "e"])],
            "q2": [_cut("flat", "reranker", ["x"]), _cut("best", "repack", ["y"])]}
    units = pool_units(runs, depth=2, judged={"q1": {"b"}})
    assert [(u.question_id, u.document_id) for u in units] == [
        ("q1", "a"), ("q1", "c"), ("q1", "d"), ("q2", "x"), ("q2", "y")]
    # a passage shows its document, found by each system at its rank among documents
    assert units[0].unit_id == "a#0" and units[0].found_by == (("flat/reranker", 1),)
    assert units[1].found_by == (("best/repack", 1),)  # flat's 3rd document: past depth 2
    assert [u.position for u in units] == [0, 1, 2, 3, 4]
    every_cut = pool_units(runs, depth=1, stages=("first", "reranker"))
    assert [(u.document_id, u.found_by) for u in every_cut if u.question_id == "q1"] == [
        ("a", (("flat/first", 1), ("flat/reranker", 1))), ("c", (("best/first", 1),))]
    with pytest.raises(ConfigError, match="depth=0"):
        pool_units(runs, depth=0)
    assert judging_estimate(90) == "90 units: about 30 min at 20 s a judgment"
    assert judging_estimate(600, [4.0, 6.0, 50.0]) == "600 units: about 1 h 0 min at your " \
                                                       "median pace"


@pytest.fixture
def judgments(tmp_path) -> JudgmentStore:
    return JudgmentStore(SessionStore(tmp_path / "sessions.duckdb"))


def test_judgments_are_kept_per_assessor_and_a_pool_resumes_where_each_stopped(judgments):
    units = [PoolUnit("q1", "a", "a#0", "A", "text a", (("flat/reranker", 1),)),
             PoolUnit("q1", "c", "c#0", "C", "text c", (("best/repack", 1),)),
             PoolUnit("q2", "x", "x#0", "X", "text x", (("flat/reranker", 1),))]
    pool = judgments.create_pool("round 1", "docs (questions)", "docs", "f1", 5,
                                 ["flat/reranker", "best/repack"], units)
    assert judgments.pool(pool).units == 3 and judgments.pool(pool).depth == 5
    assert judgments.to_judge(pool, "ann").document_id == "a"
    judgments.add(Judgment("docs (questions)", "q1", "a", 3, "ann", pool, 4.2))
    judgments.add(Judgment("docs (questions)", "q1", "a", 1, "bob", pool, 7.0))  # at once
    assert judgments.to_judge(pool, "ann").document_id == "c"
    assert judgments.to_judge(pool, "ann", skipped=(1,)).document_id == "x"
    assert judgments.progress(pool, "ann") == (1, 3)
    judgments.add(Judgment("docs (questions)", "q1", "c", 0, "ann", pool))
    assert judgments.grades("docs (questions)", "ann") == {"q1": {"a": 3, "c": 0}}
    assert judgments.grades("docs (questions)", "bob") == {"q1": {"a": 1}}
    assert judgments.assessors("docs (questions)") == {"ann": 2, "bob": 1}
    undone = judgments.undo("ann", pool)
    assert (undone.document_id, undone.grade) == ("c", 0)
    assert judgments.to_judge(pool, "ann").document_id == "c"  # to judge again
    with pytest.raises(ConfigError, match="Pool 1 holds no document 'zz' for question 'q1'"):
        judgments.add(Judgment("docs (questions)", "q1", "zz", 2, "ann", pool))
    with pytest.raises(ConfigError, match="grade=4: use 0 \\(irrelevant\\)"):
        Judgment("docs (questions)", "q1", "a", 4, "ann")
    with pytest.raises(ConfigError, match="needs its assessor"):
        Judgment("docs (questions)", "q1", "a", 2, " ")
    with pytest.raises(ConfigError, match="The pool holds no unit to judge"):
        judgments.create_pool("empty", "docs (questions)", "docs", "f1", 5, [], [])
    assert [p.name for p in judgments.pools("docs (questions)")] == ["round 1"]


def test_a_pasted_list_is_read_under_the_name_given_and_carries_no_gold_yet():
    (question,) = read_question_list("inline.txt", "Which plans include SSO?\n")
    assert question == Question("q1", "Which plans include SSO?", source="inline.txt")


def test_questions_for_an_added_corpus_are_one_more_of_its_splits(data_dir, tmp_path):
    from engine.data.collection_store import add_questions, collection_splits
    from engine.data.ingest import store
    from engine.data.loaders import read_dataset
    from engine.documents import Document

    store("docs", [Document("sso", "SSO", "Single sign-on comes with the Business plan."),
                   Document("inv", "Invoices", "Invoices are under Billing.")], "docs.jsonl")
    listed = tmp_path / "support.txt"
    listed.write_text("Which plans include SSO?\nWhere are invoices?\n")
    split = add_questions("docs", "support", read_question_list(listed))
    assert split.label == "docs (support)" and split.questions == 2
    assert [s.label for s in collection_splits()] == ["docs (support)"]
    assert [(q.id, q.text) for q in read_dataset(split.path).questions] == [
        ("q1", "Which plans include SSO?"), ("q2", "Where are invoices?")]
    for corpus, name, message in (
            ("nowhere", "x", "No added corpus 'nowhere' to ask questions of \\(added: docs\\)"),
            ("docs", "support", "has a question set named 'support' already"),
            ("docs", "a (b)", "Question set name 'a \\(b\\)' is not usable")):
        with pytest.raises(ConfigError, match=message):
            add_questions(corpus, name, read_question_list(listed))
    assert [s.label for s in collection_splits()] == ["docs (support)"]  # nothing changed


def test_agreement_is_statsmodels_kappa_on_the_pairs_both_judged_and_tau_on_system_order():
    from engine.judging.agreement import agreement, same_order

    person = {"q1": {"a": 3, "b": 2, "c": 0, "d": 1}, "q2": {"x": 0, "y": 3}}
    judge = {"q1": {"a": 3, "b": 3, "c": 0, "e": 2}, "q2": {"x": 1, "y": 3}}
    found = agreement(person, judge)
    assert found.pairs == 5 and found.exact == 3 / 5  # d and e were judged by one only
    assert found.matrix[2][3] == 1 and found.matrix[0][1] == 1 and found.matrix[3][3] == 2
    # hand-computed linear-weighted kappa of this table: po 13/15, pe 117/225
    assert found.weighted_kappa == pytest.approx((13 / 15 - 117 / 225) / (1 - 117 / 225))
    assert found.kappa < found.weighted_kappa  # near misses count as partly agreed
    low, high = found.weighted_ci
    assert low < found.weighted_kappa < high
    alike = agreement({"q1": {"a": 2}}, {"q1": {"a": 2}})
    assert alike.exact == 1.0 and alike.kappa is None  # one grade throughout: undefined
    # issue 67: an LLM that gave every unit one grade read "kappa 0.000 (95% interval nan
    # to nan)"; it is undefined, said with who gave one grade
    flat = agreement({"q1": {"a": 0, "b": 2, "c": 3}}, {"q1": {"a": 1, "b": 1, "c": 1}})
    assert flat.kappa is None and flat.weighted_kappa is None
    assert flat.weighted_said() == ("undefined: the second assessor gave grade 1 to every one "
                                    "of the 3 pairs, so chance explains all agreement")
    with pytest.raises(ConfigError, match="judged no document of the same question"):
        agreement(person, {"q9": {"a": 1}})
    tau, _ = same_order({"flat": 0.5, "funnel": 0.4, "best": 0.3},
                        {"flat": 0.6, "funnel": 0.2, "best": 0.3})
    assert tau == pytest.approx(1 / 3)  # one of three pairs swapped
    with pytest.raises(ConfigError, match="at least two"):
        same_order({"flat": 0.5}, {"flat": 0.4, "best": 0.1})


class _Scripted:
    """A generator answering from a script, one output a call; an EngineError where the
    script says so (an endpoint gone mid-pool)."""

    def __init__(self, outputs):
        self.outputs, self.prompts = list(outputs), []

    def generate(self, prompt, *, max_new_tokens=32, stop=()):
        from engine.readers.generator import Generation

        self.prompts.append(prompt)
        out = self.outputs.pop(0)
        if isinstance(out, Exception):
            raise out
        return Generation(out, 10, 5, 0.0)


def test_the_llm_judge_stores_each_grade_keeps_its_reasoning_and_resumes_after_a_failure(
        judgments):
    from engine.errors import EngineError
    from engine.judging.llm_judge import judge_pool, read_grade

    assert read_grade("Matches the intent (M=2), trustworthy.\nFinal score: 3") == (
        3, "Matches the intent (M=2), trustworthy.")
    assert read_grade("**Final Score:** 2") == (2, "")
    assert read_grade(" 2\n") == (2, "")  # asked for the score alone
    assert read_grade("M 1, T 1.") == (None, "M 1, T 1.")  # reasoning, no score
    assert read_grade("no idea") == (None, "no idea")
    units = [PoolUnit("q1", d, f"{d}#0", d.upper(), f"<b>text</b> of {d}", ()) for d in "abc"]
    pool = judgments.create_pool("p", "docs (support)", "docs", "f", 5, ["flat/reranker"],
                                 units)
    questions = {"q1": "Which plans include SSO?"}
    first = _Scripted(["Final score: 3", "no grade here", "still none",  # b: asked twice
                       EngineError("http://127.0.0.1:9/v1 refused the connection")])
    rounds = judge_pool(judgments, pool, questions, first, "llm:endpoint:m")
    assert next(rounds).judged == 1 and next(rounds).unreadable == 1
    with pytest.raises(EngineError, match="stopped at question 'q1', document 'c'.*The 1 "
                                          "judgment made is kept"):
        next(rounds)
    assert "Query: Which plans include SSO?" in first.prompts[0]
    assert judgments.grades("docs (support)", "llm:endpoint:m") == {"q1": {"a": 3}}
    again = _Scripted(["M 1, T 1.", " 1", "Final score: 0"])  # resumes at b
    *_, last = judge_pool(judgments, pool, questions, again, "llm:endpoint:m")
    assert (last.judged, last.left) == (2, 0)
    assert again.prompts[1].endswith("Reasoning: M 1, T 1.\nFinal score:")  # the score alone
    (stored,) = [j for j in judgments.judgments("docs (support)") if j.document_id == "b"]
    assert (stored.grade, stored.reasoning, stored.pool_id) == (1, "M 1, T 1.", pool)


def test_a_person_s_grade_is_published_over_a_generated_one_and_an_llm_s_only_if_asked():
    from engine.judging.measures import published

    said = [Judgment("c", "q1", "a", 3, "generated:endpoint"),
            Judgment("c", "q1", "a", 1, "ann"), Judgment("c", "q1", "b", 2, "llm:local:m"),
            Judgment("c", "q1", "a", 0, "llm:local:m"), Judgment("c", "q2", "x", 3, "ann"),
            Judgment("c", "q2", "x", 2, "bob")]  # bob after ann: the latest person wins
    assert published(said) == {"q1": {"a": 1}, "q2": {"x": 2}}
    assert published(said, with_llm=True) == {"q1": {"a": 1, "b": 2}, "q2": {"x": 2}}


def test_stored_runs_are_measured_again_under_another_assessor_s_grades_without_running():
    from engine.judging.measures import remeasured

    def run(paradigm, docs):
        cands = tuple(Candidate(Unit(d, d, d, (d,), "documents"), 1.0, r)
                      for r, d in enumerate(docs, 1))
        return RunTrace("q?", paradigm, {}, (StageResult("cut", "documents", 9, cands, 0.1),),
                        gold=Question("q1", "q?"))

    traces = [run("flat", ["a", "b"]), run("best", ["b", "a"])]
    person, judge = {"q1": {"a": 3, "b": 0}}, {"q1": {"a": 0, "b": 3}}
    flat_first = remeasured(traces, person)
    assert flat_first["flat"] == 1.0 and flat_first["best"] < 1.0
    best_first = remeasured(traces, judge)
    assert best_first["best"] == 1.0 and best_first["flat"] < 1.0
    assert remeasured(traces, {"q9": {"a": 1}}) == {}  # nothing judged of its questions


def test_published_judgments_are_what_the_split_s_measures_read(data_dir, tmp_path):
    from engine.data.collection_store import add_questions, set_judgments
    from engine.data.ingest import store
    from engine.data.loaders import read_dataset
    from engine.documents import Document

    store("docs", [Document("sso", "SSO", "Single sign-on comes with Business.")], "d.jsonl")
    split = add_questions("docs", "support", read_question_list(
        "support.txt", "Which plans include SSO?\nWhere are invoices?\n"))
    assert set_judgments(split, {"q1": {"sso": 3}}) == 1
    first, second = read_dataset(split.path).questions
    assert first.grades == {"sso": 3} and first.judged_only and not second.judgments


def test_a_question_list_is_pooled_by_the_paradigms_judged_and_published(data_dir, echo):
    from engine.data.collection_store import split_of
    from engine.data.ingest import store
    from engine.data.loaders import read_dataset
    from engine.documents import Document
    from engine.service.judging import Judging
    from tests.conftest import TINY_DOCS

    store("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")
    judging = Judging(SessionStore(data_dir / "sessions.duckdb"))
    with pytest.raises(ConfigError, match="Give a question list"):
        judging.add_questions("docs", "support")
    judging.add_questions("docs", "support", text="Who painted La Grande Jatte?\n"
                                                  "Which river flows through Budapest?\n")
    pool, estimate = judging.make_pool("docs (support)", ["echo"], depth=2)
    assert estimate == "4 units: about 80 s at 20 s a judgment (units per system: " \
                       "echo/overlap 4)"
    (made,) = judging.pools("docs (support)")
    assert (made.id, made.systems, made.depth, made.units) == (pool, ("echo/overlap",), 2, 4)
    unit, question, progress = judging.to_judge(pool, "ann")
    assert question == "Who painted La Grande Jatte?" and progress == (0, 4)
    assert judging.judge(pool, unit.question_id, unit.document_id, 3, "ann", 5.0) == (1, 4)
    # published at once: the question set's measures read the judgment
    (first, _) = read_dataset(split_of("docs (support)").path).questions
    assert first.grades == {unit.document_id: 3}
    judging.judge(pool, unit.question_id, unit.document_id, 2, "bob", 3.0)
    found = judging.agreement("docs (support)", "ann", "bob")
    assert (found.pairs, found.exact) == (1, 0.0)
    assert judging.undo(pool, "ann").grade == 3
    for bad, message in ((" ", "Say who is judging"), ("llm:x", "are the judges'")):
        with pytest.raises(ConfigError, match=message):
            judging.to_judge(pool, bad)
    with pytest.raises(ConfigError, match="'nowhere' is no question set of an added corpus"):
        judging.make_pool("nowhere", ["echo"])
    # issue 67: once every document the cuts hold is judged, a pool at any depth finds
    # nothing: said with how deep the cuts reach, and no empty evaluation is kept
    from engine.judging.pools import NothingToPool
    from engine.store.evaluations import EvaluationStore

    while (left := judging.to_judge(pool, "ann")[0]) is not None:
        judging.judge(pool, left.question_id, left.document_id, 1, "ann", 2.0)
    before = len(EvaluationStore(judging.judgments.store).list())
    with pytest.raises(NothingToPool, match=r"Depth 50 reaches past what its cuts hold \(at "
                                            r"most \d+ documents a question.*Nothing was stored"):
        judging.make_pool("docs (support)", ["echo"], depth=50)
    assert len(EvaluationStore(judging.judgments.store).list()) == before


def test_a_judging_round_is_scripted_on_the_command_line(data_dir, echo, tmp_path, capsys):
    from engine.cli.main import main
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judging import Judging
    from tests.conftest import TINY_DOCS

    store("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")
    listed = tmp_path / "support.txt"
    listed.write_text("Who painted La Grande Jatte?\nWhich river flows through Budapest?\n")
    db = str(data_dir / "sessions.duckdb")
    assert main(["judge", "--db", db, "questions", "docs", "support", str(listed)]) == 0
    assert main(["judge", "--db", db, "pool", "docs (support)", "--paradigms", "echo",
                 "--depth", "2"]) == 0
    said = capsys.readouterr().out
    assert "question set docs (support): 2 questions" in said
    assert "pool 1 (evaluation 1): 4 units: about 80 s at 20 s a judgment" in said
    unit, _, _ = Judging(SessionStore(db)).to_judge(1, "ann")
    assert main(["judge", "--db", db, "record", "1", unit.question_id, unit.document_id, "3",
                 "--assessor", "ann"]) == 0
    assert "pool 1: 1 of 4 judged by ann" in capsys.readouterr().out
    assert main(["judge", "--db", db, "export", "docs (support)"]) == 0
    qrels = capsys.readouterr().out
    assert qrels == f"{unit.question_id}\t0\t{unit.document_id}\t3\n"
    theirs = tmp_path / "bob.qrels"
    theirs.write_text(qrels.replace("\t3\n", "\t2\n"))
    assert main(["judge", "--db", db, "import", "docs (support)", str(theirs),
                 "--assessor", "bob"]) == 0
    assert "1 judgments imported into docs (support)" in capsys.readouterr().out
    assert main(["judge", "--db", db, "agreement", "docs (support)", "ann", "bob"]) == 0
    said = capsys.readouterr().out
    # one pair: each gave one grade, so kappa is undefined, and said so
    assert "1 documents judged by both; exact agreement 0.000; linear-weighted kappa " \
           "undefined: the first assessor gave grade 3" in said
    assert "  3:    0    0    1    0" in said  # ann 3, bob 2
    assert main(["judge", "--db", db, "agreement", "evaluation 1", "ann", "bob"]) == 0
    said = capsys.readouterr().out
    assert "  echo: 1.000 / 1.000" in said and "fewer than two paradigms" in said
    assert main(["judge", "--db", db, "import", "docs (support)", str(theirs)]) == 2
    assert "bob.qrels: qrels say no one's name (name the assessor" in capsys.readouterr().err
    assert main(["judge", "--db", db, "pool", "nowhere (x)", "--paradigms", "echo"]) == 2
    assert "'nowhere (x)' is no question set of an added corpus" in capsys.readouterr().err


def test_an_evaluation_of_a_question_set_reads_as_measured_by_the_latest_judgments(
        data_dir, echo):
    """The pool's evaluation is measured again when read after each judgment, nothing run
    again; a pool of a stored evaluation leaves out what a person judged."""
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judged_evaluations import JudgedEvaluations
    from engine.service.judging import Judging
    from tests.conftest import TINY_DOCS

    store("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")
    sessions = SessionStore(data_dir / "sessions.duckdb")
    judging = Judging(sessions)
    judging.add_questions("docs", "support", text="Who painted La Grande Jatte?\n"
                                                  "Which river flows through Budapest?\n")
    pool, _ = judging.make_pool("docs (support)", ["echo"], depth=2)
    evaluations = JudgedEvaluations(sessions)
    (stored,) = evaluations.list()
    assert (judging.pools()[0].evaluation_id, stored.dataset) == (stored.id, "docs (support)")
    assert "nDCG@10@overlap" not in evaluations.get(stored.id).summary["echo"]  # unjudged
    unit, _, _ = judging.to_judge(pool, "ann")
    judging.judge(pool, unit.question_id, unit.document_id, 3, "ann")
    first = evaluations.get(stored.id).summary["echo"]
    assert first["nDCG@10@overlap"] == 1.0  # the one judged question, its top doc relevant
    rows = evaluations.rows(stored.id)
    assert rows[0]["metrics"]["nDCG@10@overlap"] == 1.0
    assert evaluations.traces(stored.id)[0].gold.grades == {unit.document_id: 3}
    assert not evaluations.fresh(stored.id)  # measured by this file already
    judging.judge(pool, unit.question_id, unit.document_id, 0, "ann")  # thought better
    # no question has a relevant document now: nothing to measure nDCG by (trec_eval's)
    assert "nDCG@10@overlap" not in evaluations.get(stored.id).summary["echo"]
    # pooled again from the stored runs: the judged document is left out
    repooled, estimate = judging.pool_evaluation(stored.id, depth=2)
    assert estimate.startswith("3 units")
    assert unit.document_id not in {u.document_id for u in judging.judgments.units(repooled)
                                    if u.question_id == unit.question_id}


def test_two_assessors_over_an_evaluation_read_as_agreement_and_the_order_of_paradigms(
        data_dir):
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judging import Judging
    from engine.store.evaluations import EvaluationStore

    store("docs", [Document(d, d, d) for d in "abc"], "docs.jsonl")
    sessions = SessionStore(data_dir / "sessions.duckdb")
    judging = Judging(sessions)
    judging.add_questions("docs", "support", text="Where is a?\nWhere is b?\n")

    def run(paradigm, qid, docs):
        cands = tuple(Candidate(Unit(d, d, d, (d,), "documents"), 1.0, r)
                      for r, d in enumerate(docs, 1))
        return RunTrace("q?", paradigm, {}, (StageResult("cut", "documents", 9, cands, 0.1),),
                        gold=Question(qid, "q?"))

    runs = [(n, run(p, f"q{n + 1}", order)) for n in range(2)
            for p, order in (("flat", "abc"), ("best", "bca"), ("funnel", "cab"))]
    evaluation = EvaluationStore(sessions).store_whole(
        [(n, t, {"paradigm": t.paradigm, "question_id": t.gold.id}) for n, t in runs], {},
        dataset="docs (support)", paradigms=["flat", "best", "funnel"], configs={},
        corpus="docs", corpus_fingerprint="", code_version="test")
    person = {"q1": {"a": 3, "b": 0, "c": 0}, "q2": {"a": 2, "b": 1, "c": 0}}
    judge = {"q1": {"a": 0, "b": 3, "c": 1}, "q2": {"a": 0, "b": 3, "c": 0}}
    judging.judgments.add_all([Judgment("docs (support)", q, d, g, who)
                               for who, grades in (("ann", person), ("llm:local:x", judge))
                               for q, docs in grades.items() for d, g in docs.items()])
    found = judging.compared(evaluation, "ann", "llm:local:x")
    assert found.agreement.pairs == 6
    assert found.scores["flat"][0] == 1.0 and found.scores["best"][1] == 1.0
    assert found.tau < 0  # the judge ranks the paradigms otherwise than the person
    shown = found.to_dict()  # the API's JSON: the agreement's fields beside the others
    assert shown["pairs"] == 6 and shown["first"] == "ann" and "agreement" not in shown
    assert judging.assessors("docs (support)") == {"ann": 6, "llm:local:x": 6}
    with pytest.raises(ConfigError, match="'bob' judged nothing of docs \\(support\\); its "
                                          "assessors: ann, llm:local:x"):
        judging.compared(evaluation, "ann", "bob")


def test_questions_are_generated_from_passages_and_kept_where_retrieval_finds_the_source():
    from engine.judging.generate import generate, question_of, stratified

    units = [Unit(f"d{n}#0", f"d{n}", " ".join([f"w{n}"] * (40 if n % 2 else 5)),
                  (f"d{n}",), "passages") for n in range(10)]
    picked = stratified(units, 5, seed=1)
    assert len(picked) == 5 and all(len(u.text.split()) >= 30 for u in picked)
    assert [int(u.id[1]) // 2 for u in picked] == [0, 1, 2, 3, 4]  # one from each stratum
    assert question_of("Question: What does w1 mean? And more") == "What does w1 mean?"
    assert question_of("1. \"How is httpx configured?\"") == "How is httpx configured?"
    assert question_of("A statement.") is None and question_of("Why?") is None

    class Writer:  # writes a question naming the passage, or none for d5
        def generate(self, prompt, max_new_tokens=0, stop=None):
            word = prompt.split("Passage: ")[1].split(":")[0]
            return type("Out", (), {"text": "no idea" if word == "d5" else
                                    f"What is said about {word} here?"})()

    class Finder:  # finds d1 and d3 only
        def run(self, question):
            word = question.split()[4]
            found = [Candidate(u, 1.0, 1) for u in units if u.title == word
                     and word in ("d1", "d3")]
            return RunTrace(question, "flat", {}, (StageResult("bm25", "passages", 20,
                                                               tuple(found), 0.01),))

    *_, last = generate(picked, Writer(), [("bm25", Finder())], "generated:local:fake")
    assert (last.asked, last.written, last.total) == (5, 4, 5)
    assert [(q.id, unit.id, found) for q, unit, found in last.kept] == [
        ("g1", "d1#0", ("bm25",)), ("g2", "d3#0", ("bm25",))]
    assert last.pass_rate == 0.5


@pytest.mark.parametrize("name, text, message", [
    ("j.jsonl", '{"question_id": "q9", "document_id": "a", "grade": 1, "assessor": "x"}\n',
     "j.jsonl, line 1: field 'question_id': names question 'q9', which the question set "
     "docs (support) lacks"),
    ("j.jsonl", '{"question_id": "q1", "document_id": "a", "grade": 4, "assessor": "x"}\n',
     "j.jsonl, line 1: field 'grade': grade 4 is outside 0-3 (grade 0 (irrelevant)"),
    ("j.jsonl", '{"question_id": "q1", "document_id": "a", "grade": 1}\n',
     "j.jsonl, line 1: field 'assessor': says no one's name"),
    ("j.qrels", "q1 0 a 1\nq1 0 a 2\n", "j.qrels, line 2: field 'corpus-id': judges query "
                                        "'q1' and document 'a' again (first on line 1)"),
    ("j.qrels", "q1 0 b 1\nq1 0 a 5\n", "j.qrels, line 2: field 'grade': grade 5 is outside "
                                         "0-3"),
])
def test_imported_judgments_are_refused_by_line_and_field(name, text, message):
    from engine.judging.exchange import read_judgments

    with pytest.raises(DataFormatError) as refused:
        read_judgments(text, name, "docs (support)", {"q1"}, "" if "jsonl" in name else "x")
    assert message in str(refused.value)


def test_judgments_round_trip_as_jsonl_with_their_assessors():
    from engine.judging.exchange import judgments_jsonl, read_judgments

    made = [Judgment("s", "q1", "doc a", 2, "ann", None, 3.5),
            Judgment("s", "q1", "doc a", 1, "llm:local:m", None, None, "it mentions a")]
    assert read_judgments(judgments_jsonl(made), "all.jsonl", "s", {"q1"}) == made


def test_a_pipeline_s_saved_questions_become_a_question_set(data_dir):
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judging import Judging

    store("docs", [Document("a", "a", "text")], "docs.jsonl")
    sessions = SessionStore(data_dir / "sessions.duckdb")
    judging = Judging(sessions)
    with pytest.raises(ConfigError, match="No saved runs to take questions from"):
        judging.add_run_questions("docs", "prod")
    for question in ("How do I retry?", "How do I  retry?", "What is a timeout?"):
        sessions.save(RunTrace(question, "received", {}, ()))
    split = judging.add_run_questions("docs", "prod")
    assert (split.label, split.questions) == ("docs (prod)", 2)  # the repeat kept once
    with pytest.raises(ConfigError, match="No added corpus 'nowhere'"):
        judging.add_run_questions("nowhere", "prod")


def test_a_refused_question_file_is_named_as_the_user_named_it(data_dir, tmp_path):
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judging import Judging

    store("docs", [Document("a", "a", "text")], "docs.jsonl")
    uploaded = tmp_path / "3f9c0a" / "huge.txt"  # where an upload lands on the server
    uploaded.parent.mkdir()
    uploaded.write_text("".join(f"Question {n}?\n" for n in range(MAX_QUESTIONS + 1)))
    judging = Judging(SessionStore(data_dir / "sessions.duckdb"))
    with pytest.raises(DataFormatError) as refused:
        judging.add_questions("docs", "big", uploaded)
    assert str(refused.value).startswith("huge.txt: holds more than 10,000 questions")


def test_a_failed_run_is_kept_as_it_is_when_its_evaluation_is_measured_again(data_dir):
    """A run without stages (failed) among those re-measured: stored as it was, the rest
    measured by the new judgments (it once lost its position and broke every read)."""
    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.judged_evaluations import JudgedEvaluations
    from engine.service.judging import Judging

    store("docs", [Document(d, d, d) for d in "ab"], "docs.jsonl")
    sessions = SessionStore(data_dir / "sessions.duckdb")
    judging = Judging(sessions)
    judging.add_questions("docs", "support", text="Where is a?\nWhere is b?\n")
    ranked = RunTrace("Where is a?", "flat", {}, (StageResult("cut", "documents", 9, (
        Candidate(Unit("a", "a", "a", ("a",), "documents"), 1.0, 1),), 0.1),),
        gold=Question("q1", "Where is a?"))
    failed = RunTrace("Where is b?", "flat", {}, (), gold=Question("q2", "Where is b?"),
                      error="the reader crashed")
    evaluations = JudgedEvaluations(sessions)
    evaluation = evaluations.store_whole(
        [(0, ranked, {"paradigm": "flat", "question_id": "q1"}),
         (1, failed, {"paradigm": "flat", "question_id": "q2", "status": "failed"})], {},
        dataset="docs (support)", paradigms=["flat"], configs={}, corpus="docs",
        corpus_fingerprint="", code_version="test")
    judging.import_judgments("docs (support)", "q1 0 a 2\n", "mine.qrels", "ann")
    assert evaluations.get(evaluation).summary["flat"]["nDCG@10@cut"] == 1.0
    assert [r["position"] for r in evaluations.rows(evaluation)] == [0, 1]
    assert evaluations.traces(evaluation)[1].error == "the reader crashed"
    with pytest.raises(ConfigError, match="No pool with id 9"):
        judging.to_judge(9, "ann")
    with pytest.raises(ConfigError, match="'bob' judged nothing of docs \\(support\\)"):
        judging.export_judgments("docs (support)", "qrels", "bob")


def test_a_collection_s_own_judgments_stay_when_people_judge_it_further(data_dir):
    from engine.data.collection_store import add_questions, set_judgments
    from engine.data.ingest import store
    from engine.data.loaders import read_dataset
    from engine.documents import Document, with_judgments

    store("docs", [Document(d, d, d) for d in "abc"], "docs.jsonl")
    shipped = (with_judgments(Question("q1", "Where is a?"), {"a": 2, "b": 0}),)
    split = add_questions("docs", "test", shipped)  # as a BEIR split comes with its qrels
    set_judgments(split, {"q1": {"b": 1, "c": 3}})
    set_judgments(split, {"q1": {"c": 3}})  # b's grade taken back: the qrels' stands again
    (question,) = read_dataset(split.path).questions
    assert question.grades == {"a": 2, "b": 0, "c": 3}


def test_skipped_retrieval_counts_0_in_rr_and_ap_too_and_in_remeasured_scores():
    from engine.eval.summary import summarise
    from engine.judging.measures import remeasured

    def row(metrics, outcome):
        return {"paradigm": "best", "span_answer": False, "metrics": metrics, "seconds": {},
                "reader_tokens": 0, "outcome": {"support": outcome}}

    summary = summarise([row({"RR@hybrid": 1.0, "AP@hybrid": 1.0}, "relevant kept"),
                         row({}, "retrieval skipped")])["best"]
    assert (summary["RR@hybrid"], summary["AP@hybrid"]) == (0.5, 0.5)
    ranked = RunTrace("q?", "best", {}, (StageResult("cut", "documents", 9, (
        Candidate(Unit("a", "a", "a", ("a",), "documents"), 1.0, 1),), 0.1),),
        gold=Question("q1", "q?"))
    skipped = RunTrace("q?", "best", {}, (), gold=Question("q2", "q?"))
    grades = {"q1": {"a": 3}, "q2": {"a": 3}}
    assert remeasured([ranked, skipped], grades) == {"best": 0.5}


def test_a_unit_shows_its_whole_document_folded_and_escaped(data_dir):
    """Issue 67: a pooled unit is one passage of its document; the card folds the whole
    document under it, escaped, and says nothing more when the unit is the document."""
    from app.tabs.judge import card
    from engine.documents import Corpus, Document
    from engine.service.judging import Judging
    from engine.store.judgments import PoolUnit

    long = Document("d1", "Seurat", "Seurat painted it. <b>bold</b> " + "More words. " * 50)
    judging = Judging(SessionStore(data_dir / "sessions.duckdb"),
                      corpus_of=lambda name: Corpus(name, (long,)) if name == "docs" else None)
    pool = judging.judgments.create_pool(
        "docs (support): echo at depth 1", "docs (support)", "docs", "f", 1, ["echo/overlap"],
        [PoolUnit("q1", "d1", "d1#0", "Seurat", "Seurat painted it.", (("echo/overlap", 1),))])
    assert judging.document(pool, "d1") == long and judging.document(pool, "gone") is None
    unit = judging.judgments.units(pool)[0]
    shown = card(unit, "Who painted it?", (0, 1), document=long)
    assert "<details" in shown and "The whole document (104 words" in shown
    assert "&lt;b&gt;bold&lt;/b&gt;" in shown and "<b>bold</b>" not in shown
    assert "<details" not in card(unit, "Who painted it?", (0, 1),
                                  document=Document("d1", "Seurat", "Seurat painted it."))
