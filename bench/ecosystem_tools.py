"""Our exports read by the real tools, each in its own virtualenv, beside our own figures.

Runs of dev500 questions (the traces `funnel_vs_flat.py` saves, by default) are written out
as ragas files (one per paradigm) and TREC files (qrels and a run per paradigm and stage),
then:

  ragas 0.4.3 (.venvs/ragas)  IDBasedContextRecall over each row's retrieved and reference
                              document ids, and NonLLMContextRecall over the texts; the first
                              must equal our gold-document recall of what the reader read
  ranx 0.3.21 (.venvs/ranx)   nDCG@10, MRR, Recall@4 and P@4 of every stage's run file
  ir_measures (ours)          the same through trec_eval's code (pytrec_eval), and the means
                              of the metrics the runs carry
  RAGChecker 0.1.9            its loader (RAGResults.from_json) on our ragchecker file: every
  (.venvs/ragchecker)         run a result with its own query_id, gold answer and passages
                              (its metrics need an LLM to extract claims: none here)

    python -m bench.ecosystem_tools [--traces data/bench/funnel_vs_flat_traces.jsonl]

Make the environments once (their pins are not ours; ragas 0.4.3 imports a chat model that
langchain-community 0.4 removed, and its string metric needs rapidfuzz):
    python -m venv .venvs/ragas && .venvs/ragas/bin/pip install ragas==0.4.3 \
        "langchain-community==0.3.31" rapidfuzz==3.14.3
    python -m venv .venvs/ranx && .venvs/ranx/bin/pip install ranx==0.3.21
    python -m venv --system-site-packages .venvs/ragchecker && \
        .venvs/ragchecker/bin/pip install ragchecker==0.1.9
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.common import ROOT, markdown_table, save
from engine.eval.exports import export_files
from engine.eval.summary import read_gold_doc_recall
from engine.metrics import at_stage
from engine.paradigms.base import annotate
from engine.paths import data_dir, shared_data_dir
from engine.trace import RunTrace

RAGAS = """
import asyncio, json, math, sys
from ragas import EvaluationDataset
from ragas.metrics import IDBasedContextRecall, NonLLMContextRecall
data = EvaluationDataset.from_jsonl(sys.argv[1])
out = {}
for metric in (IDBasedContextRecall(), NonLLMContextRecall()):
    scores = [asyncio.run(metric.single_turn_ascore(s)) for s in data.samples
              if s.reference_context_ids]
    scores = [x for x in scores if not math.isnan(x)]
    out[metric.name] = [sum(scores) / len(scores), len(scores)]
print(json.dumps(out))
"""

RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
out = {}
for path in sys.argv[2:]:
    run = Run.from_file(path, kind="trec")
    out[path] = evaluate(qrels, run, ["ndcg@10", "mrr", "recall@4", "precision@4"],
                         make_comparable=True)
print(json.dumps(out))
"""

RAGCHECKER = """
import json, sys
from ragchecker import RAGResults
from engine.metrics import at_stage
with open(sys.argv[1], encoding="utf-8") as f:
    results = RAGResults.from_json(f.read()).results
ids = [r.query_id for r in results]
print(json.dumps({"results": len(results), "unique query ids": len(set(ids)),
                  "with a gold answer": sum(bool(r.gt_answer) for r in results),
                  "retrieved passages": sum(len(r.retrieved_context) for r in results)}))
"""

MEASURES = {"nDCG@10": "ndcg@10", "RR": "mrr", "R@4": "recall@4", "P@4": "precision@4"}


def in_venv(name: str, code: str, *args: str) -> dict:
    python = ROOT / ".venvs" / name / "bin" / "python"
    if not python.is_file():
        raise SystemExit(f"{python} is missing: make it as this script's docstring says.")
    done = subprocess.run([str(python), "-c", code, *args], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path,
                        default=data_dir() / "bench" / "funnel_vs_flat_traces.jsonl")
    args = parser.parse_args()
    from engine.data.loaders import read_dataset

    traces = [RunTrace.from_json(line) for line in args.traces.read_text().splitlines()]
    # metrics as today's code computes them (the file may predate the IR measures)
    traces = [annotate(replace(t, metrics={}), t.gold) for t in traces if t.gold is not None]
    shipped = {d.id: d.text for d in
               read_dataset(shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl").documents}
    folder = Path(tempfile.mkdtemp(prefix="ecosystem-"))
    for fmt in ("ragas", "trec", "ragchecker"):
        for name, text in export_files(traces, fmt, documents=shipped.get).items():
            (folder / name).write_text(text, encoding="utf-8")
    paradigms = list(dict.fromkeys(t.paradigm for t in traces))
    report: dict = {"runs": len(traces), "paradigms": paradigms, "ragas": {}, "trec": {}}

    rows = []
    for paradigm in paradigms:
        mine = [t for t in traces if t.paradigm == paradigm]
        ours = statistics.fmean(r for r in map(read_gold_doc_recall, mine) if r is not None)
        theirs = in_venv("ragas", RAGAS, str(folder / f"ragas.{paradigm}.jsonl"))
        report["ragas"][paradigm] = {"ours": ours, **theirs}
        rows.append([paradigm, f"{ours:.4f}", f"{theirs['id_based_context_recall'][0]:.4f}",
                     f"{theirs['non_llm_context_recall'][0]:.4f}",
                     theirs["id_based_context_recall"][1]])
    print("ragas on our ragas files (gold-document recall of what the reader read):")
    print(markdown_table(["paradigm", "ours", "ragas IDBasedContextRecall",
                          "ragas NonLLMContextRecall", "rows"], rows))

    import ir_measures

    runs = sorted(folder.glob("*.run"))
    ranx = in_venv("ranx", RANX, str(folder / "qrels.txt"), *map(str, runs))
    qrels = list(ir_measures.read_trec_qrels(str(folder / "qrels.txt")))
    rows = []
    for path in runs:
        paradigm, stage = path.stem.split(".", 1)
        mine = [t for t in traces if t.paradigm == paradigm]
        measured = ir_measures.calc_aggregate(
            [ir_measures.parse_measure(m) for m in MEASURES], qrels,
            list(ir_measures.read_trec_run(str(path))))
        for ours_name, ranx_name in MEASURES.items():
            ours = statistics.fmean(t.metrics.get(at_stage(ours_name, stage), 0.0) for t in mine)
            trec = measured[ir_measures.parse_measure(ours_name)]
            theirs = ranx[str(path)][ranx_name]
            report["trec"][f"{paradigm}.{stage}.{ours_name}"] = {
                "ours": ours, "ir_measures": trec, "ranx": theirs}
            rows.append([f"{paradigm} {stage}", ours_name, f"{ours:.4f}", f"{trec:.4f}",
                         f"{theirs:.4f}"])
    print("\nTREC files per stage: our runs' means, ir_measures (trec_eval) and ranx:")
    print(markdown_table(["run", "measure", "ours", "ir_measures", "ranx"], rows))

    (checker,) = folder.glob("*.json")
    loaded = in_venv("ragchecker", RAGCHECKER, str(checker))
    sent = sum(len(t.read) for t in traces)
    report["ragchecker"] = {**loaded, "runs": len(traces), "passages read": sent}
    print(f"\nRAGChecker's loader (RAGResults.from_json) on our {checker.name}: {loaded}; "
          f"we wrote {len(traces)} runs reading {sent} passages")
    print(f"\nsaved {save('ecosystem_tools', report)}; files in {folder}")


if __name__ == "__main__":
    main()
