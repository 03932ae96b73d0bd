"""The docs (docs/, built by mkdocs in .ci/run): their pictures are the browser tests' own
screenshots, the README's links and commands hold, every benchmark figure names its
command, every pointer from the code to a figure names a page and heading that exist, and
the generated pages cover the command line and the API."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
import shots  # noqa: E402  (docs/shots.py: the table of docs images and their shots)

IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_every_picture_shown_is_a_browser_tests_shot():
    shown = {}
    for page in pages():
        for target in IMAGE.findall(page.read_text(encoding="utf-8")):
            shown[(page.parent / target).resolve()] = page.relative_to(ROOT)
    assert shown
    img = (DOCS / "img").resolve()
    for path, page in shown.items():
        assert path.parent == img and path.suffix == ".webp", (page, path)
        assert path.stem in shots.SHOTS, f"{page} shows {path.name}, not in docs/shots.py"
        assert path.exists(), f"{page} shows {path.name}: run python docs/shots.py"
    kept = {p.stem for p in img.iterdir()}
    assert kept == set(shots.SHOTS), "docs/img holds exactly the images SHOTS names"


def test_every_shot_named_is_one_a_browser_test_takes():
    """A screenshot file name in a test (an f-string's fields matching anything) for every
    shot docs/shots.py copies, so a renamed shot fails here, not silently in the docs."""
    taken = []
    for test in (ROOT / "tests").glob("test_*.py"):
        for name in re.findall(r"""["']([\w\-{}]+\.png)["']""", test.read_text(encoding="utf-8")):
            taken.append(re.compile(re.sub(r"\\\{\w+\\\}", r"[\\w-]+", re.escape(name)) + "$"))
    assert taken
    for image, (shot, top, height) in shots.SHOTS.items():
        assert any(pattern.match(shot) for pattern in taken), f"{image}: no test takes {shot}"
        assert top >= 0 and height >= 0


def test_a_crop_is_one_screen_and_small(tmp_path, monkeypatch):
    """docs/shots.py crops a tall full-page shot to the rows asked, at the docs' width."""
    from PIL import Image

    monkeypatch.setattr(shots, "IMG", tmp_path)
    Image.new("RGB", (1400, 5000), "white").save(tmp_path / "tall.png")
    made = shots.make("tall", tmp_path / "tall.png", 200, 1400)
    with Image.open(made) as image:
        assert image.size == (shots.WIDTH, 1000)
    with pytest.raises(ValueError, match="5000 px tall"):
        shots.make("tall", tmp_path / "tall.png", 5000, 900)


def test_the_readme_is_a_front_page_whose_links_hold():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    # the two commands CI and a newcomer run, as they are
    assert ("    pip install -r requirements.txt && pip install --no-deps -r "
            "requirements-nodeps.txt && python app.py\n") in readme
    assert "    python -m pytest\n" in readme
    for target in LINK.findall(readme) + IMAGE.findall(readme):
        if not target.startswith("http"):
            assert (ROOT / target.split("#")[0]).exists(), target


# a pointer from a comment or docstring to a figure: docs/benchmarks/<page>.md, optionally
# followed by , "the start of a heading of that page" (wrapped lines and comment marks joined)
POINTER = re.compile(r'docs/benchmarks/([\w-]+)\.md(?:,\s*\\?"([^"\\]+)\\?")?')


def pointers(text: str) -> list[tuple[str, str | None]]:
    """Every (page, heading start or None) that `text` points at, its lines joined."""
    joined = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
    return [(page, title) for page, title in POINTER.findall(joined)]


def test_pointers_are_found_across_wrapped_comment_lines():
    text = 'x = 1  # figures in docs/benchmarks/cpu.md, "Reader runtimes side\n    # by side"'
    assert pointers(text) == [("cpu", "Reader runtimes side by side")]
    assert pointers("see docs/benchmarks/app.md.") == [("app", "")]


def test_every_pointer_to_a_figure_names_a_page_and_heading_that_exist():
    """A comment, docstring or help text citing a figure names the docs page it is on, and
    the start of its heading: the figure can be found, and a page or heading renamed or
    moved fails here rather than leaving the pointer stale. The old `bench/README.md`
    sections moved to docs/benchmarks/ (issue 68)."""
    headings = {page.stem: [" ".join(line.lstrip("#").split()) for line in
                            page.read_text(encoding="utf-8").splitlines()
                            if line.startswith("#")]
                for page in (DOCS / "benchmarks").glob("*.md")}
    files = [*ROOT.glob("*.py"), *ROOT.glob("*.md"), *DOCS.rglob("*.md"),
             ROOT / "bench" / "README.md"]
    for folder in ("engine", "app", "bench", "tests", "examples"):
        files += (ROOT / folder).rglob("*.py")
    stale, seen = [], 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        if path.name != "test_docs.py" and 'bench/README.md, "' in text:
            stale.append(f"{where}: cites bench/README.md: name the docs/benchmarks/ page")
        for page, title in pointers(text):
            seen += 1
            if page not in headings:
                stale.append(f"{where}: docs/benchmarks/{page}.md does not exist")
            elif title and not any(h.startswith(" ".join(title.split()))
                                   for h in headings[page]):
                stale.append(f"{where}: no heading of docs/benchmarks/{page}.md starts "
                             f"with {title!r}")
    assert seen > 30
    assert stale == []


def test_every_benchmark_figure_names_its_command():
    """A heading with figures under it (not only subsections) shows the command that
    produced them: a `Command:` line or the command itself in its text."""
    for page in sorted((DOCS / "benchmarks").glob("*.md")):
        if page.name == "index.md":
            continue
        parts = re.split(r"^(#{2,3} .*)$", page.read_text(encoding="utf-8"), flags=re.M)
        for heading, body in zip(parts[1::2], parts[2::2], strict=True):
            if not body.strip():
                continue  # a section whose figures are all in its subsections
            assert re.search(r"Command:|python -m |funnel-engine |python app\.py", body), \
                f"{page.name}: {heading}"


def test_the_generated_command_line_page_covers_every_command():
    import hooks

    from engine.cli.main import build_parser

    text = hooks.cli_markdown()
    commands = [" ".join(path) for path, _ in hooks.subcommands(build_parser()) if path]
    assert {"ask", "eval", "import-traces", "data fetch", "sessions export"} <= set(commands)
    assert all(f"### `python -m engine {command}`" in text for command in commands)
    assert "--resume ID" in text


def test_the_generated_api_page_describes_every_endpoint(monkeypatch, tmp_path):
    """Built from the app's Blocks without launching it: every endpoint tests/test_api.py
    knows, with its parameters and its result."""
    import hooks

    from tests.test_api import ENDPOINTS

    monkeypatch.setenv("FUNNEL_DATA_DIR", str(tmp_path))
    text = hooks.gradio_api_markdown()
    assert set(re.findall(r"^### `/(\w+)`$", text, flags=re.M)) == ENDPOINTS
    assert 'trace_json = client.predict(question, paradigm, config_json, corpus, build, ' \
           'preset, api_name="/run")' in text
    assert "- returns `run_id` (int)" in text
