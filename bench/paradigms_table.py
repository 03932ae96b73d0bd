"""All five paradigms on the same dev500 questions: one paper-style table.

For each of the first N HotpotQA dev500 questions every paradigm runs back to back with its
default config (or `--config`), on the pooled corpus, so the machine's state is the same for
all. Printed per paradigm: AR@1..4 of what the reader read, EM, F1, refined EM, reader
tokens, LLM calls and seconds per question (median, and the mean of each stage); then where
each paradigm lost the gold answer (engine.eval.outcomes: shares of the questions) and each
paradigm's paired differences against `--against` (default flat) with 95% paired-bootstrap
intervals and McNemar p (engine.eval.paired). Traces go to data/bench/TRACES.jsonl (default
paradigms_traces); `--ids` runs chosen questions only.

    python -m bench.paradigms_table [--limit 200] [--paradigms flat funnel longrag drrag best]
        [--config '{"best": {"hyde": true}}'] [--threads 2] [--out paradigms_table]
        [--ids ID ...] [--traces NAME]
"""

from __future__ import annotations

import argparse
import json

from bench.common import (
    dev500_questions,
    markdown_table,
    opened,
    rows_from_traces,
    run_side_by_side,
    save,
)
from engine.data.corpus import load_corpus
from engine.eval.outcomes import attribution, in_funnel_order
from engine.eval.paired import paired
from engine.eval.summary import summarise
from engine.paradigms.registry import names
from engine.paths import data_dir
from engine.service.store import make_paradigm

COLUMNS = ("AR@1", "AR@2", "AR@3", "AR@4", "EM", "F1", "refined_EM", "reader_tokens",
           "llm_calls", "seconds_total_median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200, help="first N dev500 questions")
    parser.add_argument("--paradigms", nargs="+", default=names(), choices=names())
    parser.add_argument("--config", default="{}", help="JSON: {paradigm: {option: value}}")
    parser.add_argument("--out", default="paradigms_table", help="bench/results/OUT.json")
    parser.add_argument("--ids", nargs="+", default=(),
                        help="only these dev500 question ids (instead of the first --limit)")
    parser.add_argument("--traces", default="paradigms_traces",
                        help="data/bench/TRACES.jsonl the runs are written to (or re-scored)")
    parser.add_argument("--against", default="flat",
                        help="the paradigm the others' paired differences are taken against")
    parser.add_argument("--from-traces", action="store_true",
                        help="re-score the last run's traces (current metrics); run nothing")
    args = opened(parser)
    configs = json.loads(args.config)
    if args.from_traces:
        rows = [{k: v for k, v in r.items() if k != "trace"}
                for r in rows_from_traces(args.traces)]
        args.limit = len(rows) // len({r["paradigm"] for r in rows})
    else:
        corpus = load_corpus("pooled")  # holds every dev500 paragraph already
        paradigms = {name: make_paradigm(name, corpus, configs.get(name))
                     for name in args.paradigms}
        questions = dev500_questions(0 if args.ids else args.limit)
        if args.ids:
            questions = [q for q in questions if q.id in set(args.ids)]
            args.limit = len(questions)
        rows = run_side_by_side(paradigms, questions, args.traces)
    summary = summarise(rows)
    which = f"{args.limit} chosen" if args.ids else f"first {args.limit}"
    print(f"pooled corpus, HotpotQA dev500 {which} questions, "
          f"{args.threads} torch threads\n")
    print(markdown_table(["paradigm", *COLUMNS],
                         [[name, *(summary[name].get(c, "") for c in COLUMNS)]
                          for name in summary]))
    stages = sorted({k for s in summary.values() for k in s if k.startswith("seconds_")
                     and k != "seconds_total_median"})
    print()
    print(markdown_table(["paradigm", *stages], [[name, *(summary[name].get(k, "")
                                                           for k in stages)]
                                                  for name in summary]))
    outcomes = attribution(rows)
    print()
    print(outcome_table(outcomes))
    pairs = {}
    if args.against in summary:
        base = [r for r in rows if r["paradigm"] == args.against]
        pairs = {name: [d.to_dict() for d in paired([r for r in rows if r["paradigm"] == name],
                                                    base)]
                 for name in summary if name != args.against}
        print()
        print(paired_table(pairs, args.against))
    save(args.out, {"questions": args.limit, "configs": configs, "summary": summary,
                    "outcomes": {n: o.counts for n, o in outcomes.items()},
                    "paired_against": args.against, "paired": pairs, "ids": list(args.ids),
                    "traces": str(data_dir() / "bench" / f"{args.traces}.jsonl")})


def outcome_table(outcomes: dict[str, dict]) -> str:
    """One row per paradigm: the share of its questions in each outcome, funnel order."""
    order = in_funnel_order(o for found in outcomes.values() for o in found.counts)
    return markdown_table(["paradigm", *order], [
        [name, *(f"{found.counts.get(o, 0) / found.total:.3f}" for o in order)]
        for name, found in outcomes.items()])


def paired_table(pairs: dict[str, list[dict]], against: str) -> str:
    """Each paradigm minus `against`: the difference, its interval, McNemar p."""
    metrics = ("EM", "F1", "AR@1", "AR@4", "gold_doc_recall", "seconds")

    def cell(d: dict | None) -> str:
        if d is None:
            return ""
        p = f", p {d['p']:.2g}" if d["p"] is not None else ""
        noise = " (noise)" if d["within_noise"] else ""
        return f"{d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]{p}{noise}"

    return markdown_table([f"minus {against}", *metrics], [
        [name, *(cell(next((d for d in found if d["metric"] == m), None)) for m in metrics)]
        for name, found in pairs.items()])


if __name__ == "__main__":
    main()
