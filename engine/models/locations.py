"""Where a model named by an alias (engine.models.pretrained.ALIASES), a name the operator
allowed, a local path or a hub id loads from: `minilm` is the packaged all-MiniLM-L6-v2,
`smollm2` SmolLM2-135M-Instruct converted once from the packaged GGUF file
(engine.models.gguf); an allowed name its folder or hub id (engine.allowed); the engine's
own folders (the data directory's trained models and exports) as they are; anything else
is returned as it is for `from_pretrained` to load, in an open process only: a confined one
(the app) refuses it."""

from __future__ import annotations

from pathlib import Path

from engine import allowed
from engine.models.packaged import minilm_path
from engine.paths import data_dir


def resolve(name_or_path: str) -> str:
    """A loadable location for an alias, an allowed name, the engine's own folder, or (in
    an open process) a local path or hub id, returned unchanged.

    Raises:
        ConfigError: in a confined process, for a folder or hub id no allowed name names.
    """
    if name_or_path == "minilm":
        return str(minilm_path())
    if name_or_path == "smollm2":
        from engine.models.gguf import smollm2_dir

        return str(smollm2_dir())
    if _engines_own(name_or_path):
        return name_or_path
    return allowed.model(name_or_path)


def _engines_own(location: str) -> bool:
    """Whether `location` is a folder of the data directory (a model trained or converted
    here) or a packaged model's, which the engine hands itself."""
    path = Path(location)
    if not path.is_absolute():
        return False
    path = path.resolve()
    return path.is_relative_to(data_dir().resolve()) or \
        path.is_relative_to(minilm_path().resolve().parent)
