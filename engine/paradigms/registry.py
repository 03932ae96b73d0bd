"""The registry: every paradigm, plugin re-ranker and reader backend declared once, read by
everything else.

The CLI's choices, the API's validation, background preparation, the UI's paradigm choices
and its parameter panels all come from here; the service makes a paradigm, handed what it
uses (engine.service.store.make_paradigm). Paradigms and re-rankers arrive through entry
points, the built-in paradigms the same way as a plugin's (engine.plugins): adding
a paradigm is one module (a Paradigm subclass, its config dataclass and a `SPEC`) and one
entry point.
"""

from __future__ import annotations

from dataclasses import is_dataclass

from engine import plugins
from engine.config import config_from_dict, json_object
from engine.errors import ConfigError, check_choice
from engine.models import encoders
from engine.paradigms.base import Paradigm, ParadigmSpec, RerankerSpec, RetrieverSpec
from engine.paradigms.plugin_stages import check_resources
from engine.readers import backends

PARADIGMS: dict[str, ParadigmSpec] = {}
RERANKERS: dict[str, RerankerSpec] = {}
RETRIEVERS: dict[str, RetrieverSpec] = {}
BUILT_IN_RETRIEVERS = ("dense", "bm25")  # flat's own first stages


def _add_paradigm(spec: object) -> None:
    """Register a plugin's (or a built-in) paradigm, refusing what would break the app."""
    if not isinstance(spec, ParadigmSpec):
        raise ConfigError(f"names a {type(spec).__name__}, not a ParadigmSpec")
    if spec.name in PARADIGMS:
        raise ConfigError(f"its paradigm name {spec.name!r} is taken already")
    if not (isinstance(spec.paradigm, type) and issubclass(spec.paradigm, Paradigm)):
        raise ConfigError(f"paradigm {spec.name!r}: {spec.paradigm!r} is not a Paradigm "
                          "subclass")
    if not is_dataclass(spec.config):
        raise ConfigError(f"paradigm {spec.name!r}: its config is not a dataclass")
    spec.options()  # every option declared with engine.config.param
    spec.paradigm.needs(spec.config())  # the defaults construct and say what they need
    PARADIGMS[spec.name] = spec


def _add_reranker(spec: object) -> None:
    from engine.stages.rerank import STORED

    plugins.register(RERANKERS, spec, RerankerSpec, "re-ranker",
                     reserved=(*STORED, "trained", "none", "auto"), callables=("make",),
                     check=lambda spec: check_resources(spec, "re-ranker"))


def _add_retriever(spec: object) -> None:
    plugins.register(RETRIEVERS, spec, RetrieverSpec, "retriever",
                     reserved=BUILT_IN_RETRIEVERS, callables=("make",),
                     check=lambda spec: check_resources(spec, "retriever"))


def retriever_choices() -> tuple[str, ...]:
    """What flat's `retriever` option takes: its dense index, or a plugin's retriever."""
    return (*BUILT_IN_RETRIEVERS, *RETRIEVERS)


# what a paradigm's options name loads before the paradigms (their defaults are checked)
_ADD = {plugins.RETRIEVER_GROUP: _add_retriever, plugins.RERANKER_GROUP: _add_reranker,
        plugins.GENERATOR_GROUP: backends.add_backend, plugins.ENCODER_GROUP: encoders.add_encoder,
        plugins.PARADIGM_GROUP: _add_paradigm}
backends.known_backends()  # loaded on first use: the paradigms' reader configs needed them
encoders.known_encoders()
PLUGINS: list[plugins.Plugin] = [
    *plugins.load(plugins.RETRIEVER_GROUP, _add_retriever),  # flat's option checks them
    # before the paradigms: a paradigm naming a plugin's re-ranker prepares what it reads
    *plugins.load(plugins.RERANKER_GROUP, _add_reranker),
    *plugins.load(plugins.PARADIGM_GROUP, _add_paradigm),
    *backends.PLUGINS,
    *encoders.PLUGINS]
DEFAULT = "funnel"  # what the CLI and the API run when no paradigm is named


def load_plugins() -> list[plugins.Plugin]:
    """Load the entry points of packages installed since this process started (what was
    loaded already stays); returns the new ones, loaded or left out."""
    import importlib

    importlib.invalidate_caches()
    seen = {(p.group, p.name, p.package) for p in PLUGINS}
    new = []
    for group, add in _ADD.items():
        found = [(ep, package) for ep, package in plugins.discover(group)
                 if (group, ep.name, package) not in seen]
        new += plugins.load(group, add, found)
    PLUGINS.extend(new)
    return new


def unload_plugin(name: str) -> None:
    """Forget a plugin's paradigm, re-ranker or backend `name` (a package uninstalled, in
    tests)."""
    PARADIGMS.pop(name, None)
    RERANKERS.pop(name, None)
    RETRIEVERS.pop(name, None)
    backends.BACKENDS.pop(name, None)
    encoders.ENCODERS.pop(name, None)
    PLUGINS[:] = [p for p in PLUGINS if p.name != name]


def failed_plugins() -> list[plugins.Plugin]:
    """The plugins left out, each with its error."""
    return [p for p in PLUGINS if p.error]


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


def unattended(name: str, values: dict | None = None) -> dict:
    """Paradigm `name`'s config dict for runs that show no heatmap (evaluations, sweeps):
    its reader's attention off unless `values` sets it, so an `auto` reader answers through
    the fastest in-process runtime (ONNX Runtime; docs/benchmarks/cpu.md, "Reader runtimes side by
    side"). A paradigm without a reader is left as it is."""
    from engine.readers.reader import ReaderConfig

    values = dict(values or {})
    if isinstance(getattr(make_config(name), "reader", None), ReaderConfig):
        values["reader"] = {"attention": False, **(values.get("reader") or {})}
    return values


def parse_config(text: str, field: str = "The config") -> dict:
    """A config dict from JSON text ('' or whitespace means the defaults)."""
    return json_object(text, field, '{"K": 10, "N": 8}') or {}
