"""`python -m engine judge ...`: a judging round from a script, as the Judge tab runs it
(engine.service.judging): a question set from a list, the saved runs or generated; a pool
of the paradigms' top documents (run here, or of a stored evaluation); a judgment recorded;
the LLM judge over a pool; judgments exported and imported as qrels or JSONL; and two
assessors' agreement, on a question set or over an evaluation with the paradigms' order."""

from __future__ import annotations

import argparse
import sys
from collections import deque
from pathlib import Path

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
    runs = steps.add_parser("from-runs", help="the saved runs' questions (a pipeline's, "
                                              "received or imported) as a question set")
    runs.add_argument("corpus")
    runs.add_argument("name")
    runs.add_argument("--evaluation", type=int, default=None,
                      help="a stored evaluation's questions instead")
    made = steps.add_parser("generate", help="questions generated from the corpus's passages, "
                                             "kept where a first stage finds the passage")
    made.add_argument("corpus")
    made.add_argument("name")
    made.add_argument("--count", type=int, default=30, help="passages sampled (default 30)")
    made.add_argument("--model", default="smollm2")
    made.add_argument("--endpoint", default="", help="an OpenAI-compatible server's base URL")
    made.add_argument("--seed", type=int, default=0)
    pool = steps.add_parser("pool", help="pool the paradigms' top documents of a question set")
    pool.add_argument("dataset", nargs="?", default="",
                      help='the question set: "corpus (name)"')
    pool.add_argument("--evaluation", type=int, default=None,
                      help="pool this stored evaluation's runs instead of running them")
    pool.add_argument("--paradigms", default="flat,funnel,best")
    pool.add_argument("--depth", type=int, default=5)
    pool.add_argument("--stages", default="", help="comma-separated cuts to pool (default: "
                                                   "each paradigm's last)")
    record = steps.add_parser("record", help="record one judgment of a pooled document")
    record.add_argument("pool", type=int)
    record.add_argument("question_id")
    record.add_argument("document_id")
    record.add_argument("grade", type=int, help="0 irrelevant, 1 related, 2 highly relevant, "
                                                "3 perfectly relevant")
    record.add_argument("--assessor", required=True)
    llm = steps.add_parser("llm", help="the LLM judge over a pool's units it has not judged")
    llm.add_argument("pool", type=int)
    llm.add_argument("--model", default="smollm2")
    llm.add_argument("--endpoint", default="", help="an OpenAI-compatible server's base URL")
    llm.add_argument("--limit", type=int, default=None)
    out = steps.add_parser("export", help="a question set's judgments as qrels or JSONL")
    out.add_argument("dataset")
    out.add_argument("--format", default="qrels", choices=("qrels", "jsonl"))
    out.add_argument("--assessor", default="", help="this assessor's alone")
    into = steps.add_parser("import", help="judgments from a qrels file or a judgments JSONL")
    into.add_argument("dataset")
    into.add_argument("file")
    into.add_argument("--assessor", default="", help="whose a qrels file's judgments are")
    agree = steps.add_parser("agreement", help="two assessors' agreement on a question set, or "
                                               "over an evaluation with the paradigms' order")
    agree.add_argument("dataset", help='the question set, or "evaluation ID"')
    agree.add_argument("first")
    agree.add_argument("second")


def judge(args: argparse.Namespace) -> int:
    from engine.service.judging import Judging
    from engine.store.sessions import SessionStore

    step = STEPS.get(args.step)
    if step is None:  # argparse allows only the steps below
        raise ConfigError(f"Unknown judge step {args.step!r}.")
    step(Judging(SessionStore(args.db or None)), args)
    return 0


def _questions(judging, args: argparse.Namespace) -> None:
    split = judging.add_questions(args.corpus, args.name, args.file)
    _out(f"question set {split.label}: {split.questions} questions")


def _from_runs(judging, args: argparse.Namespace) -> None:
    split = judging.add_run_questions(args.corpus, args.name, args.evaluation)
    _out(f"question set {split.label}: {split.questions} questions")


def _generate(judging, args: argparse.Namespace) -> None:
    last = None
    for last in judging.generate_questions(args.corpus, args.name, args.count, args.model,
                                           args.endpoint, args.seed):
        _progress(f"{last.asked} of {last.total} passages: {last.written} questions "
                  f"written, {len(last.kept)} kept")
    rate = f"{last.pass_rate:.1%}" if last and last.pass_rate is not None else "-"
    _out(f"\nquestion set {args.corpus} ({args.name}): {len(last.kept)} kept of "
         f"{last.written} written from {last.total} passages; round-trip pass rate {rate}")


def _pool(judging, args: argparse.Namespace) -> None:
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    if args.evaluation is None and not args.dataset:
        raise ConfigError('Name the question set to pool ("corpus (name)"), or a stored '
                          "evaluation of one with --evaluation ID.")
    if args.evaluation is not None:
        pool, estimate = judging.pool_evaluation(args.evaluation, args.depth, stages)
    else:
        paradigms = [p.strip() for p in args.paradigms.split(",") if p.strip()]
        pool, estimate = judging.make_pool(args.dataset, paradigms, args.depth, stages)
    _out(f"pool {pool} (evaluation {judging.judgments.pool(pool).evaluation_id}): "
         f"{estimate}")


def _record(judging, args: argparse.Namespace) -> None:
    judged, units = judging.judge(args.pool, args.question_id, args.document_id,
                                  args.grade, args.assessor)
    _out(f"pool {args.pool}: {judged} of {units} judged by {args.assessor}")


def _export(judging, args: argparse.Namespace) -> None:
    sys.stdout.write(judging.export_judgments(args.dataset, args.format, args.assessor))


def _import(judging, args: argparse.Namespace) -> None:
    from engine.data.loaders.jsonio import read_text

    found = judging.import_judgments(args.dataset, read_text(Path(args.file)),
                                     Path(args.file).name, args.assessor)
    _out(f"{found} judgments imported into {args.dataset}")


def _llm(judging, args: argparse.Namespace) -> None:
    ended = deque(judging.llm_judge(args.pool, args.model, args.endpoint, args.limit),
                  maxlen=1)  # its count after the last unit
    if not ended:
        _out(f"pool {args.pool}: nothing left for this judge")
    else:
        _out(f"pool {args.pool}: {ended[0].judged} judged, {ended[0].unreadable} without "
             f"a grade, {ended[0].left} left")


def _progress(line: str) -> None:
    print(f"\r{line}", end="", file=sys.stderr, flush=True)


def _agreement(judging, args: argparse.Namespace) -> None:
    """Two assessors' agreement; over an evaluation ("evaluation 12"), with each paradigm's
    nDCG@10 under each one's grades and Kendall's tau of their order."""
    named = args.dataset.split()
    over = int(named[1]) if len(named) == 2 and named[0] == "evaluation" \
        and named[1].isdigit() else None
    compared = judging.compared(over, args.first, args.second) if over is not None else None
    found = compared.agreement if compared else \
        judging.agreement(args.dataset, args.first, args.second)
    _out(f"{found.pairs} documents judged by both; exact agreement {found.exact:.3f}; "
         f"linear-weighted kappa {found.weighted_said()}")
    _out("grades (rows: " + args.first + ", columns: " + args.second + ", 0-3):")
    for grade, row in enumerate(found.matrix):
        _out(f"  {grade}: " + " ".join(f"{n:4d}" for n in row))
    if compared:
        _out(f"{compared.measure} at each paradigm's last cut over the "
             f"{compared.questions} questions both judged ({args.first} / "
             f"{args.second}):")
        for paradigm, (a, b) in compared.scores.items():
            _out(f"  {paradigm}: {_score(a)} / {_score(b)}")
        tau = compared.tau
        _out("Kendall's tau of the paradigms' order: " + (
            "- (fewer than two paradigms ranked)" if tau is None else
            f"{tau:.3f} (p {compared.p:.3f})"))


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# each step of `funnel-engine judge`: what it does with the judging service and its args
STEPS = {"questions": _questions, "from-runs": _from_runs, "generate": _generate,
         "pool": _pool, "record": _record, "export": _export, "import": _import,
         "llm": _llm, "agreement": _agreement}
