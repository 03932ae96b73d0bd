"""FunnelRAG against flat retrieval with re-ranking, side by side on the pooled corpus.

For each of the first N HotpotQA dev500 questions both paradigms run back to back with their
default configs (engine/paradigms/), so the machine's state is the same for both:

  funnel  BM25 over LongRAG clusters (K) -> pre-ranker over their documents (N)
          -> later chunking -> FiD attention post-ranking (H) -> answer over the H passages
  flat    MiniLM dense retrieval over early-chunked passages (M) -> re-ranker (k)
          -> the same reader answers over the k passages; "flat" re-ranks with the
          bi-encoder (its default), "flat+ce" with the trained cross-encoder

Printed: seconds per stage (mean), retrieval seconds (every stage, answer decoding
excluded) and total seconds (with it) per question as medians, their funnel/flat ratios,
AR@1..4 of the final passages, gold-document recall at every stage, EM, F1 and reader
tokens. One warm-up question per paradigm (model loading) is run first and not counted.
Full run traces go to data/bench/funnel_vs_flat_traces.jsonl for bench/postrank_gain.py.

    python -m bench.funnel_vs_flat [--limit 200] [--threads 2] [--out funnel_vs_flat]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import asdict

from bench.common import dev500_questions, markdown_table, opened, run_side_by_side, save
from engine.data.corpus import load_corpus
from engine.eval.summary import summarise
from engine.paths import data_dir
from engine.service.store import make_paradigm

# (label, paradigm, config): "flat+ce" is flat with the trained cross-encoder re-ranker,
# the paper's kind of flat baseline, run for its cost (its quality: docs/benchmarks/funnel.md,
# "Funnel, flat and flat with a cross-encoder").
VARIANTS = (("funnel", "funnel", {}), ("flat", "flat", {}),
            ("flat+ce", "flat", {"reranker": "trained"}))


def retrieval_seconds(r: dict) -> float:
    return sum(v for k, v in r["seconds"].items() if k != "answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200, help="first N dev500 questions")
    parser.add_argument("--out", default="funnel_vs_flat", help="bench/results/OUT.json")
    parser.add_argument("--variants", nargs="+", default=[v[0] for v in VARIANTS],
                        choices=[v[0] for v in VARIANTS])
    args = opened(parser, threads=None)
    import torch

    corpus = load_corpus("pooled")  # holds every dev500 paragraph already
    paradigms = {label: make_paradigm(name, corpus, config)
                 for label, name, config in VARIANTS if label in args.variants}
    rows = run_side_by_side(paradigms, dev500_questions(args.limit), "funnel_vs_flat_traces")
    summary = summarise(rows)
    for name in paradigms:
        mine = [r for r in rows if r["paradigm"] == name]
        summary[name]["seconds_retrieval_median"] = round(
            statistics.median(retrieval_seconds(r) for r in mine), 4)
    ratios = {f"funnel/{flat} {key}": round(summary["funnel"][key] / summary[flat][key], 3)
              for flat in ("flat", "flat+ce") if "funnel" in summary and flat in summary
              for key in ("seconds_retrieval_median", "seconds_total_median")}
    report = {"questions": args.limit, "corpus": f"pooled ({len(corpus):,} documents)",
              "threads": torch.get_num_threads(),
              "configs": {label: asdict(p.config) for label, p in paradigms.items()},
              "summary": summary, "ratios": ratios,
              "traces": str(data_dir() / "bench" / "funnel_vs_flat_traces.jsonl")}
    save(args.out, report)
    print_report(report)


def print_report(report: dict) -> None:
    summary = report["summary"]
    print(f"{report['corpus']}, HotpotQA dev500 first {report['questions']} questions, "
          f"{report['threads']} torch threads\n")
    keys = sorted({k for s in summary.values() for k in s}, key=_order)
    print(markdown_table(["metric", *summary], [[k, *(s.get(k, "") for s in summary.values())]
                                                for k in keys]))
    print()
    for name, value in report["ratios"].items():
        print(f"{name}: {value}")


def _order(key: str) -> tuple[int, str]:
    groups = ("questions", "AR@", "gold_doc", "EM", "F1", "seconds", "reader")
    return next((i for i, g in enumerate(groups) if key.startswith(g)), len(groups)), key


if __name__ == "__main__":
    main()
