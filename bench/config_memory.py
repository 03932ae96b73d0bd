"""Server memory over runs with many different stage configs, for one or more checkouts.

Each checkout's `python app.py` is started on its own (same corpus, same data directory, so
the same caches), every paradigm is run once with its defaults (warm-up: models and indexes
load), then `--runs` runs follow, each with a config no earlier run used (K, N, H for the
funnel; M, k for flat; the reader's lr for both). The server's resident memory is read after
every run. Before this project's shared stores, each new config built a new paradigm with
its own index and reader; now memory must stay flat.

    python -m bench.config_memory --roots . /tmp/before --corpus wiki --data-dir data
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.app_serving import Server, client_for
from bench.common import markdown_table, save

QUESTIONS = ("Who wrote War and Peace?", "Which river flows through Budapest?",
             "Who painted the Mona Lisa?", "What is the capital of Austria?")


def configs(n: int) -> list[tuple[str, dict]]:
    """`n` (paradigm, config) pairs, no two alike, valid for old and new versions."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(("funnel", {"K": 4 + i // 2, "N": 3 + i % 5, "H": 2 + i % 3,
                                   "reader": {"lr": 1 + i % 7}}))
        else:
            out.append(("flat", {"M": 20 + i, "k": 2 + i % 3, "reader": {"lr": 1 + i % 7}}))
    return out


def measure(root: Path, corpus: str, data_dir: Path, runs: int, logs: Path) -> dict:
    server = Server(corpus, data_dir, logs / f"{root.name or 'root'}.log", root=root)
    try:
        server.seconds_to_first_page()
        client = client_for(server)
        ready = server.seconds_to_ready(client, ("funnel", "flat"))
        rss = {"ready": round(server.rss_mb())}
        for name in ("funnel", "flat"):
            client.predict(QUESTIONS[0], name, "", api_name="/run")
        rss["after warm-up"] = round(server.rss_mb())
        curve, seconds = [], []
        for i, (name, config) in enumerate(configs(runs)):
            started = time.perf_counter()
            client.predict(QUESTIONS[i % len(QUESTIONS)], name, json.dumps(config),
                           api_name="/run")
            seconds.append(time.perf_counter() - started)
            curve.append(round(server.rss_mb()))
        return {"root": str(root), "ready s": ready, **rss, "after configs": curve[-1],
                "growth MiB": curve[-1] - rss["after warm-up"],
                "MiB per config": round((curve[-1] - rss["after warm-up"]) / runs, 1),
                "curve": curve, "seconds": [round(s, 2) for s in seconds]}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", nargs="+", default=["."], help="checkouts to compare")
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--data-dir", default=None, help="shared caches (default: a new one)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="config-memory-"))
    data_dir = Path(args.data_dir).resolve() if args.data_dir else logs / "data"
    results = [measure(Path(r).resolve(), args.corpus, data_dir, args.runs, logs)
               for r in args.roots]
    headers = ["checkout", "ready MiB", "after warm-up MiB", f"after {args.runs} configs MiB",
               "growth MiB", "MiB per config"]
    print(markdown_table(headers, [[r["root"], r["ready"], r["after warm-up"],
                                    r["after configs"], r["growth MiB"], r["MiB per config"]]
                                   for r in results]))
    for r in results:
        print(f"{r['root']}: RSS after each run {r['curve']}")
    print(f"logs: {logs}")
    save("config_memory", results)


if __name__ == "__main__":
    main()
