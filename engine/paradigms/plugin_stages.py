"""A plugin's re-ranker or first-stage retriever and the resources it declares
(`RerankerSpec.resources`, `RetrieverSpec.resources`: engine.paradigms.base; what it may
declare: engine.paradigms.needs): what it
returned checked when the plugin loads, what preparing it means (the declared resources,
then making the stage), and the resources handed to its `make` loaded, from the same store
a paradigm's are loaded from (engine.service.store)."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from engine.documents import Corpus
from engine.errors import ConfigError
from engine.paradigms.needs import (
    ENCODER,
    Need,
    Resource,
    ResourceLoader,
    Resources,
    StageAt,
    needs_of,
)
from engine.units.build import UnitConfig


def check_declared(declared: Any, whose: str) -> None:
    """Refuse what a plugin stage's `resources(at)` returned unless it is None or a
    `Resources` dataclass whose fields are resources (or None), naming `whose` it is."""
    if declared is None:
        return
    if not (isinstance(declared, Resources) and is_dataclass(declared)):
        raise ConfigError(f"{whose}: its resources(at) returned a {type(declared).__name__}, "
                          "not a Resources dataclass (of BM25, Dense, ... fields) or None")
    for field in fields(declared):
        value = getattr(declared, field.name)
        if value is not None and not isinstance(value, Resource):
            raise ConfigError(f"{whose}: its resource {field.name!r} is a "
                              f"{type(value).__name__}, not a resource (BM25, Dense, ...)")


def check_resources(spec: Any, what: str) -> None:
    """Refuse a plugin stage (a `what`) whose `resources` is set but is not callable, or
    does not declare resources at flat's default passages (`check_declared`)."""
    if spec.resources is None:
        return
    whose = f"{what} {spec.name!r}"
    if not callable(spec.resources):
        raise ConfigError(f"{whose}: its resources is not callable")
    passages = UnitConfig("passages")
    check_declared(spec.resources(StageAt(passages, passages, ENCODER)), whose)


def plugin_uses(spec: Any, at: StageAt, corpus: Corpus, store: ResourceLoader) -> dict[str, Any]:
    """The keyword a plugin stage's `make` is handed: `uses`, the resources its spec
    declares for `at` loaded from `store` (None when it declares none for `at`); nothing
    for a spec without `resources`."""
    if spec.resources is None:
        return {}
    declared = spec.resources(at)
    return {"uses": None if declared is None else declared.load(corpus, store)}


def plugin_needs(spec: Any, at: StageAt, stage: Resource, key: str, label: str
                 ) -> tuple[Need, ...]:
    """What a plugin stage needs prepared: the resources its spec declares for `at`, then
    making the stage (`stage.load`), after the slow ones among them; what stands in for
    one of those stands in for the stage too, so no paradigm waits for it."""
    declared = spec.resources(at) if spec.resources is not None else None
    needs = needs_of(declared) if declared is not None else ()
    slow = [need for need in needs if need.slow]
    return (*needs, stage.loading(key, label, slow=bool(slow), stand_in=next(
        (need.stand_in for need in slow if need.stand_in), "")))
