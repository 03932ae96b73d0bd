"""An evaluation that ended before every question ran resumes from the questions it lacks
(the toy 'echo' paradigm, a real DuckDB file): left running by a process that died, marked
interrupted at the next start, shown with its stored questions' means marked partial, then
resumed to the end with the same paradigms, configs and corpus; refused with the reason when
it was imported, is done, has no plan, or its corpus changed; removed on request."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError
from tests.fakes import qa_file


def test_an_interrupted_evaluation_shows_its_stored_questions_as_partial(interrupted):
    explorer, evaluation, _ = interrupted
    status = explorer.evaluations.evaluation_status(evaluation)
    assert (status.state, status.done, status.total) == ("interrupted", 2, 5)
    assert status.partial and status.means["echo"]["questions"] == 2
    assert "resume it to run the questions it lacks, or remove it" in status.error


def test_resume_runs_only_the_questions_it_lacks_with_the_same_configs(interrupted):
    explorer, evaluation, asked = interrupted
    before = explorer.evaluations.evaluation(evaluation)
    assert explorer.evaluations.resume_evaluation(evaluation) == evaluation
    explorer.evaluations.wait_for_evaluation(evaluation, 60)
    assert asked == ["q0", "q1", "q2", "q3", "q4"]  # q0 and q1 were not asked again
    status = explorer.evaluations.evaluation_status(evaluation)
    assert (status.state, status.done, status.total) == ("done", 5, 5)
    assert not status.partial and status.means["echo"]["questions"] == 5
    stored = explorer.evaluations.evaluation(evaluation)
    assert (stored.configs, stored.corpus_fingerprint, stored.name) == (
        before.configs, before.corpus_fingerprint, "five")
    rows = explorer.evaluations.evaluation_rows(evaluation)
    assert [(r["position"], r["question_id"]) for r in rows] == [(i, f"q{i}") for i in range(5)]
    with pytest.raises(ConfigError, match=f"Evaluation {evaluation} is done: only an "
                                          "interrupted, cancelled or failed evaluation"):
        explorer.evaluations.resume_evaluation(evaluation)


def test_a_resume_is_refused_with_the_reason(interrupted, tmp_path):
    explorer, evaluation, _ = interrupted
    store = explorer._evaluation_store.store
    store.execute("UPDATE evaluations SET corpus_fingerprint = 'f00d' WHERE id = ?",
                  [evaluation])
    with pytest.raises(ConfigError, match="searched corpus 'tiny' with fingerprint f00d; the "
                                          "corpus by that name now has fingerprint"):
        explorer.evaluations.resume_evaluation(evaluation)
    store.execute("UPDATE evaluations SET plan = NULL WHERE id = ?", [evaluation])
    with pytest.raises(ConfigError, match="stored before evaluations kept which questions"):
        explorer.evaluations.resume_evaluation(evaluation)
    assert explorer.evaluations.evaluation(evaluation).state == "interrupted"  # nothing changed

    from tests.test_traces import LLAMAINDEX

    imported = explorer.runs.import_pipeline(
        [(LLAMAINDEX.name, LLAMAINDEX.read_text(encoding="utf-8"))],
        "hotpotqa/train100.json", "li")
    with pytest.raises(ConfigError, match="was imported from another pipeline's files"):
        explorer.evaluations.resume_evaluation(imported.evaluation)


def test_a_finished_but_unmarked_evaluation_resumes_by_finishing(explorer, tmp_path):
    """Killed after its last question was stored, before it was marked done."""
    evaluation = explorer.evaluations.evaluate(qa_file(tmp_path / "qa.jsonl", n=2), ["echo"])
    explorer.evaluations.wait_for_evaluation(evaluation, 60)
    store = explorer._evaluation_store.store
    store.execute("UPDATE evaluations SET state = 'interrupted', summary = NULL WHERE id = ?",
                  [evaluation])
    assert explorer.evaluations.resume_evaluation(evaluation) == evaluation
    stored = explorer.evaluations.evaluation(evaluation)
    assert (stored.state, stored.summary["echo"]["questions"]) == ("done", 2)


def test_remove_deletes_an_evaluation_and_its_runs(interrupted):
    explorer, evaluation, _ = interrupted
    explorer.evaluations.remove_evaluation(evaluation)
    assert explorer.evaluations.list_evaluations() == []
    runs = explorer._evaluation_store.store.execute("SELECT count(*) FROM evaluation_runs")
    assert runs == [(0,)]
    with pytest.raises(ConfigError, match=f"No evaluation with id {evaluation}"):
        explorer.evaluations.remove_evaluation(evaluation)


def test_the_cli_resumes_a_stored_evaluation(tmp_path, echo, capsys, monkeypatch):
    """`funnel-engine eval --resume ID --db FILE`: the questions it lacks, over its corpus
    loaded by name; one lacking none is marked done; an unknown id is named."""
    import json

    from engine.cli.main import main
    from engine.data.corpus import load_corpus
    from engine.data.loaders import read_dataset
    from engine.documents import Corpus
    from engine.service.evaluation_jobs import EvaluationJob
    from engine.service.evaluation_request import EvaluationRequest
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore
    from tests.conftest import TINY_DOCS
    from tests.fakes import EchoParadigm

    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x})
                              for t, x in TINY_DOCS))
    corpus = Corpus(str(path), load_corpus(str(path)).documents)  # named as it loads
    questions = read_dataset(qa_file(tmp_path / "qa.jsonl", n=4)).questions
    db = tmp_path / "s.duckdb"
    store = SessionStore(db)
    evaluations = EvaluationStore(store)
    job = EvaluationJob(evaluations, corpus, EvaluationRequest(
        "qa", questions, ("echo",), {"echo": {"k": 1}}, limit=3))
    real = EchoParadigm.run

    def dies(self, question):
        if question.id == "q1":
            job.cancel()  # stops after this question: q0 and q1 stored
        return real(self, question)

    monkeypatch.setattr(EchoParadigm, "run", dies)
    job.run()
    assert (evaluations.get(job.id).state, evaluations.get(job.id).done) == ("cancelled", 2)
    store.close()
    monkeypatch.setattr(EchoParadigm, "run", real)

    assert main(["eval", "--resume", str(job.id), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"evaluation {job.id} done: 3 of 3 questions (1 run now)" in out  # limit 3
    assert "| echo | 3 |" in out
    store = SessionStore(db)
    assert [r["question_id"] for r in EvaluationStore(store).rows(job.id)] == ["q0", "q1",
                                                                               "q2"]
    store.close()
    assert main(["eval", "--resume", str(job.id), "--db", str(db)]) == 2
    assert f"Evaluation {job.id} is done" in capsys.readouterr().err
    assert main(["eval", "--resume", "99", "--db", str(db)]) == 2
    assert "No evaluation with id 99" in capsys.readouterr().err
    assert main(["eval"]) == 2
    assert "Give --dataset" in capsys.readouterr().err
