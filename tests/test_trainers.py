"""One table of trainers: what `Need.trained_by`, background preparation and the CLI name."""

from __future__ import annotations

import argparse
from dataclasses import replace

from engine.cli import train as cli_train
from engine.models.trained import TRAINING_TIMES
from engine.paradigms.registry import PARADIGMS
from engine.train import trainers
from engine.train.trainers import TRAINERS, train_if_missing


def test_every_trained_need_names_a_trainer_of_the_table():
    named = {need.trained_by for spec in PARADIGMS.values() for need in spec.needs()
             if need.trained_by}
    assert named and named <= set(TRAINERS)
    for spec in PARADIGMS.values():
        for need in spec.needs():
            if need.trained_by:  # its estimate is the table's measured figure
                assert need.train_seconds == TRAINING_TIMES[need.trained_by].seconds


def test_the_cli_trains_exactly_the_models_of_the_table():
    parser = argparse.ArgumentParser()
    cli_train.add_parser(parser.add_subparsers(dest="command"))
    (action,) = [a for a in parser._subparsers._group_actions[0].choices["train"]._actions
                 if a.dest == "what"]
    assert set(action.choices) == set(TRAINERS)


def test_every_trainer_says_how_long_it_takes_and_where_that_was_measured():
    for trainer in TRAINERS.values():
        assert trainer.time.seconds > 0 and "idle" in trainer.time.measured
        assert trainer.trains


def test_train_if_missing_trains_only_what_is_not_cached(monkeypatch):
    calls = []
    kind = next(iter(TRAINERS))
    for cached in (True, False):
        fake = replace(TRAINERS[kind], is_trained=lambda cached=cached: cached,
                       train=lambda progress: calls.append(progress))
        monkeypatch.setitem(trainers.TRAINERS, kind, fake)
        train_if_missing(kind, print)
    assert calls == [print]  # trained once: when nothing was cached
