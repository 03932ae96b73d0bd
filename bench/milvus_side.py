"""Milvus Lite's side of bench/vector_db.py, run in its own virtualenv (pymilvus and
milvus-lite pin what the project does not): the same passage vectors written into a
collection, the same query vectors searched, top-k rows and times printed as JSON.

    .venvs/vectordb/bin/python bench/milvus_side.py --vectors P.npy --queries Q.npy
                                                    --folder DIR [--k 100]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import numpy as np

SLICE = 5000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()
    from pymilvus import MilvusClient

    vectors, queries = np.load(args.vectors), np.load(args.queries)
    args.folder.mkdir(parents=True, exist_ok=True)
    client = MilvusClient(str(args.folder / "milvus.db"))
    started = time.perf_counter()
    client.create_collection("passages", dimension=vectors.shape[1], metric_type="COSINE",
                             auto_id=False)
    for start in range(0, len(vectors), SLICE):
        client.insert("passages", [{"id": row, "vector": vector.tolist()} for row, vector in
                                   enumerate(vectors[start:start + SLICE], start=start)])
    client.flush("passages")
    client.load_collection("passages")
    written = time.perf_counter() - started
    seconds, found = [], []
    for query in queries:
        start = time.perf_counter()
        hits = client.search("passages", data=[query.tolist()], limit=args.k)[0]
        seconds.append(time.perf_counter() - start)
        found.append([int(hit["id"]) for hit in hits])
    ordered = sorted(seconds)
    print(json.dumps({
        "write s": round(written, 1),
        "flat top-100": {"median_ms": round(statistics.median(seconds) * 1000, 2),
                         "p95_ms": round(ordered[int(round(0.95 * (len(ordered) - 1)))]
                                         * 1000, 2)},
        "peak MiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "top-100": found}))


if __name__ == "__main__":
    main()
