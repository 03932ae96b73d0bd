"""Runs across trainings and restarts, sent to a real Phoenix: does every run arrive whole?

OpenTelemetry draws trace and span ids from Python's global `random`. Training used to
reseed it (`random.seed(13)`), so after a training, or after a restart that trained
again, new runs reused earlier runs' ids: in Phoenix 20.26.1 two runs of a session never
appeared and one arrived as spans without a root under another trace. This sends, from
two processes one after the other (a restart), real runs of flat over a small corpus with
a real training between them (the query classifier, one short epoch), to a Phoenix server
(arize-phoenix 20.26.1 in .venvs/phoenix, as bench/phoenix_traces.py starts it), once
with training as it is now and once reseeding the global generator after each training
as it used to, each into its own Phoenix project; then reads every span back with
Phoenix's client and counts the runs that arrived whole.

    python -m bench.phoenix_restarts [--runs 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter

from bench.common import ROOT, save
from bench.phoenix_traces import READ_BACK, start_phoenix

SESSION = """
import json, random, sys
import torch
torch.set_num_threads(1)
from engine.data.corpus import load_corpus
from engine.documents import Corpus
from engine.models.query_classifier import QueryClassifierConfig
from engine.service.otel import Tracing
from engine.service.store import make_paradigm
from engine.train.fit_query_classifier import _fit
from engine.train.query_data import QueryExample

url, project, session, runs, reseed = sys.argv[1:6]
tracing = Tracing(url, project=project)
wiki = load_corpus("wiki")
corpus = Corpus("phoenix-restarts", wiki.documents[:300])
flat = make_paradigm("flat", corpus, {}, retrieval_only=True)
examples = [QueryExample("Who painted La Grande Jatte?", 1, "knowledge", False),
            QueryExample("Say hello in French.", 0, "task", False)]
config = QueryClassifierConfig(epochs=1, batch_size=2, max_length=16)
sent = []
for i in range(int(runs)):
    document = corpus.documents[(int(session) * 7 + i * 11) % len(corpus)]
    question = f"session {session} run {i}: what is {document.title}?"
    tracing.send(flat.run(question))
    sent.append(question)
    _fit(examples, config)  # the app trains at start and on Retrain
    if reseed == "1":
        random.seed(13)  # what the training's seed_everything used to do
tracing.flush()
print(json.dumps(sent))
"""


def session(url: str, project: str, number: int, runs: int, reseed: bool) -> list[str]:
    """The questions one app process sent as runs, each followed by a training."""
    done = subprocess.run([sys.executable, "-c", SESSION, url, project, str(number),
                           str(runs), "1" if reseed else "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def read_back(url: str, project: str) -> list[dict]:
    python = ROOT / ".venvs" / "phoenix" / "bin" / "python"
    done = subprocess.run([str(python), "-c", READ_BACK, url, project], capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def whole(spans: list[dict], questions: list[str], stages: int) -> dict:
    """How many of the runs asked arrived as one trace: a root with every stage under it."""
    roots = [s for s in spans if not s.get("parent_id")]
    by_id = {s["context"]["span_id"]: s for s in spans}
    arrived = 0
    for question in questions:
        mine = [r for r in roots if r["attributes"].get("input.value") == question]
        if len(mine) != 1:
            continue
        root = mine[0]
        kids = [s for s in spans if s.get("parent_id") == root["context"]["span_id"]
                and s["context"]["trace_id"] == root["context"]["trace_id"]]
        arrived += len(kids) == stages
    traces = Counter(s["context"]["trace_id"] for s in roots)
    return {"runs sent": len(questions), "root spans read back": len(roots),
            "runs arrived whole": arrived,
            "spans whose parent is missing": sum(
                1 for s in spans if s.get("parent_id") and s["parent_id"] not in by_id),
            "trace ids shared by two runs": sum(1 for n in traces.values() if n > 1),
            "span ids sent twice": len(spans) - len(by_id)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per process")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="phoenix-")
    server, url = start_phoenix(folder)
    found = {}
    try:
        for label, reseed in (("reseeded after each training (before)", True),
                              ("training on its own generators (now)", False)):
            project = "restarts-before" if reseed else "restarts-now"
            started = time.perf_counter()
            asked = [q for number in (1, 2)  # a process, then the restarted one
                     for q in session(url, project, number, args.runs, reseed)]
            time.sleep(5)  # Phoenix writes what it received in batches
            found[label] = {**whole(read_back(url, project), asked, stages=2),
                            "seconds": round(time.perf_counter() - started, 1)}
    finally:
        server.terminate()
        server.wait(30)
    keys = list(next(iter(found.values())))
    print("| | " + " | ".join(found) + " |")
    print("|---|" + "---|" * len(found))
    for key in keys:
        print(f"| {key} | " + " | ".join(str(f[key]) for f in found.values()) + " |")
    print(f"saved {save('phoenix_restarts', found)}")


if __name__ == "__main__":
    main()
