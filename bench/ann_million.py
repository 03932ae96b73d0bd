"""Approximate dense search at a million documents (1.66M passages): which index keeps flat's
exact top-100 (recall@100 >= 0.95) within 10 ms on one thread, and in how much memory.

Vectors: the synthetic corpus of bench/funnel_scale.py (bench/synthetic.py: real pooled
sentences resampled into N documents; each passage's vector is its sources' real MiniLM
vectors plus noise), written once into a memory-mapped file under data/bench/ann/. Queries:
MiniLM query vectors of the HotpotQA and MuSiQue train100 questions (where a setting is
chosen) and of the first 200 dev500 questions (reported). Truth: the exact top 100 of each.

Indexes, each searched one query at a time on one thread:
  hnsw-sq8   the engine's: faiss HNSW over 8-bit scalar-quantised vectors (`--hnsw`
             names the graphs' M and efConstruction), efSearch swept, its candidates
             re-scored exactly as `DenseIndex.top` does
  ivf-sq8    faiss IVF over 8-bit scalar-quantised vectors, nprobe swept, then the best k'
             candidates re-scored exactly against the memory-mapped fp32 vectors
  usearch    usearch's own HNSW over i8 vectors (with --usearch; `pip install usearch`)
Per setting: recall@100 (mean over queries), median and p90 ms (re-scoring included), the
index's own bytes; build seconds (two threads) and the process's peak memory.

    python -m bench.ann_million [--documents 1000000] [--hnsw 32:40 64:80 ...]
        [--hnsw-ef 400 800 1600] [--ivf-lists 4096 8192] [--ivf-probes 8 16 32 64]
        [--binary] [--usearch 100 200 400]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import numpy as np

from bench.common import (
    dev500_questions,
    markdown_table,
    peak_rss_mb,
    percentile,
    save,
    shown_cpu_flags,
    training_questions,
)
from engine.paths import data_dir

K = 100
DIM = 384
HNSW_EF = (400, 800, 1600)
IVF_LISTS = (4096, 8192)
IVF_PROBES = (8, 16, 32, 64)
RESCORED = (200, 400)
USEARCH_EF = (100, 200, 400)
BINARY_DEPTHS = (1000, 2000, 4000)


def vectors(n: int) -> np.memmap:
    """The synthetic corpus's passage vectors for `n` documents (made once, memory-mapped)."""
    from bench.synthetic import synthetic_corpus, synthetic_vectors
    from engine.data.corpus import load_corpus
    from engine.index.dense import dense_index
    from engine.units.build import UnitConfig, build_units
    from engine.units.chunking import Chunker

    path = data_dir() / "bench" / "ann" / f"passages-{n}.npy"
    if path.is_file():
        return np.load(path, mmap_mode="r")
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus = synthetic_corpus(n)
    units = build_units(corpus, UnitConfig("passages", Chunker(100)))
    pooled = dense_index(load_corpus("pooled"))
    partial = path.with_suffix(".partial.npy")
    out = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32,
                                    shape=(len(units), DIM))
    done = 0
    for rows in synthetic_vectors(corpus, units, pooled):
        out[done:done + len(rows)] = rows
        done += len(rows)
    out.flush()
    del out
    partial.rename(path)
    return np.load(path, mmap_mode="r")


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int = K,
              rows: int = 131_072) -> np.ndarray:
    """Each query's exact top-`k` row ids, best first, scanning `matrix` a slice at a time."""
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_scores = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(matrix), rows):
        scores = queries @ np.asarray(matrix[start:start + rows]).T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        best_ids = np.hstack([best_ids, top + start])
        best_scores = np.hstack([best_scores, np.take_along_axis(scores, top, axis=1)])
        keep = np.argsort(-best_scores, axis=1)[:, :k]
        best_ids = np.take_along_axis(best_ids, keep, axis=1)
        best_scores = np.take_along_axis(best_scores, keep, axis=1)
    return best_ids


def timed_search(search, queries: np.ndarray, truth: np.ndarray) -> dict:
    """Recall@K against `truth` and ms per query of `search(query) -> ids`."""
    seconds, recalls = [], []
    search(queries[0])  # warm-up
    for query, exact in zip(queries, truth, strict=True):
        start = time.perf_counter()
        ids = search(query)
        seconds.append(time.perf_counter() - start)
        recalls.append(len(set(ids[:K].tolist()) & set(exact.tolist())) / K)
    return {"recall@100": round(statistics.fmean(recalls), 4),
            "median ms": round(1000 * statistics.median(seconds), 2),
            "p90 ms": round(1000 * percentile(seconds, 90), 2)}


def rescored(matrix: np.ndarray, candidates: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`candidates` (ids, -1 for none) re-ranked by their exact fp32 score."""
    candidates = np.sort(candidates[candidates >= 0])  # in file order: fewer page walks
    scores = np.asarray(matrix[candidates]) @ query
    return candidates[np.argsort(-scores)[:K]]


def hnsw_rows(matrix, sets: dict, links: int, construction: int,
              sweep: tuple[int, ...]) -> list[dict]:
    """faiss HNSW over SQ8 vectors (the engine's `hnsw_index`, with `links` and `construction`
    in place of HNSW_M and HNSW_EF_CONSTRUCTION), its `sweep` candidates re-scored exactly
    as `DenseIndex.top` does."""
    import faiss

    from engine.index import faiss_index

    saved = faiss_index.HNSW_M, faiss_index.HNSW_EF_CONSTRUCTION
    faiss_index.HNSW_M, faiss_index.HNSW_EF_CONSTRUCTION = links, construction
    try:
        start = time.perf_counter()
        index = faiss_index.hnsw_index(matrix)  # the engine's index, built as it is
        built = time.perf_counter() - start
    finally:
        faiss_index.HNSW_M, faiss_index.HNSW_EF_CONSTRUCTION = saved
    rows = []
    faiss.omp_set_num_threads(1)
    for ef in sweep:
        index.hnsw.efSearch = ef
        for name, (queries, truth) in sets.items():
            got = timed_search(lambda q, e=ef: rescored(matrix, index.search(q[None], e)[1][0],
                                                        q), queries, truth)
            logging.info("hnsw M=%d efC=%d ef %d %s: %s", links, construction, ef, name, got)
            rows.append({"index": f"hnsw-sq8 M={links} efC={construction}",
                         "setting": f"efSearch {ef}, re-score {ef}",
                         "questions": name, **got, "build s": round(built),
                         "index MiB": round(faiss.serialize_index(index).nbytes / 2**20)})
    faiss.omp_set_num_threads(2)
    return rows


def ivf_rows(matrix, sets: dict, lists_tried: tuple[int, ...],
             probes_tried: tuple[int, ...]) -> list[dict]:
    import faiss

    rows = []
    for lists in lists_tried:
        start = time.perf_counter()
        quantiser = faiss.IndexFlatIP(DIM)
        index = faiss.IndexIVFScalarQuantizer(quantiser, DIM, lists,
                                              faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).choice(len(matrix), min(len(matrix), 40 * lists),
                                                 replace=False)
        index.cp.niter = 10
        index.train(np.ascontiguousarray(matrix[np.sort(sample)]))
        for first in range(0, len(matrix), 131_072):
            index.add(np.ascontiguousarray(matrix[first:first + 131_072]))
        built = time.perf_counter() - start
        size = round(faiss.serialize_index(index).nbytes / 2**20)
        faiss.omp_set_num_threads(1)
        for probes in probes_tried:
            index.nprobe = probes
            for depth in RESCORED:
                for name, (queries, truth) in sets.items():
                    got = timed_search(
                        lambda q, d=depth, i=index: rescored(matrix, i.search(q[None], d)[1][0], q),
                        queries, truth)
                    rows.append({"index": f"ivf-sq8 {lists} lists",
                                 "setting": f"nprobe {probes}, re-score {depth}",
                                 "questions": name, **got, "build s": round(built),
                                 "index MiB": size})
        faiss.omp_set_num_threads(2)
        del index
    return rows


def binary_rows(matrix, sets: dict) -> list[dict]:
    """Sign bits of every vector (48 bytes each) scanned exactly by Hamming distance, the
    best `depth` re-scored against the fp32 vectors."""
    import faiss

    start = time.perf_counter()
    index = faiss.IndexBinaryFlat(DIM)
    for first in range(0, len(matrix), 131_072):
        index.add(np.packbits(np.asarray(matrix[first:first + 131_072]) > 0, axis=1))
    built = time.perf_counter() - start
    rows = []
    faiss.omp_set_num_threads(1)
    for depth in BINARY_DEPTHS:
        for name, (queries, truth) in sets.items():
            got = timed_search(
                lambda q, d=depth: rescored(
                    matrix, index.search(np.packbits(q > 0)[None], d)[1][0], q),
                queries, truth)
            rows.append({"index": "binary (sign bits)", "setting": f"re-score {depth}",
                         "questions": name, **got, "build s": round(built),
                         "index MiB": round(index.ntotal * DIM / 8 / 2**20)})
    faiss.omp_set_num_threads(2)
    return rows


def usearch_rows(matrix, sets: dict, sweep: tuple[int, ...]) -> list[dict]:
    from usearch.index import Index

    start = time.perf_counter()
    index = Index(ndim=DIM, metric="ip", dtype="i8", connectivity=32, expansion_add=64)
    for first in range(0, len(matrix), 131_072):
        block = np.ascontiguousarray(matrix[first:first + 131_072])
        index.add(np.arange(first, first + len(block)), block, threads=2)
    built = time.perf_counter() - start
    rows = []
    for ef in sweep:
        index.expansion_search = ef
        for name, (queries, truth) in sets.items():
            got = timed_search(lambda q: np.asarray(index.search(q, K, threads=1).keys,
                                                    dtype=np.int64), queries, truth)
            rows.append({"index": "usearch i8 M=32", "setting": f"expansion {ef}",
                         "questions": name, **got, "build s": round(built),
                         "index MiB": round(index.memory_usage / 2**20)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--hnsw", nargs="*", default=["32:40"], metavar="M:EFC",
                        help="HNSW graphs to build (links:efConstruction); none to skip")
    parser.add_argument("--hnsw-ef", type=int, nargs="+", default=list(HNSW_EF))
    parser.add_argument("--ivf-lists", type=int, nargs="*", default=list(IVF_LISTS))
    parser.add_argument("--ivf-probes", type=int, nargs="+", default=list(IVF_PROBES))
    parser.add_argument("--binary", action="store_true")
    parser.add_argument("--usearch", type=int, nargs="*", default=[], metavar="EXPANSION",
                        help="usearch's expansion_search values (none: skip usearch)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import faiss

    from engine.index.encoding import encode

    faiss.omp_set_num_threads(2)
    start = time.perf_counter()
    matrix = vectors(args.documents)
    made = time.perf_counter() - start
    sets = {}
    for name, found in (("train", training_questions()), ("dev500", dev500_questions(200))):
        queries = encode([q.text for q in found], queries=True)
        sets[name] = (queries, exact_top(matrix, queries))
    rows = ivf_rows(matrix, sets, tuple(args.ivf_lists), tuple(args.ivf_probes))
    if args.binary:
        rows += binary_rows(matrix, sets)
    for graph in args.hnsw:
        links, construction = (int(x) for x in graph.split(":"))
        rows += hnsw_rows(matrix, sets, links, construction, tuple(args.hnsw_ef))
    if args.usearch:
        rows += usearch_rows(matrix, sets, tuple(args.usearch))
    report = {"documents": args.documents, "passages": len(matrix),
              "vectors s": round(made), "cpu_flags": shown_cpu_flags(),
              "peak MiB": round(peak_rss_mb()), "rows": rows}
    print(f"{len(matrix):,} passages of {args.documents:,} synthetic documents; one thread "
          f"per query; CPU flags {' '.join(report['cpu_flags'])}; process peak "
          f"{report['peak MiB']} MiB\n")
    print(markdown_table(["index", "setting", "questions", "recall@100", "median ms",
                          "p90 ms", "build s", "index MiB"],
                         [[r[h] for h in ("index", "setting", "questions", "recall@100",
                                          "median ms", "p90 ms", "build s", "index MiB")]
                          for r in rows]))
    save("ann_million", report)


if __name__ == "__main__":
    main()
