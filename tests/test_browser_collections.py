"""A test collection as a user meets it in Chromium (issue 52): a BEIR zip added in the
Corpora tab (its row names its splits), a bad one failed by file, line and field; its test
split picked in Evaluate picks its corpus, and the evaluation's table shows graded measures
per cut and "no answers"; Diagnose follows a relevant document; Explore shows a judged
question's relevant documents and where they were lost.

The app is served from this process over the tiny corpus with the toy paradigm 'echo'; an
added corpus is only read (no index built). Screenshots go to FUNNEL_ARTIFACTS."""

from __future__ import annotations

import re
import zipfile

import pytest

from tests.conftest import ARTIFACTS
from tests.fakes import seeded_app, upload
from tests.test_collection_eval import tiny_beir
from tests.test_corpora import corpus_only

pytestmark = pytest.mark.live
VIEWPORT = {"width": 1400, "height": 1400}


def zipped(folder, into):
    """The BEIR folder as BEIR ships it: a zip holding the folder."""
    with zipfile.ZipFile(into, "w") as archive:
        for path in folder.rglob("*"):
            archive.write(path, path.relative_to(folder.parent))
    return into


@pytest.fixture()
def served(tmp_path):
    with seeded_app(tmp_path, lambda *_: None, preparing=corpus_only) as (url, _):
        yield url


def add(page, path, name: str) -> None:
    upload(page, "fe-corpus-file", path)
    page.locator("#fe-corpus-name textarea, #fe-corpus-name input").first.fill(name)
    page.locator("#fe-corpus-add").click()


def test_a_beir_zip_added_in_the_browser_is_evaluated_and_diagnosed_by_its_judgments(
        served, browser, tmp_path):
    from playwright.sync_api import expect

    good = zipped(tiny_beir(tmp_path / "good"), tmp_path / "tinybeir.zip")
    bad = zipped(tiny_beir(tmp_path / "bad", dev="query-id\tcorpus-id\tscore\nq1\tNowhere\t1\n"),
                 tmp_path / "badbeir.zip")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(served)

    page.get_by_role("tab", name="Corpora").click()
    expect(page.locator("#fe-corpora-table")).to_contain_text("started with", timeout=30_000)
    add(page, good, "tiny-beir")
    row = page.locator("#fe-corpora-table tr[data-corpus='tiny-beir']")
    expect(row).to_contain_text("test collection: test (2 judged questions), train (1 judged "
                                "question)", timeout=60_000)
    expect(row).to_contain_text("ready", timeout=60_000)
    add(page, bad, "bad-beir")
    expect(page.locator("#fe-corpora-table tr[data-corpus='bad-beir']")).to_contain_text(
        "failed", timeout=60_000)
    expect(page.locator("#fe-corpora-table .fe-error")).to_contain_text(
        "badbeir.zip:tinybeir/qrels/dev.tsv, line 2: field 'corpus-id': names document "
        "'Nowhere', which the corpus lacks", timeout=60_000)
    # once nothing is prepared any more, the message says how the corpus added last ended
    expect(page.locator("#fe-corpora-message")).to_contain_text(
        "Corpus 'bad-beir' was refused and nothing of it was stored", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "corpora_collection.png"), full_page=True)

    page.get_by_role("tab", name="Evaluate").click()
    page.locator("#fe-eval-dataset input").click()
    page.locator("#fe-eval-dataset").get_by_role("option", name="tiny-beir (test)").click()
    expect(page.locator("#fe-eval-corpus input")).to_have_value("tiny-beir", timeout=30_000)
    for label in ("Flat", "FunnelRAG"):
        page.locator("#fe-eval-paradigms").get_by_label(re.compile(label)).uncheck()
    page.locator("#fe-eval-paradigms").get_by_label(re.compile("Echo")).check()
    page.locator("#fe-eval-start").click()
    expect(page.locator("#fe-eval-progress")).to_contain_text("done, 2 of 2 questions",
                                                             timeout=60_000)
    table = page.locator("#fe-eval-table table.fe-eval")
    for shown in ("relevant-document recall at overlap", "no answers"):
        expect(table).to_contain_text(shown)
    ranking = page.locator("#fe-eval-table table.fe-eval-ranking")
    for shown in ("nDCG@10", "MAP", "Judged@10", "nDCG'@10"):
        expect(ranking.locator("th", has_text=shown).first).to_be_visible()
    expect(ranking.locator("tbody tr").first).to_contain_text("echo")
    expect(table).not_to_contain_text("AR@1")
    page.screenshot(path=str(ARTIFACTS / "evaluate_collection.png"), full_page=True)
    evaluation = int(re.search(r"Evaluation (\d+): done",
                               page.locator("#fe-eval-progress").inner_text()).group(1))

    page.get_by_role("tab", name="Diagnose").click()
    message = page.locator("#fe-diag-message")
    expect(message).to_contain_text(f"Evaluation {evaluation} (", timeout=30_000)
    expect(message).to_contain_text("followed on a relevant document")
    expect(page.locator("#fe-diag-track input[value=relevant]")).to_be_checked()
    expect(page.locator("#fe-diag-track input[value=answer]")).to_have_count(0)  # none
    expect(page.locator("#fe-diag-bars")).to_contain_text("relevant")
    page.screenshot(path=str(ARTIFACTS / "diagnose_collection.png"), full_page=True)

    page.get_by_role("tab", name="Explore").click()
    page.locator("#fe-dataset input").click()
    page.locator("#fe-dataset").get_by_role("option", name="tiny-beir (test)").click()
    expect(page.locator("#fe-corpus input")).to_have_value("tiny-beir", timeout=30_000)
    page.locator("#fe-picked input").click()
    page.locator("#fe-picked").get_by_role(
        "option", name=re.compile("La Grande Jatte")).click()
    gold = page.locator("#fe-gold")
    expect(gold).to_contain_text("Judged relevant (grade): A Sunday Afternoon (2), "
                                 "Georges Seurat (1)", timeout=30_000)
    expect(gold).to_contain_text("Gold answers: none")
    page.locator("#fe-paradigm input[value=echo]").check()
    page.locator("#fe-run").click()
    banner = page.locator("#fe-banner")
    expect(banner).to_contain_text("A relevant document survived every stage. Judged: 2 "
                                   "relevant (grades 2, 1)", timeout=30_000)
    expect(page.locator("#fe-funnel")).to_contain_text("judged relevant (grade 2)")
    page.screenshot(path=str(ARTIFACTS / "explore_collection.png"), full_page=True)
    # a question typed over the picked one is not it: the pick and its gold note go
    page.locator("#fe-question textarea").fill("Who painted a river")
    page.locator("#fe-question textarea").press_sequentially("?")  # typed: Gradio's input
    expect(gold).not_to_contain_text("Judged relevant", timeout=30_000)
    expect(page.locator("#fe-picked input")).to_have_value("")
