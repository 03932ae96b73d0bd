"""`python -m engine judge ...`: a judging round from a script, as the Judge tab runs it
(engine.service.judging): a question set from a list, the saved runs or generated; a pool
of the paradigms' top documents (run here, or of a stored evaluation); a judgment recorded;
the LLM judge over a pool; judgments exported and imported as qrels or JSONL; and two
assessors' agreement, on a question set or over an evaluation with the paradigms' order.
Then the answers (engine.service.nuggets): a dataset's nuggets written, made of its gold
answers, imported and exported as TREC RAG nugget files; one assignment of a nugget to an
evaluation's answer recorded; an evaluation's nugget scores per paradigm, or its
assignments as the track's file."""

from __future__ import annotations

import argparse
import sys
from collections import deque
from pathlib import Path

from engine.errors import ConfigError
from engine.judging.nuggets import SCORE_NAMES


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
    _add_nugget_parsers(steps)


def _add_nugget_parsers(steps) -> None:
    nuggets = steps.add_parser("nuggets", help="a dataset's nuggets: listed, written, made "
                                               "of its gold answers, imported or exported")
    nuggets.add_argument("dataset", help='a question set ("corpus (name)"), a listed '
                                         "dataset or a QA file")
    nuggets.add_argument("--add", nargs=2, metavar=("QUESTION_ID", "TEXT"),
                         help="write one nugget for a question")
    nuggets.add_argument("--importance", default="vital", choices=("vital", "okay"))
    nuggets.add_argument("--gold", action="store_true",
                         help="store each gold answer as a vital nugget of its question")
    nuggets.add_argument("--import", dest="import_file", default="", metavar="FILE",
                         help="a TREC RAG nugget file (JSONL)")
    nuggets.add_argument("--export", action="store_true",
                         help="write them as a TREC RAG nugget file")
    nuggets.add_argument("--author", default="", help="whose nuggets written or imported")
    assign = steps.add_parser("assign", help="record whether one answer of an evaluation "
                                             "holds one nugget")
    assign.add_argument("evaluation", type=int)
    assign.add_argument("question_id")
    assign.add_argument("paradigm")
    assign.add_argument("nugget", type=int)
    assign.add_argument("label", help="support (2), partial_support (1) or not_support (0)")
    assign.add_argument("--assessor", required=True)
    scores = steps.add_parser("scores", help="an evaluation's nugget scores per paradigm")
    scores.add_argument("evaluation", type=int)
    scores.add_argument("--assessor", default="", help="by this assessor's assignments "
                                                       "(default: everyone's latest)")
    scores.add_argument("--export", action="store_true",
                        help="write the assignments as a TREC RAG assignment file")


def judge(args: argparse.Namespace) -> int:
    from engine.service.judging import Judging
    from engine.store.sessions import SessionStore

    store = SessionStore(args.db or None)
    if args.step in NUGGET_STEPS:
        from engine.service.nuggets import Nuggets

        NUGGET_STEPS[args.step](Nuggets(store), args)
        return 0
    step = STEPS.get(args.step)
    if step is None:  # argparse allows only the steps below
        raise ConfigError(f"Unknown judge step {args.step!r}.")
    step(Judging(store), args)
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


LABEL_KEYS = {"2": "support", "1": "partial_support", "0": "not_support"}


def _nuggets(nuggets, args: argparse.Namespace) -> None:
    from engine.data.loaders.jsonio import read_text

    if args.add:
        found = nuggets.add_nugget(args.dataset, args.add[0], args.add[1], args.importance,
                                   args.author)
        _out(f"nugget {found} written for question {args.add[0]}")
    if args.gold:
        _out(f"{nuggets.add_gold_nuggets(args.dataset)} gold answers stored as nuggets")
    if args.import_file:
        found = nuggets.import_nuggets(args.dataset, read_text(Path(args.import_file)),
                                       Path(args.import_file).name, args.author)
        _out(f"{found} nuggets imported into {args.dataset}")
    if args.export:
        sys.stdout.write(nuggets.export_nuggets(args.dataset))
        return
    for n in nuggets.nuggets(args.dataset):
        _out(f"{n.id}\t{n.question_id}\t{n.importance}\t{n.author}\t{n.text}")


def _assign(nuggets, args: argparse.Namespace) -> None:
    label = LABEL_KEYS.get(args.label, args.label)
    nuggets.assign(args.evaluation, args.question_id, args.paradigm, args.nugget, label,
                   args.assessor)
    left = nuggets.to_assign(args.evaluation, args.assessor)
    _out(f"evaluation {args.evaluation}: {left.done} of {left.answers} answers assigned "
         f"by {args.assessor}")


def _scores(nuggets, args: argparse.Namespace) -> None:
    if args.export:
        sys.stdout.write(nuggets.export_assignments(args.evaluation, args.assessor))
        return
    found = nuggets.nugget_scores(args.evaluation, args.assessor)
    _out(f"evaluation {found.evaluation_id} ({found.dataset}), nugget scores by "
         f"{found.assessor or 'everyone'}'s assignments; {found.unassigned} pairs "
         "unassigned, counted as not supported")
    _out("paradigm\tanswers\t" + "\t".join(SCORE_NAMES))
    for paradigm, means in found.per_paradigm.items():
        _out(f"{paradigm}\t{means['answers']}\t"
             + "\t".join(_score(means[name]) for name in SCORE_NAMES))


# the steps that judge answers, with the nuggets service
NUGGET_STEPS = {"nuggets": _nuggets, "assign": _assign, "scores": _scores}
