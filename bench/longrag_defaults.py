"""LongRAG's defaults, chosen on the training questions: unit size S, k, the context cap,
and one or two reader turns; plus the long reader's cost per 1k input tokens.

Three parts, on the pooled corpus (every training paragraph is in it):
  units    for each S, units ranked by dense MaxP (each unit as its best stored 100-token
           passage vector) and by BM25 over whole unit texts: answer recall of the top k
           units, both gold documents among them, and the tokens they hold
  reader   the longrag paradigm end to end per config variant: EM, F1, refined EM, answer
           recall of what the reader read, reader tokens and seconds per question
  cost     the reader's seconds for prompts of 500 to 8,000 tokens (prefill, then 16 tokens
           decoded), as seconds per 1k input tokens

Questions: HotpotQA and MuSiQue train100 (`--limit` each); `--dev500 N` reports the first N
dev500 questions instead (bench/paradigms_table.py reports it too), never chosen on.

    python -m bench.longrag_defaults --parts units cost
    python -m bench.longrag_defaults --parts reader --limit 30 \
        --variants '{}' '{"turns": 1}' '{"context_tokens": 1000}'
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from bench.common import dev500_questions, markdown_table, opened, save, training_questions
from engine.data.corpus import load_corpus
from engine.index.document_scores import group_max
from engine.metrics import answer_in, has_span_answer
from engine.service.store import process_store
from engine.text import count_tokens
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

PASSAGES = UnitConfig("passages", chunker=Chunker(100))


def units_part(corpus, questions, sizes, ks) -> dict:
    store = process_store()
    dense = store.documents(corpus, "dense", 1.0, PASSAGES)
    report = {}
    for size in sizes:
        config = UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=size)
        units, assignment = store.clusters(corpus, config)
        tokens = np.array([count_tokens(u.text) for u in units])
        bm25 = store.bm25(corpus, config)
        n_units = len(units)
        rankers = {
            "dense MaxP": lambda q, a=assignment, n=n_units: np.argsort(
                -group_max(dense.scores(q), a, n), kind="stable"),
            "BM25 units": lambda q, index=bm25: np.argsort(-index.scores(q), kind="stable"),
        }
        for name, rank in rankers.items():
            hits = {k: [] for k in ks}
            for question in questions:
                top = rank(question.text)[:max(ks)]
                for k in ks:
                    chosen = [units[int(i)] for i in top[:k]]
                    docs = {d for u in chosen for d in u.doc_ids}
                    gold = set(question.supporting_titles)
                    hits[k].append({
                        "AR": answer_in([u.text for u in chosen], question.answers)
                        if has_span_answer(question) else None,
                        "both": bool(gold) and gold <= docs,
                        "tokens": int(tokens[top[:k]].sum())})
            report[f"S={size} {name}"] = {
                k: {"AR": round(statistics.fmean(h["AR"] for h in rows if h["AR"] is not None),
                                3),
                    "both gold": round(statistics.fmean(h["both"] for h in rows), 3),
                    "tokens": round(statistics.fmean(h["tokens"] for h in rows))}
                for k, rows in hits.items()}
    print(markdown_table(["units", *(f"k={k}: AR / both / tokens" for k in ks)],
                         [[name, *(f"{c['AR']:.3f} / {c['both gold']:.3f} / {c['tokens']:,}"
                                   for c in cells.values())]
                          for name, cells in report.items()]))
    return report


def reader_part(corpus, questions, variants) -> dict:
    """Every variant on every question, the variants in turn on each question (so a busy
    moment of the machine falls on all of them alike)."""
    from engine.service.store import make_paradigm

    paradigms = {text: make_paradigm("longrag", corpus, json.loads(text)) for text in variants}
    for paradigm in paradigms.values():
        paradigm.run(questions[-1].text)  # warm-up, not counted
    rows: dict[str, list[dict]] = {text: [] for text in variants}
    for question in questions:
        for text, paradigm in paradigms.items():
            trace = paradigm.run(question)
            rows[text].append({**trace.metrics, "reader_tokens": trace.reader_input_tokens,
                               "reader_seconds": trace.reader_seconds,
                               "seconds": trace.seconds,
                               "empty_answers": float(not trace.answer.strip())})
    report = {}
    for text, found in rows.items():
        report[text] = {key: round(statistics.fmean(r[key] for r in found if key in r), 3)
                        for key in ("EM", "F1", "refined_EM", "AR@context", "reader_tokens",
                                    "reader_seconds", "seconds", "empty_answers")}
        report[text]["seconds_median"] = round(statistics.median(r["seconds"] for r in found),
                                               2)
        print(text, report[text], file=sys.stderr, flush=True)
    keys = list(next(iter(report.values())))
    print(markdown_table(["config", *keys], [[name, *cells.values()]
                                             for name, cells in report.items()]))
    return report


def cost_part(corpus, lengths) -> dict:
    from engine.readers.backends import shared_generator

    generator = shared_generator("smollm2")
    text = " ".join(d.text for d in corpus.documents[:2000])
    words = text.split()
    generator.generate("Warm up.", max_new_tokens=2)
    report = {}
    for n in lengths:
        prompt = " ".join(words[: int(n * 0.8)])  # ~1.25 model tokens per word here
        start = time.perf_counter()
        out = generator.generate(prompt + "\nAnswer:", max_new_tokens=16)
        seconds = time.perf_counter() - start
        report[n] = {"prompt_tokens": out.prompt_tokens, "seconds": round(seconds, 2),
                     "s_per_1k": round(1000 * seconds / out.prompt_tokens, 2)}
        print(n, report[n], file=sys.stderr, flush=True)
    print(markdown_table(["prompt tokens", "seconds", "s per 1k input tokens"],
                         [[c["prompt_tokens"], c["seconds"], c["s_per_1k"]]
                          for c in report.values()]))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", default=["units", "cost"],
                        choices=("units", "reader", "cost"))
    parser.add_argument("--limit", type=int, default=0, help="first N questions of each file")
    parser.add_argument("--dev500", type=int, default=0,
                        help="report on the first N dev500 questions instead (never choose "
                             "on them)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--variants", nargs="+", default=["{}"],
                        help="longrag configs (JSON) run end to end by --parts reader")
    parser.add_argument("--lengths", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000])
    parser.add_argument("--out", default="longrag_defaults")
    args = opened(parser)
    corpus = load_corpus("pooled")
    questions = dev500_questions(args.dev500) if args.dev500 else training_questions(args.limit)
    report = {"questions": len(questions), "threads": args.threads}
    if "units" in args.parts:
        report["units"] = units_part(corpus, questions, args.sizes, args.k)
    if "reader" in args.parts:
        report["reader"] = reader_part(corpus, questions, args.variants)
    if "cost" in args.parts:
        report["cost"] = cost_part(corpus, args.lengths)
    save(args.out + "_" + "_".join(args.parts), report)


if __name__ == "__main__":
    main()
