"""The project installs as a package: every dependency pinned, the console scripts and the
README's commands point at code that exists."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PINNED = re.compile(r"^[A-Za-z0-9_.\-]+(\[[\w,]+\])?==[\w.]+$")


def test_every_dependency_is_pinned():
    project = PYPROJECT["project"]
    wanted = [*project["dependencies"], *(d for group in project["optional-dependencies"].values()
                                          for d in group)]
    assert "torch==2.13.0" in wanted  # an unpinned torch pulls a multi-GB CUDA build
    assert [d for d in wanted if not PINNED.match(d)] == []


def test_requirements_install_this_project_with_its_extras():
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    assert lines == [f"-e .[{','.join(sorted(extras))}]"]
    nodeps = [line for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert nodeps and all(PINNED.match(line) for line in nodeps)


def test_console_scripts_name_callables():
    scripts = PYPROJECT["project"]["scripts"]
    assert set(scripts) == {"funnel-explorer", "funnel-engine"}
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


def test_engine_cli_entry_point_runs(capsys):
    from engine.cli.main import main

    assert main(["formats"]) == 0
    assert "hotpotqa" in capsys.readouterr().out
