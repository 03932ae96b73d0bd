"""Build time, peak memory and query latency of the retrieval base, side by side.

For each corpus (wiki, pooled, and synthetic corpora of N documents made by resampling real
sentences) every step runs in a fresh interpreter, so its peak resident memory is its own:
  load      read the corpus
  graph     title-mention link graph
  funnelrag / longrag   clustering at S=4096 (graph built untimed first)
  bm25-*    BM25 index over clusters (longrag, S=4096), documents, passages (100 tokens)
  query     median / p95 latency of 200 HotpotQA dev500 questions per granularity, k=10
Figures are printed as a table with ratios to the first corpus.

    python -m bench.build_cost [--corpora wiki pooled synthetic:100000 synthetic:1000000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from bench.common import latency_summary, markdown_table, peak_rss_mb, run_child, save

STEPS = ("load", "graph", "funnelrag", "longrag", "bm25-clusters", "bm25-documents",
         "bm25-passages", "query")
GRANULARITIES = ("clusters", "documents", "passages")


def _corpus(spec: str):
    if spec.startswith("synthetic:"):
        from bench.synthetic import synthetic_corpus

        return synthetic_corpus(int(spec.split(":")[1]))
    from engine.data.corpus import load_corpus

    return load_corpus(spec)


def _unit_config(granularity: str):
    from engine.units.build import UnitConfig

    return UnitConfig(granularity, cluster_algorithm="longrag", cluster_tokens=4096)


def child(step: str, spec: str) -> dict:
    """Run one step in this (fresh) process; returns seconds and memory."""
    import psutil

    started = time.perf_counter()
    corpus = _corpus(spec)
    out = {"documents": len(corpus)}
    load_seconds = time.perf_counter() - started
    before_mb = psutil.Process().memory_info().rss / 2**20
    start = time.perf_counter()
    if step == "load":
        out["seconds"] = round(load_seconds, 3)
    elif step == "graph":
        from engine.units.graph import build_link_graph

        out["edges"] = sum(build_link_graph(corpus).edge_counts().values())
    elif step in ("funnelrag", "longrag"):
        from engine.units.cluster import cluster_documents, doc_tokens
        from engine.units.graph import link_graph

        graph, sizes = link_graph(corpus), [doc_tokens(d) for d in corpus.documents]
        before_mb = psutil.Process().memory_info().rss / 2**20
        start = time.perf_counter()
        out["units"] = len(cluster_documents(sizes, graph, step, 4096).clusters)
    elif step.startswith("bm25-"):
        from engine.index.bm25 import build_bm25
        from engine.units.build import build_units

        units = build_units(corpus, _unit_config(step[5:]))
        before_mb = psutil.Process().memory_info().rss / 2**20
        start = time.perf_counter()
        folder = _index_folder(spec, step[5:])
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        build_bm25(units, folder)
        out["index_mb"] = round(sum(p.stat().st_size for p in folder.rglob("*")
                                    if p.is_file()) / 2**20, 1)
        out["units"] = len(units)
    elif step == "query":
        out.update(_query_latency(corpus, spec))
    out.setdefault("seconds", round(time.perf_counter() - start, 3))
    out["rss_before_mb"] = round(before_mb)
    out["peak_rss_mb"] = round(peak_rss_mb())
    return out


def _index_folder(spec: str, granularity: str) -> Path:
    """Where the bm25 steps leave their index for the query step."""
    from engine.paths import data_dir

    return data_dir() / "bench" / spec.replace(":", "-") / granularity


def _query_latency(corpus, spec: str) -> dict:
    from engine.data.loaders import read_dataset
    from engine.index.bm25 import load_bm25
    from engine.paths import shared_data_dir
    from engine.units.build import build_units

    questions = read_dataset(shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl").questions
    result = {}
    for granularity in GRANULARITIES:
        units = build_units(corpus, _unit_config(granularity))
        index = load_bm25(units, _index_folder(spec, granularity))  # left by the bm25 steps
        index.search(questions[0].text, 10)  # warm-up
        seconds = []
        for q in questions[:200]:
            start = time.perf_counter()
            index.search(q.text, 10)
            seconds.append(time.perf_counter() - start)
        result[granularity] = latency_summary(seconds)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpora", nargs="+", default=["wiki", "pooled"])
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(child(args.step, args.corpus)))
        return
    report: dict[str, dict] = {}
    for spec in args.corpora:
        report[spec] = {}
        for step in STEPS:
            report[spec][step] = run_child(Path(__file__), "--step", step, "--corpus", spec)
            print(f"{spec} {step}: {report[spec][step]}", file=sys.stderr, flush=True)
    save("build_cost_" + "_".join(s.replace(":", "") for s in args.corpora), report)
    print_report(report)


def print_report(report: dict[str, dict]) -> None:
    """One row per figure, one column per corpus, then each corpus's ratio to the first."""
    specs = list(report)
    rows = [_row(report, "documents", lambda r: r["load"]["documents"])]
    for step in STEPS[:-1]:
        rows.append(_row(report, f"{step} s", lambda r, s=step: r[s]["seconds"]))
        rows.append(_row(report, f"{step} peak MiB", lambda r, s=step: r[s]["peak_rss_mb"]))
    for g in GRANULARITIES:
        for stat in ("median_ms", "p95_ms"):
            rows.append(_row(report, f"query {g} {stat.replace('_', ' ')}",
                             lambda r, g=g, stat=stat: r["query"][g][stat]))
    ratios = [f"{s} / {specs[0]}" for s in specs[1:]]
    print(markdown_table(["", *specs, *ratios], rows))


def _row(report: dict, label: str, get) -> list:
    values = [get(r) for r in report.values()]
    return [label, *values, *[f"{v / values[0]:.1f}x" if values[0] else "" for v in values[1:]]]


if __name__ == "__main__":
    main()
