"""What a new user tripped on in Explore and the Corpora tab (issue 35), tried as they tried
it: the app served in this process over the tiny corpus with the toy paradigm 'echo' (no
models, so it is ready at once), driven through the real gradio_client and a real headless
Chromium. tests/test_explore_tab.py checks the same callbacks without a browser.

The browser tests need Debian's chromium and the playwright package; they are skipped,
saying so, where either is missing. Screenshots go to FUNNEL_ARTIFACTS (default:
<repo>/test-artifacts).
"""

from __future__ import annotations

import json
import re
import socket

import pytest

from engine.paradigms.needs import Need
from tests.conftest import ARTIFACTS
from tests.fakes import EchoParadigm, upload
from tests.test_corpora import corpus_only, tiny_rows, write_jsonl

pytestmark = pytest.mark.live

QUESTION = "Who painted A Sunday Afternoon?"
LONG = ("Seurat painting " * 1_250)[:19_999] + "?"  # 20,000 characters: the UI once cut it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def slow_index(monkeypatch):
    """echo with k > 1 needs an index estimated at 15 minutes here (as another
    passage_tokens needs a new dense index), with k = 1 none."""
    def needs(cls, config):
        if config.k == 1:
            return ()
        return (Need(f"echo index {config.k}", f"echo index (k={config.k})",
                     lambda corpus, progress, store: None, slow=True,
                     build_seconds=lambda corpus: 900.0),)

    monkeypatch.setattr(EchoParadigm, "needs", classmethod(needs))


@pytest.fixture
def echo_app(prepared, tmp_path, slow_index):
    """(url, client) of the whole app served in this process over the tiny corpus; added
    corpora only load (no index is built for them)."""
    from app.style import CSS
    from app.ui import build_app
    from engine.service.explorer import Explorer
    from tests.fakes import gradio_client

    explorer = Explorer(*prepared, corpus_root=tmp_path, preparing=corpus_only)
    demo = build_app(explorer)
    port = _free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                        quiet=True, css=CSS)
    url = f"http://127.0.0.1:{port}/"
    try:
        yield url, gradio_client(url)
    finally:
        demo.close()


def test_api_refuses_a_long_question_and_a_long_build_and_saves_a_run_once(echo_app):
    from gradio_client.exceptions import AppError

    _, client = echo_app
    with pytest.raises(AppError, match="The question has 20,000 characters; the limit is "
                                       "8,000. Shorten it."):
        client.predict(LONG, "echo", "", api_name="/run")
    with pytest.raises(AppError, match=r"echo index \(k=3\): about 15 min on this machine.*"
                                       r"pass build=True"):
        client.predict(QUESTION, "echo", '{"k": 3}', api_name="/run")
    trace = client.predict(QUESTION, "echo", '{"k": 3}', "", True, api_name="/run")
    assert json.loads(trace)["config"]["k"] == 3
    run_id = client.predict(trace, "api run", "", api_name="/save_run")
    with pytest.raises(AppError, match=f"already saved as run {run_id} \\('api run'\\)"):
        client.predict(trace, "twice", "", api_name="/save_run")
    assert [r["id"] for r in json.loads(client.predict(api_name="/list_runs"))] == [run_id]



def _run(page, question: str, k: int = 1) -> None:
    page.locator("#fe-question textarea").fill(question)
    page.locator("#fe-echo-k input").fill(str(k))
    page.locator("#fe-run").click()


def test_browser_explore_clears_a_refused_run_saves_once_and_asks_before_a_build(
        echo_app, browser):
    from playwright.sync_api import expect

    url, client = echo_app
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(url)
    page.locator("#fe-paradigm input[value=echo]").check()
    page.locator("#fe-params-echo").get_by_text("options").click()  # open the echo panel
    answer, notice = page.locator("#fe-answer"), page.locator("#fe-notice")
    name, notes = page.locator("#fe-save-name textarea"), page.locator("#fe-save-notes textarea")
    _run(page, QUESTION)
    expect(answer).to_contain_text("Georges Seurat", timeout=30_000)

    # saved once: the name and notes clear; a second Save names the run it is saved as
    name.fill("first")
    notes.fill("notes of the first run")
    page.locator("#fe-save").click()
    saved = page.locator("#fe-saved")
    expect(saved).to_contain_text(re.compile(r"Saved as run \d+\."), timeout=10_000)
    run_id = re.search(r"run (\d+)", saved.inner_text()).group(1)
    expect(name).to_have_value("")
    expect(notes).to_have_value("")
    page.locator("#fe-save").click()
    expect(saved).to_contain_text(f"already saved as run {run_id} ('first')", timeout=10_000)
    notes.fill("typed for the first run, never saved")
    _run(page, QUESTION)  # a new run: nothing of the last one carries over to its save
    expect(notes).to_have_value("", timeout=10_000)
    expect(saved).to_have_text("")

    # refused: the last run's answer and figures go, they were another question's
    expect(page.locator("#fe-funnel .js-plotly-plot")).to_have_count(1, timeout=30_000)
    _run(page, "   ")
    expect(notice).to_contain_text("The question is empty", timeout=10_000)
    assert "Traceback" not in page.content()
    expect(answer).to_have_text("")
    expect(page.locator("#fe-funnel .js-plotly-plot")).to_have_count(0)
    expect(page.locator("#fe-tables")).to_have_text("")

    # over the limit: refused as the API refuses it, in the same words
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as api:
        client.predict(LONG, "echo", "", api_name="/run")
    page.locator("#fe-question textarea").fill(LONG)
    page.locator("#fe-run").click()
    expect(notice).to_contain_text(str(api.value), timeout=10_000)
    expect(answer).to_have_text("")

    # a long build is named with its estimate and waits for "Build and run"
    build = page.locator("#fe-build-run")
    _run(page, QUESTION, k=3)
    expect(notice).to_contain_text("echo index (k=3): about 15 min on this machine",
                                   timeout=10_000)
    expect(build).to_be_visible()
    expect(answer).to_have_text("")
    page.screenshot(path=str(ARTIFACTS / "explore-build-asked.png"), full_page=True)
    build.click()
    expect(answer).to_contain_text("Georges Seurat", timeout=30_000)
    expect(notice).to_contain_text("Building first: echo index (k=3)")
    expect(build).to_be_hidden()


def test_browser_run_clears_the_last_answer_at_once_while_it_waits_its_turn(
        echo_app, browser, monkeypatch):
    """Under load a run waited ~20 s for the server with the last run's answer on screen.
    One page's run is held in the paradigm, so another page's run waits in the queue:
    the browser clears the last answer and says a run is under way before the server
    takes it, and the new answer shows once it does."""
    import threading

    from playwright.sync_api import expect

    release, steps = threading.Event(), EchoParadigm.steps

    def held(self, question):
        if "held" in question:
            release.wait(60)
        yield from steps(self, question)

    monkeypatch.setattr(EchoParadigm, "steps", held)
    url, _ = echo_app
    pages = [browser.new_page(viewport={"width": 1400, "height": 900}) for _ in range(2)]
    for page in pages:
        page.goto(url)
        page.locator("#fe-paradigm input[value=echo]").check()
        page.locator("#fe-params-echo").get_by_text("options").click()
    other, page = pages
    answer, notice = page.locator("#fe-answer"), page.locator("#fe-notice")
    try:
        _run(page, QUESTION)
        expect(answer).to_contain_text("Georges Seurat", timeout=30_000)
        expect(page.locator("#fe-funnel .js-plotly-plot")).to_have_count(1)
        _run(other, QUESTION + " (held)")  # takes the run's one place in the queue
        expect(other.locator("#fe-notice")).to_contain_text("Running echo", timeout=30_000)
        _run(page, QUESTION)
        expect(notice).to_contain_text("Running echo", timeout=5_000)
        page.screenshot(path=str(ARTIFACTS / "explore-run-waiting.png"))
        expect(answer.locator(".fe-answer-box")).to_have_count(0)  # Gradio's queue line stays
        expect(page.locator("#fe-funnel .js-plotly-plot")).to_have_count(0)
        expect(page.locator("#fe-tables")).to_have_text("")
        expect(page.locator("#fe-tables .fe-stage")).to_have_count(0)
        assert not release.is_set()  # the server has not taken this page's run yet
    finally:
        release.set()
    expect(answer).to_contain_text("Georges Seurat", timeout=30_000)
    expect(notice).not_to_contain_text("Running", timeout=10_000)
    expect(other.locator("#fe-answer")).to_contain_text("Georges Seurat", timeout=30_000)


def test_browser_status_is_one_line_worst_news_first_and_stays_as_the_user_left_it(
        echo_app, browser, monkeypatch):
    """Seen: while anything built or failed, the opened status box filled two-thirds of a
    900-px screen and pushed the tabs below the fold."""
    from playwright.sync_api import expect

    from engine.paradigms.registry import PARADIGMS
    from engine.service.catalog import Catalog

    failures = ["fetching the QA data: FAILED - No network answers for the QA data",
                "train selection classifier: FAILED - out of memory"]
    monkeypatch.setattr(Catalog, "failures", lambda self: list(failures))
    # all but echo wait, so the status keeps polling meanwhile
    monkeypatch.setattr(Catalog, "ready", lambda self, name=None, corpus="": name == "echo")
    url, _ = echo_app
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    status = page.locator("#fe-status")
    label = status.locator("button.label-wrap > span").first
    expect(label).to_contain_text("✖ 2 tasks failed: fetching the QA data", timeout=30_000)
    assert label.inner_text().index("Waiting: ") < label.inner_text().index("Answering: echo")
    assert status.bounding_box()["height"] < 80  # one line
    tabs = page.get_by_role("tab", name="Diagnose")
    assert tabs.bounding_box()["y"] + tabs.bounding_box()["height"] < 900 / 3
    page.screenshot(path=str(ARTIFACTS / "status-folded.png"))
    label.click()  # opened by the user: the lines, failures first, within a third
    lines = page.locator("#fe-status-lines li")
    expect(lines.first).to_contain_text("FAILED - No network answers")
    assert page.locator("#fe-status-lines ul").bounding_box()["height"] <= 900 / 3 + 1
    page.screenshot(path=str(ARTIFACTS / "status-opened.png"))
    failures.pop()  # the next poll says so, and leaves the box open as the user left it
    expect(label).to_contain_text("✖ 1 task failed", timeout=30_000)
    expect(page.locator("#fe-status-lines")).to_be_visible()
    assert [p for p in PARADIGMS if p != "echo"][0] in label.inner_text()  # a waiting one


def _offered(page, elem_id: str) -> list[str]:
    """The options a dropdown offers, as the browser lists them."""
    page.locator(f"#{elem_id} input").click()
    options = page.locator(f"#{elem_id} ul[role=listbox] [role=option]")
    options.first.wait_for(timeout=10_000)
    names = [t.split("\n")[-1].strip() for t in options.all_inner_texts()]  # after "✓"
    page.keyboard.press("Escape")
    return names


def test_browser_remove_asks_first_and_no_corpus_choice_keeps_a_removed_or_failed_one(
        echo_app, browser, tmp_path):
    from playwright.sync_api import expect

    url, _ = echo_app
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.get_by_role("tab", name="Corpora").click()
    table = page.locator("#fe-corpora-table")
    for corpus, rows, state in [("broken", [{"id": "a", "title": "A"}], "failed"),
                                ("gone", tiny_rows(), "ready")]:
        upload(page, "fe-corpus-file", write_jsonl(tmp_path / f"{corpus}.jsonl", rows))
        page.locator("#fe-corpus-name textarea").fill(corpus)
        page.locator("#fe-corpus-add").click()
        expect(table.locator(f"tr[data-corpus={corpus}] td").nth(2)).to_have_text(
            state, timeout=30_000)
    page.get_by_role("tab", name="Explore").click()
    offered = _offered(page, "fe-corpus")
    assert "gone" in offered and "broken" not in offered, offered  # nothing runs over it

    page.get_by_role("tab", name="Corpora").click()
    page.locator("#fe-corpus-remove-name input").click()
    page.locator("#fe-corpus-remove-name").get_by_role("option", name="gone").click()
    message = page.locator("#fe-corpora-message")
    page.locator("#fe-corpus-remove").click()
    expect(message).to_contain_text("Press Remove again to remove corpus gone",
                                    timeout=10_000)
    expect(table.locator("tr[data-corpus=gone]")).to_have_count(1)  # not removed yet
    page.screenshot(path=str(ARTIFACTS / "corpora-remove-asked.png"), full_page=True)
    page.locator("#fe-corpus-remove").click()
    expect(message).to_contain_text("Removed corpus gone.", timeout=10_000)
    expect(table.locator("tr[data-corpus=gone]")).to_have_count(0)
    page.locator("#fe-corpus-remove").click()  # twice: once "not in the list of choices"
    expect(message).to_contain_text("Choose an added corpus to remove", timeout=10_000)
    assert not page.locator(".toast-body").filter(has_text="not in the list").count()
    for tab, elem_id in [("Explore", "fe-corpus"), ("Compare", "fe-compare-corpus"),
                         ("Annotate", "fe-annotate-corpus"), ("Evaluate", "fe-eval-corpus")]:
        page.get_by_role("tab", name=tab).click()
        offered = _offered(page, elem_id)
        assert "gone" not in offered and "broken" not in offered and "tiny" in offered, (
            tab, offered)
    assert not [e for e in errors if "not in the list" in e]
