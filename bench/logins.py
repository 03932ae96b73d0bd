"""What logins cost (issue 54), measured side by side in one run:

- a login's password check: argon2id verification in this process (the hash is slow by
  design: 50-500 ms), and a whole login over HTTP (POST /login, as the login form and
  gradio_client send it), median of `--logins`;
- a logged-in request: the `/status` endpoint through gradio_client, with logins (the gate,
  the door's role check) against the same app without them;
- `--users` logged-in users (each their own login, an annotator) asking `--per-user`
  questions each at once, paradigms alternating, saving each run and reloading it: errors,
  latency, how long the queue took to answer each join, and whether every saved run is its
  user's; next to the same mix without logins.

Two app.py servers over the same warm data directory run one after the other, never at
once (2 cores).

    python -m bench.logins                     # wiki corpus, 16 users x 3 runs
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.app_serving import PARADIGMS, Server, ask, client_for
from bench.common import ROOT, latency_summary, markdown_table, save

PASSWORD = "bench-password-1"


def users_file(folder: Path, users: int) -> Path:
    """One annotator per concurrent user, and an admin."""
    from engine.store.users import Users

    path = folder / "users.json"
    made = Users(path)
    made.add("admin", PASSWORD, "admin")
    for u in range(users):
        made.add(f"user{u}", PASSWORD, "annotator")
    return path


def verify_seconds(path: Path, n: int) -> dict:
    from engine.store.users import Users

    users, seconds = Users(path), []
    for _ in range(n):
        start = time.perf_counter()
        assert users.verify("user0", PASSWORD) is not None
        seconds.append(time.perf_counter() - start)
    wrong = []
    for _ in range(n):
        start = time.perf_counter()
        assert users.verify("nobody", PASSWORD) is None
        wrong.append(time.perf_counter() - start)
    return {"right": latency_summary(seconds), "unknown name": latency_summary(wrong)}


def http_login_seconds(server: Server, n: int) -> dict:
    form = urllib.parse.urlencode({"username": "admin", "password": PASSWORD}).encode()
    seconds = []
    for _ in range(n):
        start = time.perf_counter()
        with urllib.request.urlopen(server.url + "login", form, timeout=30) as answer:
            assert answer.status == 200
        seconds.append(time.perf_counter() - start)
    return latency_summary(seconds)


def status_seconds(client, n: int) -> dict:
    seconds = []
    for _ in range(n):
        start = time.perf_counter()
        client.predict(api_name="/status")
        seconds.append(time.perf_counter() - start)
    return latency_summary(seconds)


def asked(client, question: str, paradigm: str) -> tuple[float, float, str]:
    """(seconds to the answer, seconds until the queue had answered the join, trace JSON):
    the join is Gradio's POST /queue/join, which must answer at once however busy the
    workers are (issue 67 saw first runs time out at the client's 20 s waiting for it)."""
    from gradio_client.utils import Status

    start = time.perf_counter()
    job = client.submit(question, paradigm, "", api_name="/run")
    joined = None
    while not job.done():
        if joined is None and job.status().code not in (Status.JOINING_QUEUE,
                                                        Status.STARTING):
            joined = time.perf_counter() - start
        time.sleep(0.02)
    result = job.result()
    took = time.perf_counter() - start
    return took, took if joined is None else joined, result


def concurrent(server: Server, questions: list[str], users: int, per_user: int,
               logins: bool) -> dict:
    """`users` at once, each (its own login with `logins`) asking `per_user` questions,
    saving and reloading each run; a run reloaded changed, or saved as another's, is an
    error."""
    joins: list[float] = []

    def user(u: int) -> tuple[list[float], list[str], list[int]]:
        seconds, errors, saved = [], [], []
        try:
            client = client_for(server, (f"user{u}", PASSWORD) if logins else None)
        except Exception as err:  # noqa: BLE001 - counted, not fatal
            return [], [f"user {u}: login failed: {err}"], []
        for i in range(per_user):
            question = questions[(u * per_user + i) % len(questions)]
            try:
                took, join, trace_json = asked(client, question,
                                               PARADIGMS[(u + i) % len(PARADIGMS)])
                seconds.append(took)
                joins.append(join)
                run_id = client.predict(trace_json, f"user {u}", "", api_name="/save_run")
                saved.append(run_id)
                if json.loads(client.predict(run_id, api_name="/load_run")) \
                        != json.loads(trace_json):
                    errors.append(f"user {u}, question {i}: run {run_id} reloaded changed")
            except Exception as err:  # noqa: BLE001 - counted, not fatal
                errors.append(f"user {u}, question {i}: {err}")
        if logins and saved:
            owners = {r["id"]: r["owner"] for r in json.loads(
                client.predict(api_name="/list_runs"))}
            errors += [f"user {u}: run {i} saved as {owners.get(i)!r}" for i in saved
                       if owners.get(i) != f"user{u}"]
        return seconds, errors, saved

    start = time.perf_counter()
    with ThreadPoolExecutor(users) as pool:
        results = list(pool.map(user, range(users)))
    wall = time.perf_counter() - start
    seconds = [s for r, _, _ in results for s in r]
    errors = [e for _, r, _ in results for e in r]
    return {"requests": users * per_user, "errors": len(errors), "error_samples": errors[:3],
            "wall_s": round(wall, 1), **latency_summary(seconds),
            "queue_join": latency_summary(joins)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--per-user", type=int, default=3)
    parser.add_argument("--logins", type=int, default=20)
    args = parser.parse_args()

    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    dataset = read_dataset(shared_data_dir() / "hotpotqa/dev500_contexts.jsonl")
    questions = [q.text for q in dataset.questions[:args.users * args.per_user]]
    logs = Path(tempfile.mkdtemp(prefix="bench-logins-"))
    path = users_file(logs, args.users)
    result: dict = {"corpus": args.corpus, "users": args.users, "per_user": args.per_user,
                    "argon2 verify": verify_seconds(path, args.logins)}
    print("argon2id verify:", result["argon2 verify"], flush=True)
    for label, env in (("without logins", {}), ("with logins", {"FUNNEL_USERS": str(path)})):
        server = Server(args.corpus, args.data_dir, logs / f"{label.replace(' ', '-')}.log",
                        env=env)
        try:
            server.seconds_to_first_page()
            logins = bool(env)
            client = client_for(server, ("admin", PASSWORD) if logins else None)
            server.seconds_to_ready(client, built=True)
            for paradigm in PARADIGMS:  # the first run of each loads its models
                ask(client, questions[0], paradigm)
            row = {"status": status_seconds(client, args.logins)}
            if logins:
                row["http login"] = http_login_seconds(server, args.logins)
            row["concurrent"] = concurrent(server, questions, args.users, args.per_user,
                                           logins)
            row["rss_mb"] = round(server.rss_mb())
            result[label] = row
            print(label, row, flush=True)
        finally:
            server.stop()
    on, off = result["with logins"], result["without logins"]
    print(markdown_table(
        ["", "without logins", "with logins", "ratio"],
        [["/status median ms", off["status"]["median_ms"], on["status"]["median_ms"],
          f"{on['status']['median_ms'] / off['status']['median_ms']:.2f}x"],
         [f"{args.users} users x {args.per_user} runs: errors",
          off["concurrent"]["errors"], on["concurrent"]["errors"], ""],
         ["run median s", round(off["concurrent"]["median_ms"] / 1000, 1),
          round(on["concurrent"]["median_ms"] / 1000, 1),
          f"{on['concurrent']['median_ms'] / off['concurrent']['median_ms']:.2f}x"],
         ["queue join p95 ms", off["concurrent"]["queue_join"]["p95_ms"],
          on["concurrent"]["queue_join"]["p95_ms"], ""],
         ["wall s", off["concurrent"]["wall_s"], on["concurrent"]["wall_s"],
          f"{on['concurrent']['wall_s'] / off['concurrent']['wall_s']:.2f}x"]]))
    print(f"login over HTTP: median {on['http login']['median_ms']} ms; argon2id verify "
          f"{result['argon2 verify']['right']['median_ms']} ms (unknown name "
          f"{result['argon2 verify']['unknown name']['median_ms']} ms)")
    print("saved", save("logins", result))


if __name__ == "__main__":
    main()
