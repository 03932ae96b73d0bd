"""An interrupted evaluation as a user meets it in Chromium at 1400 px (issue 50, point 7):
opened in Evaluate, its stored questions' table and plots marked partial in the warning
style (it showed no table, "No evaluation yet" twice, in the success style), Resume runs the
questions it lacks to the end, Remove deletes it on a second click; and Sessions' import of
a JSON trace file of another shape, refused by its field in the page.

The app is served from this process over the tiny corpus with the toy paradigm 'echo':
nothing loads a model. A screenshot goes to FUNNEL_ARTIFACTS."""

from __future__ import annotations

import pytest

from tests import test_live_app as live
from tests.fakes import EchoParadigm, qa_file, seeded_app, upload

pytestmark = pytest.mark.live


@pytest.fixture()
def served(tmp_path):
    """(url, id of an evaluation of five questions interrupted after two)."""
    from engine.store.evaluations import EvaluationStore

    def seed(env, explorer, preparation, store, corpus):
        real = EchoParadigm.run

        def dies(self, question):  # the process is killed after the second question
            if question.id == "q1":
                for job in explorer._jobs._jobs.values():
                    job.cancel()
            return real(self, question)

        env.setattr(EchoParadigm, "run", dies)
        evaluation = explorer.evaluations.evaluate(qa_file(tmp_path / "qa.jsonl", n=5), ["echo"])
        explorer.evaluations.wait_for_evaluation(evaluation, 60)
        env.setattr(EchoParadigm, "run", real)
        store.execute("UPDATE evaluations SET state = 'running', summary = NULL, finished = "
                      "NULL WHERE id = ?",
                      [evaluation])
        del explorer._jobs._jobs[evaluation]
        assert EvaluationStore(store).mark_interrupted() == 1  # as the next start does
        return evaluation

    with seeded_app(tmp_path, seed) as (url, evaluation):
        yield url, evaluation


def test_an_interrupted_evaluation_is_partial_then_resumed_then_removed(served, browser):
    from playwright.sync_api import expect

    url, evaluation = served
    live.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(url)
    page.get_by_role("tab", name="Evaluate").click()
    page.locator("#fe-eval-ids textarea, #fe-eval-ids input").first.fill(str(evaluation))
    page.locator("#fe-eval-open").click()
    progress = page.locator("#fe-eval-progress")
    expect(progress).to_contain_text("interrupted, 2 of 5 questions", timeout=30_000)
    expect(progress.locator(".fe-error")).to_be_visible()  # the warning style
    table = page.locator("#fe-eval-table")
    expect(table.locator(".fe-partial")).to_contain_text(
        "Partial: interrupted after 2 of 5 questions")
    expect(table.locator("table.fe-eval")).to_contain_text("echo")
    for plot in ("#fe-eval-recall", "#fe-eval-latency"):
        expect(page.locator(plot)).to_contain_text("partial: 2 of 5 questions")
        expect(page.locator(plot)).not_to_contain_text("No evaluation yet")
    resume, remove = page.locator("#fe-eval-resume"), page.locator("#fe-eval-remove")
    expect(resume).to_be_visible()
    expect(remove).to_be_visible()
    page.screenshot(path=str(live.ARTIFACTS / "evaluate_interrupted_1400.png"), full_page=True)

    resume.click()
    expect(progress).to_contain_text("done, 5 of 5 questions", timeout=60_000)
    expect(progress.locator(".fe-kept")).to_be_visible()
    expect(table).not_to_contain_text("Partial")
    expect(resume).to_be_hidden()

    remove.click()
    expect(progress).to_contain_text(f"Press Remove again to delete evaluation {evaluation}")
    remove.click()
    expect(progress).to_contain_text(f"Removed evaluation {evaluation}")
    expect(page.locator("#fe-eval-list")).not_to_contain_text("five")
    expect(remove).to_be_hidden()


def test_a_trace_file_of_another_shape_is_refused_by_field_in_the_page(served, browser,
                                                                      tmp_path):
    """Sessions' import of `{"resourceSpans": "x"}` showed only red "Error" badges and
    toasts (an AttributeError in Gradio's queue): the refusal box names the field."""
    from playwright.sync_api import expect

    url, _ = served
    odd = tmp_path / "odd.json"
    odd.write_text('{"resourceSpans": "x"}')
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(url)
    page.get_by_role("tab", name="Sessions").click()
    page.get_by_text("Import a pipeline's runs").click()
    upload(page, "fe-import-files", odd)
    page.locator("#fe-import").click()
    message = page.locator("#fe-session-message")
    expect(message).to_contain_text("field 'resourceSpans': expected a list of resources, "
                                    "got a string", timeout=30_000)
    expect(message.locator(".fe-error")).to_be_visible()
    expect(page.get_by_text("Error", exact=True)).to_have_count(0)
