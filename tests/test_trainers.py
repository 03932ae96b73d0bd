"""One table of trainers: what `Need.trained_by`, background preparation and the CLI name."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import pytest

from engine.cli import train as cli_train
from engine.errors import ConfigError, ResourceMissingError
from engine.models.kinds import SELECTION_CLASSIFIER, TRAINING_TIMES
from engine.models.locations import resolve
from engine.models.trained import model_location, trained_folder
from engine.paradigms.registry import PARADIGMS
from engine.progress import duration
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


def test_train_if_missing_trains_only_what_is_not_cached(monkeypatch, tmp_path):
    calls = []
    kind = next(iter(TRAINERS))
    fake = replace(TRAINERS[kind], fit=lambda config, progress: calls.append(progress))
    monkeypatch.setitem(trainers.TRAINERS, kind, fake)
    for folder in (tmp_path, None):
        monkeypatch.setattr(trainers, "trained_folder", lambda kind, folder=folder: folder)
        train_if_missing(kind, print)
    assert calls == [print]  # trained once: when nothing was cached


@pytest.mark.parametrize("kind", sorted(TRAINERS))
def test_trained_before_training_names_the_command_and_how_long_it_takes(kind):
    assert trained_folder(kind) is None  # this test's data directory holds no model
    with pytest.raises(ResourceMissingError) as err:
        model_location("trained", kind)
    when = duration(TRAINING_TIMES[kind].seconds)
    assert str(err.value).endswith(f"Train it once (about {when} on 2 CPU cores) with: "
                                   f"python -m engine train {kind}")


def test_an_alias_a_folder_or_a_hub_id_is_not_looked_up_as_trained(tmp_path):
    for kind in TRAINERS:
        assert model_location("minilm", kind) == resolve("minilm")
        assert model_location(str(tmp_path), kind) == str(tmp_path)
        assert model_location("org/model", kind) == "org/model"
    with pytest.raises(ConfigError, match="Unknown trained model 'reader'"):
        trained_folder("reader")


def test_trained_means_the_selection_classifiers_active_version():
    from engine.cache import MANIFEST
    from engine.models.selection_classifier import REPORT, set_active, versions_dir

    for version in ("first", "second"):
        (versions_dir() / version).mkdir(parents=True)
        for name in (REPORT, MANIFEST):
            (versions_dir() / version / name).write_text("{}")
    set_active("first")  # not the newest
    assert trained_folder(SELECTION_CLASSIFIER) == versions_dir() / "first"
    assert model_location("trained", SELECTION_CLASSIFIER) == str(versions_dir() / "first")


@dataclass(frozen=True)
class ToyConfig:
    seed: int = 13
    epochs: int = 1
    loud: bool = False


def test_the_cli_trains_and_reports_through_a_row_of_the_table(monkeypatch, tmp_path, capsys):
    from engine.cli.main import main

    fitted, steps = [], []

    def fit(config, progress):
        progress(1, 2)
        progress(2, 2)
        steps.append(progress)
        fitted.append(config)
        return tmp_path

    toy = trainers.Trainer(
        "toy", "a toy model", config=ToyConfig, fit=fit,
        cached=lambda config: tmp_path if config in fitted else None,
        report=lambda folder: {"seconds": 3.0},
        summary=lambda folder: [f"toy  {folder}", f"fitted      {len(fitted)} times"],
        flags=(trainers.Flag("loud", "a louder toy", lambda c: replace(c, loud=True)),))
    monkeypatch.setitem(trainers.TRAINERS, "toy", toy)  # one row: a choice of the CLI

    assert main(["train", "toy", "--seed", "5", "--loud"]) == 0
    assert fitted == [ToyConfig(seed=5, loud=True)] and steps  # progress went to the bar
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"toy  {tmp_path}"
    assert lines[1].startswith("status      trained now; training took 3 s, ")
    assert lines[2:] == ["fitted      1 times"]
    assert main(["train", "toy", "--seed", "5", "--loud"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == ("status      cached (trained "
                                                       "earlier); training took 3 s")
    # a switch of one trainer is refused for another, before anything is trained
    assert main(["train", "preranker", "--loud"]) == 2
    assert "--loud is an option of toy only." in capsys.readouterr().err
