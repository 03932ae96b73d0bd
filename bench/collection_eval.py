"""A BEIR collection evaluated through the product (issue 52): BEIR's ArguAna added as the
Corpora tab and `funnel-engine eval --dataset DIR` add it, its test questions run by the
paradigms as an evaluation runs them, and measured per cut against the graded judgments.

    python -m bench.collection_eval [--limit N] [--funnel-limit N] [--mirror DIR]

1. flat with a BM25 first stage and with the dense one over whole documents (passages of
   512 tokens: an ArguAna document is one passage, its first 256 word pieces encoded as
   MiniLM reads a document), M=100, k=10: the first cut's nDCG@10 is what
   bench/beir_reproduce measures on the bare indexes, and what BEIR and MTEB publish;
2. funnel and DR-RAG at their defaults over the first `--funnel-limit` questions;
3. seconds per 100 questions of each, next to flat's over HotpotQA dev500's first
   questions (its corpus: wiki plus its paragraphs; retrieval only, as a collection's);
4. the per-question ranking measures the evaluation stores (one ir_measures call per
   question, every cut at once) against one ir_measures call over every question's first
   cut: the same means, and what each costs.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

from bench.beir_reproduce import arguana
from bench.common import RESULTS
from engine.metrics import at_stage

WHOLE_DOCUMENTS = {"passage_tokens": 512, "M": 100, "k": 10}
MEASURES = ("nDCG@10", "AP", "RR", "R@100", "Judged@10", "nDCG'@10")


def added_arguana(mirror: str):
    """ArguAna's test split as an added collection (added on first use, as eval adds it)."""
    from engine.data.collection_store import add_collection, split_of

    split = split_of("arguana (test)")
    if split is None:
        split = add_collection("arguana", arguana(mirror), drop_unknown=True)[1][0]
    return split


def evaluate(dataset: Path, corpus: str, paradigm: str, config: dict, limit: int | None,
             label: str) -> tuple[dict, list, float]:
    """(summary, traces, seconds) of `paradigm` with `config` over `dataset`'s questions."""
    from engine.eval.runner import run_eval
    from engine.eval.summary import summarise
    from engine.paradigms.registry import unattended
    from engine.service.store import make_paradigm

    traces: list = []
    first = {}  # the first question's row, timed apart: it loads the models and indexes
    rows, start = [], None
    make = partial(make_paradigm, retrieval_only=True)  # a QA file's too: no reader timed
    for row in run_eval(dataset, [paradigm], corpus, limit, {paradigm: unattended(
            paradigm, config)}, make=make, keep=traces.append, label=label):
        if not first:
            first, start = row, time.perf_counter()
        rows.append(row)
    seconds = time.perf_counter() - start if start else 0.0
    return summarise(rows)[paradigm], traces, seconds / max(1, len(rows) - 1)


def one_call(traces: list, stage: str) -> tuple[dict[str, float], float]:
    """Every question's `stage` ranking measured in one ir_measures call (as trec_eval
    would over a run file), and its seconds."""
    import ir_measures

    from engine.metrics import _SPELLED, document_ranking

    qrels, run = {}, {}
    for trace in traces:
        cut = next(s for s in trace.stages if s.name == stage)
        qid = trace.gold.id
        qrels[qid] = dict(trace.gold.judgments)
        docs = [d for d in document_ranking([c.unit.doc_ids for c in cut.candidates])
                if d != trace.gold.own_document]
        run[qid] = {d: float(len(docs) - r) for r, d in enumerate(docs)}
    measures = [ir_measures.parse_measure(_SPELLED.get(m, m)) for m in MEASURES]
    start = time.perf_counter()
    found = ir_measures.calc_aggregate(measures, qrels, run)
    seconds = time.perf_counter() - start
    return ({m: round(float(found[p]), 4) for m, p in zip(MEASURES, measures, strict=True)},
            seconds)


def per_question_seconds(traces: list) -> float:
    """Seconds of the per-question measuring the evaluation does (engine.paradigms.base
    .annotate), summed over the questions."""
    from engine.paradigms.base import annotate

    start = time.perf_counter()
    for trace in traces:
        annotate(trace, trace.gold)
    return time.perf_counter() - start


def main() -> None:
    from engine.logs import configure_logging
    from engine.service.datasets import dataset_file

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="flat's questions (all)")
    parser.add_argument("--funnel-limit", type=int, default=100)
    parser.add_argument("--qa-limit", type=int, default=200,
                        help="HotpotQA dev500 questions timed for the comparison")
    parser.add_argument("--mirror", default="")
    args = parser.parse_args()
    configure_logging()  # the encoding's progress lines: done of total, time left

    split = added_arguana(args.mirror)
    runs = {"flat (bm25, whole documents)": ("flat", {**WHOLE_DOCUMENTS, "retriever": "bm25"},
                                             args.limit),
            "flat (dense, whole documents)": ("flat", {**WHOLE_DOCUMENTS,
                                                       "retriever": "dense"}, args.limit),
            "funnel": ("funnel", {}, args.funnel_limit),
            "drrag": ("drrag", {}, args.funnel_limit)}
    results = {}
    for name, (paradigm, config, limit) in runs.items():
        summary, traces, seconds = evaluate(split.path, split.corpus, paradigm, config, limit,
                                            split.label)
        stages = [s.name for s in traces[0].stages]
        per_cut = {stage: {m: summary.get(at_stage(m, stage)) for m in MEASURES}
                   for stage in stages}
        results[name] = {"questions": len(traces), "cuts": per_cut,
                         "seconds_per_100_questions": round(100 * seconds, 2)}
        if paradigm == "flat":
            together, call = one_call(traces, stages[0])
            results[name]["one_call"] = {"measures": together, "seconds": round(call, 4),
                                         "per_question_seconds": round(
                                             per_question_seconds(traces), 3)}
        print(name, json.dumps(results[name]), flush=True)
    qa = dataset_file("HotpotQA dev500")
    _, traces, seconds = evaluate(qa, "wiki", "flat", {}, args.qa_limit, "HotpotQA dev500")
    results["HotpotQA dev500: flat (defaults, retrieval only)"] = {
        "questions": len(traces), "seconds_per_100_questions": round(100 * seconds, 2)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "collection_eval.json"
    out.write_text(json.dumps(results, indent=1))

    print(f"\n| run | questions | first cut | {' | '.join(MEASURES)} | s per 100 questions |")
    print("|---" * (len(MEASURES) + 4) + "|")
    for name, r in results.items():
        cuts = r.get("cuts") or {"-": {}}
        for n, (stage, measured) in enumerate(cuts.items()):
            cells = " | ".join("-" if measured.get(m) is None else f"{measured[m]:.3f}"
                               for m in MEASURES)
            print(f"| {name if n == 0 else ''} | {r['questions'] if n == 0 else ''} | {stage} "
                  f"| {cells} | {r['seconds_per_100_questions'] if n == 0 else ''} |")
    for name, r in results.items():
        if "one_call" in r:
            print(f"{name}: one ir_measures call over every question's first cut "
                  f"{r['one_call']['measures']} in {r['one_call']['seconds']} s; the "
                  f"evaluation's per-question measuring {r['one_call']['per_question_seconds']}"
                  f" s in all")
    print(f"\nsaved {out}")


if __name__ == "__main__":
    main()
