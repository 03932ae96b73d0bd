"""The app as users meet it: start-up, one Explore run per paradigm, memory, concurrent users.

Starts `python app.py` as its own process (as the README does) and measures, in one run:
- cold start: seconds from launch to the first served page, on a fresh (empty) data
  directory and on the warm one, and how long each paradigm then takes to become ready;
- one Explore run end to end, per paradigm: the `/run` API over HTTP through
  `gradio_client` (engine + trace JSON) plus drawing that trace's Explore views (figures
  and stage tables) in this process; medians over `--questions` HotpotQA dev500 questions;
- the server's resident memory when ready, after the first run of each paradigm and after
  `--memory-runs` runs;
- `--users` concurrent `gradio_client` users asking `--per-user` questions each (paradigms
  alternating), saving each run and reloading it: errors, median and 95th-percentile
  latency, next to the same mix asked by one user in the same run.

Saved runs go to a DuckDB file beside the logs, never into the data directory's own.

    python -m bench.app_serving                      # wiki corpus, data/ as the warm cache
    python -m bench.app_serving --skip-fresh --questions 5 --memory-runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import ROOT, latency_summary, markdown_table, save
from engine.paradigms.registry import names

PARADIGMS = tuple(names())


# --- the server ------------------------------------------------------------------------------

class Server:
    """`python app.py` in its own process on a free port, with its log in a file."""

    def __init__(self, corpus: str, data_dir: Path, log: Path, root: Path = ROOT,
                 env: dict | None = None) -> None:
        """`root`: the checkout whose app.py runs (another one to compare versions); `env`:
        more of its environment (FUNNEL_USERS, say)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        env = {**os.environ, "FUNNEL_DATA_DIR": str(data_dir), "FUNNEL_PORT": str(self.port),
               "FUNNEL_CORPUS": corpus, "FUNNEL_SESSIONS": str(log.with_suffix(".duckdb")),
               **(env or {})}
        self.log = log.open("w")
        self.started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def seconds_to_first_page(self, limit: float = 300) -> float:
        while time.perf_counter() - self.started < limit:
            if self.process.poll() is not None:
                raise RuntimeError(f"app.py exited; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as page:
                    body = page.read()  # the app, or its login page
                    if page.status == 200 and (b"Funnel Explorer" in body
                                               or b'"auth_required":true' in body):
                        return time.perf_counter() - self.started
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"no page after {limit} s; see {self.log.name}")

    def seconds_to_ready(self, client, paradigms=PARADIGMS, limit: float = 3600,
                         built: bool = False) -> dict:
        """Seconds from launch until each paradigm is ready (None past `limit`): answering,
        perhaps on a stand-in. With `built`, also until every build is done ("built"; the
        classifiers' training may go on)."""
        ready: dict[str, float | None] = dict.fromkeys([*paradigms, *(["built"] * built)])
        while time.perf_counter() - self.started < limit:
            status = client.predict(api_name="/status")
            now = round(time.perf_counter() - self.started, 1)
            for name in paradigms:
                if ready[name] is None and status["ready"][name]:
                    ready[name] = now
            if built and ready["built"] is None and all(
                    ": ready" in line for line in status["tasks"]
                    if not line.startswith("training ")):
                ready["built"] = now
            if all(v is not None for v in ready.values()):
                break
            if any("FAILED" in line for line in status["tasks"]):
                raise RuntimeError("; ".join(status["tasks"]))
            time.sleep(0.5)
        return ready

    def rss_mb(self) -> float:
        import psutil

        return psutil.Process(self.process.pid).memory_info().rss / 2**20

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def client_for(server: Server, auth: tuple[str, str] | None = None):
    from gradio_client import Client

    return Client(server.url, auth=auth, verbose=False)


# --- the measurements ------------------------------------------------------------------------

def start_up(corpus: str, data_dir: Path, logs: Path, label: str, wait_ready: bool,
             until_trained: bool = False, background_limit: float = 3600) -> dict:
    server = Server(corpus, data_dir, logs / f"start-{label}.log")
    try:
        first_page = server.seconds_to_first_page()
        row = {"first page s": round(first_page, 2)}
        if wait_ready:
            client = client_for(server)
            ready = server.seconds_to_ready(client)
            row.update({f"{p} ready s": v for p, v in ready.items()})
            if until_trained:
                row["background"] = estimates_against_finish(server, client,
                                                             limit=background_limit)
        return row
    finally:
        server.stop()


LEFT = re.compile(r"^(.+?): (?:building|training) .*?about (.+?) left")
DONE = re.compile(r"^(.+?): (ready|FAILED)")


def _seconds(said: str) -> float:
    """'40 s', '3 min', '1 h 5 min' (engine.progress.duration) back to seconds."""
    hours = re.search(r"(\d+) h", said)
    minutes = re.search(r"(\d+) min", said)
    seconds = re.search(r"(\d+) s", said)
    return (3600 * int(hours[1]) if hours else 0) + (60 * int(minutes[1]) if minutes else 0) \
        + (int(seconds[1]) if seconds else 0)


def estimates_against_finish(server: Server, client, every: float = 20.0,
                             limit: float = 3600) -> dict:
    """After every paradigm is ready: the status line's "about N left" of each task still
    under way in the background (the dense index a stand-in answers for, the classifiers'
    training), read every `every` seconds, against when that task really ended."""
    said: dict[str, list[tuple[float, float]]] = {}  # task -> (seconds since launch, left)
    ended: dict[str, float] = {}
    while time.perf_counter() - server.started < limit:
        now = time.perf_counter() - server.started
        lines = client.predict(api_name="/status")["tasks"]
        for line in lines:
            if (done := DONE.search(line)) is not None:
                ended.setdefault(done[1], now)
            elif (found := LEFT.search(line)) is not None:
                said.setdefault(found[1], []).append((now, _seconds(found[2])))
        if all(DONE.search(line) for line in lines):
            finished = True
            break
        time.sleep(every)
    else:
        finished = False
    report = {"everything prepared s": round(max(ended.values())) if finished else None}
    for name, estimates in said.items():
        end = ended.get(name)
        if end is None:
            continue
        errors = [(round(t), left, round(end - t), round(left - (end - t)))
                  for t, left in estimates]
        report[name] = {"ended_s": round(end), "estimates (at s, said left, real left, "
                        "error)": errors}
        print(name, "ended", round(end), "s after launch", flush=True)
        print(markdown_table(["at s", "said left s", "really left s", "error s"],
                             [list(map(str, e)) for e in errors]), flush=True)
    return report


def ask(client, question: str, paradigm: str) -> tuple[float, str]:
    start = time.perf_counter()
    trace_json = client.predict(question, paradigm, "", api_name="/run")
    return time.perf_counter() - start, trace_json


def explore_runs(client, questions: list[str]) -> dict[str, dict[str, list[float]]]:
    """Per paradigm: API seconds and drawing seconds of every question."""
    from app.tabs.explore import trace_views
    from engine.trace import RunTrace

    per: dict[str, dict[str, list[float]]] = {}
    for paradigm in PARADIGMS:
        api, draw = [], []
        for question in questions:
            seconds, trace_json = ask(client, question, paradigm)
            start = time.perf_counter()
            trace_views(RunTrace.from_json(trace_json))
            draw.append(time.perf_counter() - start)
            api.append(seconds)
        per[paradigm] = {"api": api, "draw": draw}
    return per


def concurrent_users(server: Server, questions: list[str], users: int,
                     per_user: int) -> dict:
    """`users` clients at once, each asking `per_user` questions and saving every run, then
    reloading it: a reloaded trace that differs counts as an error. Latency is the question's
    alone. Each user goes through the paradigms in turn, starting one further along than the
    user before, so at any moment the users ask different paradigms and, with `per_user` a
    multiple of the number of paradigms, each gets the same share at every user count."""
    def user(u: int) -> tuple[list[float], list[str]]:
        client, seconds, errors = client_for(server), [], []
        for i in range(per_user):
            question = questions[(u * per_user + i) % len(questions)]
            try:
                took, trace_json = ask(client, question,
                                       PARADIGMS[(u + i) % len(PARADIGMS)])
                seconds.append(took)
                run_id = client.predict(trace_json, f"user {u}", "", api_name="/save_run")
                if json.loads(client.predict(run_id, api_name="/load_run")) \
                        != json.loads(trace_json):
                    errors.append(f"user {u}, question {i}: run {run_id} reloaded changed")
            except Exception as err:  # noqa: BLE001 - counted, not fatal
                errors.append(f"user {u}, question {i}: {err}")
        return seconds, errors

    start = time.perf_counter()
    with ThreadPoolExecutor(users) as pool:
        results = list(pool.map(user, range(users)))
    wall = time.perf_counter() - start
    seconds = [s for r, _ in results for s in r]
    errors = [e for _, r in results for e in r]
    return {"requests": users * per_user, "errors": len(errors), "error_samples": errors[:3],
            "wall_s": round(wall, 1), **latency_summary(seconds)}


# --- the run ---------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data",
                        help="the warm cache directory (built first if empty)")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--memory-runs", type=int, default=50)
    parser.add_argument("--users", type=int, nargs="+", default=[4],
                        help="concurrent users to measure, each against one user")
    parser.add_argument("--per-user", type=int, default=10)
    parser.add_argument("--skip-fresh", action="store_true",
                        help="skip the start on a fresh data directory")
    parser.add_argument("--fresh-ready", action="store_true",
                        help="on the fresh directory, also wait until every paradigm is ready "
                             "(answering, on the dense index's stand-in while it is built)")
    parser.add_argument("--fresh-trained", action="store_true",
                        help="with --fresh-ready, then wait for what goes on in the "
                             "background (the dense index, training) and compare the status "
                             "line's time-left estimates with when each ended")
    parser.add_argument("--background-limit", type=float, default=3600,
                        help="with --fresh-trained, stop waiting after this many seconds "
                             "from launch (tasks not ended by then are left out)")
    parser.add_argument("--only-fresh", action="store_true",
                        help="stop after the fresh start")
    args = parser.parse_args()

    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    dataset = read_dataset(shared_data_dir() / "hotpotqa/dev500_contexts.jsonl")
    # distinct questions for every run up to --memory-runs: repeated ones would hide memory
    # that grows with new questions (e.g. the pre-ranker's per-document embedding memo)
    questions = [q.text for q in dataset.questions[:max(args.questions, args.per_user * 2,
                                                        args.memory_runs)]]
    logs = Path(tempfile.mkdtemp(prefix="bench-app-"))
    result: dict = {"corpus": args.corpus, "logs": str(logs)}

    if not args.skip_fresh:
        with tempfile.TemporaryDirectory(prefix="bench-fresh-") as fresh:
            result["start fresh"] = start_up(args.corpus, Path(fresh), logs, "fresh",
                                             args.fresh_ready, args.fresh_trained,
                                             args.background_limit)
        print("start, fresh data dir:", result["start fresh"], flush=True)
        if args.only_fresh:
            print("saved", save("app_serving_fresh", result))
            return

    server = Server(args.corpus, args.data_dir, logs / "warm.log")
    try:
        result["start warm"] = {"first page s": round(server.seconds_to_first_page(), 2)}
        client = client_for(server)
        result["start warm"].update(  # every build loaded before anything is measured
            {f"{p} ready s": v for p, v in server.seconds_to_ready(client, built=True).items()})
        print("start, warm data dir:", result["start warm"], flush=True)
        memory = {"ready": server.rss_mb()}
        for paradigm in PARADIGMS:  # warm-up: first run loads the paradigm's models
            ask(client, questions[0], paradigm)
        memory["after 1 run per paradigm"] = server.rss_mb()

        per = explore_runs(client, questions[:args.questions])
        runs = 2 + 2 * args.questions
        rows = []
        for paradigm, t in per.items():
            api, draw = statistics.median(t["api"]), statistics.median(t["draw"])
            total = [a + d for a, d in zip(t["api"], t["draw"], strict=True)]
            rows.append([paradigm, f"{api:.2f}", f"{draw * 1000:.0f}",
                         f"{statistics.median(total):.2f}",
                         f"{latency_summary(total)['p95_ms'] / 1000:.2f}"])
        result["explore"] = {p: {k: [round(x, 4) for x in v] for k, v in t.items()}
                             for p, t in per.items()}
        print(markdown_table(["paradigm", "API s (median)", "drawing ms (median)",
                              "end to end s (median)", "end to end s (p95)"], rows), flush=True)

        memory[f"after {runs} runs"] = server.rss_mb()
        for i in range(runs, args.memory_runs):
            ask(client, questions[(i // 2) % len(questions)], PARADIGMS[i % len(PARADIGMS)])
            if (i + 1) % 25 == 0 or i + 1 == args.memory_runs:  # a leak shows as a slope
                memory[f"after {i + 1} runs"] = server.rss_mb()
        result["memory MiB"] = {k: round(v, 1) for k, v in memory.items()}
        print(markdown_table(["when", "resident MiB"],
                             [[k, f"{v:,.0f}"] for k, v in memory.items()]), flush=True)

        result["users"] = {"1": concurrent_users(server, questions, 1, args.per_user * 2)}
        for users in args.users:
            result["users"][str(users)] = concurrent_users(server, questions, users,
                                                           args.per_user)
        rate = {n: r["requests"] / r["wall_s"] for n, r in result["users"].items()}
        single = result["users"]["1"]
        print(markdown_table(
            ["users", "requests", "errors", "median s", "p95 s", "wall s", "requests/min",
             "throughput vs 1 user"],
            [[n, r["requests"], r["errors"], f"{r['median_ms'] / 1000:.2f}",
              f"{r['p95_ms'] / 1000:.2f}", r["wall_s"], f"{60 * rate[n]:.1f}",
              f"{rate[n] / rate['1']:.2f}x"] for n, r in result["users"].items()]), flush=True)
        for n, r in result["users"].items():
            if r["errors"]:
                print(f"{n} users, errors:", r["error_samples"])
        print("median latency vs 1 user:", {n: round(r["median_ms"] / single["median_ms"], 2)
                                            for n, r in result["users"].items()})
    finally:
        server.stop()
    print("saved", save("app_serving", result))


if __name__ == "__main__":
    main()
