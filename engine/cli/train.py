"""`python -m engine train <model>`: train a model of the trainers table
(engine/train/trainers.py, which gives the choices, each model's switches and what is said
of it) once (cached) and report its held-out figures; a second call reports the cached
model."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from engine.errors import ConfigError, check_range
from engine.train.trainers import TRAINERS, Trainer


def _out(line: str = "") -> None:
    print(line, flush=True)


def _status(cached: bool, report: dict, started: float) -> None:
    _out(f"status      {'cached (trained earlier)' if cached else 'trained now'}; training took "
         f"{report['seconds']:.0f} s" + ("" if cached else
                                          f", {time.perf_counter() - started:.0f} s in all"))


def _config(trainer: Trainer, args: argparse.Namespace) -> Any:
    """`trainer`'s default config with the --epochs, --seed and switches of its own given;
    another trainer's switch is refused rather than ignored."""
    config = trainer.config()
    if args.epochs is not None:
        config = replace(config, epochs=int(check_range("epochs", args.epochs, 1, 100)))
    if args.seed is not None:
        config = replace(config, seed=args.seed)
    for other in TRAINERS.values():
        for flag in other.flags:
            if not getattr(args, flag.dest, False):
                continue
            if flag not in trainer.flags:
                raise ConfigError(f"--{flag.name} is an option of {other.kind} only.")
            config = flag.apply(config)
    return config


class _Bar:
    """A tqdm bar of training steps, drawn from the first step a trainer reports: one that
    reports none, or a model already cached, draws no bar."""

    def __init__(self) -> None:
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(desc="training steps")
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def add_parser(sub) -> None:
    train = sub.add_parser("train", help="train a model (cached; reports it if already done)")
    train.add_argument("what", choices=list(TRAINERS),
                       help="the model to train (engine/train/trainers.py lists them)")
    train.add_argument("--epochs", type=int, default=None, help="passes over the pairs")
    train.add_argument("--seed", type=int, default=None, help="random seed (default 13)")
    for trainer in TRAINERS.values():
        for flag in trainer.flags:
            train.add_argument(f"--{flag.name}", action="store_true",
                               help=f"{trainer.kind}: {flag.help}")
    train.add_argument("--threads", type=int, default=None,
                       help="torch CPU threads (default: torch's choice; 1 on a busy machine)")


def train(args: argparse.Namespace) -> int:
    if args.threads is not None:
        import torch

        torch.set_num_threads(int(check_range("threads", args.threads, 1, 256)))
    trainer = TRAINERS[args.what]
    config = _config(trainer, args)
    cached = trainer.cached(config) is not None
    started = time.perf_counter()
    bar = _Bar()
    try:
        folder = trainer.train(bar, config)
    finally:
        bar.close()
    heading, *figures = trainer.summary(folder)
    _out(heading)
    _status(cached, trainer.report(folder), started)
    for line in figures:
        _out(line)
    return 0
