"""The models trained here, and where they are.

Training (engine/train) writes each model into the cache; query-time code finds it through
`trained_folder` and never imports the training code. Each model's own module knows its
cached folders (the pre-ranker's and the query classifier's training config and cache key
in `cross_encoder` and `query_classifier`, the selection classifier's versions in
`selection_classifier`); this one says which folder "trained" means for each, so a model
option's "trained" resolves, or fails with the command that trains it, in one way. The
models' names, training times and the helpers their modules share are in
engine.models.kinds, below them.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import check_choice
from engine.models import cross_encoder, query_classifier, selection_classifier
from engine.models.kinds import NAMES, PRERANKER, QUERY_CLASSIFIER, option_location


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
