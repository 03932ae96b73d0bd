"""Does the reader's first-token attention find the supporting paragraphs?

On HotpotQA train100 questions (never dev500), each question's own 10 paragraphs (2
supporting, 8 distractors) are read by the FiD reader in one pass, and every aggregation
scheme of engine.readers.attention ranks them. Reported: recall@2 of the supporting paragraphs
per scheme, against two baselines read off the same passages: random order and "longest
first" (a length-bias check), plus reader seconds per question.

    python -m bench.fid_scoring [--questions 30] [--lr 4]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bench.common import markdown_table, save
from engine.paths import shared_data_dir
from engine.readers import attention


def recall_at_2(scores, gold: set[int]) -> float:
    top = np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:2]
    return len(set(top.tolist()) & gold) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--lr", type=int, default=4)
    args = parser.parse_args()
    import torch

    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig

    torch.set_grad_enabled(False)
    reader = FiDReader()
    data = json.loads((shared_data_dir() / "hotpotqa" / "train100.json").read_text())
    rng = np.random.default_rng(0)
    results: dict[str, list[float]] = {}
    seconds = []
    for item in data[: args.questions]:
        supporting = {title for title, _ in item["supporting_facts"]}
        passages = [(t, "".join(s).strip()) for t, s in item["context"]]
        gold = {i for i, (t, _) in enumerate(passages) if t in supporting}
        start = time.perf_counter()
        blocks = reader._encode(item["question"], passages, ReaderConfig().max_passage_tokens)
        attn = reader._first_token_attention(blocks)
        seconds.append(time.perf_counter() - start)
        for scheme in attention.SCHEMES:
            scores = [attention.passage_score(a, scheme, args.lr) for a in attn]
            results.setdefault(scheme, []).append(recall_at_2(scores, gold))
        results.setdefault("baseline: random", []).append(
            recall_at_2(rng.random(len(passages)), gold))
        results.setdefault("baseline: longest first", []).append(
            recall_at_2([a.shape[-1] for a in attn], gold))
    summary = {k: round(float(np.mean(v)), 3) for k, v in results.items()}
    save("fid_scoring", {"questions": len(seconds), "lr": args.lr, "recall@2": summary,
                         "seconds_median": float(np.median(seconds))})
    print(f"{len(seconds)} HotpotQA train questions, 10 paragraphs each, lr={args.lr}; "
          f"reader {np.median(seconds):.1f} s per question (median)\n")
    rows = sorted(summary.items(), key=lambda kv: -kv[1])
    print(markdown_table(["scheme", "supporting recall@2"], rows))


if __name__ == "__main__":
    main()
