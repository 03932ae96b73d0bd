"""`import-runs` and `import-traces` commands: a pipeline of your own, its TREC run files or
its OpenInference traces, stored as an evaluation beside the paradigms' or as saved runs
(engine.service.imports), whole or not at all."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli import EVAL_CORPUS_HELP, default_corpus
from engine.cli.run import _dataset_path
from engine.cli.tables import out as _out
from engine.cli.tables import print_summary


def add_parsers(sub: argparse._SubParsersAction) -> None:
    imp = sub.add_parser("import-runs", help="store a pipeline's TREC run files (one per "
                         "stage) as an evaluation, beside the paradigms' in the app")
    imp.add_argument("stages", nargs="+", metavar="STAGE=FILE",
                     help="each stage's name and TREC run file, in the order they ran")
    imp.add_argument("--dataset", required=True, help="the QA file the runs answer (as eval)")
    imp.add_argument("--corpus", default=default_corpus(), help="the corpus whose document "
                     "ids the runs name (as eval: " + EVAL_CORPUS_HELP + ")")
    imp.add_argument("--qrels", default="", help="a qrels file: its relevant documents "
                     "replace the QA file's supporting ones")
    imp.add_argument("--label", default="imported", help="the pipeline's name in the tables")
    imp.add_argument("--db", default="", help="the sessions file (default: sessions.duckdb "
                     "in the data directory)")

    traced = sub.add_parser("import-traces", help="store a pipeline's OpenInference traces "
                            "(OTLP/JSON or Phoenix's spans) as runs: an evaluation with "
                            "--dataset, saved sessions without")
    traced.add_argument("files", nargs="+", metavar="FILE", help="trace files")
    traced.add_argument("--dataset", default="", help="the QA file the pipeline answered "
                        "(as eval): its gold measures the runs, stored as an evaluation")
    traced.add_argument("--label", default="", help="the pipeline's name in the tables "
                        "(default: its service.name, or Phoenix project). A file of several "
                        "pipelines (several service.names) gives one paradigm each, named "
                        "by their service.name; --label then prefixes them (LABEL: name)")
    traced.add_argument("--searched", type=int, default=0, metavar="N",
                        help="how many units the pipeline's retrievers search (its corpus's "
                             "size), kept as their candidates in where no span says it")
    traced.add_argument("--db", default="", help="the sessions file (default: "
                        "sessions.duckdb in the data directory)")


def import_runs(args: argparse.Namespace) -> int:
    """Store TREC run files as an evaluation (engine.eval.imports), whole or not at all."""
    from engine.data.corpus import eval_corpus
    from engine.data.loaders import read_dataset
    from engine.errors import ConfigError
    from engine.eval.imports import imported_runs, read_qrels
    from engine.service.datasets import dataset_label
    from engine.service.imports import store_imported
    from engine.store.sessions import SessionStore

    stages = []
    for given in args.stages:
        stage, sep, file = given.partition("=")
        if not sep or not stage or not file:
            raise ConfigError(f"{given!r}: give each stage as NAME=FILE, e.g. "
                              "dense=runs/dense.run.")
        stages.append((stage, file, _read(Path(file))))
    dataset_path = _dataset_path(args.dataset)
    dataset = read_dataset(dataset_path)
    corpus = eval_corpus(dataset, args.corpus, dataset_label(str(dataset_path)))
    qrels = read_qrels(_read(Path(args.qrels)), args.qrels) if args.qrels else None
    runs = imported_runs(stages, dataset, corpus, qrels, paradigm=args.label)
    evaluation, summary = store_imported(
        runs, dataset, dataset_label(str(dataset_path)), args.label,
        [f"{s}={f}" for s, f, _ in stages], SessionStore(args.db or None), corpus)
    _out(f"stored {len(runs)} runs of {len(stages)} stages as evaluation {evaluation} "
         f"(corpus {corpus.name})")
    print_summary(summary)
    return 0


def import_traces(args: argparse.Namespace) -> int:
    """Store a pipeline's OpenInference traces (engine.eval.traces): with a QA file, as an
    evaluation measured against its gold (a paradigm per pipeline the files hold); without,
    each run as a saved session. Stored whole or not at all (engine.service.imports)."""
    from engine.data.loaders import read_dataset
    from engine.service.datasets import dataset_label
    from engine.service.imports import import_files
    from engine.store.sessions import SessionStore

    files = [(file, _read(Path(file))) for file in args.files]
    dataset_path = _dataset_path(args.dataset) if args.dataset else None
    imported = import_files(
        files, SessionStore(args.db or None),
        dataset=read_dataset(dataset_path) if dataset_path else None,
        dataset_name=dataset_label(str(dataset_path)) if dataset_path else "",
        label=args.label, corpus=lambda: None, searched=args.searched)
    if imported.evaluation is None:
        before = f" ({imported.already} saved before, left out)" if imported.already else ""
        if not imported.sessions:
            _out(f"nothing new: all {imported.already} traced runs were saved before")
            return 0
        first, last = imported.sessions[0], imported.sessions[-1]
        _out(f"saved {imported.runs} traced runs as sessions {first}-{last}{before}")
        return 0
    _out(f"stored {imported.runs} traced runs of {', '.join(imported.paradigms)} as "
         f"evaluation {imported.evaluation}")
    print_summary(imported.summary)
    return 0


def _read(path: Path) -> str:
    """A run or qrels file's text (a bad byte named by its line, a missing file by name)."""
    from engine.data.loaders.jsonio import read_text
    from engine.errors import ConfigError

    try:
        return read_text(path)
    except OSError as err:
        raise ConfigError(f"Cannot read {path}: {err.strerror or err}.") from None
