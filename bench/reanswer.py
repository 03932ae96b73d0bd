"""The reader's ceiling: EM/F1 with a paradigm's own passages against with the gold added.

The first N HotpotQA dev500 questions (default 100), pooled corpus, flat and funnel at their
defaults. Each question is run, then re-answered by the same reader (only the reader runs:
engine.paradigms.reanswer) over what it read plus the question's gold supporting
paragraphs (the oracle) ranked after them ("own + gold": with the default reverse packing
they sit farthest from the question) or before them ("gold + own": next to the question),
and over the gold paragraphs alone. Printed per paradigm: EM, F1, answer recall of what was
read and reader tokens for each reading, and the paired differences against own with their
95% bootstrap intervals and McNemar p.

    python -m bench.reanswer [--limit 100] [--readings own "gold + own" ...]
        [--threads 2] [--out reanswer]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import dev500_questions, markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.eval.paired import paired
from engine.eval.summary import row
from engine.paradigms.reanswer import reanswer
from engine.service.datasets import supporting_documents
from engine.service.store import make_paradigm

READINGS = ("own", "own + gold", "gold + own", "gold only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--paradigms", nargs="+", default=["flat", "funnel"])
    parser.add_argument("--readings", nargs="+", default=list(READINGS), choices=READINGS,
                        help="what the reader reads (own is always read: the others are "
                        "paired against it)")
    parser.add_argument("--out", default="reanswer")
    args = opened(parser)
    corpus = load_corpus("pooled")
    questions = dev500_questions(args.limit)
    table, payload = [], {}
    for name in args.paradigms:
        paradigm = make_paradigm(name, corpus)
        paradigm.run(questions[0])  # warm
        readings = ["own", *(r for r in READINGS if r in args.readings and r != "own")]
        rows: dict[str, list[dict]] = {reading: [] for reading in readings}
        start = time.perf_counter()
        for question in questions:
            trace = paradigm.run(question)
            gold = supporting_documents(question, corpus)
            read = [c.unit.id for c in trace.read]
            rows["own"].append(row(trace))
            for reading in readings[1:]:
                ids = [] if reading == "gold only" else read
                again = reanswer(paradigm, trace, ids, gold, oracle_first=reading == "gold + own")
                rows[reading].append(row(again))
        seconds = time.perf_counter() - start
        payload[name] = {"seconds": seconds}
        for reading, found in rows.items():
            means = {k: statistics.fmean(r["metrics"][k] for r in found)
                     for k in ("EM", "F1")}
            spans = [r for r in found if r["span_answer"]]
            means["AR@read"] = statistics.fmean(r["metrics"]["AR@read"] for r in spans)
            means["reader_tokens"] = statistics.fmean(r["reader_tokens"] for r in found)
            payload[name][reading] = means
            table.append([name, reading, f"{means['EM']:.3f}", f"{means['F1']:.3f}",
                          f"{means['AR@read']:.3f}", f"{means['reader_tokens']:.0f}"])
        for reading in readings[1:]:
            diffs = {d.metric: d for d in paired(rows[reading], rows["own"])}
            payload[name][f"{reading} - own"] = {m: d.to_dict() for m, d in diffs.items()}
            for metric in ("EM", "F1"):
                d = diffs[metric]
                p = f", McNemar p {d.p:.3g}" if d.p is not None else ""
                print(f"{name}: {reading} - own {metric} {d.diff:+.3f} "
                      f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]{p}")
        print(f"{name}: {len(questions)} questions x {len(readings)} readings in {seconds:.0f} s")
    print()
    print(markdown_table(["paradigm", "reader reads", "EM", "F1", "AR@read", "reader tokens"],
                         table))
    save(args.out, {"questions": len(questions), **payload})


if __name__ == "__main__":
    main()
