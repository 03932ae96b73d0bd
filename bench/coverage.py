"""Questions the corpus does not cover: the coverage map of bench/ablation.py's 200 dev500
questions over a corpus, its flagged groups, and how the least covered questions fared.

The questions and their outcomes are those of data/bench/ablation_traces.jsonl (pooled
corpus); the map is drawn over `--corpus` (pooled, where every question's paragraphs are,
or wiki, the 10k Wikipedia summaries, where most are not) from flat's default dense index.
Printed: the seconds the map took (one thread), the groups flagged far from the corpus with
their questions' outcomes and nearest passages, and per paradigm the share of questions
not retrieved and answered right in the lowest quartile of cover against the rest.

    python -m bench.coverage [--corpus pooled|wiki] [--traces ablation_traces]
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter

import numpy as np

from bench.common import rows_from_traces, save
from engine.data.corpus import load_corpus
from engine.eval.coverage import Asked, coverage
from engine.eval.outcomes import row_outcomes
from engine.paradigms.registry import make_config
from engine.results import plain
from engine.service.store import process_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="pooled")
    parser.add_argument("--traces", default="ablation_traces")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    corpus = load_corpus(args.corpus)
    flat = make_config("flat")
    index = process_store().dense(corpus, flat.passages(), flat.bi_encoder)
    asked: dict[str, Asked] = {}
    for r in rows_from_traces(args.traces):
        trace = r["trace"]
        found = asked.setdefault(trace.gold.id, Asked(len(asked), trace.gold, {}))
        found.outcomes[trace.paradigm] = row_outcomes(trace)["outcome"]["answer"]
    start = time.perf_counter()
    mapped = plain(coverage(index, list(asked.values())))  # as the API sends it
    seconds = time.perf_counter() - start
    print(f"{len(asked)} questions over {args.corpus} ({len(index.units):,} passages): "
          f"{seconds:.1f} s; fitted on {mapped['fitted_on']}, the two components explain "
          f"{sum(mapped['explained']):.1%}; far below cosine {mapped['far_below']}")
    by = {q["position"]: q for q in mapped["questions"]}
    far = [g for g in mapped["groups"] if g["far"]]
    print(f"{len(mapped['groups'])} groups, {len(far)} far from the corpus")
    for g in far:
        outcomes = Counter(by[p]["outcomes"].get("flat") for p in g["positions"])
        print(f"- {g['size']} questions, median cosine {g['median_cover']}, flat: "
              f"{dict(outcomes)}; nearest: "
              + "; ".join(f"{n['title']} ({n['cosine']})" for n in g["nearest"]))
        for p in g["positions"][:3]:
            print(f"    {by[p]['question'][:110]}")
    covers = np.array([q["cover"] for q in mapped["questions"]])
    low = covers < mapped["far_below"]
    shares = {}
    for name in sorted({p for q in mapped["questions"] for p in q["outcomes"]}):
        for outcome in ("not retrieved", "answered right"):
            hit = np.array([q["outcomes"].get(name) == outcome for q in mapped["questions"]])
            shares[f"{name} {outcome}"] = (round(float(hit[low].mean()), 3),
                                           round(float(hit[~low].mean()), 3))
            print(f"{name}: {outcome} {shares[f'{name} {outcome}'][0]:.3f} in the lowest "
                  f"cover quartile, {shares[f'{name} {outcome}'][1]:.3f} in the rest")
    save(f"coverage_{args.corpus}", {"seconds": round(seconds, 1), "groups": mapped["groups"],
                                     "far_below": mapped["far_below"], "shares": shares,
                                     "fitted_on": mapped["fitted_on"]})


if __name__ == "__main__":
    main()
