"""One dense index in the serving process against the same index served by Ray shards
(engine.index.shards), side by side over the corpus `funnel_scale.py --keep` built.

Each side runs in a fresh interpreter over the same data directory and the same query
vectors (the first 200 HotpotQA dev500 questions, encoded once by the first side):
  one      the index loaded in-process as the app loads it (one thread for faiss)
  shards   `--shards` actors on a local Ray cluster of as many one-CPU workers, each
           holding its rows (exact: copied into the worker; hnsw: a graph per shard, built
           once by its actor and cached, its build time reported)
and times per question: flat's top-100 (the shards' scatter, search and exact merge
included) and the funnel's first stage over the same DocumentScorer (hybrid, K=10; query
encoding excluded: the vector is given), plus the serving process's memory and each
worker's. The shards' top-100 is compared row for row with the one index's.

    python -m bench.ray_shards --keep /work/scale [--documents 1000000] [--shards 2]
                               [--kind exact|hnsw] [--questions 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import latency_summary, markdown_table, peak_rss_mb, run_child, save
from bench.funnel_scale import configs, questions, resident


def serve(n: int, side: str, kind: str, shards: int, limit: int, vectors_file: Path) -> dict:
    import faiss

    from bench.synthetic import synthetic_corpus
    from engine.index.dense import dense_index
    from engine.index.shards import sharded_dense_index
    from engine.service.store import process_store

    faiss.omp_set_num_threads(1)
    corpus = synthetic_corpus(n)
    clusters_config, documents, passages = configs()
    clusters = process_store().clusters(corpus, clusters_config)
    started = time.perf_counter()
    if side == "one":
        dense = dense_index(corpus, passages, kind=kind)
    else:
        dense = sharded_dense_index(corpus, passages, "minilm", "local", shards,
                                    workers=shards, kind=kind)
    load_seconds = time.perf_counter() - started
    texts = questions(limit)
    if not vectors_file.exists():
        np.save(vectors_file, dense.encode_queries(texts))
    out = {"index": dense.description, "load s": round(load_seconds, 1),
           **timed_questions(corpus, clusters, documents, dense, texts,
                             np.load(vectors_file)),
           "peak MiB": round(peak_rss_mb()), **resident()}
    if side == "shards":
        out["workers MiB"] = dense.index.memory()
    return out


def timed_questions(corpus, clusters, documents, dense, texts: list[str],
                    vectors: np.ndarray) -> dict:
    """Per question (its vector given: no encoding timed): flat's top-100 over `dense` and
    the funnel's first stage (hybrid document scores over `documents` BM25 and `dense`,
    K=10 `clusters`); their latencies and every top-100's rows."""
    from engine.index.bm25 import bm25_index
    from engine.index.document_scores import DocumentScorer
    from engine.stages.rerank import HYBRID_WEIGHT
    from engine.stages.retrieve import ClusterRetriever

    scorer = DocumentScorer(corpus, bm25_index(corpus, documents), dense, "hybrid",
                            HYBRID_WEIGHT)
    first = ClusterRetriever(clusters.units, clusters.assignment, corpus, scorer)
    seconds: dict[str, list[float]] = {"flat top-100": [], "first stage": []}
    found = []
    for text, vector in zip(texts, vectors, strict=True):
        start = time.perf_counter()
        rows, _ = dense.top(vector, 100)
        seconds["flat top-100"].append(time.perf_counter() - start)
        found.append(rows.tolist())
        dense._recent.get(text, lambda v=vector: v)  # noqa: SLF001 - the memo answers
        start = time.perf_counter()
        first.run(text, (), 10)
        seconds["first stage"].append(time.perf_counter() - start)
    return {**{name: latency_summary(values) for name, values in seconds.items()},
            "top-100": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, required=True,
                        help="the folder `funnel_scale.py --keep` built the corpus in")
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--kind", choices=("exact", "hnsw"), default="exact")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.keep / str(args.documents)
    vectors_file = folder / f"queries-{args.questions}.npy"
    if args.child:
        print(json.dumps(serve(args.documents, args.child, args.kind, args.shards,
                               args.questions, vectors_file)))
        return
    if not (folder / "build.json").exists():
        sys.exit(f"{folder} holds no built corpus: run `python -m bench.funnel_scale --sizes "
                 f"{args.documents} --keep {args.keep}` first")
    os.environ["FUNNEL_DATA_DIR"] = str(folder)
    common = ["--keep", str(args.keep), "--documents", str(args.documents), "--shards",
              str(args.shards), "--kind", args.kind, "--questions", str(args.questions)]
    results = {}
    for side in ("one", "shards"):
        results[side] = run_child(Path(__file__), *common, "--child", side)
        print(f"{side}: {({k: v for k, v in results[side].items() if k != 'top-100'})}",
              file=sys.stderr, flush=True)
    same = np.mean([len(set(a) & set(b)) / max(len(b), 1) for a, b in
                    zip(results["shards"]["top-100"], results["one"]["top-100"], strict=True)])
    identical = np.mean([a == b for a, b in zip(results["shards"]["top-100"],
                                                 results["one"]["top-100"], strict=True)])
    for side in results.values():
        side.pop("top-100")
    results["shards top-100 = one index's"] = {"rows": round(float(same), 4),
                                               "lists identical": round(float(identical), 4)}
    headers = ["", f"one index ({args.kind})", f"{args.shards} Ray shards ({args.kind})"]
    rows = [[stage, *(f"{results[s][stage]['median_ms']} ({results[s][stage]['p95_ms']})"
                      for s in ("one", "shards"))]
            for stage in ("flat top-100", "first stage")]
    rows += [["load s", results["one"]["load s"], results["shards"]["load s"]],
             ["serving process MiB: peak (anonymous / file-backed)",
              *(f"{results[s]['peak MiB']:,} ({results[s]['anonymous MiB']:,} / "
                f"{results[s]['file-backed MiB']:,})" for s in ("one", "shards"))],
             ["each worker MiB (anonymous / file-backed)", "-",
              ", ".join(f"{w['anonymous']:,} / {w['file-backed']:,}"
                        for w in results["shards"]["workers MiB"])]]
    print(markdown_table(headers, rows))
    print(json.dumps(results["shards top-100 = one index's"]))
    save(f"ray_shards_{args.kind}", results)


if __name__ == "__main__":
    main()
