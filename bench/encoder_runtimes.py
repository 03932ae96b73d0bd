"""The bi-encoder's runtimes side by side: torch fp32 and bf16, ONNX Runtime fp32 and int8.

1. Throughput: a fixed sample of pooled passages (as indexed) encoded by each runtime in
   one process, in rounds of alternating order (a drift in load hits all alike): passages
   per second per round, their mean and the ratio to torch fp32; the cosine of each
   passage's vector to torch fp32's.
2. Query encoding: one question at a time (what a search does), median and p90 ms over
   the training questions.
3. Retrieval: the pooled corpus's dense passage index in each precision (fp32 vectors are
   ONNX Runtime's, which equal torch's; built through the vector store, so each is encoded
   once on a machine) and each question's top-4 passages (flat's first stage): AR@1..4 over
   span-answer questions, gold documents among the 4, and top-4 lists identical to fp32's.
   Training questions (where the default is chosen: int8 only if its AR@4 stays within
   0.005 of fp32's) and the first 200 dev500 questions (reported).

    python -m bench.encoder_runtimes [--sample 512] [--rounds 3] [--threads 2]
                                     [--skip-retrieval]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from bench.common import (
    markdown_table,
    opened,
    percentile,
    save,
    shown_cpu_flags,
    training_questions,
)
from bench.dense_precision import pooled_indexes, question_sets, retrieval
from bench.dense_throughput import sample_texts
from engine.index.encoding import encode_with
from engine.models.loading import load_bi_encoder
from engine.models.locations import resolve
from engine.models.pretrained import from_pretrained

RUNTIMES = ("torch fp32", "torch bf16", "onnx fp32", "onnx int8")
INDEXED = ("fp32", "bf16", "int8")  # the precisions an index is built in (fp32: onnx)
BATCH_SIZE = 64


def encoders() -> dict:
    """Each runtime's loaded encoder."""
    from sentence_transformers import SentenceTransformer

    return {"torch fp32": from_pretrained(SentenceTransformer, resolve("minilm"),
                                          device="cpu", local_files_only=True),
            "torch bf16": load_bi_encoder("minilm", "bf16"),
            "onnx fp32": load_bi_encoder("minilm", "fp32"),
            "onnx int8": load_bi_encoder("minilm", "int8")}


def throughput(models: dict, texts: list[str], rounds: int) -> dict:
    """Passages/s per runtime and round, and cosines to torch fp32."""
    for model in models.values():
        encode_with(model, texts[:BATCH_SIZE], BATCH_SIZE)  # warm-up batch
    runs: dict[str, list[float]] = {name: [] for name in models}
    vectors = {}
    for round_ in range(rounds):
        for name in RUNTIMES if round_ % 2 == 0 else RUNTIMES[::-1]:
            start = time.perf_counter()
            vectors[name] = encode_with(models[name], texts, BATCH_SIZE)
            runs[name].append(round(len(texts) / (time.perf_counter() - start), 1))
    cosines = {name: (v * vectors["torch fp32"]).sum(axis=1) for name, v in vectors.items()}
    return {"sample": len(texts), "passages_per_s": runs,
            "mean_passages_per_s": {n: round(statistics.fmean(r), 1) for n, r in runs.items()},
            "cosine_min": {n: round(float(c.min()), 5) for n, c in cosines.items()},
            "cosine_mean": {n: round(float(c.mean()), 5) for n, c in cosines.items()}}


def query_ms(models: dict, queries: list[str]) -> dict:
    """Median and p90 milliseconds of encoding one query, per runtime (interleaved)."""
    seconds: dict[str, list[float]] = {name: [] for name in models}
    for query in queries:
        for name, model in models.items():
            start = time.perf_counter()
            encode_with(model, [query], queries=True)
            seconds[name].append(time.perf_counter() - start)
    return {name: {"median": round(1000 * statistics.median(s), 2),
                   "p90": round(1000 * percentile(s, 90), 2)} for name, s in seconds.items()}


def retrieval_table(report: dict) -> list[list]:
    """AR@1..4 per question set and precision (the index of each built or loaded)."""
    corpus, built = pooled_indexes(INDEXED, report)
    rows, results = [], {}
    for name, questions in question_sets().items():
        by = {p: retrieval(corpus, questions, built[p]) for p in INDEXED}
        results[name] = {}
        for p in INDEXED:
            same = float(np.mean([a == b for a, b in zip(by["fp32"]["tops"], by[p]["tops"],
                                                         strict=True)]))
            results[name][p] = {k: v for k, v in by[p].items() if k != "tops"} | {
                "same_top4_as_fp32": round(same, 3)}
            r = results[name][p]
            rows.append([f"{name} ({len(questions)} q)", p,
                         " / ".join(f"{r['AR'][k]:.3f}" for k in (1, 2, 3, 4)),
                         f"{r['AR'][4] - results[name]['fp32']['AR'][4]:+.3f}",
                         r["gold_recall@4"], r["same_top4_as_fp32"]])
    report["retrieval"] = results
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-retrieval", action="store_true")
    args = opened(parser)
    load = os.getloadavg()[0]
    models = encoders()
    speed = throughput(models, sample_texts(args.sample), args.rounds)
    queries = query_ms(models, [q.text for q in training_questions()])
    report = {"threads": args.threads, "cpu_flags": shown_cpu_flags(),
              "load_before": round(load, 2), "throughput": speed, "query_ms": queries}
    rates = speed["mean_passages_per_s"]
    print(f"{speed['sample']} pooled passages, MiniLM, batch {BATCH_SIZE}, {args.threads} "
          f"threads, CPU flags {' '.join(report['cpu_flags'])} (load {load:.2f} before)\n")
    print(markdown_table(
        ["runtime", *(f"round {i + 1}" for i in range(args.rounds)), "mean passages/s",
         "ratio to torch fp32", "cosine to torch fp32 (min / mean)", "query ms (median / p90)"],
        [[n, *speed["passages_per_s"][n], rates[n], f"{rates[n] / rates['torch fp32']:.2f}",
          f"{speed['cosine_min'][n]} / {speed['cosine_mean'][n]}",
          f"{queries[n]['median']} / {queries[n]['p90']}"] for n in RUNTIMES]))
    if not args.skip_retrieval:
        rows = retrieval_table(report)
        print("\nindex build seconds (0 encoding if cached): " + ", ".join(
            f"{p} {report[f'index_seconds_{p}']}" for p in INDEXED) + "\n")
        print(markdown_table(["questions", "precision", "AR@1 / @2 / @3 / @4",
                              "AR@4 vs fp32", "gold recall@4", "top-4 as fp32's"], rows))
    save("encoder_runtimes", report)


if __name__ == "__main__":
    main()
