"""Batched answering: questions in flight at once, their reader calls decoded together.

The first N HotpotQA dev500 questions (default 40), pooled corpus, one paradigm (default
flat) at its defaults, answered as an evaluation answers them (engine.eval.runner.answer_all)
with 1, 2, 4 and 8 questions in flight, back to back in one warm process. Printed per
setting: wall time, questions per minute and the ratio to one at a time, median seconds per
question, the batch sizes the reader ran, and how many answers are the same as one at a
time's.

    python -m bench.reader_batch [--limit 40] [--paradigm flat] [--in-flight 1 2 4 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import WARM_UP, dev500_questions, markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.eval.runner import answer_all
from engine.paradigms.registry import names
from engine.readers.backends import shared_generator
from engine.service.store import make_paradigm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--paradigm", default="flat", choices=names())
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--out", default="reader_batch")
    args = opened(parser)
    paradigm = make_paradigm(args.paradigm, load_corpus("pooled"))
    batcher = shared_generator().batcher
    paradigm.run(WARM_UP)
    questions = dev500_questions(args.limit)
    report, table, first = {}, [], None
    for in_flight in args.in_flight:
        batcher.sizes.clear()
        start = time.perf_counter()
        traces = [t for (t,) in answer_all([paradigm], questions, concurrency=in_flight)]
        wall = time.perf_counter() - start
        answers = [t.answer for t in traces]
        first = first or (in_flight, answers, wall)
        sizes = batcher.sizes
        report[in_flight] = {
            "seconds": wall, "questions_per_minute": 60 * len(questions) / wall,
            "speed_up": first[2] / wall,
            "median_seconds": statistics.median(t.seconds for t in traces),
            "batch_sizes": dict(sorted(sizes.items())),
            "same_answers": sum(a == b for a, b in zip(answers, first[1], strict=True))}
        r = report[in_flight]
        table.append([in_flight, f"{wall:.1f}", f"{r['questions_per_minute']:.1f}",
                      f"{r['speed_up']:.2f}x", f"{r['median_seconds']:.2f}",
                      ", ".join(f"{k}: {v}" for k, v in r["batch_sizes"].items()),
                      f"{r['same_answers']} of {len(questions)}"])
    print(f"{args.paradigm}, pooled corpus, HotpotQA dev500 first {len(questions)} questions, "
          f"{args.threads} torch threads")
    print(markdown_table(["in flight", "seconds", "questions / min", f"vs {first[0]}",
                          "s / question (median)", "batches (size: count)",
                          f"same answer as {first[0]}"], table))
    save(args.out, report)


if __name__ == "__main__":
    main()
