"""The figures this project reproduces (bench/figures.toml), computed again from scratch in
the test's own data directory: every check whose data is present runs and fails when one of
its figures moved past its tolerance. The checks are marked `repro`, left out of `python -m pytest`
(tens of minutes on 2 cores) and run by .ci/run as `python -m pytest -m repro`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import repro
from engine.paths import PROJECT_ROOT

# the data directory before each test's own replaces it: what was fetched there (the QA
# files, ArguAna) is linked into the test's, never the caches built from it
OUTER = Path(os.environ.get("FUNNEL_DATA_DIR") or PROJECT_ROOT / "data")
FETCHED = ("qa", "beir/arguana")


@pytest.fixture
def fetched(data_dir):
    """The test's data directory with what was fetched into the outer one linked in."""
    for name in FETCHED:
        if (OUTER / name).is_dir() and not (data_dir / name).exists():
            (data_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (data_dir / name).symlink_to(OUTER / name, target_is_directory=True)
    return data_dir


@pytest.mark.repro
@pytest.mark.parametrize("name", list(repro.checks()))
def test_every_recorded_figure_holds(name, fetched):
    check = repro.checks()[name]
    available, compute = repro.COMPUTE[name]
    missing = available()
    if missing:
        pytest.skip(missing)
    moved = [f"{f.name}: {'not computed' if got is None else f'{got:.4f}'}, recorded "
             f"{f.value:.3f} ±{f.tolerance:.3f} ({f.source})"
             for f, got, ok in repro.verdicts(check, compute()) if not ok]
    assert not moved, f"{name}: figures moved past their tolerance:\n" + "\n".join(moved)


def test_every_check_of_the_table_is_computed_and_each_figure_is_named_once_per_source():
    found = repro.checks()
    assert set(found) == set(repro.COMPUTE)
    for check in found.values():
        assert check.figures, f"{check.name} holds no figure"
        pairs = [(f.name, f.source) for f in check.figures]
        assert len(pairs) == len(set(pairs)), f"{check.name} names a figure twice"
        assert all(f.tolerance >= 0 for f in check.figures)


def test_a_figure_holds_within_its_tolerance_and_half_its_last_decimal():
    figure = repro.Figure("bm25 nDCG@10", 0.497, 0.002, "ours")
    assert figure.holds(0.4994) and figure.holds(0.4946)
    assert not figure.holds(0.4996) and not figure.holds(0.4944)
    assert not figure.holds(None)
    check = repro.Check("c", "what", "data", (figure,))
    assert repro.verdicts(check, {}) == [(figure, None, False)]
