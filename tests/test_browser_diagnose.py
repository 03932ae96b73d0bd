"""Diagnose's views, and the long tabs' contents lines, as a new user meets them in Chromium
at 1400x900: each of Diagnose's seven sub-tabs opened in the order they are read (what was
lost, is the difference real, which questions, why) shows its plot or table on a page at
most two screens tall (the one page they were on stood 2,835 px here, 5,356 px over real
data); each link of a long tab's contents line (Explore after a run, Compare, Sessions
with a run open, Annotate, Evaluate with an evaluation open, Corpora) brings its view to
the top of the screen, the line still above it; a short tab (Sweep) stays short without
one.

The app is served from this process over the tiny corpus with the toy paradigm 'echo': a
stored evaluation of hand-built flat and funnel runs (tests.test_diagnose_tab) over the
corpus as it is (so its coverage map is drawn, with the packaged encoder), an echo
evaluation with its ceilings, a saved run, and for Compare runs shaped like every built-in
paradigm's (tests.test_browser_analysis). Screenshots of the viewport go to
FUNNEL_ARTIFACTS (default <repo>/test-artifacts), for the docs: diagnose-<view>.png per
sub-tab, tab-<tab>.png per tab; page-heights.json records each page's height.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ARTIFACTS
from tests.fakes import qa_file, seeded_app
from tests.test_browser_analysis import QUESTION, shaped, shaped_run
from tests.test_diagnose_tab import flat_run, funnel_run, store_evaluation

pytestmark = [pytest.mark.live, pytest.mark.docs]  # the docs' pages: .ci/run runs them
VIEWPORT = {"width": 1400, "height": 900}
# a view's page: the app's title, status and tabs, the evaluation picked, then one view
# (the outcomes' bars and questions, the longest here, come to 1,182 px)
MOST = 2 * VIEWPORT["height"]
HEIGHT = "() => document.documentElement.scrollHeight"
HEIGHTS: dict[str, int] = {}


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    """(url, id of the evaluation of flat and funnel, id of the echo evaluation that has
    ceilings); the first is the newest, so Diagnose opens on it."""
    root = tmp_path_factory.mktemp("diagnosed")

    def seed(env, explorer, preparation, store, corpus):
        shaped(explorer)
        echo = explorer.evaluations.evaluate(qa_file(root / "qa.jsonl", n=3), ["echo"],
                                             {"echo": {"k": 1}}, name="echo")
        explorer.evaluations.wait_for_evaluation(echo, 60)
        explorer.evaluations.wait_for_evaluation(explorer.evaluations.ceilings(echo), 60)
        explorer.runs.save_run(shaped_run(QUESTION, "funnel"), "funnel, shaped")  # for Sessions
        return store_evaluation((preparation, store), [flat_run, funnel_run],
                                fingerprint=corpus.fingerprint), echo

    with seeded_app(root, seed) as (url, (mixed, echo)):
        try:
            yield url, mixed, echo
        finally:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "page-heights.json").write_text(json.dumps(HEIGHTS, indent=1))


def _diagnose(browser, url: str, evaluation: int):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    page.get_by_role("tab", name="Diagnose").click()
    expect(page.locator("#fe-diag-message")).to_contain_text("Evaluation", timeout=30_000)
    if f"Evaluation {evaluation} (" not in page.locator("#fe-diag-message").inner_text():
        page.locator("#fe-diag-id input").click()
        page.locator("#fe-diag-id").get_by_role(
            "option", name=re.compile(rf"^{evaluation}: ")).click()
    expect(page.locator("#fe-diag-message")).to_contain_text(f"Evaluation {evaluation} (",
                                                             timeout=30_000)
    return page


def _lost(page):
    from playwright.sync_api import expect

    segment = page.locator("#fe-diag-segment input")
    expect(segment).to_have_value("flat · lost at reranker (3)", timeout=30_000)
    expect(page.locator("#fe-diag-rows")).to_contain_text("Who painted picture 2?")
    # left and opened again (the view is drawn anew), a click on a bar still lists its
    # questions
    page.locator("#fe-diag-tab-flow-button").click()
    page.locator("#fe-diag-flow .js-plotly-plot").wait_for(timeout=30_000)
    page.locator("#fe-diag-tab-lost-button").click()
    bars = page.locator("#fe-diag-bars .barlayer .trace.bars")
    expect(bars.first).to_be_visible(timeout=30_000)
    page.wait_for_function("document.querySelector('#fe-diag-bars .js-plotly-plot')"
                           "?.dataset.feClicks", timeout=30_000)
    names = [bars.nth(i).evaluate("e => e.__data__[0].trace.name")
             for i in range(bars.count())]
    box = bars.nth(names.index("answered right")).locator(".point path").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(segment).to_have_value("flat · answered right (2)", timeout=30_000)
    expect(page.locator("#fe-diag-rows")).to_contain_text("Who painted picture 4?")
    return page.locator("#fe-diag-rows")


def _flow(page):
    from playwright.sync_api import expect

    expect(page.locator("#fe-diag-flow")).to_contain_text("kept by reranker (2)",
                                                          timeout=30_000)
    return page.locator("#fe-diag-flow .js-plotly-plot")


def _ceilings(page):
    from playwright.sync_api import expect

    page.locator("#fe-diag-ceilings-show").click()
    expect(page.locator("#fe-diag-ceilings")).to_contain_text("perfect cut 1 (overlap)",
                                                              timeout=30_000)
    return page.locator("#fe-diag-ceilings-plot .js-plotly-plot")


def _paired(page):
    from playwright.sync_api import expect

    expect(page.locator("#fe-diag-b input")).to_have_value("funnel")
    page.locator("#fe-diag-pair").click()
    expect(page.locator("#fe-diag-paired")).to_contain_text(
        "paired over 6 shared questions", timeout=30_000)
    return page.locator("#fe-diag-paired table")


def _changed(page):
    from playwright.sync_api import expect

    # A and B were picked in the view before: this one says which they are
    expect(page.locator("#fe-diag-changes-pick")).to_contain_text(
        "B = funnel of this evaluation against A = flat of this evaluation")
    page.locator("#fe-diag-changes").click()
    expect(page.locator("#fe-diag-changes-message")).to_contain_text("1 regressed",
                                                                     timeout=30_000)
    page.locator("#fe-diag-changes-rows [data-testid=cell-0-1]").click()
    expect(page.locator("#fe-diag-both")).to_contain_text("They part at cut 1",
                                                          timeout=30_000)
    return page.locator("#fe-diag-both table")


def _coverage(page):
    from playwright.sync_api import expect

    page.locator("#fe-diag-map-go").click()
    expect(page.locator("#fe-diag-far")).to_contain_text("6 questions in", timeout=120_000)
    return page.locator("#fe-diag-map .js-plotly-plot")


def _attention(page):
    from playwright.sync_api import expect

    page.locator("#fe-diag-ablation-go").click()
    expect(page.locator("#fe-diag-ablation")).to_contain_text(
        "No run of this evaluation has a leave-one-out attribution", timeout=30_000)
    return page.locator("#fe-diag-ablation")


def _assessors(page):
    from playwright.sync_api import expect

    page.locator("#fe-diag-assessors-go").click()  # a QA file's gold is no assessor's
    expect(page.locator("#fe-diag-assessors")).to_contain_text(
        "whose gold comes with it: no one judges it here", timeout=30_000)
    return page.locator("#fe-diag-assessors")


# each sub-tab in the order it is read: what shows it, and what must then be on screen
VIEWS = {"lost": _lost, "flow": _flow, "ceilings": _ceilings, "paired": _paired,
         "changed": _changed, "coverage": _coverage, "attention": _attention,
         "assessors": _assessors}


@pytest.mark.parametrize("view", list(VIEWS))
def test_each_diagnose_view_shows_its_content_on_a_page_at_most_two_screens_tall(
        diagnosed, browser, view):
    from playwright.sync_api import expect

    url, mixed, echo = diagnosed
    page = _diagnose(browser, url, echo if view == "ceilings" else mixed)
    tabs = page.locator("#fe-diag-views [role=tab]")
    assert [t.strip() for t in tabs.all_inner_texts()] == [
        "Where it is lost", "Flow", "Stage ceilings", "Is the difference real?",
        "Which questions changed", "Corpus coverage", "Attention vs. ablation", "Assessors"]
    page.locator(f"#fe-diag-tab-{view}-button").click()
    shown = VIEWS[view](page)
    expect(shown).to_be_visible(timeout=30_000)
    page.wait_for_timeout(500)  # plotly's resize to the panel
    box = shown.bounding_box()
    assert box["width"] > 600 and box["height"] > 40, box  # drawn, not squeezed
    height = page.evaluate(HEIGHT)
    HEIGHTS[f"Diagnose: {view}"] = height
    assert height <= MOST, f"the {view} view's page is {height} px tall"
    # no error on the way (switching to an evaluation of other paradigms once said "Value:
    # funnel is not in the list of choices: ['echo']")
    assert page.locator(".toast-body").all_inner_texts() == []
    if view != "lost":  # the first shows how an evaluation is picked; the rest, their view
        page.evaluate("document.querySelector('#fe-diag-message').scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / f"diagnose-{view}.png"))
    page.close()


# each long tab's contents line, as (tab, what fills it first, the links' views)
def _run_echo(page):
    page.locator("#fe-paradigm").get_by_text("Echo (a toy)").click()
    page.locator("#fe-question textarea").fill(QUESTION)
    page.locator("#fe-run").click()
    page.locator("#fe-tables table").first.wait_for(timeout=60_000)


def _compare(page):
    page.locator("#fe-compare-question textarea").fill(QUESTION)
    page.locator("#fe-compare-run").click()
    page.locator("#fe-compare-finals .fe-final-column").first.wait_for(timeout=60_000)


def _open_evaluation(evaluation: int):
    def fill(page):
        page.locator("#fe-eval-ids textarea").fill(str(evaluation))
        page.locator("#fe-eval-open").click()
        page.locator("#fe-eval-recall .js-plotly-plot").wait_for(timeout=60_000)
    return fill


def _open_run(page):
    page.locator("#fe-session-ids textarea").fill("1")
    page.locator("#fe-open").click()
    page.locator("#fe-session-tables table").first.wait_for(timeout=60_000)


def _nothing(page):
    page.wait_for_timeout(1000)


@pytest.mark.parametrize("tab", ["Explore", "Compare", "Sessions", "Annotate", "Evaluate",
                                 "Corpora"])
def test_a_long_tabs_contents_line_brings_each_view_to_the_top_and_stays_above_it(
        diagnosed, browser, tab):
    url, mixed, _ = diagnosed
    fill = {"Explore": _run_echo, "Compare": _compare, "Sessions": _open_run,
            "Evaluate": _open_evaluation(mixed)}.get(tab, _nothing)
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    page.get_by_role("tab", name=tab, exact=True).click()
    line = page.locator(".block.fe-contents:visible")
    line.wait_for(timeout=30_000)
    fill(page)
    page.wait_for_timeout(500)
    HEIGHTS[tab] = page.evaluate(HEIGHT)
    page.evaluate("window.scrollTo(0, 0)")  # as the tab opens (Evaluate's Open scrolled)
    page.screenshot(path=str(ARTIFACTS / f"tab-{tab.lower()}.png"))
    links = line.locator("a")
    reached = []
    for i in range(links.count()):
        target = page.locator(links.nth(i).get_attribute("href"))
        if not target.is_visible():  # e.g. Explore's re-answer before a run
            continue
        links.nth(i).click()
        page.wait_for_timeout(300)
        top, bar = target.bounding_box()["y"], line.bounding_box()
        # under the line, at the top of the screen (or as high as the page's end lets it)
        at_end = page.evaluate("window.scrollY + innerHeight >= "
                               "document.documentElement.scrollHeight - 2")
        assert bar["y"] >= -0.5 and bar["y"] + bar["height"] <= top + 0.5, (tab, i, top, bar)
        assert top < 120 or at_end and top < VIEWPORT["height"], (tab, i, top)
        reached.append(links.nth(i).inner_text())
    assert len(reached) >= 3, reached
    page.close()


def test_a_short_tab_stays_short_without_a_contents_line(diagnosed, browser):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(diagnosed[0])
    page.get_by_role("tab", name="Sweep").click()
    page.locator("#fe-sweep-ids textarea").fill(str(diagnosed[1]))
    page.locator("#fe-sweep-plot").click()  # its points, plotted: the longest it gets
    page.locator("#fe-sweep-frontier .js-plotly-plot").wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    HEIGHTS["Sweep"] = page.evaluate(HEIGHT)
    assert HEIGHTS["Sweep"] <= MOST and not page.locator(".block.fe-contents:visible").count()
    page.screenshot(path=str(ARTIFACTS / "tab-sweep.png"))
    page.close()
