"""Typed results as JSON: what a service returns is a frozen dataclass, and the API sends
`plain(result)`: its fields by name, nested results and tuples made plain, a result with a
`to_dict` of its own (engine.eval.paired.PairedDifference) read by it."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any


def plain(value: Any) -> Any:
    """`value` as json.dumps takes it: dataclasses as dicts, tuples as lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
