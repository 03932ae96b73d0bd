"""The reader with and without the prefix cache, every paradigm, side by side in one run.

The first N HotpotQA dev500 questions (default 200), pooled corpus, each paradigm at its
defaults. Each question runs through each paradigm twice, prefix cache off and on (which
goes first alternates per question), in one warm process. Printed per paradigm: reader
seconds per question (all its LLM calls; median and p95) off and on and their ratio, prompt
tokens prefilled per question (prompt tokens less those read from the cache) off and on,
answers identical, and the largest difference of a heatmap cell (attention the answer's
first token paid to a passage's representative tokens).

    python -m bench.reader_prefix [--limit 200] [--paradigms flat funnel ...] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from bench.common import WARM_UP, dev500_questions, markdown_table, opened, percentile, save
from engine.data.corpus import load_corpus
from engine.paradigms.registry import names
from engine.readers.backends import shared_generator
from engine.service.store import make_paradigm


def prefilled(trace) -> int:
    return sum(s.prompt_tokens - s.cached_tokens for s in trace.llm_steps)


def cells(trace) -> np.ndarray:
    found = [np.asarray(s.attention.cells, dtype=float).ravel()
             for s in trace.llm_steps if s.attention is not None]
    return np.concatenate(found) if found else np.zeros(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--paradigms", nargs="+", default=names(), choices=names())
    parser.add_argument("--out", default="reader_prefix")
    args = opened(parser)
    from tqdm.auto import tqdm

    corpus = load_corpus("pooled")
    paradigms = {name: make_paradigm(name, corpus) for name in args.paradigms}
    cache = shared_generator().prefix_cache  # every paradigm's default reader
    for paradigm in paradigms.values():
        paradigm.run(WARM_UP)  # loads indexes and models, and fills the prefix cache
    runs = {name: {"off": [], "on": []} for name in paradigms}
    for n, question in enumerate(tqdm(dev500_questions(args.limit), desc="questions")):
        for name, paradigm in paradigms.items():
            for mode in (("off", "on") if n % 2 == 0 else ("on", "off")):
                cache.enabled = mode == "on"
                runs[name][mode].append(paradigm.run(question))
    cache.enabled = True
    table, report = [], {}
    for name, modes in runs.items():
        off, on = modes["off"], modes["on"]
        seconds = {m: [t.reader_seconds for t in modes[m]] for m in modes}
        same = sum(a.answer == b.answer for a, b in zip(off, on, strict=True))
        diff = max((float(np.abs(cells(a) - cells(b)).max(initial=0.0))
                    for a, b in zip(off, on, strict=True)
                    if cells(a).shape == cells(b).shape), default=0.0)
        report[name] = {
            **{f"seconds_{m}_{stat}": f(seconds[m]) for m in seconds for stat, f in
               (("median", statistics.median), ("p95", lambda v: percentile(v, 0.95)))},
            "prefilled_off": statistics.mean(prefilled(t) for t in off),
            "prefilled_on": statistics.mean(prefilled(t) for t in on),
            "identical_answers": same, "questions": len(off), "max_cell_difference": diff}
        r = report[name]
        table.append([name, f"{r['seconds_off_median']:.2f} / {r['seconds_off_p95']:.2f}",
                      f"{r['seconds_on_median']:.2f} / {r['seconds_on_p95']:.2f}",
                      f"{r['seconds_off_median'] / r['seconds_on_median']:.2f}x",
                      f"{r['prefilled_off']:.0f}", f"{r['prefilled_on']:.0f}",
                      f"{same} of {len(off)}", f"{diff:.1e}"])
    print(f"pooled corpus, HotpotQA dev500 first {args.limit} questions, "
          f"{args.threads} torch threads")
    print(markdown_table(["paradigm", "reader s off (median / p95)", "on", "speed-up",
                          "tokens prefilled off", "on", "same answer", "max cell diff"],
                         table))
    save(args.out, report)


if __name__ == "__main__":
    main()
