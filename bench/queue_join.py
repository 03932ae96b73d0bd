"""The queue's answer to a join (issue 67): `--users` sessions start a run at once on a warm
app, each over raw HTTP as the browser asks (POST /queue/join, then the session's event
stream), and for each the seconds until the join was answered and until the stream's first
message (the queue's estimation), with the event loop's worst stall meanwhile (a tiny GET
every 0.1 s); the same with one session on the idle app, and gradio_client's own join
there (its threads and polling add to what the server takes). With `--before CHECKOUT` (a
worktree of an older commit, say), that checkout's app.py is measured the same way first;
the two servers run one after the other, never at once (2 cores). First, in this process,
a new session's state on the app's blocks, as Gradio makes it and as the app does.

    git worktree add /tmp/before HEAD~1
    python -m bench.queue_join --before /tmp/before
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.app_serving import PARADIGMS, Server, ask, client_for
from bench.common import ROOT, latency_summary, markdown_table, save
from bench.logins import asked


class LoopProbe:
    """A tiny GET (robots.txt, answered on the event loop) every 0.1 s in a thread: the
    longest one is the loop's worst stall."""

    def __init__(self, url: str) -> None:
        self.url, self.seconds, self._stop = url + "robots.txt", [], threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def __enter__(self) -> LoopProbe:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()

    def _probe(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=120) as answer:
                answer.read()
            self.seconds.append(time.perf_counter() - start)
            self._stop.wait(0.1)


def joined(url: str, fn_index: int, data: list, session: str) -> dict:
    """One run asked as the browser asks it, over raw HTTP: POST /queue/join, then the
    session's event stream read to the end of the run. Seconds to the join's answer, to
    the stream's first message (the queue's estimation) and to the run's end."""
    import httpx

    body = {"data": data, "fn_index": fn_index, "session_hash": session,
            "event_data": None, "trigger_id": None}
    times: dict[str, float] = {}
    with httpx.Client(timeout=httpx.Timeout(60, read=None)) as http:
        start = time.perf_counter()
        http.post(url + "gradio_api/queue/join", json=body).raise_for_status()
        times["join_s"] = time.perf_counter() - start
        with http.stream("GET", url + f"gradio_api/queue/data?session_hash={session}") as sse:
            for line in sse.iter_lines():
                if not line.startswith("data:"):
                    continue
                times.setdefault("first_message_s", time.perf_counter() - start)
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    if not message.get("success"):
                        raise RuntimeError(f"the run failed: {message}")
                    break
    times["run_s"] = time.perf_counter() - start
    return times


def run_inputs(client) -> tuple[int, Callable[[str, str], list]]:
    """/run's fn_index, and its inputs for a question and a paradigm, the rest at their
    defaults (as gradio_client fills them)."""
    parameters = client.view_api(print_info=False, return_format="dict")[
        "named_endpoints"]["/run"]["parameters"]
    defaults = [p.get("parameter_default") for p in parameters]
    return (client._infer_fn_index("/run", None),
            lambda question, paradigm: [question, paradigm, *defaults[2:]])


def at_once(server: Server, run: tuple[int, Callable], questions: list[str],
            users: int) -> dict:
    """`users` sessions each start one run at the same moment (paradigms alternating)."""
    fn_index, inputs = run

    def user(u: int) -> dict:
        return joined(server.url, fn_index, inputs(questions[u], PARADIGMS[u % len(PARADIGMS)]),
                      f"bench-{u}-{time.monotonic_ns()}")

    with LoopProbe(server.url) as probe, ThreadPoolExecutor(users) as pool:
        results = list(pool.map(user, range(users)))
    return {**{key: latency_summary([r[key] for r in results])
               for key in ("join_s", "first_message_s", "run_s")},
            "loop_worst_ms": round(max(probe.seconds) * 1000),
            "loop_median_ms": round(statistics.median(probe.seconds) * 1000, 1)}


def session_cost(repeats: int = 10) -> dict:
    """A new session's state in this process, Gradio's eager one against the lazy one
    (app.session_state), on the app's blocks: milliseconds to make, and KiB it holds
    (tracemalloc, a second pass)."""
    import tracemalloc

    from gradio.state_holder import SessionState

    from app.session_state import lazy_session_configs
    from app.ui import build_app
    from engine.documents import Corpus, Document
    from engine.service.explorer import Explorer
    from engine.service.preparation import Preparation
    from engine.service.tasks import Task
    from engine.store.sessions import SessionStore

    corpus = Corpus("one", (Document("Seurat", "Seurat", "Georges Seurat painted."),))
    preparation = Preparation("one", dense=False)
    preparation.tasks = {"corpus": Task("corpus", "corpus", lambda progress: corpus)}
    preparation.run()
    folder = Path(tempfile.mkdtemp(prefix="bench-session-"))
    demo = build_app(Explorer(preparation, SessionStore(folder / "sessions.duckdb")))
    lazy_session_configs()
    eager_init = SessionState._funnel_eager[0]

    def eager():
        state = SessionState.__new__(SessionState)
        eager_init(state, demo)
        return state

    result = {"blocks": len(demo.blocks)}
    for label, make in (("eager", eager), ("lazy", lambda: SessionState(demo))):
        make()
        start = time.perf_counter()
        for _ in range(repeats):
            make()
        ms = (time.perf_counter() - start) / repeats * 1000
        tracemalloc.start()
        kept = [make() for _ in range(repeats)]
        kib = tracemalloc.get_traced_memory()[0] / repeats / 1024
        tracemalloc.stop()
        del kept
        result[label] = {"ms": round(ms, 1), "kib": round(kib)}
    return result


def measured(root: Path, corpus: str, data_dir: Path, logs: Path, label: str,
             questions: list[str], users: int) -> dict:
    server = Server(corpus, data_dir, logs / f"{label}.log", root=root)
    try:
        server.seconds_to_first_page()
        client = client_for(server)
        server.seconds_to_ready(client, built=True)
        for paradigm in PARADIGMS:  # the first run of each loads its models
            ask(client, questions[0], paradigm)
        run = run_inputs(client)
        idle = [joined(server.url, run[0], run[1](questions[1], p), f"idle-{p}")
                for p in PARADIGMS]
        client_idle = [asked(client, questions[1], p)[1] for p in PARADIGMS]
        return {"idle_first_message": latency_summary([r["first_message_s"] for r in idle]),
                "idle_gradio_client": latency_summary(client_idle),
                **at_once(server, run, questions, users)}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--before", type=Path, help="an older checkout, measured first")
    args = parser.parse_args()

    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    dataset = read_dataset(shared_data_dir() / "hotpotqa/dev500_contexts.jsonl")
    questions = [q.text for q in dataset.questions[:max(args.users, 2)]]
    logs = Path(tempfile.mkdtemp(prefix="bench-queue-join-"))
    checkouts = {**({"before": args.before} if args.before else {}), "this": ROOT}
    result = {"corpus": args.corpus, "users": args.users, "session": session_cost()}
    print("a new session's state:", result["session"], flush=True)
    for label, root in checkouts.items():
        result[label] = measured(root, args.corpus, args.data_dir, logs, label, questions,
                                 args.users)
        print(label, result[label], flush=True)
    rows = [[name, *(result[k][key][stat] for k in checkouts)] for name, key, stat in (
        ("one user, idle: the first message, median ms", "idle_first_message", "median_ms"),
        ("one user, idle: gradio_client's join, median ms", "idle_gradio_client",
         "median_ms"),
        (f"{args.users} at once: the join answered, median ms", "join_s", "median_ms"),
        (f"{args.users} at once: the join answered, p95 ms", "join_s", "p95_ms"),
        (f"{args.users} at once: the first message, median ms", "first_message_s",
         "median_ms"),
        (f"{args.users} at once: the first message, p95 ms", "first_message_s", "p95_ms"),
        ("a run, median ms", "run_s", "median_ms"))]
    rows.append(["the event loop's worst stall ms",
                 *(result[k]["loop_worst_ms"] for k in checkouts)])
    print(markdown_table(["", *checkouts], rows))
    print("saved", save("queue_join", result))


if __name__ == "__main__":
    main()
