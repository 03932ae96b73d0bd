"""`ask` and `eval` commands: one question through a paradigm, or a QA file through several.

Output goes to stdout (this is the CLI); engine modules only log.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from engine.cli import CORPUS_HELP, EVAL_CORPUS_HELP, default_corpus
from engine.cli.tables import out as _out
from engine.cli.tables import print_summary
from engine.paradigms.registry import DEFAULT, names
from engine.trace import RunTrace, gold_lost_at


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ask = sub.add_parser("ask", help="run one question and print every stage")
    ask.add_argument("question")
    ask.add_argument("--paradigm", default=DEFAULT,
                     help=f"{' | '.join(names())} (default {DEFAULT})")
    ask.add_argument("--corpus", default="wiki", help=CORPUS_HELP)
    ask.add_argument("--config", default="{}", help="paradigm options as JSON, e.g. '{\"K\": 5}'")
    ask.add_argument("--show", type=int, default=5, help="candidates shown per stage")
    ask.add_argument("--preset", default="", help="a named preset's paradigm and options "
                     "(--config over them; `presets list`), from --db's sessions file")
    ask.add_argument("--db", default="", help="default: sessions.duckdb in the data dir")

    ev = sub.add_parser("eval", help="run paradigms over a QA file and summarise, or resume "
                        "a stored evaluation (--resume ID)")
    ev.add_argument("--dataset", default="",
                    help='a listed dataset as the app names it ("HotpotQA dev500", '
                         '"arguana (test)"), a QA file (a path, or one under the shared data '
                         "folder), a test collection's folder or zip (BEIR, or TREC topics "
                         "+ qrels + corpus) or ir_datasets id (irds:beir/nfcorpus/test, from "
                         "its local cache): added as a corpus of its name on first use, its "
                         "questions judged over it")
    ev.add_argument("--split", default=None,
                    help="a collection's split (default: test, else dev, else train)")
    ev.add_argument("--drop-unknown", action="store_true",
                    help="a collection's judgments of documents its corpus lacks are left "
                         "out (each named) instead of refusing the collection")
    ev.add_argument("--resume", type=int, default=None, metavar="ID",
                    help="go on with stored evaluation ID (interrupted, cancelled or failed, "
                         "as the app's Evaluate lists it): the questions it lacks, with its "
                         "paradigms, configs and corpus; stored in --db")
    ev.add_argument("--db", default="", help="with --resume or --preset: the sessions file "
                    "(default: sessions.duckdb in the data directory)")
    ev.add_argument("--paradigm", default="",
                    help=f"comma-separated, of: {', '.join(names())} (default: all, or "
                         "none beside --preset)")
    ev.add_argument("--preset", default="", help="comma-separated named presets, each run "
                    "as its paradigm and options and listed by its name (`presets list`)")
    ev.add_argument("--corpus", default=None, help=EVAL_CORPUS_HELP + "; a collection's "
                    "questions: its own corpus")
    ev.add_argument("--limit", type=int, default=None, help="first N questions only")
    ev.add_argument("--config", default="{}",
                    help='JSON of options per paradigm name, e.g. {"NAME": {"K": 5}}')
    ev.add_argument("--out", default=None, help="JSONL of per-question rows (default: data/eval/)")
    ev.add_argument("--json", action="store_true", help="print the summary as JSON last")
    ev.add_argument("--export", nargs=2, metavar=("FORMAT", "DIR"), default=None,
                    help="also write the runs for another tool into DIR: ragas, ragchecker, "
                         "flashrag, or trec (qrels.txt and a run file per paradigm and stage)")
    ev.add_argument("--ray", default="", metavar="ADDRESS",
                    help="run the questions as Ray tasks on the cluster at ADDRESS, or on "
                         "'local' workers started here (they share only the data directory)")
    ev.add_argument("--workers", type=int, default=2,
                    help="with --ray local: how many one-CPU workers (default 2)")


def _dataset_path(name: str) -> Path:
    from engine.service.datasets import dataset_file

    return dataset_file(name)


def _progress(done: int, total: int) -> None:
    """`done/total questions` on stderr: redrawn on a terminal, else a line every tenth."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r{done}/{total} questions")
    elif done == total or done % max(1, total // 10) == 0:
        sys.stderr.write(f"{done}/{total} questions\n")


def _progress_done() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\n")


def ask(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from engine.cli.presets import chosen
    from engine.data.corpus import load_corpus
    from engine.paradigms.base import check_question
    from engine.service.store import make_paradigm

    question = check_question(args.question)  # refused before any index or model loads
    name, options = chosen(args.paradigm, json_arg(args.config), args.preset, args.db)
    trace = make_paradigm(name, load_corpus(args.corpus), options).run(question)
    print_trace(replace(trace, preset=args.preset), args.show)
    return 0


def print_trace(trace: RunTrace, show: int = 5) -> None:
    from engine.eval.traces import searched_in

    _out(f"{trace.paradigm}{f' (preset {trace.preset})' if trace.preset else ''}: "
         f"{trace.question}")
    for n, stage in enumerate(trace.stages, start=1):
        searched = searched_in(stage)  # None: an imported trace does not say
        _out(f"\nstage {n}  {stage.name} ({stage.granularity})  {len(stage.candidates)} of "
             f"{'?' if searched is None else searched or 'index'}  {stage.seconds:.3f} s")
        flags = trace.gold_flags[n - 1] if trace.gold_flags else None
        for i, cand in enumerate(stage.candidates[:show]):
            mark = " [answer]" if flags and flags.answer[i] else ""
            mark += " [gold doc]" if flags and flags.support[i] else ""
            _out(f"  {cand.rank:>3} {cand.score:9.4f}  {cand.unit.title[:70]}{mark}")
    lost = gold_lost_at(trace) if trace.gold_flags else None
    if lost:
        _out(f"\ngold answer lost at stage {lost}")
    for step in trace.llm_steps:
        cached = f" ({step.cached_tokens:,} cached)" if step.cached_tokens else ""
        _out(f"\nLLM call ({step.purpose}, {step.model})  {step.prompt_tokens:,} prompt tokens"
             f"{cached}, {step.output_tokens} out  {step.seconds:.3f} s")
        _out(f"  said: {step.output.strip()[:200]}")
    _out(f"\nanswer: {trace.answer}")
    _out(f"reader input tokens {trace.reader_input_tokens:,}; LLM calls {trace.llm_calls}; "
         f"reader {trace.reader_seconds:.2f} s; total {trace.seconds:.2f} s")
    if trace.metrics:
        _out("metrics: " + ", ".join(f"{k} {v:.3f}" for k, v in trace.metrics.items()))


def evaluate(args: argparse.Namespace) -> int:
    from engine.cli.presets import evaluated
    from engine.data.loaders import read_dataset
    from engine.errors import check_choice
    from engine.eval.exports import FILE_FORMATS, export_files
    from engine.eval.outcomes import attribution, followed, offered
    from engine.eval.paired import every_pair
    from engine.eval.runner import run_eval
    from engine.eval.summary import summarise
    from engine.paths import data_dir
    from engine.service.datasets import dataset_label
    from engine.service.store import make_paradigm

    if args.resume is not None:
        return resume(args)
    if not args.dataset:
        from engine.errors import ConfigError

        raise ConfigError("Give --dataset (a listed dataset or a QA file), or --resume ID to "
                          "go on with a stored evaluation.")
    dataset, corpus_spec = dataset_and_corpus(args)
    paradigms, configs, kinds = evaluated(args.paradigm, args.preset, json_arg(args.config)
                                          or {}, args.db)
    stem = dataset.parent.name + "-" + dataset.stem.removeprefix("questions-") \
        if dataset.stem.startswith("questions-") else dataset.stem  # a collection's split
    out = Path(args.out) if args.out else data_dir() / "eval" / (
        f"{stem}-{'-'.join(paradigms)}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.export:  # refused before anything runs
        check_choice("export format", args.export[0], FILE_FORMATS)
    rows, traces, searched = [], [], []
    with open(out, "w", encoding="utf-8") as handle:
        for row in run_eval(dataset, paradigms, corpus_spec, args.limit, configs,
                            progress=_progress,
                            ray=args.ray, workers=args.workers, make=make_paradigm,
                            keep=traces.append if args.export else None,
                            label=dataset_label(str(dataset)), searched=searched.append,
                            presets=kinds):
            rows.append(row)
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    _progress_done()
    summary = summarise(rows)
    corpus = searched[0] if searched else None
    if corpus is not None:  # beside every figure: what was searched
        _out(f"corpus {corpus.name}: {len(corpus.documents):,} documents, fingerprint "
             f"{corpus.fingerprint[:12]}")
    print_summary(summary)
    # a collection's questions have no answers: each is followed on a relevant document
    track = followed(offered(rows))
    found = attribution(rows, track)
    _out("\nwhere the gold answer was lost (questions):" if track == "answer" else
         "\nwhere the relevant documents were lost (questions):")
    for name, seen in found.items():
        _out(f"  {name}: " + ", ".join(f"{o} {n}" for o, n in seen.counts.items()))
    _out(f"\nrows: {out}")
    if args.export:
        folder = Path(args.export[1])
        folder.mkdir(parents=True, exist_ok=True)
        shipped = {d.id: d.text for d in read_dataset(dataset).documents}  # ragas's references
        for name, text in export_files(traces, args.export[0], documents=shipped.get).items():
            (folder / name).write_text(text, encoding="utf-8")
        _out(f"exported ({args.export[0]}): {folder}")
    if args.json:
        diagnosed = {name: {**s, "outcomes": found[name].counts,
                            "corpus": corpus.name if corpus else ""}
                     for name, s in summary.items()}
        if len(summary) > 1:
            diagnosed["paired"] = every_pair(rows)
        _out(json.dumps(diagnosed))
    return 0


def dataset_and_corpus(args: argparse.Namespace) -> tuple[Path, str]:
    """(QA file, corpus) of `eval --dataset`: a collection's folder or zip is added on first
    use (engine.data.collection_store, as the Corpora tab adds it) and its split's judged
    questions are evaluated over its own corpus; anything else over --corpus."""
    from engine.data.collection_store import check_corpus, split_of
    from engine.data.loaders.collections import is_collection
    from engine.data.loaders.irds import is_irds

    given = Path(args.dataset)
    if is_irds(args.dataset):  # an ir_datasets id, read from its cache
        split = _added_collection(args.dataset.strip(), args.split, args.drop_unknown)
    elif given.exists() and is_collection(given):
        split = _added_collection(given, args.split, args.drop_unknown)
    else:
        dataset = _dataset_path(args.dataset)  # a listed dataset's name, as the app shows it
        split = split_of(str(dataset))
        if split is None:
            return dataset, args.corpus or default_corpus()
    corpus = args.corpus or split.corpus
    check_corpus(split.label, corpus)
    return split.path, corpus


def _added_collection(source: Path | str, split: str | None, drop_unknown: bool):
    """The split of the collection at `source` (a folder or zip, or an ir_datasets id),
    added now unless it was before (named by its folder, zip or id, refused if that corpus
    name is taken by another source)."""
    import re

    from engine.data.collection_store import CollectionSplit, add_collection, stored_from
    from engine.data.ingest import check_name, stored_corpora
    from engine.errors import ConfigError

    stored = stored_from(source)
    if stored is None:
        stem = source.removeprefix("irds:") if isinstance(source, str) else source.stem
        name = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-_")[:40] or "collection"
        check_name(name, {c.name for c in stored_corpora()})
        _, splits = add_collection(name, source, drop_unknown=drop_unknown,
                                   original=source if isinstance(source, str)
                                   else str(source.resolve()))
        _out(f"added collection {name!r}: " + ", ".join(
            f"{s.split} ({s.questions:,} judged question{'' if s.questions == 1 else 's'})"
            for s in splits))
    else:
        splits = [CollectionSplit(stored.name, s, n)
                  for s, n in stored.collection.get("splits", {}).items()]
    chosen = next((s for s in splits if s.split == split), None) if split else splits[0]
    if chosen is None:
        raise ConfigError(f"Collection {splits[0].corpus!r} judges no split {split!r}; its "
                          f"splits: {', '.join(s.split for s in splits)}.")
    return chosen


def resume(args: argparse.Namespace) -> int:
    """`eval --resume ID`: a stored evaluation that ended before every question ran goes on
    here over the questions it lacks, with its paradigms, configs and corpus (loaded by its
    name; refused if its fingerprint changed, or it was imported), stored as it goes."""
    from engine.data.corpus import load_corpus
    from engine.service.evaluation_jobs import EvaluationJob
    from engine.service.resume import finish_whole, resumable, resumable_plan, resume_request
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore

    evaluations = EvaluationStore(SessionStore(args.db or None))
    stored = evaluations.get(args.resume)
    resumable_plan(evaluations, stored)  # refused before its corpus is loaded
    corpus = load_corpus(stored.corpus)
    plan, missing = resumable(evaluations, stored, corpus)
    if not missing:
        finish_whole(evaluations, stored)
        _out(f"evaluation {stored.id} lacked no question: marked done")
        print_summary(evaluations.get(stored.id).summary)
        return 0
    job = EvaluationJob(evaluations, corpus, resume_request(stored, plan, missing),
                        resumed=stored.id).start()
    shown = -1
    while job.state == "running":
        job.wait(1.0)
        if job.done != shown:
            shown = job.done
            _progress(job.done, job.total)
    _progress_done()
    status = job.status()
    _out(f"evaluation {stored.id} {status.state}: {status.done} of {status.total} "
         f"questions ({len(missing)} run now), corpus {stored.corpus}")
    print_summary(status.means)
    return 0 if status.state == "done" else 1


def json_arg(text: str, flag: str = "--config") -> dict:
    from engine.config import json_object

    return json_object(text, flag) or {}
