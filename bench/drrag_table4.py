"""DR-RAG's Table 4 on this machine: supporting-document recall and documents sent to the
reader for BM25, SM, QDC, CIS and CFS at k in {3, 4, 6}, then EM/F1 with the reader.

Pooled corpus, the first N HotpotQA dev500 questions (each has two supporting documents);
`--dataset hotpotqa/train100.json` runs the training questions instead (defaults are chosen
there, never on dev500).
Each method is the `drrag` paradigm with one config (engine/paradigms/drrag.py):

  BM25  similarity matching with BM25 over documents, top k
  SM    dense similarity matching (MiniLM, a document's best passage), top k
  QDC   k1 = ceil(k/2) static documents, then q + d retrieval (k2 = 3 per document), cut to k
  CIS   QDC's k documents, minus those no pair makes positive (the selection classifier)
  CFS   the k1 static documents, each with the first of its QDC documents C accepts
  QDC-BM25, CIS-BM25, CFS-BM25   the same with BM25 similarity matching (static documents
        and q + d retrieval both BM25 over documents)

Retrieval (every method, every k) stops before the reader: "any" is the share of questions
with at least one supporting document sent, "both" with both, "sent" the mean number of
documents sent. Seconds are the mean retrieval seconds per question; classifier
milliseconds per pair are the selection stage's seconds over its calls. EM/F1 then run the
reader (one LLM call) for every method at `--answer-k` (default 4), the reader asked once per
distinct question and document list (greedy decoding: the same list gets the same answer,
so QDC and a CFS that accepts every first candidate share their calls). One warm-up question
per method is not counted.

    python -m bench.drrag_table4 [--limit 200] [--threads 2] [--answer-k 4] [--dataset FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
from itertools import islice
from pathlib import Path

from bench.common import markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.metrics import exact_match, f1_score
from engine.paths import shared_data_dir
from engine.readers.reader import answer
from engine.service.store import make_paradigm
from engine.trace import LLMStep, StageResult

DEV = "hotpotqa/dev500_contexts.jsonl"
METHODS = ("BM25", "SM", "QDC", "CIS", "CFS", "QDC-BM25", "CIS-BM25", "CFS-BM25")
KS = (3, 4, 6)


def config(method: str, k: int) -> dict:
    if method in ("BM25", "SM"):
        return {"retriever": "bm25" if method == "BM25" else "dense", "selection": "sm",
                "k": k}
    selection, _, retriever = method.lower().partition("-")
    return {"retriever": retriever or "dense", "selection": selection, "k": k,
            "k1": math.ceil(k / 2), "k2": 3}


STAGES = {"sm": 1, "qdc": 2, "cis": 3, "cfs": 3}  # stages before the reader's call


def retrieve(paradigm, question: str) -> list[StageResult]:
    """The run's stages; the generator is closed before it reaches the reader's call."""
    steps = paradigm.steps(question)
    stages = list(islice(steps, STAGES[paradigm.config.selection]))
    steps.close()
    assert all(isinstance(s, StageResult) for s in stages)
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200, help="first N questions")
    parser.add_argument("--dataset", default=DEV, help="QA file under the shared data folder")
    parser.add_argument("--answer-k", type=int, default=4, help="k of the EM/F1 runs")
    parser.add_argument("--no-answers", action="store_true", help="retrieval only")
    parser.add_argument("--answers-only", action="store_true", help="EM/F1 only")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--answer-methods", nargs="+", choices=METHODS,
                        help="methods of the EM/F1 runs (default: --methods)")
    parser.add_argument("--out", default="drrag_table4", help="bench/results/OUT.json")
    args = opened(parser)
    from tqdm.auto import tqdm

    from engine.models.selection_classifier import active_version, shared_classifier

    corpus = load_corpus("pooled")
    questions = read_dataset(shared_data_dir() / args.dataset).questions[:args.limit]
    runs = {(m, k): make_paradigm("drrag", corpus, config(m, k)) for k in KS
            for m in args.methods}
    for paradigm in runs.values():  # warm-up: indexes and models loaded, not counted
        retrieve(paradigm, "Which river flows through Budapest?")
    table = {}
    for (method, k), paradigm in tqdm([] if args.answers_only else runs.items(),
                                      desc="configs"):
        any_, both, sent, seconds, pair_ms = [], [], [], [], []
        for q in questions:
            stages = retrieve(paradigm, q.text)
            titles = {c.unit.title for c in stages[-1].candidates}
            found = len(titles & set(q.supporting_titles))
            any_.append(found >= 1)
            both.append(found >= len(q.supporting_titles))
            sent.append(len(titles))
            seconds.append(sum(s.seconds for s in stages))
            calls = stages[-1].details.calls
            if calls:
                pair_ms.append(1000 * stages[-1].seconds / len(calls))
        table[f"{method} k={k}"] = {
            "any": round(statistics.fmean(any_), 3), "both": round(statistics.fmean(both), 3),
            "sent": round(statistics.fmean(sent), 2),
            "seconds": round(statistics.fmean(seconds), 3),
            "classifier_ms_per_pair": round(statistics.fmean(pair_ms), 1) if pair_ms else None}
    source = "" if args.dataset == DEV else "_" + "_".join(Path(args.dataset).with_suffix("").parts)
    suffix = source + ("_answers" if args.answers_only else "") + (
        "" if args.methods == list(METHODS) else "_" + "_".join(args.methods))
    report = {"dataset": args.dataset, "questions": len(questions),
              "corpus": f"pooled ({len(corpus):,} documents)", "threads": args.threads,
              "classifier": active_version(), "threshold": shared_classifier().threshold,
              "table": table, "answers": {}}
    save(args.out + suffix, report)  # the retrieval table is kept if the EM/F1 runs stop
    print(f"{report['corpus']}, {args.dataset} first {report['questions']} questions, "
          f"{args.threads} torch threads, classifier {report['classifier']} (threshold "
          f"{report['threshold']:.3f})\n")
    if table:
        print(markdown_table(["method", "any", "both", "sent", "s/question", "ms/pair"],
                             [[name, r["any"], r["both"], r["sent"], r["seconds"],
                               r["classifier_ms_per_pair"] or ""]
                              for name, r in table.items()]), flush=True)
    answers = report["answers"]
    said: dict[tuple, LLMStep] = {}  # (question, document ids in order) -> the reader's step
    if not args.no_answers:
        for method in tqdm(args.answer_methods or args.methods, desc="answers"):
            paradigm = runs.get((method, args.answer_k)) or make_paradigm(
                "drrag", corpus, config(method, args.answer_k))
            em, f1, read, calls = [], [], [], 0
            for q in questions:
                final = retrieve(paradigm, q.text)[-1].candidates
                key = (q.id, tuple(c.unit.id for c in final))
                if key not in said:
                    said[key] = answer(q.text, final, paradigm.config.reader)
                    calls += 1
                em.append(exact_match(said[key].answer, q.answers))
                f1.append(f1_score(said[key].answer, q.answers))
                read.append(said[key].seconds)
            answers[f"{method} k={args.answer_k}"] = {
                "EM": round(statistics.fmean(em), 3), "F1": round(statistics.fmean(f1), 3),
                "reader_seconds": round(statistics.fmean(read), 2), "new_calls": calls}
            save(args.out + suffix, report)
    if answers:
        print()
        print(markdown_table(["method", "EM", "F1", "reader s", "new reader calls"],
                             [[name, r["EM"], r["F1"], r["reader_seconds"], r["new_calls"]]
                              for name, r in answers.items()]))


if __name__ == "__main__":
    main()
