"""The sentence cut (issue 56): the reader's prompt tokens, its seconds and its answers with
and without `prune`, paired per question.

Two parts:

- `choose`: the settings, on the training questions only (HotpotQA train100, whose
  supporting facts mark the gold sentences, and MuSiQue train100; each over its own
  paragraphs). Their first halves choose; every setting runs flat (or `--paradigm`), each
  question read with every setting back to back (the retrieval reused, so only the cut
  and the reader differ).
  Printed per setting: prompt tokens, answer-step seconds, EM, F1, AR@read (the answer in
  what is read), the gold-sentence kept rate of the cut, and the paired EM difference
  against no cut.
- `report`: each paradigm with the cut off and with `--prune` (the chosen default), back to
  back per question, on the first N HotpotQA dev500 questions (over dev500's own
  paragraphs) or on the training questions' held-out halves (`--questions held-out`).
  Printed per paradigm: the same measures, and the paired differences (95% bootstrap
  intervals, McNemar's exact p for EM and AR@read).

Readers answer through ONNX Runtime in fp32 (`reader.attention` off), as evaluations do;
2 torch threads; nothing else runs on the machine while it measures.

    python -m bench.prune choose [--limit 50] [--paradigm flat] [--questions dev500]
        [--settings '{"budget 200": {...}}']
    python -m bench.prune report [--questions dev500|held-out] [--limit 200]
        [--paradigms flat funnel drrag best longrag] [--prune '{"mode": "budget", ...}']
        [--longrag-limit 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence

from bench.common import (
    TRAIN_FILES,
    markdown_table,
    opened,
    run_side_by_side,
    save,
    shown_cpu_flags,
)
from engine.eval.paired import bootstrap_interval, mcnemar
from engine.paths import shared_data_dir

READ = {"reader": {"attention": False}}  # ONNX Runtime fp32, as evaluations read
SETTINGS = {
    "off": {"mode": "off"},
    "budget 64": {"mode": "budget", "tokens": 64},
    "budget 100": {"mode": "budget", "tokens": 100},
    "budget 150": {"mode": "budget", "tokens": 150},
    "budget 200": {"mode": "budget", "tokens": 200},
    "budget 150, no neighbours": {"mode": "budget", "tokens": 150, "neighbours": False},
    "threshold 0.5": {"mode": "threshold", "threshold": 0.5},
    "threshold 0.3": {"mode": "threshold", "threshold": 0.3},
}
MEASURES = ("prompt_tokens", "reader_seconds", "EM", "F1", "AR@read", "gold_sent_kept")
BINARY = ("EM", "AR@read")


def measured(trace) -> dict:
    """What the bench reads of a run beyond its metrics: the reader's prompt tokens and
    seconds (every reader call: LongRAG's two turns), and the cut's gold-sentence kept
    rate (gold sentences after the cut over those before it; none without sentence gold
    or when no gold sentence reached it)."""
    out = {"prompt_tokens": float(trace.reader_input_tokens),
           "reader_seconds": float(sum(s.seconds for s in trace.llm_steps))}
    at = next((i for i, s in enumerate(trace.stages) if s.name == "sentences"), None)
    m = trace.metrics
    if at is not None and at > 0:
        before = m.get(f"gold_sent_recall@{trace.stages[at - 1].name}")
        if before:
            out["gold_sent_kept"] = m["gold_sent_recall@sentences"] / before
    elif trace.gold is not None and trace.gold.supporting_sentences:
        out["gold_sent_kept"] = 1.0  # no cut: every gold sentence it was given is read
    return out


def values(rows: Sequence[dict], measure: str) -> dict[str, float]:
    """{question id: value} of `measure` over the rows that have it."""
    return {r["question_id"]: float(r["metrics"][measure]) for r in rows
            if measure in r["metrics"]}


def summary_row(rows: Sequence[dict]) -> dict:
    """Medians of tokens and seconds, means of the rest."""
    out = {}
    for measure in MEASURES:
        found = list(values(rows, measure).values())
        if found:
            centre = statistics.median if measure in ("prompt_tokens", "reader_seconds") \
                else statistics.fmean
            out[measure] = round(centre(found), 4 if measure != "prompt_tokens" else 1)
    return out


def difference(rows: Sequence[dict], base: Sequence[dict], measure: str) -> dict | None:
    """`rows` minus `base` on `measure` over the questions both have: the difference of
    means (of medians for tokens and seconds), its 95% paired bootstrap interval, and
    McNemar's exact p for a binary measure."""
    a, b = values(rows, measure), values(base, measure)
    ids = [q for q in a if q in b]
    if not ids:
        return None
    x, y = [a[q] for q in ids], [b[q] for q in ids]
    statistic = "median" if measure in ("prompt_tokens", "reader_seconds") else "mean"
    centre = statistics.median if statistic == "median" else statistics.fmean
    low, high = bootstrap_interval(x, y, statistic)
    return {"n": len(ids), "diff": round(centre(x) - centre(y), 4),
            "ci": [round(low, 4), round(high, 4)],
            "p": mcnemar(x, y) if measure in BINARY else None,
            "ratio": round(centre(x) / centre(y), 3) if centre(y) else None}


def cell(d: dict | None) -> str:
    if d is None:
        return ""
    p = f", p {d['p']:.2g}" if d["p"] is not None else ""
    return f"{d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]{p}"


def halves(questions: Sequence, part: str) -> list:
    """The first (`choose`) or second (`held-out`) half of each training file's questions."""
    half = len(questions) // 2
    return list(questions[:half] if part == "choose" else questions[half:])


def training(part: str, limit: int) -> dict[str, list]:
    """{training file: its questions in `part`} (the first `limit` of the part)."""
    from engine.data.loaders import read_dataset

    out = {}
    for name in TRAIN_FILES:
        found = halves(read_dataset(shared_data_dir() / name).questions, part)
        out[name] = found[:limit] if limit else found
    return out


def over(files: dict[str, list], paradigms: dict[str, tuple[str, dict]],
         traces: str) -> list[dict]:
    """Every question of each file through every labelled (paradigm, config), back to back,
    over the file's own paragraphs; retrieval reused between labels of one question."""
    from engine.data.corpus import load_corpus
    from engine.service.store import make_paradigm
    from engine.stages.base import reusing_stages

    rows = []
    for name, questions in files.items():
        corpus = load_corpus(str(shared_data_dir() / name))
        made = {label: make_paradigm(paradigm, corpus, config)
                for label, (paradigm, config) in paradigms.items()}
        with reusing_stages():
            rows += run_side_by_side(made, questions, f"{traces}_{name.split('/')[0]}",
                                     measure=measured)
    return rows


def table(rows: Sequence[dict], labels: Sequence[str], against: dict[str, str]) -> str:
    by = {label: [r for r in rows if r["paradigm"] == label] for label in labels}
    out = []
    for label in labels:
        found = summary_row(by[label])
        base = against.get(label)
        diffs = {m: difference(by[label], by[base], m) for m in MEASURES} if base else {}
        out.append([label, *(found.get(m, "") for m in MEASURES),
                    *(cell(diffs.get(m)) for m in ("prompt_tokens", "reader_seconds", "EM",
                                                   "F1", "AR@read"))])
    return markdown_table(["setting", *MEASURES, "tokens vs off", "seconds vs off",
                           "EM vs off", "F1 vs off", "AR@read vs off"], out)


def choose(args) -> None:
    settings = json.loads(args.settings) if args.settings else SETTINGS
    paradigms = {label: (args.paradigm, {**READ, "prune": prune})
                 for label, prune in settings.items()}
    if args.questions == "dev500":  # the curve reported, never chosen on
        from bench.common import dev500_questions

        files, which = ({"hotpotqa/dev500_contexts.jsonl": dev500_questions(args.limit)},
                        "HotpotQA dev500, first")
    else:
        files, which = training("choose", args.limit), "training questions' first halves,"
    name = f"prune_{'curve' if args.questions == 'dev500' else 'choose'}_{args.paradigm}"
    rows = over(files, paradigms, name)
    labels = list(settings)
    against = {label: "off" for label in labels if label != "off"}
    print(f"{args.paradigm}, {which} {len(rows) // len(labels)} questions, "
          f"CPU {' '.join(shown_cpu_flags())}\n")
    print(table(rows, labels, against))
    save(name, {"settings": settings, "rows": [
        {k: r[k] for k in ("question_id", "paradigm", "metrics")} for r in rows]})


def report(args) -> None:
    prune = json.loads(args.prune)
    labels, against, rows = [], {}, []
    for paradigm in args.paradigms:
        pair = {paradigm: (paradigm, {**READ, "prune": {"mode": "off"}}),
                f"{paradigm} + cut": (paradigm, {**READ, "prune": prune})}
        labels += list(pair)
        against[f"{paradigm} + cut"] = paradigm
        limit = args.longrag_limit if paradigm == "longrag" else args.limit
        if args.questions == "dev500":
            from bench.common import dev500_questions

            files = {"hotpotqa/dev500_contexts.jsonl": dev500_questions(limit)}
        else:
            files = training("held-out", limit // 2)
        rows += over(files, pair, f"prune_{args.questions}_{paradigm}")
    print(f"{args.questions}, cut {json.dumps(prune)}, CPU {' '.join(shown_cpu_flags())}\n")
    print(table(rows, labels, against))
    save(f"prune_{args.questions}", {"prune": prune, "rows": [
        {k: r[k] for k in ("question_id", "paradigm", "metrics")} for r in rows]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parts = parser.add_subparsers(dest="part", required=True)
    pick = parts.add_parser("choose")
    pick.add_argument("--limit", type=int, default=50, help="questions per training file")
    pick.add_argument("--settings", default="", help="JSON {label: prune options}")
    pick.add_argument("--paradigm", default="flat")
    pick.add_argument("--questions", choices=("training", "dev500"), default="training",
                      help="dev500: the same table over the first --limit dev500 questions, "
                           "a curve to report (settings are chosen on training)")
    show = parts.add_parser("report")
    show.add_argument("--questions", choices=("dev500", "held-out"), default="dev500")
    show.add_argument("--limit", type=int, default=200)
    show.add_argument("--longrag-limit", type=int, default=100)
    show.add_argument("--paradigms", nargs="+",
                      default=["flat", "funnel", "drrag", "best", "longrag"])
    show.add_argument("--prune", default='{"mode": "budget", "tokens": 150}')
    args = opened(parser)
    choose(args) if args.part == "choose" else report(args)


if __name__ == "__main__":
    main()
