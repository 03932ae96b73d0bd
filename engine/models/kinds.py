"""The models trained here, each named once, and what their modules share.

The pre-ranker (engine.models.cross_encoder), the selection classifier
(engine.models.selection_classifier) and the query classifier
(engine.models.query_classifier) each know their own cached folders; this module, below
them, names the models, says how long training each took here, finds a verified cached
model, reads a training's report, gives the command that trains a model, and says where a
model option loads from given the folder "trained" means (`option_location`).
engine.models.trained, above them, says which folder "trained" means for each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.cache import existing_entry
from engine.errors import DataFormatError, ResourceMissingError
from engine.models.locations import resolve
from engine.paths import data_dir
from engine.progress import duration

# The models trained here, each named once: the cache family it is stored under, the
# trainer `Need.trained_by` names, the key of the trainers table (engine/train/trainers.py)
# and the argument of `python -m engine train`.
PRERANKER = "preranker"
SELECTION_CLASSIFIER = "classifier"
QUERY_CLASSIFIER = "query-classifier"
NAMES = {PRERANKER: "pre-ranker", SELECTION_CLASSIFIER: "selection classifier",
         QUERY_CLASSIFIER: "query classifier"}
TRAINED = "trained"  # what a model option says to mean the model of its kind trained here

# the training questions of the pre-ranker and the selection classifier (never dev500)
TRAIN_FILES = ("hotpotqa/train100.json", "musique/train100.json")


@dataclass(frozen=True)
class TrainingTime:
    """How long training a model took here, and under what conditions (2 CPU cores)."""

    seconds: float
    measured: str


# measured figures (docs/benchmarks/app.md, "A training's time left"); a machine shared
# with other work takes longer
TRAINING_TIMES = {
    PRERANKER: TrainingTime(600.0, "1 epoch plus its inverse-cloze variant, idle machine"),
    SELECTION_CLASSIFIER: TrainingTime(
        786.0, "feature pass and 3 epochs on 888 pairs, 2 threads, idle machine; a "
               "retrain with 50 labels took 1,013 s"),
    QUERY_CLASSIFIER: TrainingTime(
        60.0, "3 epochs on 611 examples, 2 threads, idle machine (59 s); 203 s while a "
              "test suite shared the cores"),
}


def cached_model(kind: str, key: Callable[[], dict]) -> Path | None:
    """The verified cached model of `kind` under the cache key `key()` makes, or None
    (never trains). Without its training data a model cannot be identified: None too."""
    try:
        made = key()
    except (DataFormatError, OSError):
        return None
    return existing_entry(kind, made)


def read_report(folder: Path, name: str) -> dict:
    """The figures and timings a training saved beside its model (file `name`)."""
    return json.loads((folder / name).read_text(encoding="utf-8"))


def train_command(kind: str) -> str:
    """The command that trains model `kind` once."""
    return f"python -m engine train {kind}"


def option_location(model: str, kind: str, trained: Callable[[], Path | None]) -> str:
    """Where a model option's value loads from: "trained" is the folder `trained()` gives
    (the model `kind` trained here), an alias its packaged folder, a folder or hub id as it
    is.

    Raises:
        ResourceMissingError: for "trained" while none is trained, with the command that
            trains it and how long that took here.
    """
    if model != TRAINED:
        return resolve(model)
    folder = trained()
    if folder is None:
        raise ResourceMissingError(
            f"No trained {NAMES[kind]} in {data_dir() / 'cache' / kind}. Train it once "
            f"(about {duration(TRAINING_TIMES[kind].seconds)} on 2 CPU cores) with: "
            f"{train_command(kind)}")
    return str(folder)
