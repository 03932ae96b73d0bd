"""What an evaluation costs beyond its questions: Ray against one process, storing, reopening.

1. `--part ray`: the same dev500 questions through the same paradigms, pooled corpus, once
   in this process (torch's 2 threads) and once as Ray tasks on a local cluster of 2
   one-CPU workers, back to back in one run. Reports wall seconds, questions per minute,
   Ray's time to its first answer (cluster start, each worker loading the corpus, indexes
   and models) and whether both gave the same answers and summary.
2. `--part store`: the traces of a finished bench run (data/bench/TRACES.jsonl, default the
   five-paradigm run: 200 questions x 5 paradigms = 1,000 runs, as many as 500 questions x 2
   paradigms) stored as one evaluation in a fresh DuckDB file: seconds, seconds per run,
   file size. Then reopening it: the stored summary, the per-question rows, one trace, and
   the Evaluate tab's table, rows and plots built from them.

    python -m bench.evaluation_cost --part ray [--limit 40] [--paradigms flat,funnel]
    python -m bench.evaluation_cost --part store [--traces paradigms_traces]
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS, WARM_UP, dev500_questions


def part_ray(limit: int, paradigms: list[str]) -> dict:
    from engine.data.corpus import eval_corpus
    from engine.data.loaders import read_dataset
    from engine.eval.on_ray import Haystack, run_on_ray
    from engine.eval.summary import row, summarise
    from engine.paths import shared_data_dir
    from engine.service.store import make_paradigm

    path = shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl"
    corpus = eval_corpus(read_dataset(path), "pooled")
    questions = dev500_questions(limit)
    built = [make_paradigm(name, corpus) for name in paradigms]
    for paradigm in built:  # indexes and models loaded, outside the measured time
        paradigm.run(WARM_UP)

    started = time.perf_counter()
    one = [row(p.run(q)) for q in questions for p in built]
    one_seconds = time.perf_counter() - started

    started, first = time.perf_counter(), None
    ray_rows = []
    for traces in run_on_ray("local", Haystack.of("pooled", corpus, str(path)), paradigms, {},
                             questions, workers=2):
        first = first or time.perf_counter() - started
        ray_rows += [row(t) for t in traces]
    ray_seconds = time.perf_counter() - started

    def comparable(rows):
        return {p: {k: v for k, v in s.items() if not k.startswith("seconds")}
                for p, s in summarise(rows).items()}

    same_answers = sum(a["answer"] == b["answer"] for a, b in zip(one, ray_rows, strict=True))
    return {"questions": len(questions), "paradigms": paradigms,
            "one_process": {"seconds": round(one_seconds, 1),
                            "questions_per_minute": round(60 * len(questions) / one_seconds, 2)},
            "ray_2_workers": {"seconds": round(ray_seconds, 1),
                              "questions_per_minute": round(60 * len(questions) / ray_seconds, 2),
                              "first_answer_seconds": round(first, 1)},
            "ray_over_one_process_speed": round(one_seconds / ray_seconds, 2),
            "same_answers": f"{same_answers} of {len(one)}",
            "same_summary": comparable(one) == comparable(ray_rows)}


def part_store(traces_name: str) -> dict:
    from app.views.evaluation import (
        paper_table,
        question_rows,
        recall_at_k_figure,
        recall_latency_figure,
    )
    from engine.eval.summary import row, summarise
    from engine.paths import data_dir
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore
    from engine.trace import RunTrace

    lines = (data_dir() / "bench" / f"{traces_name}.jsonl").read_text(encoding="utf-8")
    traces = [RunTrace.from_json(line) for line in lines.splitlines()]
    by_question: dict[str, list[RunTrace]] = {}
    for trace in traces:
        by_question.setdefault(trace.question, []).append(trace)
    paradigms = tuple(dict.fromkeys(t.paradigm for t in traces))
    json_mb = len(lines.encode("utf-8")) / 2**20
    out: dict = {"traces": traces_name, "runs": len(traces), "questions": len(by_question),
                 "paradigms": paradigms, "trace_json_mb": round(json_mb, 1)}
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "sessions.duckdb"
        store = SessionStore(file)
        evaluations = EvaluationStore(store)
        started = time.perf_counter()
        evaluation_id = evaluations.create(
            dataset="hotpotqa/dev500_contexts.jsonl", questions=len(by_question),
            paradigms=paradigms, configs={t.paradigm: t.config for t in traces},
            corpus="pooled", corpus_fingerprint=traces[0].corpus.get("fingerprint", ""),
            code_version="bench", name="storage cost")
        rows = []
        for position, found in enumerate(by_question.values()):
            found_rows = [row(t) for t in found]
            evaluations.add(evaluation_id, position, found, found_rows)
            rows += found_rows
        evaluations.finish(evaluation_id, "done", summarise(rows), "")
        store.close()
        seconds = time.perf_counter() - started
        size_mb = file.stat().st_size / 2**20
        out["store"] = {"seconds": round(seconds, 2),
                        "ms_per_run": round(1000 * seconds / len(traces), 2),
                        "file_mb": round(size_mb, 1),
                        "file_over_json": round(size_mb / json_mb, 2)}

        reopen: dict[str, float] = {}
        started = time.perf_counter()
        store = SessionStore(file)
        evaluations = EvaluationStore(store)
        reopen["open_file"] = time.perf_counter() - started
        tick = time.perf_counter()
        stored = evaluations.get(evaluation_id)
        reopen["summary"] = time.perf_counter() - tick
        tick = time.perf_counter()
        stored_rows = evaluations.rows(evaluation_id)
        reopen["rows"] = time.perf_counter() - tick
        tick = time.perf_counter()
        evaluations.trace(evaluation_id, len(by_question) // 2, paradigms[0])
        reopen["one_trace"] = time.perf_counter() - tick
        tick = time.perf_counter()
        paper_table(stored.summary)
        question_rows(stored_rows)
        recall_at_k_figure(stored.summary)
        recall_latency_figure(stored.summary)
        reopen["views"] = time.perf_counter() - tick
        reopen["total"] = time.perf_counter() - started
        store.close()
        out["reopen_seconds"] = {k: round(v, 3) for k, v in reopen.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("ray", "store"), required=True)
    parser.add_argument("--limit", type=int, default=40, help="dev500 questions (ray)")
    parser.add_argument("--paradigms", default="flat,funnel", help="comma-separated (ray)")
    parser.add_argument("--traces", default="paradigms_traces",
                        help="data/bench/NAME.jsonl to store (store)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.part == "ray":
        result = part_ray(args.limit, [p.strip() for p in args.paradigms.split(",")])
    else:
        result = part_store(args.traces)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"evaluation_cost_{args.part}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
