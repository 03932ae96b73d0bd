"""The best-practices pipeline module by module, in the shape of the paper's ablation.

Each variant is the `best` paradigm with one module changed from its defaults, run side by
side with the others on the pooled corpus (one warm-up run each, not counted). Two parts:

  defaults  on the training questions (HotpotQA + MuSiQue train100): the choices the paper
            leaves to us, the re-ranker and the summarisation budget
  modules   on HotpotQA dev500 (reported, never chosen on): BM25, dense, hybrid at alpha
            0.1 / 0.3 / 0.5, HyDE, re-ranking off, the three repacking orders (reverse is
            the default), summarisation off

Printed per variant: answer recall and gold-document recall of the search stage's top 4
(before any re-ranking), AR@4 of what the reader read (after summarisation: the answer
must survive in a kept sentence), EM, F1, reader tokens, LLM calls, seconds of search and
summarisation (mean) and of the whole run (median).

    python -m bench.best_ablation --part defaults [--limit 50]
    python -m bench.best_ablation --part modules [--limit 200]
    python -m bench.best_ablation --part modules --from-traces   # re-score a finished run
"""

from __future__ import annotations

import argparse
import statistics

from bench.common import (
    dev500_questions,
    markdown_table,
    opened,
    rows_from_traces,
    run_side_by_side,
    save,
    training_questions,
)
from engine.data.corpus import load_corpus
from engine.eval.summary import summarise
from engine.metrics import answer_in, has_span_answer, support_recall
from engine.service.store import make_paradigm

# {part: {label: config changes from best's defaults}}
VARIANTS = {
    "defaults": {  # spelt out in full: they chose the defaults, so they must not follow them
        "no re-ranking, summary 200": {"reranker": "none", "summary_tokens": 200},
        "re-rank: bi-encoder, summary 200": {"reranker": "bi-encoder", "summary_tokens": 200},
        "re-rank: trained cross-encoder, summary 200": {"reranker": "trained",
                                                        "summary_tokens": 200},
        "no re-ranking, summary 100": {"reranker": "none", "summary_tokens": 100},
        "no re-ranking, summary 400": {"reranker": "none", "summary_tokens": 400},
        "no re-ranking, no summarisation": {"reranker": "none", "summarise": False},
    },
    "modules": {
        "BM25": {"search": "bm25"},
        "dense": {"search": "dense"},
        "hybrid alpha 0.1": {"alpha": 0.1},
        "hybrid alpha 0.3 (default)": {"alpha": 0.3},
        "hybrid alpha 0.5": {"alpha": 0.5},
        "hybrid 0.3 + HyDE": {"hyde": True},
        "no re-ranking": {"reranker": "none"},
        "repack forward": {"reader": {"packing": "forward"}},
        "repack sides": {"reader": {"packing": "sides"}},
        "no summarisation": {"summarise": False},
    },
}
SEARCH_STAGES = ("hybrid", "bm25", "dense")
TOP = 4


def search_at_top(trace) -> dict[str, float]:
    """Answer recall and gold-document recall of the search stage's first TOP passages
    (none when the query classifier sent the question past retrieval)."""
    stage = next((s for s in trace.stages if s.name in SEARCH_STAGES), None)
    top = stage.candidates[:TOP] if stage is not None else ()
    out = {"search_gold_doc_recall": support_recall(
        [d for c in top for d in c.unit.doc_ids], trace.gold.supporting_titles)}
    if has_span_answer(trace.gold):
        out["AR@search"] = float(answer_in([c.unit.text for c in top], trace.gold.answers))
    return out


def table(summary: dict) -> str:
    lines = []
    for label, s in summary.items():
        stage = next(n for n in SEARCH_STAGES if f"seconds_{n}" in s)
        summary_seconds = s.get("seconds_summary", 0.0)
        lines.append([label, f"{s['AR@search']:.3f} / {s['search_gold_doc_recall']:.3f}",
                      f"{s['AR@4']:.3f}", f"{s['EM']:.3f}", f"{s['F1']:.3f}",
                      f"{s['reader_tokens']:.0f}", s["llm_calls"],
                      f"{1000 * s[f'seconds_{stage}']:.0f}", f"{1000 * summary_seconds:.0f}",
                      f"{s['seconds_total_median']:.2f}"])
    return markdown_table(["variant", f"search@{TOP} AR / gold-doc recall", "AR@4 read", "EM", "F1",
                           "reader tokens", "LLM calls", "search ms", "summary ms",
                           "s / question"], lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=tuple(VARIANTS), required=True)
    parser.add_argument("--limit", type=int, default=0,
                        help="defaults: first N of each training file (0: all 200); "
                             "modules: first N dev500 questions (0: 200)")
    parser.add_argument("--from-traces", action="store_true",
                        help="re-score the traces of the last run of this part (current "
                             "metrics) instead of running anything")
    args = opened(parser)
    if args.from_traces:
        rows = rescored(args.part)
        summary = summarise(rows)
        print(table(summary))
        save(f"best_{args.part}", {"questions": len(rows) // len(VARIANTS[args.part]),
                                   "variants": VARIANTS[args.part], "summary": summary,
                                   "em_stderr": _em_stderr(rows), "rescored": True})
        return
    corpus = load_corpus("pooled")  # holds every training and dev500 paragraph
    if args.part == "defaults":
        questions, where = training_questions(args.limit), "HotpotQA + MuSiQue train100"
    else:
        questions, where = dev500_questions(args.limit or 200), "HotpotQA dev500"
    paradigms = {label: make_paradigm("best", corpus, config)
                 for label, config in VARIANTS[args.part].items()}
    rows = run_side_by_side(paradigms, questions, f"best_{args.part}_traces", search_at_top)
    summary = summarise(rows)
    print(f"pooled ({len(corpus):,} documents), {where}: {len(questions)} questions, "
          f"{args.threads} torch threads\n")
    print(table(summary))
    save(f"best_{args.part}", {"questions": len(questions), "where": where,
                               "variants": VARIANTS[args.part], "summary": summary,
                               "em_stderr": _em_stderr(rows)})


def rescored(part: str) -> list[dict]:
    """The rows of this part's last run, scored again (bench.common.rows_from_traces)."""
    rows = rows_from_traces(f"best_{part}_traces", list(VARIANTS[part]))
    for r in rows:
        r["metrics"] = {**r["metrics"], **search_at_top(r.pop("trace"))}
    return rows


def _em_stderr(rows: list[dict]) -> dict[str, float]:
    """Standard error of EM per variant: how far apart two rows must be to mean anything."""
    out = {}
    for label in dict.fromkeys(r["paradigm"] for r in rows):
        em = [r["metrics"].get("EM", 0.0) for r in rows if r["paradigm"] == label]
        out[label] = round(statistics.stdev(em) / len(em) ** 0.5, 4) if len(em) > 1 else 0.0
    return out


if __name__ == "__main__":
    main()
