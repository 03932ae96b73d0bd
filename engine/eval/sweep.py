"""Sweeps: one paradigm over a grid of one or two numeric options, and the frontier.

A sweep is stored as an evaluation whose "paradigms" are its grid points, each labelled by
its values ("funnel K=5 N=8") and run as that paradigm with the rest of the config fixed;
the job reuses each question's prefix-stable stages across grid points
(engine.stages.base.reusing_stages), largest values first, so a smaller K is cut from a
larger one. Any evaluation's points can then be placed on recall (or EM) against median
seconds per question, and `pareto` finds those no other point beats on both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.config import Option
from engine.errors import ConfigError
from engine.paradigms.registry import make_config, spec

MAX_POINTS = 100
MAX_OPTIONS = 2


@dataclass(frozen=True)
class GridPoint:
    label: str  # "funnel K=5 N=8"
    values: dict  # {option: value}
    config: dict  # the whole JSON-style config it runs with


def sweepable(paradigm: str) -> list[Option]:
    """The numeric options of `paradigm` a sweep can vary."""
    return [o for o in spec(paradigm).options() if o.type in (int, float) and not o.choices]


def grid(paradigm: str, options: dict, config: dict | None = None) -> list[GridPoint]:
    """Every combination of `options`' values ({option: [values]}) over `config`, largest
    values first; combinations the paradigm refuses together (flat's k above M) are left
    out, and a grid with none left is refused."""
    numeric = {o.name: o for o in sweepable(paradigm)}
    if not isinstance(options, dict) or not 1 <= len(options) <= MAX_OPTIONS:
        raise ConfigError(f"Give one or two options of {paradigm} to sweep with their values, "
                          f"e.g. {{\"{next(iter(numeric), 'k')}\": [2, 4, 8]}}; got {options!r}.")
    for name, values in options.items():
        if name not in numeric:
            raise ConfigError(f"{paradigm} has no numeric option {name!r} to sweep; choose "
                              f"from: {', '.join(numeric)}.")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{name}: give a list of values, e.g. [2, 4, 8]; got {values!r}.")
    points = math.prod(len(set(map(str, v))) for v in options.values())
    if points > MAX_POINTS:
        raise ConfigError(f"The grid has {points:,} points; the limit is {MAX_POINTS}. Give "
                          "fewer values.")
    for name, values in options.items():
        for value in values:
            _check_value(numeric[name], value)
    options = {n: [numeric[n].type(v) for v in values] for n, values in options.items()}
    names = list(options)
    ordered = [sorted(set(options[n]), reverse=True) for n in names]
    out = []
    for combo in itertools.product(*ordered):
        values = dict(zip(names, combo, strict=True))
        whole = with_values(config or {}, values)
        try:
            make_config(paradigm, whole)
        except ConfigError:
            continue  # e.g. k > M: not a setting the paradigm can run
        label = f"{paradigm} " + " ".join(f"{n}={_show(v)}" for n, v in values.items())
        out.append(GridPoint(label, values, whole))
    if not out:
        raise ConfigError(f"No combination of {options} is a setting {paradigm} can run "
                          "(each one breaks a rule between its options); change the values.")
    return out


def _check_value(option: Option, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            option.type is int and not float(value).is_integer()):
        kind = "an integer" if option.type is int else "a number"
        raise ConfigError(f"{option.name}={value!r} is not {kind}; give values from "
                          f"{_show(option.low)} to {_show(option.high)}.")
    if option.low is not None and value < option.low or \
            option.high is not None and value > option.high:
        raise ConfigError(f"{option.name}={value!r} is out of range; allowed: "
                          f"{_show(option.low)} to {_show(option.high)}.")


def with_values(config: dict, values: dict) -> dict:
    """`config` with dotted option names ("reader.max_context_tokens") set to values."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    for name, value in values.items():
        *parents, leaf = name.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _show(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def pareto(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Labels of the points (label, seconds, recall) no other point beats: none is at
    least as fast and at least as good while better on one. Fastest first."""
    front, best = [], -math.inf
    for label, _, recall in sorted(points, key=lambda p: (p[1], -p[2])):
        if recall > best:
            front.append(label)
            best = recall
    return front
