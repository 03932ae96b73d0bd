"""`python -m engine judge ...`: a judging round from a script, as the Judge tab runs it
(engine.service.judging): a question set from a list, a pool of the paradigms' top
documents, the LLM judge over a pool, and two assessors' agreement."""

from __future__ import annotations

import argparse
from collections import deque

from engine.errors import ConfigError


def _out(line: str = "") -> None:
    print(line, flush=True)


def add_parser(sub) -> None:
    judge = sub.add_parser("judge", help="judge your corpus: question sets, pools, the LLM "
                                         "judge, agreement")
    judge.add_argument("--db", default="", help="the sessions file (default: sessions.duckdb "
                                                "in the data directory)")
    steps = judge.add_subparsers(dest="step", required=True)
    questions = steps.add_parser("questions", help="a question list as a question set of an "
                                                   "added corpus")
    questions.add_argument("corpus")
    questions.add_argument("name")
    questions.add_argument("file", help="txt (one question a line), csv or jsonl")
    pool = steps.add_parser("pool", help="pool the paradigms' top documents of a question set")
    pool.add_argument("dataset", help='the question set: "corpus (name)"')
    pool.add_argument("--paradigms", default="flat,funnel,best")
    pool.add_argument("--depth", type=int, default=5)
    llm = steps.add_parser("llm", help="the LLM judge over a pool's units it has not judged")
    llm.add_argument("pool", type=int)
    llm.add_argument("--model", default="smollm2")
    llm.add_argument("--endpoint", default="", help="an OpenAI-compatible server's base URL")
    llm.add_argument("--limit", type=int, default=None)
    agree = steps.add_parser("agreement", help="two assessors' agreement on a question set")
    agree.add_argument("dataset")
    agree.add_argument("first")
    agree.add_argument("second")


def judge(args: argparse.Namespace) -> int:
    from engine.service.judging import Judging
    from engine.store.sessions import SessionStore

    judging = Judging(SessionStore(args.db or None))
    if args.step == "questions":
        split = judging.add_questions(args.corpus, args.name, args.file)
        _out(f"question set {split.label}: {split.questions} questions")
    elif args.step == "pool":
        paradigms = [p.strip() for p in args.paradigms.split(",") if p.strip()]
        pool, estimate = judging.make_pool(args.dataset, paradigms, args.depth)
        _out(f"pool {pool}: {estimate}")
    elif args.step == "llm":
        ended = deque(judging.llm_judge(args.pool, args.model, args.endpoint, args.limit),
                      maxlen=1)  # its count after the last unit
        if not ended:
            _out(f"pool {args.pool}: nothing left for this judge")
        else:
            _out(f"pool {args.pool}: {ended[0].judged} judged, {ended[0].unreadable} without "
                 f"a grade, {ended[0].left} left")
    elif args.step == "agreement":
        found = judging.agreement(args.dataset, args.first, args.second)
        kappa = "undefined (one grade throughout)" if found.weighted_kappa is None else (
            f"{found.weighted_kappa:.3f} (95% interval {found.weighted_ci[0]:.3f} to "
            f"{found.weighted_ci[1]:.3f})")
        _out(f"{found.pairs} documents judged by both; exact agreement {found.exact:.3f}; "
             f"linear-weighted kappa {kappa}")
        _out("grades (rows: " + args.first + ", columns: " + args.second + ", 0-3):")
        for grade, row in enumerate(found.matrix):
            _out(f"  {grade}: " + " ".join(f"{n:4d}" for n in row))
    else:  # argparse allows only the steps above
        raise ConfigError(f"Unknown judge step {args.step!r}.")
    return 0
