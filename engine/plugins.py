"""Plugins: paradigms, re-rankers, retrievers, generator backends and encoders that installed
packages add through entry points, one group per kind of thing the engine holds in a table.

A package adds a paradigm by declaring an entry point in the group `funnel_explorer.paradigms`
that names a `ParadigmSpec` (engine.paradigms.base), a re-ranker with one in
`funnel_explorer.rerankers` that names a `RerankerSpec` (engine.paradigms.base too), a
first-stage retriever with one in `funnel_explorer.retrievers` naming a `RetrieverSpec`, and a
reader backend with one in `funnel_explorer.generators` that names a `Backend`
(engine.readers.backends), and a bi-encoder with one in `funnel_explorer.encoders` that names
an `EncoderSpec` (engine.models.encoders), in its pyproject.toml:

    [project.entry-points."funnel_explorer.paradigms"]
    overlap = "funnel_example:OVERLAP"

The engine's own paradigms and backends are entry points too, loaded by the same code: they
are written here rather than in the package metadata, so a checkout that was never
reinstalled still has them (as `llm` registers its built-in models through its plugin
hooks). A plugin that fails to import, names something of the wrong kind, clashes with a
name already taken, or declares a paradigm whose default config does not construct is
recorded with its error (the registry's `PLUGINS`) and left out: the app starts without it
and says so (a WARNING of this module's logger, written with its level and name even
before the app or the CLI has set up logging). What a plugin imports is engine.api;
examples/funnel-explorer-example is a plugin package; README.md, "Write a plugin", says how.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

logger = logging.getLogger(__name__)


class _UntilLoggingIsSet(logging.Handler):
    """A record written to stderr with its level and logger while nothing has configured
    logging yet: plugins load while the app's and the CLI's modules are imported, before
    either sets up its log, and Python's last resort would write the message alone. Once
    the root logger has a handler, that handler writes it instead."""

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - as logging's own handlers do
            self.handleError(record)


_early = _UntilLoggingIsSet(logging.WARNING)
_early.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
logger.addHandler(_early)

PARADIGM_GROUP = "funnel_explorer.paradigms"
RERANKER_GROUP = "funnel_explorer.rerankers"
GENERATOR_GROUP = "funnel_explorer.generators"
ENCODER_GROUP = "funnel_explorer.encoders"
RETRIEVER_GROUP = "funnel_explorer.retrievers"
GROUPS = (PARADIGM_GROUP, RERANKER_GROUP, GENERATOR_GROUP, ENCODER_GROUP, RETRIEVER_GROUP)

BUILT_IN = "built-in"
_BUILTINS = (
    *(EntryPoint(name, f"engine.paradigms.{name}:SPEC", PARADIGM_GROUP)
      for name in ("funnel", "flat", "longrag", "drrag", "best")),
    EntryPoint("transformers", "engine.readers.backends:TRANSFORMERS", GENERATOR_GROUP),
    EntryPoint("onnx", "engine.readers.backends:ONNX", GENERATOR_GROUP),
    EntryPoint("openai", "engine.readers.backends:OPENAI", GENERATOR_GROUP))


@dataclass(frozen=True)
class Plugin:
    """One entry point as loaded: what it adds, the package it comes from, and why it was
    left out (empty when it loaded)."""

    name: str
    group: str
    package: str  # the distribution that declares it, or "built-in"
    value: str  # module:attribute
    error: str = ""

    def left_out(self) -> str:
        """The status line's words for a plugin left out."""
        return f"plugin '{self.name}' ({self.value}, from {self.package}): left out, {self.error}"

    @property
    def kind(self) -> str:
        return self.group.rsplit(".", 1)[-1].rstrip("s")  # "paradigm", "reranker", ...


def discover(group: str) -> list[tuple[EntryPoint, str]]:
    """(entry point, package) of `group`: the built-ins first, then the installed ones."""
    found = [(ep, BUILT_IN) for ep in _BUILTINS if ep.group == group]
    for ep in entry_points(group=group):
        found.append((ep, ep.dist.name if ep.dist is not None else "?"))
    return found


def load(group: str, add, found: list[tuple[EntryPoint, str]] | None = None) -> list[Plugin]:
    """Load every entry point of `group` and hand what it names to `add` (which raises on
    a bad one); each is reported, loaded or with the error that left it out."""
    plugins = []
    for ep, package in discover(group) if found is None else found:
        try:
            add(ep.load())
            plugins.append(Plugin(ep.name, group, package, ep.value))
        except Exception as err:  # noqa: BLE001 - a broken plugin is reported, not fatal
            error = f"{type(err).__name__}: {err}"
            logger.warning("plugin %r (%s, from %s) left out: %s", ep.name, ep.value,
                           package, error)
            plugins.append(Plugin(ep.name, group, package, ep.value, error))
    return plugins


_TABLES: list[dict] = []  # every table `register` has filled


def registered_names() -> frozenset[str]:
    """The names of everything registered in any table: paradigms, re-rankers, retrievers,
    backends, encoders (engine.allowed: words a model option reads itself)."""
    return frozenset(name for table in _TABLES for name in table)


def register(table: dict, spec: object, kind: type, what: str, *,
             reserved: tuple[str, ...] = (), callables: tuple[str, ...] = (),
             check: Callable[[Any], None] | None = None) -> None:
    """Put `spec` (a `kind`, named by its `name`) into `table`, refusing what would break
    the app: another kind of object, a name taken (by the table or `reserved` for a
    built-in), a field of `callables` that cannot be called, or what `check(spec)` raises
    on. `what` names it in errors."""
    from engine.errors import ConfigError

    if not isinstance(spec, kind):
        raise ConfigError(f"names a {type(spec).__name__}, not a {kind.__name__}")
    if spec.name in table or spec.name in reserved:
        raise ConfigError(f"its {what} name {spec.name!r} is taken already")
    for field in callables:
        if not callable(getattr(spec, field)):
            raise ConfigError(f"{what} {spec.name!r}: its {field} is not callable")
    if check is not None:
        check(spec)
    table[spec.name] = spec
    if not any(t is table for t in _TABLES):
        _TABLES.append(table)


class Table:
    """Things of `kind` by name (`entries`), filled from the entry points of `group` on the
    first `known()` (later calls find them loaded); `plugins` reports each entry point.
    Each is checked by `register` (`what`, `reserved`, `callables`). Re-entrant: a plugin's
    module, imported while the group loads, may ask for the table it fills (it then sees
    what has loaded so far: the built-ins, which come first)."""

    def __init__(self, group: str, kind: type, what: str, *, reserved: tuple[str, ...] = (),
                 callables: tuple[str, ...] = ()) -> None:
        self.group, self.kind, self.what = group, kind, what
        self.reserved, self.callables = reserved, callables
        self.entries: dict = {}
        self.plugins: list[Plugin] = []
        self._lock, self._loaded = threading.RLock(), False

    def add(self, spec: object) -> None:
        register(self.entries, spec, self.kind, self.what, reserved=self.reserved,
                 callables=self.callables)

    def known(self) -> dict:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                self.plugins.extend(load(self.group, self.add))
        return self.entries
