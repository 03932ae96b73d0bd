"""Cross-encoders at query time: where a model is, loading it once, scoring pairs.

`model` is "trained" (the pre-ranker `python -m engine train preranker` caches; it is never
trained at query time), an alias of engine.models.loading, a local folder or a hub id.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.errors import ResourceMissingError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

TRAIN_COMMAND = "python -m engine train preranker"


def model_location(model: str) -> str:
    """Where to load `model` from: the cached trained pre-ranker, an alias's folder, or as is.

    Raises:
        ResourceMissingError: for "trained" when no trained pre-ranker is cached.
    """
    if model != "trained":
        from engine.models.loading import resolve

        return resolve(model)
    from engine.models.trained import cached_preranker_path
    from engine.paths import data_dir

    folder = cached_preranker_path()
    if folder is None:
        raise ResourceMissingError(
            f"No trained pre-ranker in {data_dir() / 'cache' / 'preranker'}. Train it once "
            f"(about 15 minutes on 2 CPU cores) with: {TRAIN_COMMAND}"
        )
    return str(folder)


@lru_cache(maxsize=4)
def load_cross_encoder(location: str, max_length: int = 256) -> CrossEncoder:
    """A one-logit CrossEncoder on the CPU, loaded once per (location, max_length)."""
    from sentence_transformers import CrossEncoder

    from engine.models.loading import from_pretrained

    return from_pretrained(CrossEncoder, location, num_labels=1, max_length=max_length,
                            device="cpu", local_files_only=True)


def score_pairs(model: CrossEncoder, pairs: Sequence[tuple[str, str]],
                batch_size: int = 32) -> list[float]:
    """Raw logits (no sigmoid: no ties from saturation) of `model` for (query, text) pairs."""
    import torch

    if not pairs:
        return []
    scores = model.predict(list(pairs), batch_size=batch_size, show_progress_bar=False,
                           activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    return [float(s) for s in scores]
