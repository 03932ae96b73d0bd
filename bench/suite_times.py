"""The test suite's time per marker: the whole suite once, each test timed (setup, call and
teardown) with the markers it carries, then the inner loop (`-m "not slow"`) on its own, as a
contributor runs it.

    python bench/suite_times.py [--skip-fast] [-- extra pytest arguments]

Prints, per marker, how many tests carry it and the seconds they took, the CPU seconds the
suite used (the floor no number of pytest-xdist workers goes under: CPU seconds / 2 on 2
cores) with the files that used most, and the wall time of both runs (each test's time in
bench/results/suite_times_{all,fast}.json; each worker's, merged). pytest's own options
hold (pyproject.toml: two pytest-xdist workers); `-- -n 0` times one process. Run it on an
idle machine: every test shares its 2 cores. Loaded by pytest
(`-p suite_times`) this file is the plugin that times each test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKERS = ("slow", "live", "browser", "server", "training", "docs")
OUT = "SUITE_TIMES_OUT"


# -- the plugin (inside pytest) ---------------------------------------------------------------

_times: list[dict] = []


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children reaped so far (a server a test
    starts counts once it is stopped and waited for: a module's served app at its end)."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.perf_counter(), _cpu_seconds()
    yield
    _times.append({"test": item.nodeid, "seconds": time.perf_counter() - start,
                   "cpu_seconds": _cpu_seconds() - cpu,
                   "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
                   "started": start,
                   "markers": sorted({m.name for m in item.iter_markers()} & set(MARKERS))})


def pytest_sessionfinish(session, exitstatus):
    # under pytest-xdist each worker writes its own file, merged by the runner
    if os.environ.get(OUT) and _times:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        Path(os.environ[OUT] + (f".{worker}" if worker else "")).write_text(json.dumps(_times))


# -- the runner ------------------------------------------------------------------------------

def run(args: list[str], out: Path) -> tuple[float, int, list[dict]]:
    """(wall seconds, pytest's exit code, each test's time) of one pytest run."""
    env = {**os.environ, OUT: str(out),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")])}
    for stale in out.parent.glob(f"{out.name}*"):
        stale.unlink()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_times",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, env=env)
    wall = time.perf_counter() - start
    times = [t for part in sorted(out.parent.glob(f"{out.name}.*")) for t in
             json.loads(part.read_text())]
    for part in out.parent.glob(f"{out.name}.*"):
        part.unlink()
    if times:  # the workers' files, one merged
        out.write_text(json.dumps(times))
    return wall, done.returncode, times or json.loads(out.read_text())


def table(times: list[dict]) -> list[tuple[str, int, float]]:
    """(marker set, tests, seconds): each marker, the tests with none, and all."""
    rows: dict[str, list[float]] = defaultdict(list)
    for t in times:
        for name in t["markers"] or ["not slow"]:
            rows[name].append(t["seconds"])
        rows["all"].append(t["seconds"])
    order = ["not slow", *MARKERS, "all"]
    return [(name, len(rows[name]), sum(rows[name])) for name in order if name in rows]


def cpu_table(times: list[dict], top: int = 15) -> list[tuple[str, float, float]]:
    """(test file, wall seconds, CPU seconds) of the `top` files by CPU seconds: the work
    no number of workers takes away on 2 cores."""
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for t in times:
        found = files[t["test"].split("::")[0]]
        found[0] += t["seconds"]
        found[1] += t.get("cpu_seconds", 0.0)
    return sorted(((name, w, c) for name, (w, c) in files.items()), key=lambda r: -r[2])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-fast", action="store_true",
                        help="time the whole suite only, not the inner loop on its own")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    wall, code, times = run(args.pytest_args, results / "suite_times_all.json")
    print(f"\nwhole suite: {len(times)} tests, {wall / 60:.1f} min wall (exit {code})")
    print(f"{'marker':<10} {'tests':>6} {'seconds':>9} {'share':>6}")
    total = sum(t["seconds"] for t in times) or 1.0
    for name, n, seconds in table(times):
        print(f"{name:<10} {n:>6} {seconds:>9.0f} {seconds / total:>6.0%}")
    cpu = sum(t.get("cpu_seconds", 0.0) for t in times)
    print(f"\nCPU seconds (this process and its reaped children): {cpu:.0f}, "
          f"{cpu / wall:.2f} of the wall time (2 cores give 2.00 at most)")
    print(f"{'file':<48} {'wall s':>7} {'CPU s':>7}")
    for name, seconds, used in cpu_table(times):
        print(f"{name:<48} {seconds:>7.0f} {used:>7.0f}")
    if not args.skip_fast:
        fast_wall, fast_code, fast = run(["-m", "not slow", *args.pytest_args],
                                         results / "suite_times_fast.json")
        print(f"\ninner loop (-m 'not slow') alone: {len(fast)} tests, "
              f"{fast_wall / 60:.1f} min wall (exit {fast_code}); "
              f"{fast_wall / wall:.2f} of the whole suite's time")


if __name__ == "__main__":
    main()
