"""A training's state after each finished epoch, kept so that a training stopped mid-way
(kill -9, a restart of the app) resumes after its last epoch instead of from nothing; the
selection classifier's training (engine.train.fit_selection_classifier) keeps one.

The state is whatever the training needs to go on exactly as it would have (its model's,
optimizer's and schedule's states, its random states, how far it got), written atomically
under the cache folder by the training's cache key, and dropped once the model is saved.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

CHECKPOINT = "last-epoch.pt"  # a training's state after its last finished epoch


def checkpoint_folder(key: dict, kind: str = "selection-classifier") -> Path:
    """Where a training of cache key `key` keeps its last finished epoch, so a training
    stopped mid-way (kill -9, a restart) resumes there instead of from nothing."""
    from engine.paths import data_dir

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return data_dir() / "cache" / "checkpoints" / kind / digest


def save_checkpoint(folder: Path | None, state: dict) -> None:
    """The training's state after an epoch, written atomically (a kill mid-write leaves the
    epoch before)."""
    import torch

    from engine.cache import atomic_path

    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / CHECKPOINT) as tmp:
        torch.save(state, tmp)


def resumed(folder: Path | None) -> dict | None:
    """The state a stopped training of this key saved after its last epoch, or None."""
    import torch

    path = folder / CHECKPOINT if folder is not None else None
    if path is None or not path.is_file():
        return None
    try:
        return torch.load(path, weights_only=False)
    except Exception as err:  # noqa: BLE001 - a damaged checkpoint: train from the start
        logger.warning("the training checkpoint %s is unreadable (%s); training from the "
                       "start", path, err)
        return None


def drop_checkpoint(folder: Path | None) -> None:
    """Forget a training's checkpoint once its model is saved whole."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
