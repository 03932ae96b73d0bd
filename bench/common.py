"""Helpers shared by the benchmark scripts: timing, memory, tables."""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def opened(parser: argparse.ArgumentParser, threads: int | None = 2) -> argparse.Namespace:
    """A bench script's opening: its arguments with `--threads` added (torch's CPU threads,
    default `threads`; None leaves torch's own), torch set to them, the log at WARNING."""
    parser.add_argument("--threads", type=int, default=threads, help="torch CPU threads")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return args


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def timed(store: dict, name: str):
    start = time.perf_counter()
    yield
    store[name] = round(time.perf_counter() - start, 3)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(seconds) * 1000, 2),
            "p95_ms": round(percentile(seconds, 0.95) * 1000, 2)}


def run_child(script: Path, *args: str) -> dict:
    """Run a bench script in a fresh interpreter (own peak memory); parse its last line.
    The checkout is on its path, so the script imports `bench` and `engine` from it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    out = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                         check=False, cwd=ROOT, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{script.name} {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


TRAIN_FILES = ("hotpotqa/train100.json", "musique/train100.json")


CPU_FLAGS_SHOWN = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def shown_cpu_flags() -> list[str]:
    """This CPU's flags that decide a runtime's speed (vector width, int8 dot products,
    native bf16, AMX): recorded with every figure."""
    from engine.models.loading import cpu_flags

    return [flag for flag in CPU_FLAGS_SHOWN if flag in cpu_flags()]


def training_questions(limit: int = 0) -> list:
    """HotpotQA and MuSiQue train100 questions (the first `limit` of each): defaults are
    chosen on these, never on dev500."""
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    out = []
    for name in TRAIN_FILES:
        found = read_dataset(shared_data_dir() / name).questions
        out += found[:limit] if limit else found
    return out


def dev500_questions(limit: int = 0) -> list:
    """The first `limit` HotpotQA dev500 questions (all when 0): what is reported."""
    from engine.data.loaders import read_dataset
    from engine.qa_data import dataset_path

    found = read_dataset(dataset_path("HotpotQA dev500")).questions
    return found[:limit] if limit else found


WARM_UP = "Which river flows through Budapest?"


def run_side_by_side(paradigms: dict, questions: Sequence, traces_name: str,
                     measure: Callable | None = None) -> list[dict]:
    """Every question through every paradigm ({label: Paradigm}) back to back, so the
    machine's state is the same for all; one warm-up run each first (indexes and models
    loaded), not counted. Returns the eval rows, labelled, with `measure(trace)`'s extra
    metrics joined to each row's; traces go to data/bench/TRACES_NAME.jsonl."""
    from tqdm.auto import tqdm

    from engine.eval.summary import row
    from engine.paths import data_dir

    for paradigm in paradigms.values():  # a question outside every measured set
        paradigm.run(WARM_UP)
    traces_path = data_dir() / "bench" / f"{traces_name}.jsonl"
    traces_path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with traces_path.open("w", encoding="utf-8") as traces:
        for question in tqdm(questions, desc="questions"):
            for label, paradigm in paradigms.items():
                trace = paradigm.run(question)
                found = row(trace)
                if measure is not None:
                    found["metrics"] = {**found["metrics"], **measure(trace)}
                rows.append({**found, "paradigm": label})
                traces.write(trace.to_json() + "\n")
    return rows


def rows_from_traces(traces_name: str, labels: Sequence[str] = ()) -> list[dict]:
    """The eval rows of data/bench/TRACES_NAME.jsonl (a run_side_by_side run), scored again
    by the current metrics. `labels`: the run's labels in the order it cycled through them
    (each trace's own paradigm name when empty)."""
    from engine.eval.summary import row
    from engine.paradigms.base import annotate
    from engine.paths import data_dir
    from engine.trace import RunTrace

    rows = []
    with (data_dir() / "bench" / f"{traces_name}.jsonl").open(encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            trace = RunTrace.from_json(line)
            trace = annotate(trace, trace.gold) if trace.gold is not None else trace
            rows.append({**row(trace), "trace": trace,
                         "paradigm": labels[n % len(labels)] if labels else trace.paradigm})
    return rows


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def save(name: str, payload: object) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path


def answering(server, url: str, seconds: float, pause: float, what: str) -> None:
    """Wait until `url` answers a GET (a server subprocess `server` starting); stop it and
    exit naming `what` when it does not within `seconds`."""
    import time
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(pause)
    server.kill()
    raise SystemExit(f"{what} did not answer {url} within {seconds:.0f} s")

