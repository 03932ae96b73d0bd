"""The registry: every paradigm declared once, and read by everything else.

The CLI's choices, the API's validation, background preparation, the UI's paradigm choices
and its parameter panels all come from here; the service makes a paradigm, handed what it
uses (engine.service.store.make_paradigm). Adding a paradigm is one module (a Paradigm
subclass, its config dataclass and a `SPEC`) plus one line in `_BUILTIN`.
"""

from __future__ import annotations

import json

from engine.config import config_from_dict
from engine.errors import ConfigError, check_choice
from engine.paradigms import best, drrag, flat, funnel, longrag
from engine.paradigms.base import ParadigmSpec

_BUILTIN = (funnel.SPEC, flat.SPEC, longrag.SPEC, drrag.SPEC, best.SPEC)
PARADIGMS: dict[str, ParadigmSpec] = {spec.name: spec for spec in _BUILTIN}
DEFAULT = _BUILTIN[0].name  # what the CLI and the API run when no paradigm is named


def register(spec: ParadigmSpec) -> ParadigmSpec:
    """Add (or replace) a paradigm at run time; returns the spec."""
    PARADIGMS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    PARADIGMS.pop(name, None)


def spec(name: str) -> ParadigmSpec:
    """The spec of paradigm `name`; an unknown name lists the registered ones."""
    check_choice("paradigm", name, PARADIGMS)
    return PARADIGMS[name]


def names() -> list[str]:
    return list(PARADIGMS)


def make_config(name: str, values: dict | None = None) -> object:
    """Paradigm `name`'s config from a JSON-style dict (defaults for what it leaves out)."""
    return config_from_dict(spec(name).config, values or {})


def parse_config(text: str, limit: int = 10_000) -> dict:
    """A config dict from JSON text ('' or whitespace means the defaults)."""
    text = (text or "").strip()
    if not text:
        return {}
    if len(text) > limit:
        raise ConfigError(f"The config is {len(text):,} characters; the limit is {limit:,}.")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"The config is not valid JSON ({err.msg} at line {err.lineno}, "
                          f"column {err.colno}). Example: {{\"K\": 10, \"N\": 8}}.") from None
    if not isinstance(config, dict):
        raise ConfigError(f"The config must be a JSON object such as {{\"K\": 10}}, "
                          f"not {type(config).__name__}.")
    return config
