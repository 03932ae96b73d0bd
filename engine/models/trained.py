"""The models trained here, and where they are.

Training (engine/train) writes each model into the cache; query-time code finds it through
`trained_folder` and never imports the training code. Each model's own module knows its
cached folders (the pre-ranker's and the query classifier's training config and cache key
in `cross_encoder` and `query_classifier`, the selection classifier's versions in
`selection_classifier`); this one says which folder "trained" means for each, so a model
option's "trained" resolves, or fails with the command that trains it, in one way. The
models' names, training times and the helpers their modules share are in
engine.models.kinds, below them, and are imported from here too.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import check_choice
from engine.models import cross_encoder, query_classifier, selection_classifier
from engine.models.kinds import NAMES as NAMES
from engine.models.kinds import PRERANKER as PRERANKER
from engine.models.kinds import QUERY_CLASSIFIER as QUERY_CLASSIFIER
from engine.models.kinds import SELECTION_CLASSIFIER as SELECTION_CLASSIFIER
from engine.models.kinds import TRAIN_FILES as TRAIN_FILES
from engine.models.kinds import TRAINED as TRAINED
from engine.models.kinds import TRAINING_TIMES as TRAINING_TIMES
from engine.models.kinds import TrainingTime as TrainingTime
from engine.models.kinds import cached_model as cached_model
from engine.models.kinds import option_location
from engine.models.kinds import read_report as read_report
from engine.models.kinds import train_command as train_command


def trained_folder(kind: str) -> Path | None:
    """The folder of the model `kind` that "trained" means, or None while none is trained
    (never trains): the cached pre-ranker or query classifier of the default recipe, the
    selection classifier's active version."""
    check_choice("trained model", kind, NAMES)
    if kind == PRERANKER:
        return cross_encoder.cached_preranker_path()
    if kind == QUERY_CLASSIFIER:
        return query_classifier.cached_query_classifier()
    return selection_classifier.active_folder()


def model_location(model: str, kind: str) -> str:
    """Where a model option's value loads from: "trained" is the model `kind` trained here,
    an alias its packaged folder, a folder or hub id as it is.

    Raises:
        ResourceMissingError: for "trained" while none is trained, with the command that
            trains it and how long that took here.
    """
    return option_location(model, kind, lambda: trained_folder(kind))
