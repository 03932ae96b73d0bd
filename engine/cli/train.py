"""`python -m engine train preranker | classifier | query-classifier`: train a model once
(cached) and report its held-out figures; a second call reports the cached model."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from engine.errors import check_range
from engine.models.trained import PRERANKER, QUERY_CLASSIFIER, SELECTION_CLASSIFIER


def _out(line: str = "") -> None:
    print(line, flush=True)


def _status(cached: bool, report: dict, started: float) -> None:
    _out(f"status      {'cached (trained earlier)' if cached else 'trained now'}; training took "
         f"{report['seconds']:.0f} s" + ("" if cached else
                                          f", {time.perf_counter() - started:.0f} s in all"))


def _overrides(config, args: argparse.Namespace):
    """`config` with the --epochs and --seed given."""
    if args.epochs is not None:
        config = replace(config, epochs=int(check_range("epochs", args.epochs, 1, 100)))
    if args.seed is not None:
        config = replace(config, seed=args.seed)
    return config


def add_parser(sub) -> None:
    train = sub.add_parser("train", help="train a model (cached; reports it if already done)")
    train.add_argument("what", choices=[PRERANKER, SELECTION_CLASSIFIER, QUERY_CLASSIFIER],
                       help="the model to train (engine/train/trainers.py lists them)")
    train.add_argument("--epochs", type=int, default=None, help="passes over the pairs")
    train.add_argument("--seed", type=int, default=None, help="random seed (default 13)")
    train.add_argument("--no-ict", action="store_true",
                       help="pre-ranker: supervised pairs only (no inverse-cloze variant)")
    train.add_argument("--threads", type=int, default=None,
                       help="torch CPU threads (default: torch's choice; 1 on a busy machine)")


def train(args: argparse.Namespace) -> int:
    if args.threads is not None:
        import torch

        torch.set_num_threads(int(check_range("threads", args.threads, 1, 256)))
    return {SELECTION_CLASSIFIER: _classifier, PRERANKER: _preranker,
            QUERY_CLASSIFIER: _query_classifier}[args.what](args)


def _preranker(args: argparse.Namespace) -> int:
    from engine.models.cross_encoder import TrainConfig, cached_preranker_path, training_report
    from engine.train.fit_preranker import train_preranker

    config = _overrides(TrainConfig(), args)
    if args.no_ict:
        config = replace(config, use_ict=False)
    cached = cached_preranker_path(config) is not None
    started = time.perf_counter()
    folder = train_preranker(config)
    report = training_report(folder)
    _out(f"pre-ranker  {folder}")
    _status(cached, report, started)
    _out(f"questions   {report['train_questions']} train, {report['validation_questions']} "
         "held out (validation)")
    _out("validation  gold-document recall@4, re-ranking each held-out question's paragraphs:")
    for name, variant in report["variants"].items():
        mark = "  <- kept" if name == report["kept"] else ""
        _out(f"  {name:16} {variant['recall@4']:.3f}  ({variant['pairs']:,} pairs, "
             f"{variant['seconds']:.0f} s){mark}")
    _out(f"  {'bi-encoder':16} {report['bi_encoder_recall@4']:.3f}  (MiniLM cosine, baseline)")
    return 0



def _classifier(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from engine.cache import entry_dir
    from engine.train.fit_selection_classifier import (
        ClassifierConfig,
        cache_key,
        train_classifier,
        training_report,
    )

    config = _overrides(ClassifierConfig(), args)
    cached = (entry_dir("classifier", cache_key(config, ())) / "selection.json").is_file()
    bar = tqdm(desc="training steps", disable=cached)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    started = time.perf_counter()
    folder = train_classifier(config, progress=progress)
    bar.close()
    report = training_report(folder)
    _out(f"classifier  {folder} (now the active version)")
    _status(cached, report, started)
    _out(f"pairs       {report['train_pairs']:,} from {report['train_questions']} training "
         f"questions; {report['heldout']['pairs']:,} from {report['heldout_questions']} held out")
    for name, key in (("held out", "heldout"), ("at 0.5", "heldout_at_0.5")):
        m = report[key]
        _out(f"{name:11} accuracy {m['accuracy']:.3f}  precision {m['precision']:.3f}  "
             f"recall {m['recall']:.3f}  F1 {m['f1']:.3f}")
    _out(f"threshold   {report['threshold']:.3f} (best accuracy on the held-out pairs)")
    if report.get("heldout_auc") is not None:
        _out(f"AUC         {report['heldout_auc']:.3f} (held out: P(a positive pair scores "
             "above a negative one))")
    return 0


def _query_classifier(args: argparse.Namespace) -> int:
    from engine.models.query_classifier import (
        REPORT,
        QueryClassifierConfig,
        cached_query_classifier,
    )
    from engine.train.fit_query_classifier import train_query_classifier

    config = _overrides(QueryClassifierConfig(), args)
    cached = cached_query_classifier(config) is not None
    started = time.perf_counter()
    folder = train_query_classifier(config)
    report = json.loads((folder / REPORT).read_text(encoding="utf-8"))
    _out(f"query classifier  {folder}")
    _status(cached, report, started)
    _out(f"examples    {report['train_examples']} trained on, {report['heldout_examples']} "
         "held apart (unseen templates, a fifth of the knowledge questions)")
    _out(f"held apart  accuracy {report['heldout_accuracy']:.3f}")
    for kind, accuracy in report["heldout_accuracy_by_kind"].items():
        _out(f"  {kind:24} {accuracy:.3f}")
    return 0
