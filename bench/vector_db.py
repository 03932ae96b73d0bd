"""One dense index in the serving process against the same index served from a Qdrant
collection (engine.index.qdrant), side by side over the pooled corpus's passages.

Each side runs in a fresh interpreter over the same data directory and the same query
vectors (the first 200 HotpotQA dev500 questions, encoded once by the first side):
  one      the exact index loaded in-process as the app loads it (one thread for faiss)
  written  Qdrant's local mode (`QdrantClient(path=...)`): the collection written from
           that index (time and points/s), then searched
  opened   a fresh process opening the written collection (its checks: size, dimension,
           distance, a sample of payloads), then searched
and times per question: flat's top-100 and the funnel's first stage over the same
DocumentScorer (hybrid, K=10; query encoding excluded: the vector is given), plus the
process's memory. Qdrant's top-100 is compared row for row with the one index's.

A Qdrant server (or cluster) is the same client with a URL: `--where http://host:6333`
measures one; its HNSW search then answers, not local mode's scan of every vector.

    python -m bench.vector_db [--where FOLDER|URL] [--questions 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import (
    latency_summary,
    markdown_table,
    peak_rss_mb,
    run_child,
    save,
    shown_cpu_flags,
)
from bench.funnel_scale import configs, questions, resident

COLLECTION = "bench-pooled"
SIDES = ("one", "written", "opened")


def serve(side: str, where: str, limit: int, vectors_file: Path) -> dict:
    import faiss

    from engine.data.corpus import load_corpus
    from engine.index.bm25 import bm25_index
    from engine.index.dense import dense_index
    from engine.index.document_scores import DocumentScorer
    from engine.index.qdrant import qdrant_dense_index
    from engine.service.store import process_store
    from engine.stages.rerank import HYBRID_WEIGHT
    from engine.stages.retrieve import ClusterRetriever

    faiss.omp_set_num_threads(1)
    corpus = load_corpus("pooled")
    clusters_config, documents, passages = configs()
    clusters = process_store().clusters(corpus, clusters_config)
    dense_index(corpus, passages, kind="exact")  # built or found before anything is timed
    started = time.perf_counter()
    if side == "one":
        dense = dense_index(corpus, passages, kind="exact")
    else:
        dense = qdrant_dense_index(corpus, passages, "minilm", where, COLLECTION)
    load_seconds = time.perf_counter() - started
    texts = questions(limit)
    if not vectors_file.exists():
        np.save(vectors_file, dense.encode_queries(texts))
    vectors = np.load(vectors_file)
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
    return {"index": dense.description, "passages": len(dense.units),
            "load s": round(load_seconds, 1), "peak MiB": round(peak_rss_mb()), **resident(),
            **{name: latency_summary(values) for name, values in seconds.items()},
            "top-100": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--where", default="",
                        help="a Qdrant server's URL, or a folder for local mode (default: a "
                             "temporary folder, removed after)")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(serve(args.child, args.where, args.questions, Path(args.vectors))))
        return
    scratch = Path(tempfile.mkdtemp(prefix="vector-db-"))
    where = args.where or str(scratch / "qdrant")
    if args.where.startswith(("http://", "https://")):
        from qdrant_client import QdrantClient

        QdrantClient(url=args.where).delete_collection(COLLECTION)  # written afresh
    common = ["--where", where, "--questions", str(args.questions),
              "--vectors", str(scratch / "queries.npy")]
    results = {}
    try:
        for side in SIDES:
            results[side] = run_child(Path(__file__), *common, "--child", side)
            print(f"{side}: {({k: v for k, v in results[side].items() if k != 'top-100'})}",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    truth = results["one"]["top-100"]
    for side in SIDES:
        lists = results[side].pop("top-100")
        results[side]["top-100 = one index's"] = {
            "rows": round(float(np.mean([len(set(a) & set(b)) / max(len(b), 1)
                                         for a, b in zip(lists, truth, strict=True)])), 4),
            "lists identical": round(float(np.mean([a == b for a, b in
                                                    zip(lists, truth, strict=True)])), 4)}
    results["cpu flags"] = shown_cpu_flags()
    passages = results["one"]["passages"]
    headers = ["", "one exact index in-process", "Qdrant: collection written",
               "Qdrant: collection opened"]
    rows = [[stage, *(f"{results[s][stage]['median_ms']} ({results[s][stage]['p95_ms']})"
                      for s in SIDES)]
            for stage in ("flat top-100", "first stage")]
    rows += [["top-100 rows shared with the one index's",
              *(results[s]["top-100 = one index's"]["rows"] for s in SIDES)],
             ["load s (written: the write included)",
              *(results[s]["load s"] for s in SIDES)],
             ["write: passages/s", "-",
              round(passages / max(results["written"]["load s"], 1e-9)), "-"],
             ["process MiB: peak (anonymous / file-backed)",
              *(f"{results[s]['peak MiB']:,} ({results[s]['anonymous MiB']:,} / "
                f"{results[s]['file-backed MiB']:,})" for s in SIDES)]]
    print(f"{passages:,} passages; CPU flags: {' '.join(results['cpu flags'])}")
    print(markdown_table(headers, rows))
    save("vector_db", results)


if __name__ == "__main__":
    main()
