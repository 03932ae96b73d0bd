"""The command line's summary tables: means per paradigm, then the ranking measures of
every cut where there are judgments, as Markdown tables on stdout."""

from __future__ import annotations

import sys

from engine.metrics import at_stage, measure_of

TABLE_METRICS = ("AR@1", "AR@2", "AR@3", "AR@4", "EM", "F1")
RANKING_COLUMNS = {"nDCG@10": "nDCG@10", "AP": "MAP", "RR": "MRR", "R@100": "R@100",
                   "Judged@10": "Judged@10", "nDCG'@10": "nDCG'@10 (condensed)"}


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def print_summary(summary: dict[str, dict[str, float]]) -> None:
    """The summary table (answer measures "no answers" where the questions have none), then
    the ranking measures of every cut where there are judgments."""
    answered = any(k in s for s in summary.values() for k in TABLE_METRICS)
    metrics = TABLE_METRICS if answered else ()
    if not answered:
        out("answer measures (AR@k, EM, F1): no answers; the questions are judged, not "
             "answered")
    stage_keys = sorted({k for s in summary.values() for k in s if k.startswith("seconds_")})
    recall_keys = sorted({k for s in summary.values() for k in s if k.startswith("gold_doc")})
    # failed runs count among the questions, never in the means (engine.eval.summary)
    statuses = [k for k in ("failed", "no candidates") if any(k in s for s in summary.values())]
    headers = ["paradigm", "n", *statuses, *metrics, *recall_keys, *stage_keys,
               "reader_tokens"]
    out("| " + " | ".join(headers) + " |")
    out("|" + "---|" * len(headers))
    for name, s in summary.items():
        cells = [name, f"{s['questions']:.0f}", *(f"{s.get(k, 0):.0f}" for k in statuses)]
        cells += [f"{s[k]:.3f}" if k in s else "-" for k in (*metrics, *recall_keys)]
        cells += [f"{s[k]:.3f}" if k in s else "-" for k in stage_keys]
        cells.append(f"{s['reader_tokens']:.0f}" if "reader_tokens" in s else "-")
        out("| " + " | ".join(cells) + " |")
    print_ranking_measures(summary)


def print_ranking_measures(summary: dict[str, dict[str, float]]) -> None:
    """Means over the questions of trec_eval's measures of every cut (graded where the
    judgments are); partial judgments named beside them."""
    rows = [(name, stage) for name, s in summary.items()
            for measure, stage in map(measure_of, s) if measure == "nDCG@10" and stage]
    if not rows:
        return
    columns = [m for m in RANKING_COLUMNS
               if any(at_stage(m, stage) in summary[name] for name, stage in rows)]
    out("\nranking measures per cut (trec_eval's, through ir_measures):")
    out("| paradigm | cut | " + " | ".join(RANKING_COLUMNS[m] for m in columns) + " |")
    out("|" + "---|" * (len(columns) + 2))
    for name, stage in rows:
        values = [summary[name].get(at_stage(m, stage)) for m in columns]
        out(f"| {name} | {stage} | "
             + " | ".join("-" if v is None else f"{v:.3f}" for v in values) + " |")
    judged = [summary[n][at_stage("Judged@10", st)] for n, st in rows
              if at_stage("Judged@10", st) in summary[n]]
    if judged and min(judged) < 1:
        out(f"judgments are partial: as little as {min(judged):.0%} of a cut's top 10 is "
             "judged; nDCG'@10 measures the condensed list (unjudged documents removed)")
