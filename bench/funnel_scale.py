"""The funnel's first stage and flat's dense search at 10k, 100k and 1M documents, over the
exact and the approximate (HNSW) dense index.

For each size, three fresh interpreters share one temporary data directory:
  build   a synthetic corpus (bench/synthetic.py: real pooled-corpus sentences resampled
          into N documents with title mentions between them) and the funnel's default
          retrieval over it, built by the engine's own cached builders: LongRAG clusters
          (S=2048), BM25 over documents, and the dense index of 100-token passages, exact and
          HNSW. The passage vectors are not encoded (a million documents take hours on two
          cores): they are written into the engine's vector store beforehand, so the dense
          builds find every text already encoded. They mix the real MiniLM vectors of the
          pooled documents each document's sentences came from, plus noise
          (`synthetic_vectors`), so an approximate index's recall is measured on vectors
          shaped like real ones. Queries are encoded by MiniLM.
  exact   loads what `build` made, as the app does, and times per question:
            first stage  ClusterRetriever with the default hybrid best-member document
                         scores, K=10, query encoding included (as in the app)
            of which     dense: the query encoding and the passage scores; bm25: BM25 over
                         documents; the rest: grouping, ranking, labels
            pre-ranker   the hybrid pre-ranker over the K clusters' documents, N=8
            flat top-100 flat's dense search, query vector already encoded
          and its peak memory (the serving process's, builds excluded).
  hnsw    the same over the approximate index, plus recall@100 of flat's search against
          the exact top 100, and how many of the exact first stage's 10 clusters it keeps.

Questions: the first 200 HotpotQA dev500 questions are reported. With --tune, the HNSW
child also sweeps efSearch on the HotpotQA and MuSiQue train100 questions (how the default
HNSW_EF_SEARCH was chosen). One thread for torch and faiss: one question at a time, as the
app serves them.

    python -m bench.funnel_scale [--sizes 10000 100000 1000000] [--questions 200] [--tune]
                                 [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    latency_summary,
    markdown_table,
    peak_rss_mb,
    run_child,
    save,
    training_questions,
)

STAGES = ("first stage", "bm25", "dense", "query encoding", "rest", "pre-ranker",
          "flat top-100")
EF_SWEEP = (100, 200, 400, 800, 1600)


def questions(limit: int) -> list[str]:
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    path = shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl"
    return [q.text for q in read_dataset(path).questions[:limit]]


def configs():
    from engine.units.build import UnitConfig
    from engine.units.chunking import Chunker

    return (UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=2048),
            UnitConfig("documents"), UnitConfig("passages", Chunker(100)))


def build(n: int) -> dict:
    """Build everything for `n` documents into $FUNNEL_DATA_DIR; seconds and peak memory."""
    import numpy as np

    from bench.synthetic import synthetic_corpus, synthetic_vectors
    from engine.data.corpus import load_corpus
    from engine.index.bm25 import bm25_index
    from engine.index.dense import dense_index
    from engine.index.encoding import encoder_identity
    from engine.index.vectors import SHARD_TEXTS, VectorStore, text_keys
    from engine.models.loading import resolve_encoder_precision
    from engine.service.store import process_store
    from engine.units.build import build_units, index_text

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    corpus = synthetic_corpus(n)
    clusters, documents, passages = configs()
    units = build_units(corpus, passages)
    seconds["corpus s"] = time.perf_counter() - start
    scale_dir = os.environ.pop("FUNNEL_DATA_DIR")  # the pooled index is in the usual one
    pooled = dense_index(load_corpus("pooled"))
    os.environ["FUNNEL_DATA_DIR"] = scale_dir
    store = VectorStore(encoder_identity("minilm", resolve_encoder_precision("auto")))
    done = 0
    for rows in synthetic_vectors(corpus, units, pooled, batch=SHARD_TEXTS):
        texts = [index_text(u) for u in units[done:done + len(rows)]]
        store._write(text_keys(texts), np.ascontiguousarray(rows))  # noqa: SLF001
        done += len(rows)
    del pooled
    seconds["vectors s"] = time.perf_counter() - start - seconds["corpus s"]
    for name, make in (("clusters s", lambda: process_store().clusters(corpus, clusters)),
                       ("bm25 s", lambda: bm25_index(corpus, documents)),
                       ("exact index s", lambda: dense_index(corpus, passages, kind="exact")),
                       ("hnsw index s", lambda: dense_index(corpus, passages, kind="hnsw"))):
        start = time.perf_counter()
        made = make()
        seconds[name] = time.perf_counter() - start
        del made
    recall = dense_index(corpus, passages, kind="hnsw").recall
    return {"documents": len(corpus), "passages": len(units),
            "clusters": len(process_store().clusters(corpus, clusters).units),
            **{k: round(v, 1) for k, v in seconds.items()},
            "recall@100 at build": recall, "build peak MiB": round(peak_rss_mb())}


def serve(n: int, kind: str, limit: int, tune: bool, truth_file: Path) -> dict:
    """Load the built indexes of one `kind` and time the first stage and flat's search."""
    import numpy as np

    from bench.synthetic import synthetic_corpus
    from engine.index.bm25 import bm25_index
    from engine.index.dense import dense_index
    from engine.index.document_scores import DocumentScorer
    from engine.service.store import process_store
    from engine.stages.expand import expand_to_documents
    from engine.stages.rerank import HYBRID_WEIGHT, StoredScoreReranker
    from engine.stages.retrieve import ClusterRetriever

    corpus = synthetic_corpus(n)
    clusters_config, documents, passages = configs()
    clusters = process_store().clusters(corpus, clusters_config)
    dense = dense_index(corpus, passages, kind=kind)
    scorer = DocumentScorer(corpus, bm25_index(corpus, documents), dense, "hybrid",
                            HYBRID_WEIGHT)
    first = ClusterRetriever(clusters.units, clusters.assignment, corpus, scorer)
    pre = StoredScoreReranker(scorer)
    texts = questions(limit)
    dense.encode_queries([texts[-1]])  # warm-up: load the query encoder
    seconds: dict[str, list[float]] = {stage: [] for stage in STAGES}
    found: dict[str, list] = {"flat": [], "clusters": []}
    for text in texts:
        start = time.perf_counter()
        scorer.lexical(text)
        seconds["bm25"].append(time.perf_counter() - start)
        start = time.perf_counter()
        scorer.semantic(text + " ")  # another string: the query memo must not answer it
        seconds["dense"].append(time.perf_counter() - start)
        start = time.perf_counter()
        dense.encode_queries([text + "  "])
        seconds["query encoding"].append(time.perf_counter() - start)
        start = time.perf_counter()
        kept = first.run(text, (), 10).candidates
        seconds["first stage"].append(time.perf_counter() - start)
        seconds["rest"].append(max(0.0, seconds["first stage"][-1] - seconds["bm25"][-1]
                                   - seconds["dense"][-1]))
        start = time.perf_counter()
        pre.run(text, expand_to_documents(corpus, kept), 8)
        seconds["pre-ranker"].append(time.perf_counter() - start)
        vector = dense.encode_queries([text])[0]
        start = time.perf_counter()
        rows, _ = dense.top(vector, 100)
        seconds["flat top-100"].append(time.perf_counter() - start)
        found["flat"].append(rows.tolist())
        found["clusters"].append([c.unit.id for c in kept])
    out = {"index": dense.description, "peak MiB": round(peak_rss_mb()), **resident(),
           **{stage: latency_summary(values) for stage, values in seconds.items()}}
    if kind == "exact":
        train = [q.text for q in training_questions()]
        found["train"] = [dense.top(dense.encode_queries([t])[0], 100)[0].tolist()
                          for t in train]
        truth_file.write_text(json.dumps(found), encoding="utf-8")
        return out
    truth = json.loads(truth_file.read_text(encoding="utf-8"))
    out["recall@100"] = _recall(found["flat"], truth["flat"])
    out["first-stage clusters kept"] = round(float(np.mean(
        [len(set(a) & set(b)) / len(b) for a, b in zip(found["clusters"], truth["clusters"],
                                                       strict=True)])), 4)
    if tune:
        from engine.index import dense as dense_module

        train = [q.text for q in training_questions()]
        vectors = dense.encode_queries(train)
        out["ef sweep (train)"] = {}
        for ef in EF_SWEEP:
            dense_module.HNSW_EF_SEARCH = ef
            start = time.perf_counter()
            rows = [dense.top(v, 100)[0].tolist() for v in vectors]
            ms = (time.perf_counter() - start) / len(train) * 1000
            out["ef sweep (train)"][ef] = {"recall@100": _recall(rows, truth["train"]),
                                           "ms": round(ms, 2)}
    return out


def resident() -> dict[str, int]:
    """Resident memory now, MiB: anonymous (the process's own) and file-backed (pages of
    memory-mapped files, which the kernel may drop and read again)."""
    from engine.index.shards import resident_memory

    return {f"{name} MiB": mib for name, mib in resident_memory().items()}


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    hits = sum(len(set(a) & set(b)) for a, b in zip(found, truth, strict=True))
    return round(hits / sum(len(b) for b in truth), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--questions", type=int, default=200, help="first N dev500 questions")
    parser.add_argument("--tune", action="store_true", help="sweep efSearch on train100")
    parser.add_argument("--keep", type=Path, help="keep each size's builds under this "
                        "folder and reuse them on the next run (default: a temporary one)")
    parser.add_argument("--kinds", nargs="+", choices=("exact", "hnsw"),
                        default=["exact", "hnsw"], help="the indexes served (hnsw alone "
                        "needs the exact one's top 100 from an earlier run with --keep)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # step, size
    parser.add_argument("--truth", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import faiss
        import torch

        torch.set_num_threads(1)  # one query at a time, as the app serves them
        faiss.omp_set_num_threads(1)
        step, n = args.child[0], int(args.child[1])
        if step == "build":
            faiss.omp_set_num_threads(2)  # builds use both cores, as the app's do
            print(json.dumps(build(n)))
        else:
            print(json.dumps(serve(n, step, args.questions, args.tune, args.truth)))
        return
    results: dict[int, dict] = {}
    for n in args.sizes:
        if args.keep:
            folder = args.keep / str(n)
            folder.mkdir(parents=True, exist_ok=True)
        else:
            folder = Path(tempfile.mkdtemp(prefix=f"funnel-scale-{n}-"))
        os.environ["FUNNEL_DATA_DIR"] = str(folder)
        try:
            built = folder / "build.json"
            results[n] = {"build": json.loads(built.read_text()) if built.exists() else
                          run_child(Path(__file__), "--child", "build", str(n))}
            built.write_text(json.dumps(results[n]["build"]))
            print(f"{n:,} built: {results[n]['build']}", file=sys.stderr, flush=True)
            for kind in args.kinds:
                results[n][kind] = run_child(
                    Path(__file__), "--child", kind, str(n), "--questions",
                    str(args.questions), "--truth", str(folder / "truth.json"),
                    *(["--tune"] if args.tune else []))
                print(f"{n:,} {kind}: {results[n][kind]}", file=sys.stderr, flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    print(markdown_table(*table(results)))
    save("funnel_scale", results)


def table(results: dict[int, dict]) -> tuple[list[str], list[list]]:
    sizes = list(results)
    headers = ["", *(f"{n:,} docs" for n in sizes)]
    rows = [[key, *(f"{results[n]['build'][key]:,}" for n in sizes)]
            for key in ("documents", "passages", "clusters")]
    for stage in ("first stage", "query encoding", "dense", "flat top-100", "pre-ranker"):
        for kind in ("exact", "hnsw"):
            rows.append([f"{stage}, {kind}: median (p95) ms",
                         *(f"{results[n][kind][stage]['median_ms']} "
                           f"({results[n][kind][stage]['p95_ms']})" for n in sizes)])
    rows += [["recall@100 of HNSW vs exact (dev questions)",
              *(results[n]["hnsw"]["recall@100"] for n in sizes)],
             ["recall@100 at build (pseudo-queries)",
              *(results[n]["build"]["recall@100 at build"] for n in sizes)],
             ["exact first stage's 10 clusters HNSW keeps",
              *(results[n]["hnsw"]["first-stage clusters kept"] for n in sizes)],
             *([f"serving peak MiB (anonymous / file-backed at the end), {kind}",
                *(f"{results[n][kind]['peak MiB']:,} ({results[n][kind]['anonymous MiB']:,}"
                  f" / {results[n][kind]['file-backed MiB']:,})" for n in sizes)]
               for kind in ("exact", "hnsw")),
             ["build peak MiB", *(results[n]["build"]["build peak MiB"] for n in sizes)],
             *([key, *(results[n]["build"][key] for n in sizes)]
               for key in ("clusters s", "bm25 s", "exact index s", "hnsw index s"))]
    return headers, rows


if __name__ == "__main__":
    main()
