"""Latency of the funnel's first stage and pre-ranker at 10k, 100k and 1M documents.

Each size runs in a fresh interpreter over a synthetic corpus (bench/synthetic.py: real
pooled-corpus sentences resampled into N documents with title mentions between them). The
funnel's default retrieval is built over it exactly as the engine builds it: the link graph,
LongRAG clusters of S=2048 tokens, BM25 over documents, and 100-token passages with one
384-d vector each. The vectors are random unit vectors: encoding a million documents takes
hours on 2 cores, and the time of a scan does not depend on the values it multiplies.

For the first 200 HotpotQA dev500 questions (their terms hit real posting lists, since the
sentences are real) it times, per question:
  first stage  ClusterRetriever with the default hybrid best-member scores (BM25 over
               documents + the dense scan of every passage vector, each document as its
               best passage, each cluster as its best document), K=10; query encoding is
               included, as in the app
    of which   bm25 (every document's score), dense (query encoding + the scan), and the
               rest (grouping into documents and clusters, ranking, labels)
  pre-ranker   the hybrid pre-ranker over the K clusters' documents, N=8: it reads the
               document scores the first stage computed (the engine keeps them per query)
  flat dense   for scale: flat's dense top-100 over the same passage vectors (faiss)

    python -m bench.funnel_scale [--sizes 10000 100000 1000000] [--questions 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.common import latency_summary, markdown_table, peak_rss_mb, run_child, save

STAGES = ("first stage", "bm25", "dense", "rest", "pre-ranker", "flat dense")


def questions(limit: int) -> list[str]:
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    path = shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl"
    return [q.text for q in read_dataset(path).questions[:limit]]


def child(n: int, limit: int) -> dict:
    """Build the funnel's retrieval over a synthetic corpus of `n` documents and time it."""
    import faiss
    import numpy as np

    from bench.synthetic import synthetic_corpus
    from engine.index.bm25 import build_bm25, load_bm25
    from engine.index.dense import DenseIndex
    from engine.index.documents import DocumentScorer
    from engine.models.loading import resolve_precision
    from engine.stages.expand import expand_to_documents
    from engine.stages.rerank import HYBRID_WEIGHT, StoredScoreReranker
    from engine.stages.retrieve import ClusterRetriever
    from engine.units.build import UnitConfig, build_units, cluster_units, passage_units
    from engine.units.chunking import Chunker
    from engine.units.cluster import cluster_documents, doc_tokens
    from engine.units.graph import build_link_graph

    built: dict[str, float] = {}
    start = time.perf_counter()
    corpus = synthetic_corpus(n)
    built["corpus s"] = time.perf_counter() - start

    start = time.perf_counter()
    graph = build_link_graph(corpus)
    found = cluster_documents([doc_tokens(d) for d in corpus.documents], graph, "longrag", 2048)
    clusters = cluster_units(corpus, found)
    assignment = np.empty(len(corpus), dtype=np.int64)
    for position, unit in enumerate(clusters):
        assignment[[corpus.index_of[d] for d in unit.doc_ids]] = position
    built["clusters s"] = time.perf_counter() - start

    start = time.perf_counter()
    documents = build_units(corpus, UnitConfig("documents"))
    with tempfile.TemporaryDirectory() as folder:
        build_bm25(documents, Path(folder))
        bm25 = load_bm25(documents, Path(folder))
    built["bm25 s"] = time.perf_counter() - start

    start = time.perf_counter()
    passages = passage_units(corpus.documents, Chunker(100))
    vectors = np.random.default_rng(0).standard_normal((len(passages), 384), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    del vectors
    dense = DenseIndex(passages, index, "minilm", resolve_precision("auto"))
    dense.vectors  # noqa: B018 (materialised once, as the engine does on first use)
    built["passages s"] = time.perf_counter() - start

    scorer = DocumentScorer(corpus, bm25, dense, "hybrid", HYBRID_WEIGHT)
    first = ClusterRetriever(clusters, assignment, corpus, scorer)
    pre = StoredScoreReranker(scorer)
    texts = questions(limit)
    dense.encode_queries([texts[-1]])  # warm-up: load the query encoder
    seconds: dict[str, list[float]] = {stage: [] for stage in STAGES}
    for text in texts:
        start = time.perf_counter()
        scorer.lexical(text)
        seconds["bm25"].append(time.perf_counter() - start)
        start = time.perf_counter()
        scorer.semantic(text + " ")  # another string: the query memo must not answer it
        seconds["dense"].append(time.perf_counter() - start)
        start = time.perf_counter()
        kept = first.run(text, (), 10).candidates
        seconds["first stage"].append(time.perf_counter() - start)
        seconds["rest"].append(max(0.0, seconds["first stage"][-1] - seconds["bm25"][-1]
                                   - seconds["dense"][-1]))
        members = expand_to_documents(corpus, kept)
        start = time.perf_counter()
        pre.run(text, members, 8)
        seconds["pre-ranker"].append(time.perf_counter() - start)
        start = time.perf_counter()
        dense.search(text, 100)
        seconds["flat dense"].append(time.perf_counter() - start)
    return {"documents": len(corpus), "clusters": len(clusters), "passages": len(passages),
            **{k: round(v, 1) for k, v in built.items()},
            "peak MiB": round(peak_rss_mb()),
            **{stage: latency_summary(values) for stage, values in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--questions", type=int, default=200, help="first N dev500 questions")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import torch

        torch.set_num_threads(1)  # one query at a time, as the app serves them
        print(json.dumps(child(args.child, args.questions)))
        return
    results = {}
    for n in args.sizes:
        results[n] = run_child(Path(__file__), "--child", str(n),
                               "--questions", str(args.questions))
        print(f"{n:,} documents: {results[n]}", file=sys.stderr)
    sizes = list(results)
    headers = ["", *(f"{n:,} docs" for n in sizes), f"{sizes[-1]:,} / {sizes[0]:,}"]
    rows = [[key, *(f"{results[n][key]:,}" for n in sizes),
             f"{results[sizes[-1]][key] / results[sizes[0]][key]:.1f}x"]
            for key in ("documents", "clusters", "passages")]
    for stage in STAGES:
        for stat in ("median_ms", "p95_ms"):
            first, last = results[sizes[0]][stage][stat], results[sizes[-1]][stage][stat]
            rows.append([f"{stage} {stat.replace('_', ' ')}",
                         *(results[n][stage][stat] for n in sizes),
                         f"{last / first:.1f}x" if first else "-"])
    rows += [[key, *(results[n][key] for n in sizes), ""]
             for key in ("corpus s", "clusters s", "bm25 s", "passages s", "peak MiB")]
    print(markdown_table(headers, rows))
    save("funnel_scale", results)


if __name__ == "__main__":
    main()
