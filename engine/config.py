"""Declared options: one place says an option's type, range, choices and help text.

A paradigm's (or reader's) config is a frozen dataclass whose fields are made with `param`:

    K: int = param(10, "clusters from BM25", low=1, high=200)

From that declaration alone the engine checks values (`check_config`, called from
`__post_init__`), reads them from JSON (`config_from_dict`, which names the field, the value
and the expected type when one is wrong) and the app builds its parameter panels
(`describe`). Nested configs (a paradigm's `reader`) are fields whose type is itself such a
dataclass.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine import allowed
from engine.errors import ConfigError

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Option:
    """One declared option, as the UI and the checks see it."""

    name: str  # dotted for nested options: "reader.lr"
    type: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    names: str = ""  # the kind of place it names by an allowed name (engine.allowed)


def param(default: Any, help: str, *, low: float | None = None, high: float | None = None,
          choices: Sequence[Any] | Callable[[], Sequence[Any]] = (),
          names: str = "") -> Any:
    """A dataclass field with its help text, range (inclusive) and choices: a sequence, or a
    function that gives them when asked (choices plugins add, such as reader backends).
    `names`: the kind of place the option names ("models": by a word it reads itself, or
    by a folder or hub id; "endpoints": by a server's URL), which a confined process (the
    app) takes only by a name the operator allowed (engine.allowed)."""
    meta = {"help": help, "low": low, "high": high,
            "choices": choices if callable(choices) else tuple(choices), "names": names}
    if dataclasses.is_dataclass(default):
        return field(default_factory=lambda: default, metadata=meta)
    return field(default=default, metadata=meta)


def _choices(meta: Any) -> tuple[Any, ...]:
    choices = meta.get("choices") or ()
    return tuple(choices()) if callable(choices) else choices


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def is_config(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def describe(cls: type, prefix: str = "", defaults: Any = None) -> list[Option]:
    """Every option of config class `cls`, nested configs flattened with dotted names; a
    nested config's defaults are its field's (`defaults`: LongRAG's sentence cut is on,
    funnel's reader aggregates by mean_tokens), not its class's."""
    types = _field_types(cls)
    out: list[Option] = []
    for f in dataclasses.fields(cls):
        tp = types[f.name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if defaults is not None:
            default = getattr(defaults, f.name)
        if is_config(tp):
            out += describe(tp, f"{prefix}{f.name}.", default)
            continue
        meta = f.metadata
        out.append(Option(f"{prefix}{f.name}", tp, default, meta.get("help", ""),
                          meta.get("low"), meta.get("high"), _choices(meta),
                          meta.get("names", "")))
    return out


def check_config(config: Any) -> None:
    """Raise ConfigError for the first field whose value has the wrong type, is out of its
    range or is not one of its choices. Call it from `__post_init__`."""
    types = _field_types(type(config))
    for f in dataclasses.fields(config):
        value, tp, meta = getattr(config, f.name), types[f.name], f.metadata
        if is_config(tp):
            if not isinstance(value, tp):
                raise ConfigError(f"Option {f.name!r} must be an object of "
                                  f"{tp.__name__} options, got {value!r}.")
            continue
        _check_type(f.name, value, tp)
        if meta.get("names") == "models":
            allowed.check_model(f.name, value)
        elif meta.get("names") == "endpoints":
            allowed.endpoint(value, f.name)
        low, high = meta.get("low"), meta.get("high")
        if low is not None and high is not None and not low <= value <= high:
            raise ConfigError(f"{f.name}={value!r} is out of range; allowed: {low} to {high}.")
        choices = _choices(meta)
        if choices and value not in choices:
            raise ConfigError(f"Unknown {f.name} {value!r}. Choose from: "
                              f"{', '.join(map(str, choices))}.")


def _check_type(name: str, value: Any, tp: type) -> None:
    ok = isinstance(value, tp) and not (tp in (int, float) and isinstance(value, bool))
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ConfigError(f"Option {name!r} must be {_TYPE_NAMES.get(tp, tp.__name__)}, got "
                          f"{value!r} ({type(value).__name__}).")


def config_from_dict(cls: type, values: dict) -> Any:
    """A config of class `cls` from a JSON-style dict; unknown keys are refused with the valid
    ones listed, nested configs are read from nested dicts, ints are accepted for floats."""
    if not isinstance(values, dict):
        raise ConfigError(f"{cls.__name__} options must be a JSON object, got {values!r}.")
    types = _field_types(cls)
    valid = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - valid)
    if unknown:
        raise ConfigError(f"Unknown option(s) {', '.join(unknown)} for {cls.__name__}. "
                          f"Valid options: {', '.join(sorted(valid))}.")
    defaults = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in values.items():
        tp = types[name]
        if is_config(tp):
            value = _nested(name, tp, defaults[name], value) if isinstance(value, dict) \
                else value
        elif tp is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        kwargs[name] = value
    config = cls(**kwargs)
    check_config(config)  # also for a config class that does not check itself
    return config


def _nested(name: str, cls: type, field_: dataclasses.Field, values: dict) -> Any:
    """Nested config `name` from `values` over its field's own defaults (a paradigm's
    reader or sentence cut as that paradigm sets them); a refused value is named with its
    dotted name ("prune.tokens=5 is out of range")."""
    base = field_.default_factory() if field_.default is dataclasses.MISSING \
        else field_.default
    if is_config(type(base)):
        values = {**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)},
                  **values}
    try:
        return config_from_dict(cls, values)
    except ConfigError as err:
        raise ConfigError(re.sub(r"^(\w+)=", rf"{name}.\1=", str(err))) from None


def config_to_dict(config: Any) -> dict:
    """The JSON-style dict of a config (round-trips through `config_from_dict`)."""
    return dataclasses.asdict(config)


def json_object(text: str | None, field: str, example: str = '{"K": 10}',
                limit: int = 10_000) -> dict | None:
    """What `field` (a flag, an API argument or a box, by the name its user sees) holds,
    read as a JSON object; None when it is empty. Past `limit` characters, not JSON, or
    JSON but not an object: a ConfigError naming `field`, what is wrong and an `example`.
    The one reader of typed JSON objects: the command line, the API and the tabs say the
    same."""
    text = str(text or "").strip()
    if not text:
        return None
    if len(text) > limit:
        raise ConfigError(f"{field} is {len(text):,} characters; the limit is {limit:,}.")
    try:
        found = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{field} is not valid JSON ({err.msg} at line {err.lineno}, "
                          f"column {err.colno}): write e.g. {example}.") from None
    if not isinstance(found, dict):
        raise ConfigError(f"{field} must be a JSON object such as {example}, not "
                          f"{type(found).__name__}: {text[:80]!r}.")
    return found
