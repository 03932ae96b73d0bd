"""Dense encoding in bf16 against fp32: speed, agreement, and what it does to retrieval.

1. Throughput: a fixed sample of pooled passages encoded by MiniLM with fp32 weights and
   with bf16 weights, in one process, in rounds of alternating order (a drift in load hits
   both alike); passages per second per round and the mean ratio; the cosine between each
   passage's fp32 and bf16 vectors.
2. Retrieval: the pooled corpus's dense passage index at both precisions (built through the
   vector store, so each is encoded once on a machine), and for each question the top-4
   passages (flat's first stage; its bi-encoder re-ranker keeps that order): AR@1..4 over
   span-answer questions, the share of gold supporting documents among the 4, and whether
   the top-4 lists are identical. Training questions (where the default is chosen) and the
   first 200 dev500 questions (reported).

    python -m bench.dense_precision [--sample 600] [--rounds 2] [--threads 2] [--skip-retrieval]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from bench.common import markdown_table, opened, save
from bench.dense_throughput import sample_texts
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.index.dense import dense_index
from engine.index.encoding import encode
from engine.metrics import answer_recall_at, has_span_answer, support_recall
from engine.models.loading import PRECISIONS, load_bi_encoder
from engine.paths import shared_data_dir
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

QUESTION_SETS = {"train": (("hotpotqa/train100.json", 0), ("musique/train100.json", 0)),
                 "dev500": (("hotpotqa/dev500_contexts.jsonl", 200),)}


def throughput(texts: list[str], rounds: int) -> dict:
    """Passages/s per precision and round, and the fp32-bf16 cosines."""
    vectors = {}
    for precision in PRECISIONS:
        load_bi_encoder("minilm", precision)
        encode(texts[:64], precision=precision)  # warm-up batch
    runs: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for round_ in range(rounds):
        for precision in PRECISIONS if round_ % 2 == 0 else PRECISIONS[::-1]:
            start = time.perf_counter()
            vectors[precision] = encode(texts, precision=precision)
            runs[precision].append(round(len(texts) / (time.perf_counter() - start), 1))
    cosines = (vectors["fp32"] * vectors["bf16"]).sum(axis=1)
    return {"sample": len(texts), "passages_per_s": runs,
            "mean_passages_per_s": {p: round(statistics.fmean(r), 1) for p, r in runs.items()},
            "cosine_min": round(float(cosines.min()), 4),
            "cosine_mean": round(float(cosines.mean()), 5)}


def retrieval(corpus, questions, index) -> dict:
    """AR@1..4 (span questions), gold share among the top 4, and the top-4 ids."""
    ars = {k: [] for k in (1, 2, 3, 4)}
    gold, tops = [], []
    for q in questions:
        top = index.search(q.text, 4)
        tops.append([c.unit.id for c in top])
        gold.append(support_recall({c.unit.doc_ids[0] for c in top}, q.supporting_titles))
        if has_span_answer(q):
            found = answer_recall_at([c.unit.text for c in top], q.answers, (1, 2, 3, 4))
            for k in ars:
                ars[k].append(found[k])
    return {"AR": {k: round(statistics.fmean(v), 3) for k, v in ars.items()},
            "gold_recall@4": round(statistics.fmean(gold), 3), "tops": tops}


def pooled_indexes(precisions, report: dict) -> tuple:
    """The pooled corpus and its dense passage index in each of `precisions` (built or
    loaded); each one's seconds go into `report` as "index_seconds_<precision>"."""
    corpus = load_corpus("pooled")
    units = UnitConfig("passages", chunker=Chunker(100))
    built = {}
    for precision in precisions:
        start = time.perf_counter()
        built[precision] = dense_index(corpus, units, precision=precision)
        report[f"index_seconds_{precision}"] = round(time.perf_counter() - start, 1)
    return corpus, built


def question_sets() -> dict[str, list]:
    """QUESTION_SETS' questions by set name."""
    sets = {}
    for name, files in QUESTION_SETS.items():
        sets[name] = []
        for path, limit in files:
            found = read_dataset(shared_data_dir() / path).questions
            sets[name] += found[:limit] if limit else found
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-retrieval", action="store_true")
    args = opened(parser)
    load = os.getloadavg()[0]
    speed = throughput(sample_texts(args.sample), args.rounds)
    report = {"threads": args.threads, "load_before": round(load, 2), "throughput": speed}
    rates = speed["mean_passages_per_s"]
    print(f"{speed['sample']} pooled passages, MiniLM, {args.threads} threads (load "
          f"{load:.2f} before)\n")
    print(markdown_table(
        ["precision", *(f"round {i + 1}" for i in range(args.rounds)), "mean passages/s",
         "ratio to fp32"],
        [[p, *speed["passages_per_s"][p], rates[p], f"{rates[p] / rates['fp32']:.2f}"]
         for p in PRECISIONS]))
    print(f"\ncosine(fp32, bf16) per passage: min {speed['cosine_min']}, mean "
          f"{speed['cosine_mean']}")
    if not args.skip_retrieval:
        corpus, built = pooled_indexes(PRECISIONS, report)
        rows, results = [], {}
        for name, questions in question_sets().items():
            by = {p: retrieval(corpus, questions, built[p]) for p in PRECISIONS}
            same = np.mean([a == b for a, b in zip(by["fp32"]["tops"], by["bf16"]["tops"],
                                                    strict=True)])
            results[name] = {p: {k: v for k, v in r.items() if k != "tops"}
                             for p, r in by.items()} | {"same_top4": round(float(same), 3)}
            for p in PRECISIONS:
                r = by[p]
                rows.append([f"{name} ({len(questions)} q)", p,
                             " / ".join(f"{r['AR'][k]:.3f}" for k in (1, 2, 3, 4)),
                             r["gold_recall@4"], results[name]["same_top4"]])
        report["retrieval"] = results
        print(f"\nindex over {len(built['fp32'].units):,} pooled passages: "
              f"fp32 {report['index_seconds_fp32']} s, bf16 {report['index_seconds_bf16']} s "
              "(0 encoding if cached)\n")
        print(markdown_table(["questions", "precision", "AR@1 / @2 / @3 / @4",
                              "gold recall@4", "identical top-4 lists"], rows))
    save("dense_precision", report)


if __name__ == "__main__":
    main()
