"""Runs sent to a real Phoenix and read back through Phoenix's own client.

A Phoenix server (arize-phoenix 20.26.1, in .venvs/phoenix: its pins are not ours) is
started on free ports with a fresh working folder; real runs (the traces `funnel_vs_flat.py`
saves) are sent to it over OTLP/HTTP by engine.service.otel, exactly as the app's
--otlp-endpoint sends them; then Phoenix's client (`phoenix.client.Client().spans
.get_spans`) reads every span of the project back, and each is checked against what was
sent: its kind, parent, documents (ids, scores) and token counts. Prints the checks and
the cost of turning a run into spans.

    python -m bench.phoenix_traces [--runs 6]

Make the environment once:
    python -m venv .venvs/phoenix && .venvs/phoenix/bin/pip install arize-phoenix==20.26.1
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import replace

from bench.common import ROOT, answering, save
from engine.eval.traces import traced_runs
from engine.paradigms.base import annotate
from engine.paths import data_dir
from engine.service.otel import (
    MAX_DOCUMENTS,
    PROJECT,
    Tracing,
    emit,
    llm_attributes,
    stage_attributes,
)
from engine.trace import RunTrace

READ_BACK = """
import json, sys
from phoenix.client import Client
spans = Client(base_url=sys.argv[1]).spans.get_spans(project_identifier=sys.argv[2],
                                                       limit=10000)
print(json.dumps(spans, default=str))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_phoenix(folder: str) -> tuple[subprocess.Popen, str]:
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": folder, "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_HOST": "127.0.0.1"}
    server = subprocess.Popen([str(ROOT / ".venvs" / "phoenix" / "bin" / "phoenix"), "serve"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    answering(server, f"{url}/healthz", 180, 1, "Phoenix")
    return server, url


def expected(trace: RunTrace) -> dict[str, dict]:
    """Span name -> the attributes we send (the CHAIN root aside)."""
    out = {s.name: stage_attributes(trace, i) for i, s in enumerate(trace.stages)}
    out.update({f"reader: {step.purpose}": llm_attributes(trace, i)
                for i, step in enumerate(trace.llm_steps)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    lines = (data_dir() / "bench" / "funnel_vs_flat_traces.jsonl").read_text().splitlines()
    traces = [RunTrace.from_json(line) for line in lines[:args.runs]]
    traces = [annotate(replace(t, metrics={}), t.gold) for t in traces]

    from opentelemetry.sdk.trace import SpanLimits, TracerProvider

    from engine.service.otel import MAX_ATTRIBUTES

    # the cost of making the spans, with the limits the app's tracing sets
    tracer = TracerProvider(span_limits=SpanLimits(max_span_attributes=MAX_ATTRIBUTES)
                            ).get_tracer("cost")
    started = time.perf_counter()
    for trace in traces:
        emit(trace, tracer)
    per_run_ms = (time.perf_counter() - started) / len(traces) * 1000

    folder = tempfile.mkdtemp(prefix="phoenix-")
    server, url = start_phoenix(folder)
    try:
        tracing = Tracing(url)
        for trace in traces:
            tracing.send(trace)
        tracing.flush()
        time.sleep(3)  # Phoenix writes what it received in batches
        python = ROOT / ".venvs" / "phoenix" / "bin" / "python"
        done = subprocess.run([str(python), "-c", READ_BACK, url, PROJECT],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        spans = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(30)

    roots = [s for s in spans if not s.get("parent_id")]
    checks = {"runs sent": len(traces), "root CHAIN spans read back": sum(
        s["span_kind"] == "CHAIN" for s in roots)}
    sent = [(name, attrs) for t in traces for name, attrs in expected(t).items()]
    children = [s for s in spans if s.get("parent_id")]
    checks["stage and LLM spans sent / read back"] = f"{len(sent)} / {len(children)}"
    matched = 0
    for trace in traces:
        mine = [s for s in roots if s["attributes"].get("input.value") == trace.question
                and trace.paradigm in s["name"]]
        if not mine:
            continue
        kids = {s["name"]: s for s in children if s["parent_id"] == mine[0]["context"]["span_id"]}
        for name, attrs in expected(trace).items():
            got = kids.get(name, {}).get("attributes", {})
            kind_ok = kids.get(name, {}).get("span_kind") == attrs["openinference.span.kind"]
            same = all(_same(got, key, value) for key, value in attrs.items()
                       if key.endswith(("document.id", "document.score", "token_count.prompt",
                                        "token_count.completion")))
            matched += kind_ok and same
    checks["spans whose kind, document ids and scores and token counts match"] = (
        f"{matched} of {len(sent)}")
    # and Phoenix's export read back as runs (engine.eval.traces, as import-traces reads it)
    back = traced_runs([("phoenix", json.dumps(spans))])
    by_question = {(run.question, run.config["root"]): run for run in back}
    same = 0
    for trace in traces:
        run = by_question.get((trace.question, f"{trace.paradigm}: run"))
        same += run is not None and [[(c.unit.id, round(c.score, 6)) for c in s.candidates]
                                     for s in run.stages] == [
            [(c.unit.id, round(c.score, 6)) for c in s.candidates[:MAX_DOCUMENTS]]
            for s in trace.stages] and run.answer == trace.answer
    checks["runs read back from Phoenix's export as the runs sent"] = f"{same} of {len(traces)}"
    checks["making one run's spans (ms)"] = round(per_run_ms, 2)
    for key, value in checks.items():
        print(f"{key:70} {value}")
    print(f"saved {save('phoenix_traces', checks)}")


def _same(got: dict, key: str, value: object) -> bool:
    """Phoenix nests dotted attributes ("retrieval.documents.0.document.id" under
    retrieval -> documents -> [0] -> document -> id); find the value either way."""
    if key in got:
        return got[key] == value
    node: object = got
    for part in key.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return node == value or (isinstance(value, float) and isinstance(node, int | float)
                             and abs(node - value) < 1e-9)


if __name__ == "__main__":
    main()
