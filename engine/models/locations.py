"""Where a model named by an alias (engine.models.pretrained.ALIASES), a local path or a
hub id loads from: `minilm` is the packaged all-MiniLM-L6-v2, `smollm2` SmolLM2-135M-Instruct
converted once from the packaged GGUF file (engine.models.gguf); anything else is returned
as it is, for `from_pretrained` to load."""

from __future__ import annotations

from engine.models.packaged import minilm_path


def resolve(name_or_path: str) -> str:
    """A loadable location for an alias, a local path or a hub id (returned unchanged)."""
    if name_or_path == "minilm":
        return str(minilm_path())
    if name_or_path == "smollm2":
        from engine.models.gguf import smollm2_dir

        return str(smollm2_dir())
    return name_or_path
