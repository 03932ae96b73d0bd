"""Leave-one-out attribution over dev500: its cost against one answer's, and how often the
reader's attention points at the passage the answer depends on most.

The first N HotpotQA dev500 questions (default 200), pooled corpus, the four short-reader
paradigms at their defaults with `reader.ablation` on, run side by side (one question
through every paradigm, then the next). Per paradigm: the answer step's and the ablation's
seconds and tokens (the ablation's beyond the answer, which it shares); attention against
ablation (engine.eval.ablations); and, where the reader read a gold
supporting paragraph, whether attention's top passage and ablation's top passage are one.
The first `--naive` runs of each paradigm are also attributed the plain way, every variant
prompt answered whole by `generate` (the prefix cache still reads the worked examples
once), for the side-by-side cost of reusing the full prompt's states.

    python -m bench.ablation [--limit 200] [--naive 20] [--threads 2] [--out ablation]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import asdict

from bench.common import dev500_questions, markdown_table, opened, run_side_by_side, save
from engine.data.corpus import load_corpus
from engine.eval.ablations import agreement_summary
from engine.models.loading import NATIVE_BF16_FLAGS, cpu_flags, resolve_precision
from engine.readers.ablation import reading_step
from engine.readers.prompts import answer_prompt
from engine.service.store import make_paradigm
from engine.trace import RunTrace

PARADIGMS = ("funnel", "flat", "drrag", "best")


def naive_seconds(paradigm, trace: RunTrace) -> float:
    """Leave-one-out without state reuse: each variant prompt answered whole."""
    from engine.readers.reader import _able
    from engine.text import clip_tokens

    step = reading_step(trace)
    config = paradigm.config.reader
    generator = paradigm.uses.reader.generator
    by_id = {c.unit.id: c for c in trace.read}
    read = [by_id[p] for p in step.ablation.passages]
    # the passages as the prompt held them (the ablation lists them in that order)
    pairs = [(c.unit.title, clip_tokens(c.unit.text, config.max_passage_tokens)) for c in read]
    start = time.perf_counter()
    for i in range(len(pairs)):
        built = answer_prompt(config.prompt, trace.question, pairs[:i] + pairs[i + 1:])
        generator.generate(built.prompt, max_new_tokens=config.max_answer_tokens,
                           stop=built.stop, **_able(generator, built, trace.question,
                                                    spans=False))
    return time.perf_counter() - start


def gold_tops(trace: RunTrace) -> tuple[bool, bool] | None:
    """(attention's top passage holds a gold supporting paragraph, ablation's does), over a
    run whose reader read at least one; None otherwise."""
    from engine.readers.ablation import agreement

    step = reading_step(trace)
    if step is None or step.attention is None or trace.gold is None:
        return None
    titles = set(trace.gold.supporting_titles)
    gold = {c.unit.id for c in trace.read if titles.intersection(c.unit.doc_ids)}
    agreed = agreement(step.attention, step.ablation)
    if not gold or agreed is None or len(gold) == len(step.ablation.passages):
        return None
    return agreed.attended in gold, agreed.most in gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--paradigms", nargs="+", default=list(PARADIGMS))
    parser.add_argument("--naive", type=int, default=20)
    parser.add_argument("--out", default="ablation")
    args = opened(parser)
    corpus = load_corpus("pooled")
    questions = dev500_questions(args.limit)
    paradigms = {name: make_paradigm(name, corpus, {"reader": {"ablation": True}})
                 for name in args.paradigms}
    traces: list[RunTrace] = []
    naive: dict[str, list[tuple[float, float]]] = {name: [] for name in paradigms}

    def measure(trace: RunTrace) -> dict:
        traces.append(trace)
        step = reading_step(trace)
        done = naive[trace.paradigm]
        if step is not None and len(done) < args.naive and len(step.ablation.passages) > 1:
            done.append((step.ablation.seconds, naive_seconds(paradigms[trace.paradigm],
                                                              trace)))
        return {}

    start = time.perf_counter()
    run_side_by_side(paradigms, questions, args.out + "_traces", measure)
    wall = time.perf_counter() - start
    summary = agreement_summary(traces)
    table, payload = [], {"questions": len(questions),
                          "cpu_bf16_flags": sorted(NATIVE_BF16_FLAGS & cpu_flags()),
                          "precision": resolve_precision("auto"),
                          "threads": args.threads, "wall_seconds": round(wall, 1)}
    for name, found in summary.items():
        runs = [t for t in traces if t.paradigm == name]
        tops = [g for g in map(gold_tops, runs) if g is not None]
        pairs = naive[name]
        reuse = statistics.median(a for a, _ in pairs) if pairs else None
        plain = statistics.median(b for _, b in pairs) if pairs else None
        payload[name] = {**asdict(found), "gold_runs": len(tops),
                         "attention_top_is_gold": round(statistics.fmean(a for a, _ in tops), 4)
                         if tops else None,
                         "ablation_top_is_gold": round(statistics.fmean(b for _, b in tops), 4)
                         if tops else None,
                         "naive_runs": len(pairs), "reuse_median_s": reuse,
                         "naive_median_s": plain}
        p = payload[name]
        table.append([name, found.runs, f"{found.same_top:.3f}",
                      f"{found.spearman_mean:+.3f}", f"{found.answer_changes:.3f}",
                      f"{found.answer_seconds:.2f}", f"{found.ablation_seconds:.2f}",
                      f"{found.cost_ratio:.2f}", f"{found.tokens_ratio:.2f}",
                      f"{p['attention_top_is_gold']:.3f} / {p['ablation_top_is_gold']:.3f} "
                      f"({len(tops)})" if tops else "-",
                      f"{reuse:.2f} / {plain:.2f}" if pairs else "-"])
    print(markdown_table(
        ["paradigm", "runs", "attention top = ablation top", "Spearman (mean)",
         "runs where one passage out changes the answer", "answer s", "ablation s",
         "ablation / answer", "tokens read / prompt tokens",
         "top passage is gold: attention / ablation (runs)",
         "ablation s median: reused states / naive"], table))
    print(f"\n{len(questions)} questions x {len(paradigms)} paradigms in {wall:.0f} s")
    save(args.out, payload)


if __name__ == "__main__":
    main()
