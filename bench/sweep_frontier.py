"""Retrieval-only sweeps of funnel K x N and flat M x k, and their recall/latency frontier.

The first N HotpotQA dev500 questions (default 200; `--split train`: the HotpotQA and MuSiQue
train100 questions, where defaults are chosen), pooled corpus, no reader. Each
question runs every grid point of both sweeps back to back, as the app's sweep job does
(engine.eval.runner.answer_all): once reusing each question's prefix-stable stages across
grid points (the sweep's way), once computing every point afresh; both on the same warm
process, so their wall times compare. Printed: wall time of each and their ratio, then per
grid point AR@4, AR@read (all the reader would read), gold-document recall of what is read
and median seconds per question, with the points on the AR@4 and AR@read frontiers marked
and the defaults named.

    python -m bench.sweep_frontier [--limit 200] [--split dev500|train] [--threads 2]
        [--out sweep_frontier]
"""

from __future__ import annotations

import argparse
import time

from bench.common import dev500_questions, markdown_table, opened, save, training_questions
from engine.data.corpus import load_corpus
from engine.eval.runner import answer_all
from engine.eval.summary import row, summarise
from engine.eval.sweep import grid, pareto
from engine.paradigms.registry import make_config
from engine.service.store import make_paradigm

GRIDS = {"funnel": {"K": [2, 5, 10, 20, 40], "N": [2, 4, 8, 16, 32]},
         "flat": {"M": [10, 20, 50, 100, 200], "k": [1, 2, 4, 8, 16]}}


def default_label(paradigm: str, options: dict) -> str:
    config = make_config(paradigm)
    return f"{paradigm} " + " ".join(f"{n}={getattr(config, n)}" for n in options)


def sweep(corpus, questions, reuse: bool) -> tuple[float, list[dict]]:
    points = [(p, point) for p, options in GRIDS.items() for point in grid(p, options)]
    built = [make_paradigm(p, corpus, point.config, retrieval_only=True) for p, point in points]
    start = time.perf_counter()
    rows = [{**row(trace), "paradigm": point.label}
            for traces in answer_all(built, questions, reuse=reuse)
            for trace, (_, point) in zip(traces, points, strict=True)]
    return time.perf_counter() - start, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--split", choices=("dev500", "train"), default="dev500")
    parser.add_argument("--out", default="sweep_frontier")
    args = opened(parser)
    corpus = load_corpus("pooled")
    questions = (dev500_questions(args.limit) if args.split == "dev500"
                 else training_questions()[:args.limit])
    sweep(corpus, questions[:2], reuse=False)  # warm: indexes, encoder, document scores
    reused_seconds, rows = sweep(corpus, questions, reuse=True)
    fresh_seconds, fresh_rows = sweep(corpus, questions, reuse=False)
    same = [r["metrics"] for r in rows] == [r["metrics"] for r in fresh_rows]
    summary = summarise(rows)
    points = len(summary)
    print(f"{points} grid points x {len(questions)} {args.split} questions, retrieval only, "
          "pooled corpus")
    print(f"wall time reusing stages {reused_seconds:.1f} s, afresh {fresh_seconds:.1f} s "
          f"({fresh_seconds / reused_seconds:.2f}x); same metrics: {same}")
    fronts = {}
    for metric in ("AR@4", "AR@read"):
        fronts[metric] = pareto([(label, s["seconds_total_median"], s[metric])
                                 for label, s in summary.items()])
        print(f"\n{metric} frontier: {', '.join(fronts[metric])}")
    defaults = [default_label(p, options) for p, options in GRIDS.items()]
    print(f"defaults: {', '.join(defaults)}; on the AR@4 frontier: "
          f"{[d for d in defaults if d in fronts['AR@4']]}, on the AR@read frontier: "
          f"{[d for d in defaults if d in fronts['AR@read']]}")
    table = []
    for label, s in summary.items():
        read_docs = s.get(f"gold_doc_recall@{'postranker' if 'funnel' in label else 'reranker'}")
        table.append([label + (" (default)" if label in defaults else ""),
                      f"{s['AR@4']:.3f}", f"{s['AR@read']:.3f}",
                      f"{read_docs:.3f}" if read_docs is not None else "",
                      f"{1000 * s['seconds_total_median']:.1f}",
                      "yes" if label in fronts["AR@4"] else "",
                      "yes" if label in fronts["AR@read"] else ""])
    print()
    print(markdown_table(["point", "AR@4", "AR@read", "gold docs read",
                          "ms / question (median)", "AR@4 frontier", "AR@read frontier"],
                         table))
    save(args.out, {"questions": len(questions), "points": points,
                    "seconds_reusing": reused_seconds, "seconds_afresh": fresh_seconds,
                    "same_metrics": same, "frontiers": fronts, "summary": summary})


if __name__ == "__main__":
    main()
