"""Command line: `python -m engine corpus-stats | search | formats | build | data | train |
ask | eval | tune | presets | import-runs | import-traces | sessions | judge | users`.

The CLI is the one part of the engine that writes to stdout (results) and stderr (errors);
everything else logs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict

from engine.cli import CORPUS_HELP
from engine.cli import imports as cli_imports
from engine.cli import judge as cli_judge
from engine.cli import presets as cli_presets
from engine.cli import run as cli_run
from engine.cli import train as cli_train
from engine.cli import tune as cli_tune
from engine.cli import users as cli_users
from engine.errors import EngineError
from engine.logs import configure_logging
from engine.paths import DATA_DIR_HELP, use_data_dir
from engine.text import snippet
from engine.units.build import GRANULARITIES, UnitConfig
from engine.units.chunking import Chunker
from engine.units.cluster import ALGORITHMS

logger = logging.getLogger("engine")


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine",
                                     description="Funnel Explorer retrieval engine.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--data-dir", metavar="DIR", help=DATA_DIR_HELP + "; before the "
                        "command: funnel-engine --data-dir DIR eval ...")
    sub = parser.add_subparsers(dest="command", required=True)

    stats = sub.add_parser("corpus-stats", help="documents, tokens, links, clusters")
    stats.add_argument("--corpus", default="wiki", help=CORPUS_HELP)
    stats.add_argument("--S", type=int, nargs="+", default=[2048, 4096], dest="sizes",
                       help="cluster budgets in tokens (default 2048 4096)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")

    search = sub.add_parser("search", help="BM25 search at one granularity")
    search.add_argument("query")
    search.add_argument("--granularity", choices=GRANULARITIES, default="documents")
    search.add_argument("-k", type=int, default=10, help="results to show (default 10)")
    search.add_argument("--corpus", default="wiki", help=CORPUS_HELP)
    search.add_argument("--algorithm", choices=ALGORITHMS, default="funnelrag",
                        help="cluster algorithm (clusters only)")
    search.add_argument("--S", type=int, default=4096, dest="cluster_tokens",
                        help="cluster budget in tokens (clusters only, default 4096)")
    search.add_argument("--max-tokens", type=int, default=100,
                        help="passage size in tokens (passages only, default 100)")

    sub.add_parser("formats", help="list the dataset and corpus formats understood")
    build = sub.add_parser("build", help="build a corpus's dense passage index (encoding "
                           "on Ray with --ray), then print what it built")
    build.add_argument("--corpus", default="wiki", help=CORPUS_HELP)
    build.add_argument("--encoder", default="minilm",
                       help="bi-encoder: an alias, a folder or a hub id (default minilm)")
    build.add_argument("--max-tokens", type=int, default=100,
                       help="passage size in tokens (default 100, the paradigms')")
    build.add_argument("--index", choices=("auto", "exact", "hnsw"), default="auto",
                       help="exact, approximate (hnsw) or auto: approximate from "
                            "engine.index.dense.APPROXIMATE_FROM passages (default auto)")
    build.add_argument("--ray", metavar="ADDRESS", default="",
                       help="encode as Ray tasks: host:port, ray://host:port or 'local'")
    build.add_argument("--workers", type=int, default=2,
                       help="one-CPU workers of a local Ray cluster (default 2)")
    build.add_argument("--qdrant", metavar="WHERE", default="",
                       help="then serve it from Qdrant (a server's URL or a local-mode "
                            "folder): its collection written if missing, else checked")
    build.add_argument("--collection", default="",
                       help="with --qdrant: the collection of the default passages and "
                            "encoder, as the Corpora tab names it (default: the corpus's "
                            "name); others are named after it")
    data = sub.add_parser("data", help="the QA data: where each file comes from, which "
                          "are here, and fetching the missing ones")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser("fetch", help="download the missing QA files from their "
                                "pinned public sources, each checked against its sha256")
    fetch.add_argument("--mirror", default="",
                       help="a folder or URL laid out as <owner>/<name>/<commit>/<path> to "
                            "fetch from instead (FUNNEL_DATA_MIRROR)")
    fetch.add_argument("--into", default="", help="the folder to fill (default: "
                       "FUNNEL_SHARED_DATA if set, else the data directory's qa/)")
    data_sub.add_parser("status", help="every QA file: here and intact, or what is wrong")
    cli_run.add_parsers(sub)
    cli_imports.add_parsers(sub)
    sessions = sub.add_parser("sessions", help="the runs saved in the app (DuckDB)")
    sessions_sub = sessions.add_subparsers(dest="action", required=True)
    export = sessions_sub.add_parser(
        "export", help="write saved runs for another tool: jsonl, csv, ragas, ragchecker, "
                       "flashrag or trec")
    export.add_argument("format")
    export.add_argument("dir", help="the folder the files go to")
    export.add_argument("--ids", default="", help="comma-separated run ids (default: all)")
    export.add_argument("--db", default="", help="the sessions file (default: "
                        "sessions.duckdb in the data directory)")

    cli_train.add_parser(sub)
    cli_judge.add_parser(sub)
    cli_users.add_parser(sub)
    cli_presets.add_parser(sub)
    cli_tune.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(logging.DEBUG if args.verbose else logging.INFO)  # as the app's log
    try:
        if args.data_dir:  # before anything reads it
            use_data_dir(args.data_dir)
        commands = {"corpus-stats": _stats, "search": _search, "formats": _formats,
                    "build": _build, "data": _data,
                    "train": cli_train.train, "ask": cli_run.ask, "eval": cli_run.evaluate,
                    "import-runs": cli_imports.import_runs,
                    "import-traces": cli_imports.import_traces,
                    "sessions": _sessions, "judge": cli_judge.judge, "users": cli_users.users,
                    "presets": cli_presets.presets, "tune": cli_tune.tune}
        return commands[args.command](args)
    except EngineError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2


def _sessions(args: argparse.Namespace) -> int:
    """`sessions export FORMAT DIR`: the saved runs' files, one line each."""
    from pathlib import Path

    from engine.errors import ConfigError, check_choice
    from engine.eval.exports import FILE_FORMATS
    from engine.store.sessions import SessionStore

    check_choice("export format", args.format, ("jsonl", "csv", *FILE_FORMATS))
    try:
        ids = [int(i) for i in args.ids.split(",") if i.strip()] or None
    except ValueError:
        raise ConfigError(f"--ids takes run ids like 3,5, not {args.ids!r}.") from None
    files = SessionStore(args.db or None).export_files(args.format, ids)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        _out(f"{folder / name}")
    return 0


def _formats(args: argparse.Namespace) -> int:
    from engine.data.loaders import FORMATS

    for name, layout in FORMATS.items():
        _out(f"{name:18} {layout}")
    return 0


def _build(args: argparse.Namespace) -> int:
    import time

    from engine.data.corpus import load_corpus
    from engine.errors import check_range
    from engine.index.dense import dense_index, index_kind
    from engine.models.loading import resolve_encoder_precision
    from engine.units.build import build_units, index_text

    check_range("--max-tokens", args.max_tokens, 16, 1000)
    if args.qdrant or args.collection:  # refused before a build, not after it
        from engine.index.qdrant_locations import check_collection, check_location

        check_location(args.qdrant)
        if args.collection:
            check_collection(args.collection)
    corpus = load_corpus(args.corpus)
    config = UnitConfig("passages", Chunker(args.max_tokens))
    units = build_units(corpus, config)
    kind = index_kind(args.index, len(units))
    started = time.perf_counter()
    encoded = None
    if args.ray:
        from engine.index.on_ray import encode_on_ray

        encoded = encode_on_ray([index_text(u) for u in units], args.encoder,
                                resolve_encoder_precision("auto"), args.ray, args.workers)
    index = dense_index(corpus, config, args.encoder, kind=kind)
    seconds = time.perf_counter() - started
    where = f", {encoded:,} encoded on Ray ({args.ray})" if encoded is not None else ""
    _out(f"{corpus.name}: {len(units):,} passages, {index.description} dense index with "
         f"{args.encoder} in {seconds:.1f} s{where}")
    if args.qdrant:
        from engine.index.qdrant import qdrant_dense_index
        from engine.service.remote_indexes import InQdrant

        started = time.perf_counter()
        collection = InQdrant(args.qdrant, args.collection).collection_for(
            corpus.name, config, args.encoder)
        served = qdrant_dense_index(corpus, config, args.encoder, args.qdrant, collection)
        _out(f"served from {served.description} ({len(units):,} points, "
             f"{time.perf_counter() - started:.1f} s)")
    return 0


def _data(args: argparse.Namespace) -> int:
    from pathlib import Path

    from engine import qa_data

    if args.data_command == "fetch":
        into = Path(args.into) if args.into else qa_data.fetch_target()
        fetched = qa_data.fetch(args.mirror, into)
        _out(f"fetched {len(fetched)} file(s) into {into}" if fetched
             else f"every QA file is already in {into}")
        return 0
    root = qa_data.shared_data_dir()
    problems = qa_data.verify(root)
    _out(f"QA data folder: {root}")
    for qa_file in qa_data.QA_FILES:
        state = problems.get(qa_file.path, "ok")
        _out(f"{qa_file.path:32} {state:8} {qa_file.licence:34} {qa_file.repo}@"
             f"{qa_file.commit[:10]}:{qa_file.source}")
    if problems:
        _out(f"{len(problems)} file(s) missing or changed: {qa_data.how_to_get()}.")
    return 1 if problems else 0


def _search(args: argparse.Namespace) -> int:
    from engine.data.corpus import load_corpus
    from engine.errors import ConfigError
    from engine.index.bm25 import bm25_index

    if not args.query.strip():
        raise ConfigError("The query is empty. Give a question, e.g. "
                          "python -m engine search \"Who painted Guernica?\"")
    config = UnitConfig(args.granularity, Chunker(args.max_tokens),
                        args.algorithm, args.cluster_tokens)
    index = bm25_index(load_corpus(args.corpus), config)
    results = index.search(args.query, args.k)
    if not results:
        _out("no results: no query word occurs in the corpus")
    for cand in results:
        _out(f"{cand.rank:>3}  {cand.score:7.3f}  {cand.unit.title}")
        _out(f"     {snippet(cand.unit.text, args.query)}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from engine.data.corpus import load_corpus
    from engine.units.stats import corpus_stats

    stats = corpus_stats(load_corpus(args.corpus), tuple(args.sizes))
    if args.json:
        _out(json.dumps(asdict(stats)))
        return 0
    _out(f"corpus      {stats.name}")
    _out(f"documents   {stats.documents:,}")
    _out(f"tokens      {stats.tokens:,}  (words and punctuation; see engine/text.py)")
    _out("sources     " + ", ".join(f"{k} {v:,}" for k, v in stats.sources.items()))
    _out("link edges  " + ", ".join(f"{k} {v:,}" for k, v in stats.edges.items())
         + f"  ({stats.isolated_documents:,} documents without links)")
    _out("")
    labels = [label for label, _ in stats.clusterings[0].histogram] if stats.clusterings else []
    _out(f"{'algorithm':10} {'S':>5} {'units':>7} {'single':>7} {'mean':>7} {'max':>6}  "
         + " ".join(f"{x:>9}" for x in labels))
    for c in stats.clusterings:
        _out(f"{c.algorithm:10} {c.max_tokens:>5} {c.clusters:>7,} {c.singletons:>7,} "
             f"{c.mean_tokens:>7.0f} {c.max_tokens_seen:>6}  "
             + " ".join(f"{n:>9,}" for _, n in c.histogram))
    return 0


if __name__ == "__main__":  # python -m engine.cli.main, as python -m engine
    raise SystemExit(main())
