"""A pipeline of the user's in, from TREC run files: runs we export read back as runs with
the same rankings and measures; files that are not TREC are refused by line and field."""

from __future__ import annotations

import pytest

from engine.documents import Dataset, Question
from engine.errors import ConfigError, DataFormatError
from engine.eval.exports import export_files
from engine.eval.imports import imported_runs, read_qrels, read_run
from tests.fakes import gold_run, ranked_stage

GOLD = Question("q1", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
                supporting_titles=("Georges Seurat", "A Sunday Afternoon"))


def test_exported_trec_files_come_back_as_runs_with_the_same_rankings_and_measures(
        tiny_corpus):
    ours = gold_run(GOLD, ranked_stage("first", ("Paul Signac", "x"), ("Georges Seurat", "y"),
                                       ("A Sunday Afternoon", "z")),
                    ranked_stage("kept", ("Georges Seurat", "y")), paradigm="mine")
    files = export_files([ours], "trec")
    dataset = Dataset("qa", "test", (GOLD,), ())
    (run,) = imported_runs([("first", "mine.first.run", files["mine.first.run"]),
                            ("kept", "mine.kept.run", files["mine.kept.run"])], dataset,
                           tiny_corpus, read_qrels(files["qrels.txt"], "qrels.txt"))
    assert [s.name for s in run.stages] == ["first", "kept"]
    assert [c.unit.id for c in run.stages[0].candidates] == [
        "Paul Signac", "Georges Seurat", "A Sunday Afternoon"]
    assert "Seurat" in run.stages[1].candidates[0].unit.text  # the corpus's own text
    for key in ("nDCG@10@first", "RR@first", "R@4@kept", "gold_doc_recall@first"):
        assert run.metrics[key] == pytest.approx(ours.metrics[key]), key
    # answer recall reads the corpus's texts (the exported run's passages said "x", "y")
    assert (run.metrics["AR@first"], ours.metrics["AR@first"]) == (1.0, 0.0)


@pytest.mark.parametrize(("text", "error"), [
    ("q1 Q0 Georges_Seurat 1 2.0\n", "line 1: a line has 6 fields"),
    ("q1 Q0 a 1 2.0 t\nq1 Q0 b first 1.0 t\n", "line 2: field 'rank': 'first' is not an integer"),
    ("q1 Q0 a 1 high t\n", "line 1: field 'score': 'high' is not a number"),
    ("q1 Q0 a 1 2 t\nq1 Q0 a 2 1 t\n", "line 2: field 'docid': document 'a' is listed twice"),
    ("\n\n", "no run lines"),
    # two systems' runs in one file would be ranked as one
    ("q1 Q0 a 1 2 bm25\nq1 Q0 b 1 2 dense\n", "line 2: field 'tag': 'dense', while earlier "
                                              "lines name 'bm25': one file holds one system")])
def test_a_file_that_is_not_a_trec_run_is_refused_by_line_and_field(text, error):
    with pytest.raises(DataFormatError, match=error):
        read_run(text, "stage1.run")


def test_runs_must_name_the_corpus_documents_and_the_datasets_questions(tiny_corpus):
    dataset = Dataset("qa", "test", (GOLD,), ())
    with pytest.raises(DataFormatError, match="'Nowhere' .* is not in corpus"):
        imported_runs([("first", "a.run", "q1 Q0 Nowhere 1 1.0 t\n")], dataset, tiny_corpus)
    with pytest.raises(ConfigError, match="query 'q9', which qa does not hold"):
        imported_runs([("first", "a.run", "q9 Q0 Danube 1 1.0 t\n")], dataset, tiny_corpus)
    with pytest.raises(DataFormatError, match="field 'relevance'"):
        read_qrels("q1 0 Danube yes\n", "qrels.txt")
    with pytest.raises(DataFormatError, match="empty.qrels: no qrels lines"):
        read_qrels("\n \n", "empty.qrels")  # the CLI's --qrels too: runs against nothing


def test_the_cli_stores_run_files_as_an_evaluation_next_to_ours(tmp_path, capsys):
    """`funnel-engine import-runs dense=... rerank=... --dataset QA --corpus FILE`: one
    stored evaluation, a question's runs reopened with their stages; a bad line stores
    nothing."""
    import json

    from engine.cli.main import main
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore
    from tests.conftest import TINY_DOCS
    from tests.fakes import qa_file

    corpus = tmp_path / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x})
                                for t, x in TINY_DOCS))
    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    (tmp_path / "dense.run").write_text("q0 Q0 Pointillism 1 0.9 mine\n"
                                        "q0 Q0 Georges_Seurat 2 0.8 mine\n"
                                        "q1 Q0 Danube 1 0.7 mine\n")
    (tmp_path / "rerank.run").write_text("q0 Q0 Georges_Seurat 1 0.99 mine\n")
    db = tmp_path / "s.duckdb"
    args = ["import-runs", f"dense={tmp_path / 'dense.run'}", f"rerank={tmp_path / 'rerank.run'}",
            "--dataset", qa, "--corpus", str(corpus), "--db", str(db), "--label", "mine"]
    assert main(args) == 0
    assert "stored 2 runs of 2 stages as evaluation 1" in capsys.readouterr().out
    store = SessionStore(db)
    (evaluation,) = EvaluationStore(store).list()
    traces = EvaluationStore(store).traces(evaluation.id)
    assert [t.paradigm for t in traces] == ["mine", "mine"]
    assert [c.unit.id for c in traces[0].stages[0].candidates] == ["Pointillism",
                                                                   "Georges Seurat"]
    assert traces[0].metrics["RR@dense"] == 0.5 and traces[0].metrics["RR@rerank"] == 1.0
    assert traces[1].stages[1].candidates == ()  # the reranker kept nothing for q1
    # the first file searched the corpus, the second re-ranked what the first kept
    assert [(s.n_in, s.settings["searched"]) for s in traces[0].stages] == [
        (len(TINY_DOCS), f"the corpus {traces[0].corpus['name']!r}"), (2, "what dense kept")]
    assert traces[0].config["tags"] == {"dense": "mine", "rerank": "mine"}
    store.close()
    (tmp_path / "rerank.run").write_text("q0 Q0 Georges_Seurat one 0.99 mine\n")
    assert main(args) == 2
    assert "rerank.run, line 1: field 'rank'" in capsys.readouterr().err
    store = SessionStore(db)
    assert len(EvaluationStore(store).list()) == 1  # nothing more stored
    store.close()
