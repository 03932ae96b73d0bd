"""An evaluation job over the toy 'echo' paradigm and a real DuckDB file: every question's
runs stored as it finishes, running means, a seeded sample, cancel, a failed question kept
as failed."""

from __future__ import annotations

import time

import pytest

from engine.documents import Question
from engine.errors import ConfigError
from engine.service.evaluation_jobs import EvaluationJob, code_version
from engine.service.evaluation_request import EvaluationRequest
from engine.store.evaluations import EvaluationStore
from engine.store.sessions import SessionStore
from tests.fakes import Clock

QUESTIONS = tuple(Question(f"q{i}", text, answers=(answer,), supporting_titles=(title,))
                  for i, (text, answer, title) in enumerate([
                      ("Who painted A Sunday Afternoon?", "Georges Seurat", "Georges Seurat"),
                      ("Which river flows through Budapest?", "Danube", "Danube"),
                      ("Who devised pointillism?", "Georges Seurat", "Pointillism")]))


@pytest.fixture()
def evaluations(tmp_path):
    store = SessionStore(tmp_path / "sessions.duckdb")
    yield EvaluationStore(store)
    store.close()


def _request(**changes):
    values = {"dataset": "toy", "questions": QUESTIONS, "paradigms": ("echo",),
              "configs": {"echo": {"k": 1}}}
    return EvaluationRequest(**{**values, **changes})


def test_a_job_stores_every_question_and_its_summary(evaluations, tiny_corpus, echo):
    job = EvaluationJob(evaluations, tiny_corpus, _request(name="toy run")).start()
    job.wait(60)
    status = job.status()
    assert (status.state, status.done, status.total) == ("done", 3, 3)
    assert status.seconds_left == 0 and status.means["echo"]["questions"] == 3
    stored = evaluations.get(job.id)
    assert (stored.state, stored.done, stored.name) == ("done", 3, "toy run")
    assert stored.configs == {"echo": {"k": 1, "voice": "plain"}}
    assert stored.corpus_fingerprint == tiny_corpus.fingerprint
    assert stored.code_version == code_version() != ""
    assert stored.summary["echo"]["EM"] == pytest.approx(2 / 3, abs=1e-4)  # "Georges Seurat" twice


def test_a_finished_evaluation_reports_the_time_it_took_not_the_time_since(
        evaluations, tiny_corpus, echo, monkeypatch):
    """Reopened minutes later, "5 of 5 questions in 54 s" must not become "in 248 s"."""
    clock = Clock()
    monkeypatch.setattr(EvaluationJob, "clock", clock)
    job = EvaluationJob(evaluations, tiny_corpus, _request())
    clock.advance(54.0)
    job.run()
    assert job.status().seconds == 54.0
    clock.advance(194.0)
    assert job.status().seconds == 54.0
    stored = evaluations.get(job.id)  # the store's own timestamps: the real clock's
    assert stored.seconds is not None and stored.seconds <= 1.0
    time.sleep(0.2)  # more than its rounding (0.1 s): read later, it says the same
    assert evaluations.get(job.id).seconds == stored.seconds
    assert [r["question_id"] for r in evaluations.rows(job.id)] == ["q0", "q1", "q2"]
    assert evaluations.trace(job.id, 1, "echo").question == QUESTIONS[1].text


def test_a_seeded_sample_is_reproducible_and_in_file_order():
    one, two = (_request(sample=2, seed=7).chosen() for _ in range(2))
    assert one == two and len(one) == 2 and one[0][0] < one[1][0]
    assert [p for p, _ in _request(limit=2).chosen()] == [0, 1]


def test_cancel_stops_after_the_question_in_flight(evaluations, tiny_corpus, echo):
    job = EvaluationJob(evaluations, tiny_corpus, _request())
    job.cancel()  # before it starts: nothing runs, the evaluation is kept as cancelled
    job.run()
    assert job.status().state == "cancelled" and evaluations.get(job.id).done == 0


def test_a_failing_question_is_stored_as_failed_and_the_others_go_on(evaluations,
                                                                     tiny_corpus, echo,
                                                                     monkeypatch):
    """A run that raises is a failed run naming the error: the evaluation goes on, counts
    it as failed, keeps it out of the means and out of the outcomes (it lost no gold)."""
    from tests.fakes import EchoParadigm

    job = EvaluationJob(evaluations, tiny_corpus, _request())
    real = EchoParadigm.run  # the job makes its paradigms once what they use is prepared
    calls = []

    def flaky(self, question):
        calls.append(question)
        if len(calls) == 2:
            raise RuntimeError("the reader ran out of memory")
        return real(self, question)

    monkeypatch.setattr(EchoParadigm, "run", flaky)
    job.run()
    stored = evaluations.get(job.id)
    assert (stored.state, stored.done) == ("done", 3)
    rows = evaluations.rows(job.id)
    assert [r["status"] for r in rows] == ["answered", "failed", "answered"]
    assert rows[1]["error"] == "RuntimeError: the reader ran out of memory"
    assert rows[1]["outcome"] == {"answer": None, "support": None, "relevant": None,
                                  "sentences": None}
    means = stored.summary["echo"]
    assert (means["questions"], means["failed"]) == (3, 1)
    # the means are over the two answered questions only
    assert means["EM"] == pytest.approx((rows[0]["metrics"]["EM"] + rows[2]["metrics"]["EM"])
                                        / 2)
    failed = evaluations.trace(job.id, 1, "echo")
    assert failed.error.startswith("RuntimeError")
    from app.views.gold import gold_banner

    assert "This run failed, so it lost nothing" in gold_banner(failed)  # opened in Explore


@pytest.mark.parametrize(("changes", "message"), [
    ({"paradigms": ()}, "at least one paradigm"),
    ({"questions": ()}, "holds no questions"),
    ({"limit": -1}, r"limit=-1 \(First N questions\) is out of range"),
    ({"limit": 2, "sample": 2}, "not both"),
])
def test_bad_requests_are_named(changes, message):
    with pytest.raises(ConfigError, match=message):
        _request(**changes)


def test_a_bad_config_is_refused_before_anything_is_stored(evaluations, tiny_corpus, echo):
    with pytest.raises(ConfigError, match="k=9 is out of range"):
        EvaluationJob(evaluations, tiny_corpus, _request(configs={"echo": {"k": 9}}))
    assert evaluations.list() == []


def test_the_status_line_counts_failed_runs_and_questions_not_run():
    from app.views.evaluation import progress_html
    from engine.service.evaluation_jobs import EvaluationStatus

    line = progress_html(EvaluationStatus(
        id=4, state="cancelled", done=3, total=5, seconds=9.0,
        means={"echo": {"questions": 3, "failed": 1}, "flat": {"questions": 3,
                                                           "no candidates": 2}}))
    assert ("3 of 5 questions in 9 s; 1 run failed; 2 runs found no candidates; "
            "2 questions not run") in line
