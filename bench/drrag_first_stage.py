"""DR-RAG's first stage: BM25, dense or hybrid similarity matching, and how many static
documents (k1) it keeps.

Two question sets, each over the corpus holding its answers:

  training  HotpotQA and MuSiQue train100 (200 multi-hop questions) over the pooled corpus,
            which holds their paragraphs; where the default is chosen
  typed     bench/data/typed_single_hop.jsonl: 46 single-hop factoid questions as a user
            types them ("Which planet is known as the Red Planet?"), written for this
            benchmark about documents of the default wiki corpus, over that corpus (each
            record names the document holding its answer, "title")

Every first stage is the `drrag` paradigm's own (engine/paradigms/drrag.py): `bm25` over
documents, `dense` (a document scored by its best stored passage vector) and `hybrid` at a
few dense weights (the funnel's document score, engine/index/document_scores.py). Printed:

  1. the static documents at k1 = 1..5: the gold answer in their text ("answer", span
     answers only), the share of gold documents among them ("docs") and, for the training
     questions, every gold document found ("all"); milliseconds per question
  2. end to end: drrag's default selection (CFS, k=4, k2=3) with each first stage at k1 = 1
     to 4 (k1 may not exceed k): EM and F1 of the reader's answer, the gold answer, the
     share of gold documents and every gold document among the documents sent, retrieval
     and selection milliseconds per question (`--no-reader`: the documents alone). Typed
     questions all, training questions the first `--e2e-limit` of each file (0: all). The
     reader is asked once per distinct question and document list (greedy decoding: the
     same list, the same answer), as bench/drrag_table4.py does.

`--dev500 N` instead reports the first N HotpotQA dev500 questions (pooled corpus) end to end
for the old default (BM25, k1=2) and the current one: the record, never a choice.

    python -m bench.drrag_first_stage [--threads 2] [--sets training typed] [--e2e-limit 25]
        [--e2e-k1 1 2 3 4] [--no-e2e] [--no-reader]
    python -m bench.drrag_first_stage --dev500 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict

from bench.common import (
    ROOT,
    WARM_UP,
    dev500_questions,
    markdown_table,
    opened,
    save,
    training_questions,
)
from bench.drrag_table4 import retrieve
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.metrics import answer_in, exact_match, f1_score, has_span_answer, support_recall
from engine.paradigms.drrag import DRRAGConfig
from engine.readers.reader import answer
from engine.service.store import make_paradigm

TYPED = ROOT / "bench" / "data" / "typed_single_hop.jsonl"
HYBRID_WEIGHTS = (0.3, 0.5, 0.7, 0.9)
FIRST_STAGES = {"bm25": {"retriever": "bm25"}, "dense": {"retriever": "dense"},
                **{f"hybrid w={w}": {"retriever": "hybrid", "hybrid_weight": w}
                   for w in HYBRID_WEIGHTS}}
K1S = (1, 2, 3, 4, 5)
E2E_K1S = (1, 2, 3, 4)
OLD_DEFAULT = {"retriever": "bm25", "k1": 2}
SETS = ("training", "typed")


def progress(line: str) -> None:
    print(time.strftime("%H:%M:%S"), line, file=sys.stderr, flush=True)


def typed_questions() -> tuple[list, list[tuple[str, ...]]]:
    """The typed questions and, for each, the wiki document holding its answer."""
    questions = read_dataset(TYPED).questions
    titles = [(json.loads(line)["title"],) for line in TYPED.read_text().splitlines()]
    return list(questions), titles


def question_set(name: str) -> tuple:
    """(corpus, questions, each question's gold titles) of a set."""
    if name == "training":
        questions = training_questions()
        return load_corpus("pooled"), questions, [q.supporting_titles for q in questions]
    return load_corpus("wiki"), *typed_questions()


def static_documents(corpus, questions, options: dict, depth: int):
    """Each question's top-`depth` static documents by drrag's similarity matching (its "sm"
    stage: a prefix of it is the top k1), and milliseconds per question."""
    paradigm = make_paradigm("drrag", corpus, {**options, "selection": "sm", "k": depth},
                             retrieval_only=True)
    retrieve(paradigm, WARM_UP)  # indexes and the query encoder loaded, not counted
    found, seconds = [], 0.0
    for q in questions:
        (stage,) = retrieve(paradigm, q.text)
        found.append(stage.candidates)
        seconds += stage.seconds
    return found, 1000 * seconds / len(questions)


def static_recall(questions, gold_titles, found, k1s) -> dict:
    """answer / docs / all at each k1, averaged over the questions."""
    spans = [has_span_answer(q) for q in questions]
    out = {}
    for k1 in k1s:
        answers, docs, every = [], [], []
        for q, gold, candidates, span in zip(questions, gold_titles, found, spans,
                                             strict=True):
            kept = candidates[:k1]
            titles = {c.unit.title for c in kept}
            if span:
                answers.append(answer_in([c.unit.text for c in kept], q.answers))
            docs.append(support_recall(titles, list(dict.fromkeys(gold))))
            every.append(bool(gold) and set(gold) <= titles)
        out[k1] = {"answer": round(statistics.fmean(answers), 3),
                   "docs": round(statistics.fmean(docs), 3),
                   "all": round(statistics.fmean(every), 3)}
    return out


def end_to_end(corpus, questions, gold_titles, options: dict, said: dict | None) -> dict:
    """drrag at its defaults but `options`, every question through retrieval, selection and
    (once per distinct document list) the reader; without `said`, no reader (EM and F1
    None)."""
    paradigm = make_paradigm("drrag", corpus, options)
    retrieve(paradigm, WARM_UP)
    em, f1, sent, found, docs, every, seconds, calls = [], [], [], [], [], [], [], 0
    for q, gold in zip(questions, gold_titles, strict=True):
        stages = retrieve(paradigm, q.text)
        final = stages[-1].candidates
        titles = {c.unit.title for c in final}
        docs.append(support_recall(titles, list(dict.fromkeys(gold))))
        every.append(bool(gold) and set(gold) <= titles)
        sent.append(len(final))
        found.append(answer_in([c.unit.text for c in final], q.answers))
        seconds.append(sum(s.seconds for s in stages))
        if said is None:
            continue
        key = (corpus.name, q.id, tuple(c.unit.id for c in final))
        if key not in said:
            said[key] = answer(q.text, final, paradigm.config.reader).answer
            calls += 1
        em.append(exact_match(said[key], q.answers))
        f1.append(f1_score(said[key], q.answers))
    return {"EM": round(statistics.fmean(em), 3) if em else None,
            "F1": round(statistics.fmean(f1), 3) if f1 else None,
            "answer_sent": round(statistics.fmean(found), 3),
            "docs_sent": round(statistics.fmean(docs), 3),
            "all_sent": round(statistics.fmean(every), 3),
            "sent": round(statistics.fmean(sent), 2),
            "ms_per_question": round(1000 * statistics.fmean(seconds), 1),
            "new_reader_calls": calls}


def static_table(report: dict, columns: tuple[str, ...]) -> str:
    rows = [[name, *(" / ".join(f"{r[f'k1={k1}'][c]:.3f}" for c in columns) for k1 in K1S),
             f"{r['ms_per_question']:.1f}"] for name, r in report.items()]
    return markdown_table(["first stage", *(f"k1={k1}" for k1 in K1S), "ms/question"], rows)


def e2e_cell(r: dict) -> str:
    read = "" if r["EM"] is None else f"{r['EM']:.3f} / {r['F1']:.3f} / "
    return (f"{read}{r['answer_sent']:.3f} / {r['docs_sent']:.3f} / {r['all_sent']:.3f} "
            f"({r['ms_per_question']:.0f})")


def e2e_table(report: dict, k1s) -> str:
    rows = [[name, *(e2e_cell(r[f"k1={k1}"]) for k1 in k1s)] for name, r in report.items()]
    return markdown_table(["first stage", *(f"k1={k1}" for k1 in k1s)], rows)


def first_stages(args, sets, report) -> None:
    for set_name, (corpus, questions, gold) in sets.items():
        table = report[set_name]["static"] = {}
        for name in args.first_stages:
            found, ms = static_documents(corpus, questions, FIRST_STAGES[name], max(K1S))
            table[name] = {"ms_per_question": round(ms, 2),
                           **{f"k1={k1}": r for k1, r in static_recall(
                               questions, gold, found, K1S).items()}}
            progress(f"{set_name} {name}: {table[name]}")
        save(args.out, report)


def e2e(args, sets, report) -> None:
    said: dict | None = None if args.no_reader else {}
    for set_name, (corpus, questions, gold) in sets.items():
        if set_name == "training":
            questions = training_questions(args.e2e_limit)
            gold = [q.supporting_titles for q in questions]
        table = report[set_name]["e2e"] = {}
        report[set_name]["e2e_questions"] = len(questions)
        for name in args.first_stages:
            table[name] = {f"k1={k1}": end_to_end(corpus, questions, gold,
                                                  {**FIRST_STAGES[name], "k1": k1}, said)
                           for k1 in args.e2e_k1}
            progress(f"{set_name} end to end {name}: {table[name]}")
            save(args.out, report)


def dev500(args) -> None:
    """The old and the current default end to end on dev500's first N (pooled corpus)."""
    corpus, questions = load_corpus("pooled"), dev500_questions(args.dev500)
    current = asdict(DRRAGConfig())
    new = {"retriever": current["retriever"], "hybrid_weight": current["hybrid_weight"],
           "k1": current["k1"]}
    said: dict = {}
    report = {"questions": len(questions), "corpus": f"pooled ({len(corpus):,} documents)",
              "threads": args.threads, "rows": {}}
    for name, options in (("old default", OLD_DEFAULT), ("new default", new)):
        started = time.perf_counter()
        report["rows"][name] = {"options": options,
                                **end_to_end(corpus, questions,
                                             [q.supporting_titles for q in questions],
                                             options, said),
                                "wall_seconds": round(time.perf_counter() - started)}
        save(args.out + "_dev500", report)
    print(f"dev500, first {len(questions)} questions, {report['corpus']}, drrag CFS k=4\n")
    print(markdown_table(["default", "options", "EM", "F1", "answer sent", "gold docs sent",
                          "all gold sent", "documents sent",
                          "ms/question (retrieval + selection)"],
                         [[name, json.dumps(r["options"]), r["EM"], r["F1"], r["answer_sent"],
                           r["docs_sent"], r["all_sent"], r["sent"], r["ms_per_question"]]
                          for name, r in report["rows"].items()]))


def print_report(report: dict, args) -> None:
    for set_name in args.sets:
        r = report[set_name]
        columns = ("answer", "docs", "all") if set_name == "training" else ("answer", "docs")
        print(f"\n{set_name}: {r['questions']} questions over {r['corpus']}; static documents "
              f"at k1, cells: {' / '.join(columns)}\n")
        print(static_table(r["static"], columns))
        if "e2e" in r:
            print(f"\n{set_name}, end to end (CFS, k=4, k2=3, classifier "
                  f"{report['classifier'] or 'stand-in'}), {r['e2e_questions']} questions; "
                  f"cells: {'' if args.no_reader else 'EM / F1 / '}answer sent / gold documents "
                  "sent / all gold documents sent (ms/question before the reader)\n")
            print(e2e_table(r["e2e"], args.e2e_k1))
    print(f"\n{report['seconds']} s in all, {args.threads} torch threads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--e2e-limit", type=int, default=25,
                        help="training questions of each file run end to end")
    parser.add_argument("--e2e-k1", type=int, nargs="+", default=list(E2E_K1S))
    parser.add_argument("--no-e2e", action="store_true", help="static documents only")
    parser.add_argument("--no-reader", action="store_true",
                        help="end to end without the reader: documents sent only")
    parser.add_argument("--first-stages", nargs="+", default=list(FIRST_STAGES),
                        choices=FIRST_STAGES, metavar="NAME",
                        help=f"first stages to measure (default all: {', '.join(FIRST_STAGES)})")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS,
                        help="question sets to run (one at a time keeps a run short)")
    parser.add_argument("--dev500", type=int, default=0,
                        help="report the first N dev500 questions for the old and the "
                             "current default instead")
    parser.add_argument("--out", default="drrag_first_stage", help="bench/results/OUT.json")
    args = opened(parser)
    from engine.models.selection_classifier import active_version

    if args.dev500:
        dev500(args)
        return
    started = time.perf_counter()
    sets = {name: question_set(name) for name in args.sets}
    report = {name: {"questions": len(qs), "corpus": f"{c.name} ({len(c):,} documents)"}
              for name, (c, qs, _) in sets.items()}
    report |= {"sets": args.sets, "threads": args.threads, "classifier": active_version()}
    first_stages(args, sets, report)
    if not args.no_e2e:
        e2e(args, sets, report)
    report["seconds"] = round(time.perf_counter() - started)
    save(args.out, report)
    print_report(report, args)


if __name__ == "__main__":
    main()
