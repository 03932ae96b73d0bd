"""A user's own pipeline diagnosed next to ours: LlamaIndex's traces against funnel and flat.

The traces `bench.llamaindex_traces` made of the first 100 HotpotQA dev500 questions (a
LlamaIndex BM25 -> SentenceTransformerRerank -> LLM pipeline, traced by OpenInference) are
imported into a fresh DuckDB file as one evaluation, exactly as `funnel-engine
import-traces --dataset "HotpotQA dev500"` and the Sessions tab store them; our runs of the
same questions (the traces `bench.funnel_vs_flat` saved: funnel and flat with their
defaults) are stored beside them as another. Then what Diagnose shows: where each lost the
gold answer and its supporting documents, and the paired differences of the imported
pipeline against each of ours, Holm-corrected across the two comparisons. Prints the cost
of the import too.

    .venvs/llamaindex/bin/python -m bench.llamaindex_traces \
        --dataset hotpotqa/dev500_contexts.jsonl --limit 100 \
        --out data/bench/llamaindex_dev500.otlp.jsonl
    python -m bench.imported_vs_ours
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import markdown_table, rows_from_traces, save
from engine.paths import data_dir

DATASET = "HotpotQA dev500"
METRICS = ("EM", "F1", "AR@4", "gold_doc_recall", "nDCG@10", "MRR", "seconds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=str(data_dir() / "bench" /
                                                "llamaindex_dev500.otlp.jsonl"))
    parser.add_argument("--ours", default="funnel_vs_flat_traces",
                        help="a bench run's traces under data/bench (run_side_by_side)")
    args = parser.parse_args()

    from engine.data.loaders.jsonio import read_text
    from engine.eval.summary import summarise
    from engine.results import plain
    from engine.service.datasets import dataset_of
    from engine.service.diagnosis import corrected_across, outcomes_of, paired_of
    from engine.service.imports import import_files
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore

    traces = Path(args.traces)
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder) / "sessions.duckdb")
        evaluations = EvaluationStore(store)
        started = time.perf_counter()
        imported = import_files([(traces.name, read_text(traces))], store,
                                dataset=dataset_of(DATASET), dataset_name=DATASET,
                                label="llamaindex", corpus=lambda: None)
        import_seconds = time.perf_counter() - started

        ours = rows_from_traces(args.ours)
        paradigms = list(dict.fromkeys(r["paradigm"] for r in ours))
        mine = evaluations.create(dataset=DATASET, questions=len(ours) // len(paradigms),
                                  paradigms=paradigms, configs={}, corpus="pooled",
                                  corpus_fingerprint="", code_version="bench",
                                  name="ours")
        positions = {q.id: i for i, q in enumerate(dataset_of(DATASET).questions)}
        for r in ours:
            trace = r.pop("trace")
            evaluations.add(mine, positions[r["question_id"]], [trace], [r])
        evaluations.finish(mine, "done", summarise(ours))

        outcomes = {**outcomes_of(evaluations, imported.evaluation, "answer"),
                    **outcomes_of(evaluations, mine, "answer")}
        support = {**outcomes_of(evaluations, imported.evaluation, "support"),
                   **outcomes_of(evaluations, mine, "support")}
        pairs = corrected_across([paired_of(evaluations, imported.evaluation, "llamaindex",
                                            name, mine) for name in paradigms])
        store.close()

    summary = {**imported.summary, **{p: s for p, s in summarise(ours).items()}}
    print(f"imported {imported.runs} traced runs ({traces.stat().st_size / 1e6:.1f} MB) "
          f"in {import_seconds:.2f} s, {1000 * import_seconds / imported.runs:.1f} ms/run")
    print("\nWhere the gold answer was lost (questions):")
    for name, found in outcomes.items():
        print(f"  {name:11} {found.counts}")
    print("\nWhere the supporting documents were lost (questions with them):")
    for name, found in support.items():
        print(f"  {name:11} {found.counts}")
    print("\nMeans:")
    rows = [[name] + [_mean(summary[name], m) for m in ("EM", "F1", "AR@read")]
            for name in summary]
    print(markdown_table(["pipeline", "EM", "F1", "AR@read"], rows))
    print("\nllamaindex minus ours, paired over the shared questions (Holm across 2):")
    table = []
    for pair in pairs:
        for d in pair.differences:
            if d.metric in METRICS:
                table.append([pair.b, d.metric, d.n, round(d.a, 3), round(d.b, 3),
                              round(d.diff, 3), f"[{d.ci[0]:.3f}, {d.ci[1]:.3f}]",
                              "" if d.p is None else f"{d.p:.3g}",
                              "" if d.p_holm is None else f"{d.p_holm:.3g}"])
    print(markdown_table(["vs", "metric", "n", "llamaindex", "ours", "diff", "95% CI", "p",
                          "Holm p"], table))
    found = {"import_seconds": import_seconds, "runs": imported.runs,
             "outcomes": plain(outcomes), "support": plain(support), "pairs": plain(pairs)}
    print(f"saved {save('imported_vs_ours', found)}")


def _mean(summary: dict, metric: str) -> object:
    value = summary.get(metric, summary.get("metrics", {}).get(metric))
    return round(value, 3) if isinstance(value, float) else value


if __name__ == "__main__":
    main()
