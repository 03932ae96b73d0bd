"""One dense index in the serving process against the same index served from a Qdrant
collection (engine.index.qdrant), side by side over the pooled corpus's passages.

Each side runs in a fresh interpreter over the same data directory and the same query
vectors (the first 200 HotpotQA dev500 questions, encoded once by the first side):
  one      the exact index loaded in-process as the app loads it (one thread for faiss)
  written  Qdrant's local mode (`QdrantClient(path=...)`): the collection written from
           that index (time and points/s), then searched
  opened   a fresh process opening the written collection (its checks: size, dimension,
           distance, a sample of payloads), then searched
  milvus   Milvus Lite (`--milvus PYTHON`: a virtualenv with pymilvus and milvus-lite;
           default .venvs/vectordb when it exists): the same vectors written into a
           collection, the same queries searched (bench/milvus_side.py); top-100 only
and times per question: flat's top-100 and the funnel's first stage over the same
DocumentScorer (hybrid, K=10; query encoding excluded: the vector is given), plus the
process's memory. Each side's top-100 is compared row for row with the one index's.

A Qdrant server (or cluster) is the same client with a URL: `--where http://host:6333`
measures one; its HNSW search then answers, not local mode's scan of every vector.

    python -m bench.vector_db [--where FOLDER|URL] [--questions 200] [--milvus PYTHON]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import (
    ROOT,
    markdown_table,
    peak_rss_mb,
    run_child,
    save,
    shown_cpu_flags,
)
from bench.funnel_scale import configs, questions, resident
from bench.ray_shards import timed_questions

COLLECTION = "bench-pooled"
SIDES = ("one", "written", "opened")


MILVUS_PYTHON = ROOT / ".venvs" / "vectordb" / "bin" / "python"


def serve(side: str, where: str, limit: int, vectors_file: Path) -> dict:
    import faiss

    from engine.data.corpus import load_corpus
    from engine.index.dense import dense_index
    from engine.index.qdrant import qdrant_dense_index
    from engine.service.store import process_store

    faiss.omp_set_num_threads(1)
    corpus = load_corpus("pooled")
    clusters_config, documents, passages = configs()
    clusters = process_store().clusters(corpus, clusters_config)
    dense_index(corpus, passages, kind="exact")  # built or found before anything is timed
    started = time.perf_counter()
    if side == "one":
        dense = dense_index(corpus, passages, kind="exact")
        np.save(vectors_file.with_name("passages.npy"), dense.vectors)  # for Milvus's side
    else:
        dense = qdrant_dense_index(corpus, passages, "minilm", where, COLLECTION)
    load_seconds = time.perf_counter() - started
    texts = questions(limit)
    if not vectors_file.exists():
        np.save(vectors_file, dense.encode_queries(texts))
    return {"index": dense.description, "passages": len(dense.units),
            "load s": round(load_seconds, 1),
            **timed_questions(corpus, clusters, documents, dense, texts,
                              np.load(vectors_file)),
            "peak MiB": round(peak_rss_mb()), **resident()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--where", default="",
                        help="a Qdrant server's URL, or a folder for local mode (default: a "
                             "temporary folder, removed after)")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--milvus", default=str(MILVUS_PYTHON) if MILVUS_PYTHON.exists()
                        else "", help="a Python with pymilvus and milvus-lite (empty: skip)")
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
        sides = SIDES
        if args.milvus:
            out = subprocess.run([args.milvus, str(ROOT / "bench" / "milvus_side.py"),
                                  "--vectors", str(scratch / "passages.npy"), "--queries",
                                  str(scratch / "queries.npy"), "--folder",
                                  str(scratch / "milvus")], capture_output=True, text=True,
                                 check=True)
            results["milvus"] = json.loads(out.stdout.strip().splitlines()[-1])
            sides = (*SIDES, "milvus")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    truth = results["one"]["top-100"]
    for side in sides:
        lists = results[side].pop("top-100")
        results[side]["top-100 = one index's"] = {
            "rows": round(float(np.mean([len(set(a) & set(b)) / max(len(b), 1)
                                         for a, b in zip(lists, truth, strict=True)])), 4),
            "lists identical": round(float(np.mean([a == b for a, b in
                                                    zip(lists, truth, strict=True)])), 4)}
    results["cpu flags"] = shown_cpu_flags()
    passages = results["one"]["passages"]
    milvus = "milvus" in results
    headers = ["", "one exact index in-process", "Qdrant: collection written",
               "Qdrant: collection opened", *(["Milvus Lite"] if milvus else [])]

    def cells(read, milvus_cell="-") -> list:
        return [*(read(results[s]) for s in SIDES), *([milvus_cell] if milvus else [])]

    def latency(stage: str):
        return lambda r: f"{r[stage]['median_ms']} ({r[stage]['p95_ms']})"

    rows = [["flat top-100", *cells(latency("flat top-100"),
                                    milvus and latency("flat top-100")(results["milvus"]))],
            ["first stage", *cells(latency("first stage"))],
            ["top-100 rows shared with the one index's",
             *cells(lambda r: r["top-100 = one index's"]["rows"],
                    milvus and results["milvus"]["top-100 = one index's"]["rows"])],
            ["load s (written: the write included)",
             *cells(lambda r: r["load s"], milvus and results["milvus"]["write s"])],
            ["write: passages/s", "-",
             round(passages / max(results["written"]["load s"], 1e-9)), "-",
             *([round(passages / max(results["milvus"]["write s"], 1e-9))] if milvus
               else [])],
            ["process MiB: peak (anonymous / file-backed)",
             *cells(lambda r: f"{r['peak MiB']:,} ({r['anonymous MiB']:,} / "
                              f"{r['file-backed MiB']:,})",
                    milvus and f"{results['milvus']['peak MiB']:,} (client)")]]
    print(f"{passages:,} passages; CPU flags: {' '.join(results['cpu flags'])}")
    print(markdown_table(headers, rows))
    save("vector_db", results)


if __name__ == "__main__":
    main()
