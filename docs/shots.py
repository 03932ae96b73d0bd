"""The docs' pictures are the browser tests' screenshots: this copies the named shots from
test-artifacts/ (FUNNEL_ARTIFACTS) into docs/img/, each cropped to about one screen of the
page (a full-page shot is up to 5,000 px tall) and saved as WebP.

    python -m pytest -m browser                                       # writes the shots
    python docs/shots.py                                              # refreshes docs/img

SHOTS is the one table to edit when a browser test renames or adds a shot: docs image ->
(the test's screenshot file, top pixel, height in pixels at the shot's own width; 0 keeps
the rest of the shot). tests/test_docs.py checks every image the docs show is here and every
shot named here is one a browser test takes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
WIDTH = 1000  # pixels of a picture in the docs (the shots are 1,400 wide)

SHOTS: dict[str, tuple[str, int, int]] = {
    # Explore (tests/test_live_app.py, tests/test_explore_live.py)
    "explore": ("explore.png", 0, 1400),
    "explore-stages": ("explore.png", 1330, 1000),
    "explore-ablation": ("explore_ablation.png", 1330, 1000),
    "explore-reanswer": ("reanswer.png", 2560, 1100),
    "explore-drrag": ("drrag-decisions.png", 1750, 1000),
    "explore-longrag": ("longrag.png", 750, 1000),
    "explore-best": ("best.png", 750, 1000),
    "explore-build-asked": ("explore-build-asked.png", 250, 800),
    "status-opened": ("status-opened.png", 0, 0),
    # Compare, Sessions, Annotate
    "compare": ("compare.png", 600, 1100),
    "sessions": ("sessions.png", 0, 1000),
    "sessions-compare": ("sessions_compare.png", 0, 1300),
    "annotate": ("annotate.png", 0, 1300),
    "annotate-retrain": ("annotate-retrain.png", 1250, 0),
    # Evaluate (tests/test_live_app.py, tests/test_browser_analysis.py,
    # tests/test_browser_resume.py)
    "evaluate-form": ("evaluate-form-1400.png", 0, 0),
    "evaluate": ("evaluate.png", 600, 1300),
    "evaluate-interrupted": ("evaluate_interrupted_1400.png", 300, 1100),
    # Diagnose, a shot per sub-tab (tests/test_browser_diagnose.py, 1400x900 screens)
    "diagnose-lost": ("diagnose-lost.png", 0, 0),
    "diagnose-flow": ("diagnose-flow.png", 0, 0),
    "diagnose-ceilings": ("diagnose-ceilings.png", 0, 0),
    "diagnose-paired": ("diagnose-paired.png", 0, 0),
    "diagnose-changed": ("diagnose-changed.png", 0, 0),
    "diagnose-coverage": ("diagnose-coverage.png", 0, 0),
    "diagnose-attention": ("diagnose-attention.png", 0, 0),
    "diagnose-bar-click": ("diagnose-bar-click.png", 250, 1150),
    # Sweep, Corpora
    "sweep": ("sweep.png", 0, 0),
    "corpora": ("corpora.png", 0, 1300),
    "corpora-remove-asked": ("corpora-remove-asked.png", 0, 1100),
    "corpus-funnel": ("corpus_funnel.png", 700, 1000),
    # a test collection (tests/test_browser_collections.py)
    "corpora-collection": ("corpora_collection.png", 300, 650),
    "evaluate-collection": ("evaluate_collection.png", 950, 1400),
    "diagnose-collection": ("diagnose_collection.png", 0, 1150),
    "explore-collection": ("explore_collection.png", 280, 1400),
}


def artifacts() -> Path:
    return Path(os.environ.get("FUNNEL_ARTIFACTS", ROOT / "test-artifacts"))


def make(name: str, source: Path, top: int, height: int) -> Path:
    from PIL import Image

    with Image.open(source) as shot:
        shot = shot.convert("RGB")
        bottom = shot.height if height == 0 else min(shot.height, top + height)
        if top >= bottom:
            raise ValueError(f"{name}: {source.name} is {shot.height} px tall; the crop "
                             f"starts at {top}: fix SHOTS in docs/shots.py")
        part = shot.crop((0, top, shot.width, bottom))
        if part.width > WIDTH:
            part = part.resize((WIDTH, round(part.height * WIDTH / part.width)),
                               Image.Resampling.LANCZOS)
        out = IMG / f"{name}.webp"
        part.save(out, "WEBP", quality=80, method=6)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these docs images (default: all)")
    args = parser.parse_args(argv)
    IMG.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, (shot, top, height) in SHOTS.items():
        if args.names and name not in args.names:
            continue
        source = artifacts() / shot
        if not source.exists():
            missing.append(shot)
            continue
        out = make(name, source, top, height)
        print(f"{out.relative_to(ROOT)}  {out.stat().st_size // 1024} KiB  <- {shot}")
    if missing:
        print(f"not in {artifacts()} (run the browser tests first): {', '.join(missing)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
