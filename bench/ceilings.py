"""Each stage's ceiling over dev500: which cut's improvement pays most, per paradigm.

The runs of bench/ablation.py (data/bench/ablation_traces.jsonl: the first N HotpotQA dev500
questions, pooled corpus, the four short-reader paradigms at their defaults) are the
baseline; each of their cuts is made perfect in turn (engine.eval.ceilings: the gold
supporting paragraphs first, added where the stage was not given them; the stages before
replayed, the later ones and the reader run as usual, here without the ablation). Printed
per paradigm and cut: AR@4, EM, F1 and read gold-document recall, as run and with the cut
perfect, the paired difference with its 95% bootstrap interval and McNemar p
(Holm-corrected over every cut), and how many runs the cut changed at all.

    python -m bench.ceilings [--traces ablation_traces] [--threads 2] [--out ceilings]
"""

from __future__ import annotations

import argparse
import time

from bench.common import markdown_table, opened, rows_from_traces, save
from engine.data.corpus import load_corpus
from engine.eval.ceilings import ceiling, cut_stages, label
from engine.eval.paired import corrected, paired
from engine.eval.summary import row
from engine.service.store import make_paradigm

METRICS = ("AR@4", "EM", "F1", "gold_doc_recall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", default="ablation_traces")
    parser.add_argument("--out", default="ceilings")
    args = opened(parser)
    corpus = load_corpus("pooled")
    actual = rows_from_traces(args.traces)
    names = list(dict.fromkeys(r["paradigm"] for r in actual))
    paradigms = {name: make_paradigm(name, corpus) for name in names}
    results, payload, start = [], {}, time.perf_counter()
    for name, paradigm in paradigms.items():
        mine = [r for r in actual if r["paradigm"] == name]
        sample = next(r["trace"] for r in mine if cut_stages(r["trace"]))
        actual_rows = [{k: v for k, v in r.items() if k != "trace"} for r in mine]
        for n, index in enumerate(cut_stages(sample), start=1):
            labelled = label(name, n, sample.stages[index].name)
            began = time.perf_counter()
            runs = [ceiling(paradigm, r["trace"], n) for r in mine]
            seconds = time.perf_counter() - began
            changed = sum(run is not r["trace"] for run, r in zip(runs, mine, strict=True))
            diffs = [d for d in paired([row(t) for t in runs], actual_rows)
                     if d.metric in METRICS]
            result = {"label": labelled, "changed": changed, "runs": len(runs),
                      "seconds": round(seconds, 1), "differences": diffs}
            results.append(result)
            payload.setdefault(name, []).append(result)
            print(f"{labelled}: {changed} of {len(runs)} runs changed, {seconds:.0f} s",
                  flush=True)
    for result, fixed in zip(results, corrected([r["differences"] for r in results]),
                             strict=True):  # Holm over every cut
        result["differences"] = [d.to_dict() for d in fixed]
    table = []
    for result in results:
        cells = []
        for metric in METRICS:
            d = next((d for d in result["differences"] if d["metric"] == metric), None)
            if d is None:
                cells.append("-")
                continue
            p = d.get("p_holm", d.get("p"))
            test = f", p {p:.2g}" if p is not None else ""
            cells.append(f"{d['b']:.3f} → {d['a']:.3f} ({d['diff']:+.3f} "
                         f"[{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]{test})")
        table.append([result["label"], f"{result['changed']}/{result['runs']}", *cells])
    print()
    print(markdown_table(["made perfect", "runs changed",
                          *(f"{m}: as run → perfect (diff [95%], Holm p)" for m in METRICS)],
                         table))
    print(f"\n{len(results)} cuts in {time.perf_counter() - start:.0f} s")
    save(args.out, {"questions": len({r['question_id'] for r in actual}), "cuts": payload})


if __name__ == "__main__":
    main()
