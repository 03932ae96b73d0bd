"""The analysis views as a new user meets them in Chromium at 1400 and 1920 px: Evaluate's
upload box, Explore's funnel figure, Compare's timing chart and table, and Diagnose's
evaluation pickers and clickable bars.

The app is served from this process over the tiny corpus, with the toy paradigm 'echo',
two stored evaluations of hand-built runs (tests.test_diagnose_tab) and, for Compare, runs
shaped like every built-in paradigm's (their stages and LLM calls, no model): nothing loads
a model, so each test takes seconds. Layout is checked by measuring what is drawn: text
inside the box that clips it, a title apart from its subtitle, a legend without a
scrollbar. Screenshots go to FUNNEL_ARTIFACTS (default: <repo>/test-artifacts).
"""

from __future__ import annotations

import re

import pytest

from engine.trace import LLMStep, RunTrace
from tests import test_live_app as live
from tests.fakes import ranked_stage, seeded_app
from tests.test_diagnose_tab import flat_run, funnel_run, store_evaluation

pytestmark = pytest.mark.live

ARTIFACTS = live.ARTIFACTS

WIDTHS = (1400, 1920)
QUESTION = "Who painted A Sunday Afternoon?"
# each built-in paradigm's stages and LLM calls: five runs side by side have 16 steps
SHAPES = {"funnel": (("clusters", "preranker", "postranker"), ("answer",)),
          "flat": (("dense", "reranker"), ("answer",)),
          "longrag": (("units", "context"), ("long answer", "answer")),
          "drrag": (("bm25", "query-document concatenation", "forward selection"),
                    ("answer",)),
          "best": (("classify", "hybrid", "reranker", "summary"), ("hyde", "answer"))}


def shaped_run(question, name: str) -> RunTrace:
    """A run with the stage and LLM-call names of paradigm `name` (a typed question: no
    gold), each stage 0.1 s longer than the one before."""
    stages, calls = SHAPES[name]
    return RunTrace(str(question), name, {}, tuple(
        ranked_stage(stage, ("Seurat", "Georges Seurat painted it."), seconds=0.1 * (i + 1))
        for i, stage in enumerate(stages)), tuple(
        LLMStep(purpose, "fake", "p", "Georges Seurat", 10, 2, 0.5, answer="Georges Seurat")
        for purpose in calls), answer="Georges Seurat")


def shaped(explorer) -> None:
    """Compare's runs of the shaped paradigms come back shaped (shaped_run)."""
    runs = explorer.runs
    real_run = runs.run
    runs.run = lambda question, name, *rest, **given: (
        shaped_run(question, name) if name in SHAPES else real_run(question, name, *rest,
                                                                   **given))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, id of the evaluation of flat and funnel, id of the newer one of funnel)."""
    def seed(env, explorer, preparation, store, corpus):
        shaped(explorer)
        return (store_evaluation((preparation, store), [flat_run, funnel_run]),
                store_evaluation((preparation, store), [funnel_run], ids=range(3, 9)))

    with seeded_app(tmp_path_factory.mktemp("analysis"), seed) as (url, (mixed, newer)):
        yield url, mixed, newer


def _page(browser, url: str, width: int, tab: str):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": width, "height": 1200})
    page.goto(url)
    page.get_by_role("tab", name=tab).click()
    return page


# the client rect of the first text node under `root` holding `text` (of the text itself,
# not of its element, which may be as big as the box around it)
TEXT_RECT = """([root, text]) => {
  const walker = document.createTreeWalker(document.querySelector(root), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.textContent.indexOf(text);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + text.length);
    const r = range.getBoundingClientRect();
    return {x: r.left, y: r.top, width: r.width, height: r.height};
  }
  return null;
}"""


def _text_box(page, root: str, text: str) -> dict:
    box = page.evaluate(TEXT_RECT, [root, text])
    assert box is not None and box["width"] > 0, f"{text!r} is not drawn under {root}"
    return box


def _options(page, dropdown: str) -> list[str]:
    """An open dropdown's choices as shown, without the tick on the chosen one."""
    return [o.replace("✓", "").strip()
            for o in page.locator(dropdown).get_by_role("option").all_inner_texts()]


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 0.5 and inner["y"] >= outer["y"] - 0.5
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 0.5
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 0.5)


def _apart(a: dict, b: dict) -> bool:
    return (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def _at_each_width(page):
    """Each of WIDTHS in turn, the page resized to it (the layout follows the window, as
    a user's does when they widen it); yields the width once the page has laid out."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1200})
        page.wait_for_timeout(500)  # plotly's resize to the panel
        yield width


def test_evaluate_upload_box_shows_its_whole_prompt(served, browser):
    page = _page(browser, served[0], WIDTHS[0], "Evaluate")
    box = page.locator("#fe-eval-upload")
    box.get_by_text("Click to Upload").wait_for(timeout=30_000)
    for width in _at_each_width(page):
        shown = box.bounding_box()  # the block clips what overflows it
        for text in ("Drop File Here", "- or -", "Click to Upload"):
            assert _inside(_text_box(page, "#fe-eval-upload", text), shown), (
                width, text, shown)
        page.screenshot(path=str(ARTIFACTS / f"evaluate-form-{width}.png"))


def test_explore_funnel_title_and_subtitle_stand_apart(served, browser):
    page = _page(browser, served[0], WIDTHS[0], "Explore")
    page.locator("#fe-paradigm").get_by_text("Echo (a toy)").click()
    page.locator("#fe-question textarea").fill(QUESTION)  # typed: no gold, so the note
    page.locator("#fe-run").click()
    page.locator("#fe-funnel .js-plotly-plot .g-gtitle").wait_for(timeout=60_000)
    for width in _at_each_width(page):
        title = _text_box(page, "#fe-funnel .g-gtitle", "Candidates per stage")
        note = _text_box(page, "#fe-funnel .g-gtitle", "gold bars come with a dataset question")
        label = page.locator("#fe-funnel [data-testid=block-label]").bounding_box()
        # the note on a line of its own under the title (inline, it ran on from the
        # title's last word), neither under the panel's label
        assert note["y"] >= title["y"] + title["height"], width
        assert _apart(title, label) and _apart(note, label), width
        plot = page.locator("#fe-funnel .js-plotly-plot").bounding_box()
        assert _inside(title, plot) and _inside(note, plot), width
        page.locator("#fe-funnel").screenshot(path=str(ARTIFACTS / f"funnel-title-{width}.png"))


def test_compare_timing_legend_fits_and_typed_questions_say_no_gold(served, browser):
    page = _page(browser, served[0], WIDTHS[0], "Compare")
    page.locator("#fe-compare-question textarea").fill(QUESTION)
    page.locator("#fe-compare-run").click()
    page.wait_for_function("document.querySelector('#fe-compare-table').innerText"
                           ".includes('EM / F1') && !document.querySelector("
                           "'#fe-compare-notice').innerText.includes('Running')",
                           timeout=60_000)
    scores = page.locator("#fe-compare-table tr", has_text="EM / F1").locator("td")
    assert scores.all_inner_texts()[1:] == ["no gold"] * (scores.count() - 1) != []
    page.locator("#fe-compare-timing .legend .traces").first.wait_for(timeout=30_000)
    steps = {s for stages, calls in SHAPES.values()
             for s in (*stages, *(f"LLM: {c}" for c in calls))}
    entries = page.locator("#fe-compare-timing .legend .traces")
    for width in _at_each_width(page):
        assert {entries.nth(i).text_content() for i in range(entries.count())} >= steps
        drawn = page.locator("#fe-compare-timing .main-svg").first.bounding_box()
        for i in range(entries.count()):
            assert _inside(entries.nth(i).bounding_box(), drawn), (
                width, entries.nth(i).text_content())
        scrollbar = page.locator("#fe-compare-timing .legend .scrollbar")
        assert scrollbar.count() == 0 or (
            scrollbar.bounding_box() or {"height": 0})["height"] == 0, width
        page.locator("#fe-compare-timing").screenshot(path=str(ARTIFACTS /
                                                               f"compare-timing-{width}.png"))


def test_diagnose_picks_evaluations_by_name_and_a_bar_click_lists_its_questions(
        served, browser):
    from playwright.sync_api import expect

    url, mixed, newer = served
    page = _page(browser, url, 1400, "Diagnose")
    picker = page.locator("#fe-diag-id input")
    # the newest evaluation first, by id and name, when it started and how far it got
    expect(picker).to_have_value(re.compile(rf"^{newer}: toy: funnel · \d{{4}}-\d\d-\d\d "
                                            r"\d\d:\d\d · done, 6 of 6 questions$"),
                                 timeout=30_000)
    picker.click()
    options = _options(page, "#fe-diag-id")
    assert [o.split(":")[0] for o in options] == [str(newer), str(mixed)]
    assert "toy: flat, funnel" in options[1] and "done, 6 of 6 questions" in options[1]
    page.locator("#fe-diag-id").get_by_role("option").nth(1).click()
    expect(page.locator("#fe-diag-message")).to_contain_text(f"Evaluation {mixed} (6 of 6",
                                                             timeout=30_000)
    segment = page.locator("#fe-diag-segment input")
    expect(segment).to_have_value("flat · lost at reranker (3)")
    # a click on flat's "answered right" segment lists its two questions, as picking it does
    page.wait_for_function("document.querySelector('#fe-diag-bars .js-plotly-plot')"
                           "?.dataset.feClicks === 'bound'", timeout=30_000)
    bars = page.locator("#fe-diag-bars .barlayer .trace.bars")
    names = [bars.nth(i).evaluate("e => e.__data__[0].trace.name") for i in range(bars.count())]
    box = bars.nth(names.index("answered right")).locator(".point path").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(segment).to_have_value("flat · answered right (2)", timeout=30_000)
    rows = page.locator("#fe-diag-rows")
    expect(rows).to_contain_text("Who painted picture 4?", timeout=30_000)
    assert "Who painted picture 0?" not in rows.inner_text()
    page.screenshot(path=str(ARTIFACTS / "diagnose-bar-click.png"), full_page=True)
    # "Is the difference real?" picks B's evaluation from the same list, or none
    page.locator("#fe-diag-tab-paired-button").click()
    page.locator("#fe-diag-other input").click()
    others = _options(page, "#fe-diag-other")
    assert others[0].startswith("(none") and [o.split(":")[0] for o in others[1:]] == [
        str(newer), str(mixed)]
    page.locator("#fe-diag-other").get_by_role("option").nth(1).click()
    page.locator("#fe-diag-b input").click()
    page.locator("#fe-diag-b").get_by_role("option", name="funnel").click()
    page.locator("#fe-diag-pair").click()
    expect(page.locator("#fe-diag-paired")).to_contain_text("paired over 3 shared questions",
                                                            timeout=30_000)
