"""The tuning search against the paradigms' defaults and an equal-budget grid sweep, on
held-out questions.

The questions (HotpotQA dev500 over the pooled corpus, or an added test collection's split
over its own corpus) are split in two with a seed, as `funnel-engine tune` splits them. On
the search half: the search (engine.tune: TPE over every default option of the paradigms,
successive halving) with its trial budget, timed; then a grid sweep of each paradigm's two
main count options (5 x 5 values each, as bench/sweep_frontier.py), every point on every
search question, stages reused across points as a sweep reuses them, each point's finishing
time kept. The grid's pick is taken twice: among every point (the whole grid, its time
printed) and among the points finished within the search's wall time, in a seeded random
order (an equal budget). Each pick (the best within the seconds ceiling, or the front's
knee) then runs on the held-out half beside the winner's paradigm's default, and the
search's winner is compared with each: the difference, its paired bootstrap interval and p
(engine.tune.held_out.compare). Retrieval only (the measure stops before the reader).

    python -m bench.tune_vs_grid [--dataset dev500|"arguana (test)"] [--limit N]
        [--paradigms funnel,flat,best] [--trials 60] [--max-seconds S] [--seed 0]
        [--out tune_vs_grid]
"""

from __future__ import annotations

import argparse
import random
import time

from bench.common import dev500_questions, markdown_table, opened, save
from engine.eval.sweep import grid
from engine.service.store import make_paradigm
from engine.stages.base import reusing_stages
from engine.tune.halving import pick
from engine.tune.held_out import answers, compare, split
from engine.tune.importance import importance
from engine.tune.search import COMPLETE, Search, SearchPlan, Trial
from engine.tune.space import space
from engine.tune.tuning import front_of, winner

GRIDS = {"funnel": {"K": [2, 5, 10, 20, 40], "N": [2, 4, 8, 16, 32]},
         "flat": {"M": [10, 20, 50, 100, 200], "k": [1, 2, 4, 8, 16]},
         "best": {"M": [10, 20, 50, 100, 200], "k": [1, 2, 4, 8, 16]},
         "drrag": {"k1": [1, 2, 3, 5, 8], "k2": [1, 2, 3, 5, 8]},
         "longrag": {"k": [1, 2, 4, 6, 8], "context_tokens": [250, 500, 1000, 2000, 4000]}}


def questions_and_corpus(dataset: str, limit: int):
    from engine.data.corpus import load_corpus

    if dataset == "dev500":
        return dev500_questions(limit), load_corpus("pooled"), "AR@4"
    from engine.data.collection_store import split_of
    from engine.data.loaders import read_dataset

    found = split_of(dataset)
    questions = read_dataset(found.path).questions
    return list(questions[:limit] if limit else questions), load_corpus(found.corpus), "nDCG@10"


def grid_trials(plan: SearchPlan, questions, corpus) -> list[tuple[float, Trial]]:
    """Every grid point of the plan's paradigms on every question, as trials, each with
    the wall time (from the grid's start) when it finished."""
    points = [(p, point) for p in plan.paradigms for point in grid(p, GRIDS[p])]
    built = [make_paradigm(p, corpus, point.config, retrieval_only=True)
             for p, point in points]
    trials = [Trial(n, p, point.values, point.config, COMPLETE)
              for n, (p, point) in enumerate(points)]
    search = Search(plan, questions, lambda *_: None)
    start, done = time.perf_counter(), []
    with reusing_stages():  # as a sweep: one point's stages serve the next's cut
        for trial, paradigm in zip(trials, built, strict=True):
            for question in questions:
                trial.values[question.id] = search.answer(paradigm, question)
            done.append((time.perf_counter() - start, trial))
    return done


def held_out_rows(paradigm: str, config: dict, questions, corpus) -> list[dict]:
    return list(answers(make_paradigm(paradigm, corpus, config, retrieval_only=True),
                        questions))


def equal_budget(timed: list, seconds: float, seed: int) -> list:
    """Grid points in a random order until `seconds` are spent (`timed`: each point with
    the seconds the grid had spent once it was done): a grid given the search's budget."""
    order = list(range(len(timed)))
    random.Random(seed).shuffle(order)
    within, spent = [], 0.0
    for n in order:
        took = timed[n][0] - (timed[n - 1][0] if n else 0.0)
        if spent + took > seconds:
            break
        spent += took
        within.append(timed[n][1])
    return within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="dev500")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--paradigms", default="funnel,flat,best")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="tune_vs_grid")
    args = opened(parser)
    questions, corpus, measure = questions_and_corpus(args.dataset, args.limit)
    searched, held = split(questions, 0.5, args.seed)
    paradigms = tuple(args.paradigms.split(","))
    plan = SearchPlan(paradigms, tuple(space(paradigms, reads=False)), measure,
                      ceiling=args.max_seconds, trials=args.trials, seed=args.seed)

    def make(paradigm: str, config: dict):
        return make_paradigm(paradigm, corpus, config, retrieval_only=True)

    for paradigm in paradigms:  # warm: indexes, encoder, document scores
        list(answers(make(paradigm, {}), searched[:2]))
    start = time.perf_counter()
    trials = Search(plan, searched, make).run()
    search_seconds = time.perf_counter() - start
    won = winner(plan, trials)
    states = {s: sum(t.state == s for t in trials) for s in {t.state for t in trials}}
    asked = sum(len(t.values) for t in trials if not t.note.startswith("the setting of"))
    print(f"{len(questions)} questions ({args.dataset}): {len(searched)} searched, "
          f"{len(held)} held out; {measure} up, seconds down"
          + (f", ceiling {args.max_seconds:g} s" if args.max_seconds else ", the knee"))
    print(f"search: {len(trials)} trials {states}, {asked:,} question runs, "
          f"{search_seconds:.0f} s; front: "
          + "; ".join(f"{t.label()} {t.measure():.3f} {1000 * t.cost('seconds'):.1f} ms"
                      for t in front_of(plan, trials)))
    print(f"search winner: {won.label() if won else None}")
    found = importance(plan, trials)
    for paradigm, shares in found.items():
        print(f"importance ({paradigm}, {shares.get('trials')} settings): "
              + ", ".join(f"{k} {v:.2f}" for k, v in (shares.get("measure") or {}).items())
              + (f" [{shares['note']}]" if shares.get("note") else ""))

    timed = grid_trials(plan, searched, corpus)
    grid_seconds = timed[-1][0]
    within = equal_budget(timed, search_seconds, args.seed)
    grid_all = [t for _, t in timed]
    picked = {}
    for name, points in (("grid (whole)", grid_all), ("grid (equal budget)", within)):
        chosen = pick([t.point(plan) for t in points], plan.ceiling)
        picked[name] = next((t for t in points if chosen and t.number == chosen.number),
                            None)
    print(f"grid: {len(grid_all)} points x {len(searched)} questions, {grid_seconds:.0f} s "
          f"({grid_seconds / search_seconds:.2f}x the search); equal budget: {len(within)} "
          "points")
    print("grid picks: " + "; ".join(f"{k}: {t.label() if t else None}"
                                     for k, t in picked.items()))

    rows = {"search winner": held_out_rows(won.paradigm, won.config, held, corpus)}
    for paradigm in paradigms:
        rows[f"{paradigm} default"] = held_out_rows(paradigm, {}, held, corpus)
    for name, trial in picked.items():
        if trial is not None:
            rows[name] = held_out_rows(trial.paradigm, trial.config, held, corpus)
    table, comparisons = [], {}
    for name, found in rows.items():
        if name == "search winner":
            continue
        check = compare(rows["search winner"], found, measure, "seconds")
        comparisons[name] = check
        table.append([f"search winner vs {name}", f"{check['pick']:.3f}",
                      f"{check['default']:.3f}", f"{check['diff']:+.3f}",
                      f"{check['ci'][0]:+.3f} to {check['ci'][1]:+.3f}",
                      f"{check['p']:.3g}",
                      f"{1000 * check['cost']['pick']:.1f} / "
                      f"{1000 * check['cost']['default']:.1f}"])
    print(f"\nheld out ({len(held)} questions): search winner {won.label()}")
    for name, trial in picked.items():
        print(f"{name}: {trial.label() if trial else None}")
    print(markdown_table(["comparison", f"{measure} winner", f"{measure} other", "diff",
                          "95% interval", "p", "ms / question (median) winner / other"],
                         table))
    save(args.out, {
        "dataset": args.dataset, "questions": {"search": len(searched), "held_out": len(held)},
        "measure": measure, "ceiling": args.max_seconds, "trials": len(trials),
        "states": states, "question_runs": asked, "search_seconds": search_seconds,
        "grid_seconds": grid_seconds, "grid_points": len(grid_all),
        "equal_budget_points": len(within),
        "winner": won.to_dict(plan),
        "front": [t.to_dict(plan) for t in front_of(plan, trials)],
        "importance": found, "trials_all": [t.to_dict() for t in trials],
        "grid_picks": {k: t.to_dict(plan) if t else None for k, t in picked.items()},
        "held_out": comparisons})


if __name__ == "__main__":
    main()
