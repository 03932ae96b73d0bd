"""Bi-encoder throughput by batch size, to choose engine.index.dense.DEFAULT_BATCH_SIZE.

A fixed random sample of pooled-corpus passages (early chunking, UnitConfig("passages"))
is encoded exactly as the dense index encodes units (engine.index.dense.encode over
engine.units.build.index_text) at each batch size, in one process, after one warm-up batch.
The sample and model are the same for every batch size. When other work shares the cores
the absolute figures drop and the load can drift during a run, so the sizes are measured in
rounds of alternating order (small to large, then large to small: a linear drift in load
then hits every size equally) and the mean rate per size is reported. The 1-minute load
average is recorded before and after each measurement to show how busy the machine was.

    python -m bench.dense_throughput [--sample 2000] [--batch-sizes 8 16 32 64 128]
                                     [--rounds 2]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import sys
import time

from bench.common import markdown_table, peak_rss_mb, save
from engine.data.corpus import load_corpus
from engine.index.encoding import encode
from engine.models.loading import load_bi_encoder
from engine.text import count_tokens
from engine.units.build import UnitConfig, build_units, index_text

SEED = 0
logger = logging.getLogger("bench.dense_throughput")


def sample_texts(n: int, seed: int = SEED) -> list[str]:
    """`n` pooled-corpus passages (as indexed: title + text), drawn with a fixed seed."""
    units = build_units(load_corpus("pooled"), UnitConfig("passages"))
    chosen = random.Random(seed).sample(range(len(units)), n)
    logger.info("sampled %d of %d pooled passages", n, len(units))
    return [index_text(units[i]) for i in sorted(chosen)]


def measure(texts: list[str], batch_sizes: list[int], model: str, rounds: int) -> dict:
    """Seconds and passages/second of encoding `texts` at each batch size, per round."""
    import torch

    load_bi_encoder(model)
    encode(texts[:max(batch_sizes)], model, max(batch_sizes))  # warm-up batch
    runs: dict[int, list[dict]] = {size: [] for size in batch_sizes}
    for round_ in range(rounds):
        for batch_size in batch_sizes if round_ % 2 == 0 else batch_sizes[::-1]:
            runs[batch_size].append(_time_encoding(texts, model, batch_size))
            logger.info("round %d, batch size %d: %s", round_ + 1, batch_size,
                        runs[batch_size][-1])
    tokens = [count_tokens(t) for t in texts]
    return {"model": model, "sample": len(texts), "seed": SEED, "rounds": rounds,
            "mean_tokens": round(statistics.mean(tokens), 1), "max_tokens": max(tokens),
            "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
            "peak_rss_mb": round(peak_rss_mb()),
            "runs": {size: {"passages_per_s": round(statistics.mean(
                r["passages_per_s"] for r in rs), 1), "rounds": rs}
                for size, rs in runs.items()}}


def _time_encoding(texts: list[str], model: str, batch_size: int) -> dict:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    encode(texts, model, batch_size)
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 2), "passages_per_s": round(len(texts) / seconds, 1),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def print_report(report: dict) -> None:
    """One row per batch size: rate in each round, mean rate and its ratio to the best."""
    runs = report["runs"]
    best = max(r["passages_per_s"] for r in runs.values())
    rows = [[size, *[x["passages_per_s"] for x in r["rounds"]], r["passages_per_s"],
             f"{r['passages_per_s'] / best:.2f}",
             ", ".join(f"{x['load_before']}-{x['load_after']}" for x in r["rounds"])]
            for size, r in runs.items()]
    rounds = [f"round {i + 1} passages/s" for i in range(report["rounds"])]
    print(f"{report['sample']} passages (mean {report['mean_tokens']} tokens), "
          f"{report['model']}, {report['torch_threads']} torch threads, "
          f"{report['cpus']} CPUs")
    print(markdown_table(["batch size", *rounds, "mean passages/s", "ratio to best",
                          "load avg per round"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        stream=sys.stderr)
    report = measure(sample_texts(args.sample), args.batch_sizes, args.model, args.rounds)
    save("dense_throughput", report)
    print_report(report)


if __name__ == "__main__":
    main()
