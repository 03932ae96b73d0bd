"""`python -m engine tune`: search paradigms' options on a dataset under a cost, check the
winner against the default on held-out questions, save it as a preset (engine.tune,
engine.service.tune_jobs); `--resume ID` goes on with a search that ended early."""

from __future__ import annotations

import argparse
import json
import sys

from engine.cli import EVAL_CORPUS_HELP
from engine.cli.tables import out as _out
from engine.errors import ConfigError
from engine.results import plain


def add_parser(sub) -> None:
    from engine.tune.search import MAX_TRIALS
    from engine.tune.space import COSTS, MEASURES

    tune = sub.add_parser("tune", help="search paradigms' options under a cost; the winner "
                          "checked on held-out questions and saved as a preset")
    tune.add_argument("--dataset", default="", help="a listed dataset, a QA file or a test "
                      "collection's folder (as eval --dataset)")
    tune.add_argument("--split", default=None, help="a collection's split (as eval)")
    tune.add_argument("--drop-unknown", action="store_true", help="a collection's "
                      "judgments of documents its corpus lacks are left out (as eval)")
    tune.add_argument("--corpus", default=None, help=EVAL_CORPUS_HELP)
    tune.add_argument("--paradigm", default="flat",
                      help="comma-separated paradigms searched together (default flat)")
    tune.add_argument("--space", default="", help='options to search as JSON, e.g. '
                      '\'{"funnel.K": [2, 40], "flat.retriever": null}\' (null: the '
                      "declared range; default: every numeric and choice option that builds "
                      "nothing)")
    tune.add_argument("--config", default="{}", help="JSON of fixed options per paradigm, "
                      'the defaults the search varies, e.g. {"funnel": {"H": 2}}')
    tune.add_argument("--measure", default="", help=f"maximised: {', '.join(MEASURES)} "
                      "(default nDCG@10 on judged questions, else AR@4)")
    tune.add_argument("--cost", default="seconds", choices=COSTS,
                      help="minimised: median seconds or mean reader tokens per question")
    tune.add_argument("--max-seconds", type=float, default=None, metavar="S",
                      help="the pick is the best within S seconds a question (a ceiling on "
                      "the cost: --max-cost with reader tokens); default: the front's knee")
    tune.add_argument("--max-cost", type=float, default=None, help=argparse.SUPPRESS)
    tune.add_argument("--trials", type=int, default=30, help=f"trials (1-{MAX_TRIALS}, "
                      "default 30; refused settings do not count)")
    tune.add_argument("--minutes", type=float, default=None, help="stop starting trials "
                      "after this many minutes")
    tune.add_argument("--held-out", type=float, default=0.5, help="share of the questions "
                      "kept from the search to check the winner on (default 0.5)")
    tune.add_argument("--seed", type=int, default=0, help="the split's and the sampler's")
    tune.add_argument("--limit", type=int, default=None, help="first N questions only")
    tune.add_argument("--preset", default="", help="save the winner under this name "
                      "(default tune-ID)")
    tune.add_argument("--name", default="", help="the search's name")
    tune.add_argument("--resume", type=int, default=None, metavar="ID",
                      help="go on with stored search ID (interrupted, cancelled or failed)")
    tune.add_argument("--db", default="", help="the sessions file (default: "
                      "sessions.duckdb in the data directory)")
    tune.add_argument("--json", action="store_true", help="print the report as JSON")


def tune(args: argparse.Namespace) -> int:
    from engine.cli.run import dataset_and_corpus
    from engine.data.corpus import eval_corpus
    from engine.data.loaders import read_dataset
    from engine.documents import unanswered
    from engine.service.datasets import dataset_label
    from engine.service.tune_jobs import resume_tune, start_tune
    from engine.store.sessions import SessionStore
    from engine.store.tuning import TuneStore

    store = SessionStore(args.db or None)
    try:
        if args.resume is not None:
            stored = TuneStore(store).get(args.resume)
            args.dataset = args.dataset or stored.dataset
        if not args.dataset:
            raise ConfigError("Give --dataset (a listed dataset, a QA file or a collection), "
                              "or --resume ID.")
        path, corpus_spec = dataset_and_corpus(args)
        dataset = read_dataset(path)
        questions = dataset.questions[:args.limit] if args.limit else list(dataset.questions)
        label = dataset_label(str(path))
        plan = stored.plan if args.resume is not None else \
            _plan(args, label, judged=unanswered(questions))
        corpus = eval_corpus(dataset, corpus_spec, label)
        on_status = _progress(plan.trials)
        if args.resume is not None:
            job = resume_tune(store, args.resume, questions, corpus, on_status=on_status)
        else:
            job = start_tune(store, plan, questions, corpus, label, held_out=args.held_out,
                             name=args.name, preset=args.preset, on_status=on_status)
        _out(f"search {job.id}: {len(job.search_part)} questions to search, "
             f"{len(job.held_part)} held out; corpus {corpus.name}") if not args.json else None
        job.run()
        sys.stderr.write("\n" if sys.stderr.isatty() else "")
        stored = TuneStore(store).get(job.id)
    finally:
        store.close()
    if stored.state != "done":
        sys.stderr.write(f"search {stored.id} {stored.state}: {stored.error}\n")
    report = _report(stored, plan)
    if args.json:
        _out(json.dumps(report))
    else:
        _print(report)
    return 0 if stored.state == "done" else 1


def _plan(args: argparse.Namespace, label: str, judged: bool):
    """The SearchPlan a new search's flags ask for (`judged`: the questions have judgments,
    not answers, so only retrieval measures apply)."""
    from engine.cli.run import json_arg
    from engine.tune.search import SearchPlan
    from engine.tune.space import RETRIEVAL_MEASURES, space

    paradigms = tuple(p.strip() for p in args.paradigm.split(",") if p.strip())
    measure = args.measure or ("nDCG@10" if judged else "AR@4")
    if judged and measure not in RETRIEVAL_MEASURES:
        raise ConfigError(f"{label}'s questions are judged, not answered: {measure} "
                          f"needs answers; use one of {', '.join(RETRIEVAL_MEASURES)}.")
    ceiling = args.max_cost if args.max_cost is not None else args.max_seconds
    if args.max_seconds is not None and args.cost != "seconds":
        raise ConfigError("--max-seconds caps seconds; with --cost reader_tokens "
                          "give --max-cost TOKENS.")
    return SearchPlan(paradigms, tuple(space(
        paradigms, json_arg(args.space, "--space") if args.space else None,
        reads=measure not in RETRIEVAL_MEASURES)), measure, args.cost, ceiling,
        args.trials, args.minutes, args.seed, base=json_arg(args.config) or {})


def _report(stored, plan) -> dict:
    """A stored search as the report printed (or written as JSON)."""
    return {"tune": stored.id, "state": stored.state, "dataset": stored.dataset,
            "corpus": stored.corpus, "measure": plan.measure, "cost": plan.cost,
            "ceiling": plan.ceiling, "questions": plain(stored.questions()),
            "space": [d.to_dict() for d in plan.dimensions],
            "preset": stored.preset if stored.state == "done" else "",
            **(stored.result or {})}


def _progress(trials: int):
    """A status line on stderr after each question: redrawn on a terminal, else a line per
    trial."""
    last = {"trials": -1}

    def said(status: dict) -> None:
        search = status.get("search") or {}
        current = search.get("current") or {}
        left = search.get("left")
        line = (f"trial {search.get('trials', 0) + 1} of {trials}: "
                f"{current.get('label', '')}, {current.get('questions', 0)} questions"
                + (f"; about {left / 60:.0f} min left" if left is not None else ""))
        if sys.stderr.isatty():
            sys.stderr.write("\r" + line[:120].ljust(120))
        elif search.get("trials") != last["trials"]:
            last["trials"] = search.get("trials")
            sys.stderr.write(line + "\n")

    return said


def _print(report: dict) -> None:
    measure, cost = report["measure"], report["cost"]
    _out(f"search {report['tune']} ({report['state']}): {report['dataset']} over "
         f"{report['corpus']}; {measure} up, {cost} down"
         + (f", ceiling {report['ceiling']:g}" if report.get("ceiling") else ""))
    _out("trials: " + ", ".join(f"{n} {s}" for s, n in (report.get("trials") or {}).items()))
    _out(f"\nthe front ({measure} against {cost}, on {report['questions']['search']} search "
         "questions):")
    for trial in report.get("front") or []:
        _out(f"  {trial['measure']:.3f}  {trial['cost']:.4g}  {trial['label']}")
    winner = report.get("winner")
    if winner:
        _out(f"\nwinner: {winner['label']}")
    for check in report.get("held_out") or []:
        _out(f"  {check['paradigm']}: {check['verdict']}")
    for paradigm, found in (report.get("importance") or {}).items():
        shares = found.get("measure")
        _out(f"importance ({paradigm}): " + (", ".join(
            f"{k} {v:.2f}" for k, v in shares.items()) if shares else found.get("note", "")))
    if report.get("preset"):
        _out(f"\nsaved as preset {report['preset']!r}: funnel-engine ask --preset "
             f"{report['preset']} \"...\"")
