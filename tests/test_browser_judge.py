"""Judging your corpus as a user meets it in Chromium (issue 53): a question set pasted for
an added corpus, pooled by a paradigm, then graded with the keyboard (3, s, u), each grade
counted at once, a missing assessor refused by name.

The app is served from this process over the tiny corpus with the toy paradigm 'echo'.
Screenshots go to FUNNEL_ARTIFACTS."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ARTIFACTS, TINY_DOCS
from tests.fakes import seeded_app
from tests.test_corpora import corpus_only

pytestmark = pytest.mark.live


def _added_corpus(env, explorer, preparation, store, corpus):
    from engine.data.ingest import store as store_corpus
    from engine.documents import Document

    store_corpus("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")


@pytest.fixture()
def served(tmp_path):
    with seeded_app(tmp_path, _added_corpus, preparing=corpus_only) as (url, _):
        yield url


def test_a_pasted_question_set_is_pooled_and_graded_with_the_keys(served, browser):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(served)
    page.get_by_role("tab", name="Judge").click()
    page.get_by_text("1. A question set").click()
    page.locator("#fe-judge-corpus input").click()
    page.locator("#fe-judge-corpus").get_by_role("option", name="docs").click()
    page.locator("#fe-judge-set textarea, #fe-judge-set input").first.fill("support")
    page.locator("#fe-judge-pasted textarea").fill("Who painted La Grande Jatte?\n"
                                                  "Which river flows through Budapest?")
    page.locator("#fe-judge-add").click()
    message = page.locator("#fe-judge-message")
    expect(message).to_contain_text("Question set docs (support): 2 questions",
                                    timeout=30_000)
    page.get_by_text("2. A pool").click()
    # the new question set is picked for pooling already
    expect(page.locator("#fe-judge-dataset input")).to_have_value("docs (support)")
    for box in page.locator("#fe-judge-paradigms input[type=checkbox]").all():
        box.uncheck()
    page.locator("#fe-judge-paradigms").get_by_label(re.compile("Echo")).check()
    page.locator("#fe-judge-depth input").fill("2")
    page.locator("#fe-judge-pool").click()
    expect(message).to_contain_text("4 units: about 80 s", timeout=60_000)
    expect(message).to_contain_text("Pool 1 of evaluation 1")
    page.locator("#fe-judge-start").click()  # nobody named: refused by name
    expect(page.locator("#fe-judge-card")).to_contain_text("Say who is judging",
                                                           timeout=30_000)
    page.locator("#fe-judge-assessor textarea, #fe-judge-assessor input").first.fill("ann")
    page.locator("#fe-judge-start").click()
    card = page.locator("#fe-judge-card")
    expect(card).to_contain_text("0 of 4 judged", timeout=30_000)
    expect(card).to_contain_text("Who painted La Grande Jatte?")
    expect(card.locator("mark").first).to_be_visible()  # the question's words marked
    page.locator("body").click(position={"x": 5, "y": 5})  # keys go to the page, not a box
    page.keyboard.press("3")
    expect(card).to_contain_text("1 of 4 judged", timeout=30_000)
    page.keyboard.press("s")
    page.keyboard.press("u")
    expect(card).to_contain_text("0 of 4 judged", timeout=30_000)
    page.keyboard.press("2")
    expect(card).to_contain_text("1 of 4 judged", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "judge.png"), full_page=True)
    page.get_by_text("Judgments out and in").click()  # the grade as TREC qrels
    page.locator("#fe-judge-export").click()
    expect(message).to_contain_text("1 judgment of docs (support) as qrels", timeout=30_000)
    link = page.locator("#fe-judge-exported a").first.get_attribute("href")
    qrels = page.request.get(link if link.startswith("http") else served + link).text()
    assert qrels.endswith("\t2\n") and qrels.startswith("q1\t0\t")
