"""Generator backends: an in-process Hugging Face causal LM in torch ("transformers") or
exported to ONNX Runtime ("onnx", engine/readers/onnx_runtime.py), an OpenAI-compatible HTTP
endpoint, and whatever plugins add, in one table (`BACKENDS`, by name).

A reader's `backend` option picks one (`auto`: with an `endpoint`, a base URL such as
http://127.0.0.1:8000/v1, the model name is sent to that server, with the key from
`$FUNNEL_API_KEY` or `$OPENAI_API_KEY`; otherwise `model` is an alias ("smollm2"), a local
folder or a hub id loaded in this process, through ONNX Runtime when the run asks for
nothing only torch gives: `in_process_backend`). In-process generators are shared: one per model
for the whole process (`shared_generator`, called by the service's store only). Each backend
declares its `Capabilities`; what needs one checks it there.

The generators are in their own modules: `HFGenerator` (engine.readers.hf_generator),
`ORTGenerator` (engine.readers.onnx_runtime), `OpenAIGenerator`
(engine.readers.openai_client); import each from its own module.

Shortcuts taken on purpose: greedy decoding only (answers must be reproducible); stop strings
are matched on the decoded text after every token (simple and exact, a few microseconds).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from engine import allowed, plugins
from engine.errors import ConfigError, check_choice
from engine.models.loading import PRECISION_CHOICES
from engine.models.onnx_export import ONNX_PRECISIONS
from engine.readers.generator import Capabilities, Generator
from engine.readers.hf_generator import HFGenerator
from engine.readers.onnx_runtime import ORTGenerator
from engine.readers.openai_client import OpenAIGenerator

READER_PRECISIONS = tuple(dict.fromkeys((*PRECISION_CHOICES, *ONNX_PRECISIONS)))  # + int8


_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _shared_hf(model: str, precision: str) -> HFGenerator:
    return HFGenerator(model, precision=precision)


def _in_process(model: str, endpoint: str, precision: str) -> HFGenerator:
    """One in-process model per name and precision for the whole process."""
    from engine.models.loading import resolve_precision

    with _LOCK:  # two threads asking at once must not load the model twice
        return _shared_hf(model, resolve_precision(precision))


def _fid_in_process(model: str, precision: str) -> Any:
    """The FiD reader sharing the in-process model's weights (the funnel's post-ranking)."""
    from engine.readers.fid import shared_fid_reader

    return shared_fid_reader(model, precision)


@lru_cache(maxsize=2)
def _shared_onnx(model: str, precision: str) -> Generator:
    from engine.readers.onnx_runtime import ORTGenerator

    return ORTGenerator(model, precision)


def _onnx_in_process(model: str, endpoint: str, precision: str) -> Generator:
    """One ONNX Runtime session per model and precision for the process. auto is fp32: it
    answers as torch fp32 does (200 of 200 dev500 answers) on every CPU; int8 is faster but
    changed half of them (docs/benchmarks/cpu.md, "Reader runtimes side by side")."""
    with _LOCK:
        return _shared_onnx(model, "fp32" if precision == "auto" else precision)


def _fid_beside_onnx(model: str, precision: str) -> Any:
    """The torch FiD reader for post-ranking beside an ONNX generator (its weights in the
    CPU's own precision: ONNX's int8 is not torch's)."""
    return _fid_in_process(model, "fp32" if precision == "fp32" else "auto")


def _client(model: str, endpoint: str, precision: str) -> OpenAIGenerator:
    """The client of the server `endpoint` names (engine.allowed: an allowed name, or a URL
    typed on the command line), sent its own key alone; the precision is the server's."""
    server = allowed.endpoint(endpoint)
    if server is None:
        raise ConfigError("The openai backend reaches a server: set reader.endpoint.")
    return OpenAIGenerator(model, server.url, api_key=server.key)


@dataclass(frozen=True)
class Backend:
    """A generator backend as a reader's `backend` option names it: what it can do, and
    `make(model, endpoint, precision)`, which returns its generator (sharing a loaded model
    across runs is the backend's business), and `fid(model, precision)`, the FiD reader that
    reads passages through the model's attention (FunnelRAG's post-ranking, the "fid"
    prompt) for a backend that has one. A plugin adds a backend by an entry point in the
    group `funnel_explorer.generators` naming a Backend (engine.plugins)."""

    name: str
    description: str
    capabilities: Capabilities
    remote: bool  # reached at an endpoint, not loaded in this process
    make: Callable[[str, str, str], Generator]
    fid: Callable[[str, str], Any] | None = None
    # the reader precisions it runs (ReaderConfig.precision; "auto" is the backend's choice)
    precisions: tuple[str, ...] = READER_PRECISIONS
    needs: str = ""  # the module it imports to run, if not one the engine needs anyway

    def installed(self) -> bool:
        return not self.needs or importlib.util.find_spec(self.needs) is not None


TRANSFORMERS = Backend("transformers", "the model in this process (torch)",
                       HFGenerator.capabilities, remote=False, make=_in_process,
                       fid=_fid_in_process, precisions=PRECISION_CHOICES)
ONNX = Backend("onnx", "the model in this process through ONNX Runtime (fp32, or int8 "
               "weights; no attention)", ORTGenerator.capabilities, remote=False,
               make=_onnx_in_process, fid=_fid_beside_onnx,
               precisions=("auto", *ONNX_PRECISIONS), needs="onnxruntime")
OPENAI = Backend("openai", "an OpenAI-compatible server at the reader's endpoint",
                 OpenAIGenerator.capabilities, remote=True, make=_client)


# the one table of backends, ReaderConfig.backend's choices: the built-ins and the plugins'
# entry points, loaded through the same code on first use (`known_backends()`)
_TABLE = plugins.Table(plugins.GENERATOR_GROUP, Backend, "backend", reserved=("auto",),
                       callables=("make",))
BACKENDS: dict[str, Backend] = _TABLE.entries
PLUGINS = _TABLE.plugins
add_backend = _TABLE.add  # the registry's for backends installed after start-up


def known_backends() -> dict[str, Backend]:
    """Every generator backend by name, the entry points loaded on the first call."""
    return _TABLE.known()


def backend_named(name: str, endpoint: str = "") -> Backend:
    """Backend `name` (`auto`: openai with an endpoint, else transformers); an unknown name
    lists the known ones."""
    name = ("openai" if endpoint else "transformers") if name == "auto" else name
    check_choice("reader backend", name, known_backends())
    return BACKENDS[name]


def in_process_backend(wants: Capabilities, precision: str = "auto") -> Backend:
    """The fastest in-process backend that can do all `wants` asks for in `precision`:
    onnx (where ONNX Runtime is installed), else transformers."""
    for backend in (ONNX, TRANSFORMERS):
        can = backend.capabilities
        if all(getattr(can, name) for name in wants.names()) and \
                precision in backend.precisions and backend.installed():
            return backend
    return TRANSFORMERS


def shared_generator(model: str = "smollm2", endpoint: str = "", precision: str = "auto",
                     backend: str = "auto") -> Generator:
    """The generator of backend `backend` for `model` (`auto`: a client of the
    OpenAI-compatible server at `endpoint` when one is given, else the model in this
    process, one per name and precision for the whole process)."""
    return backend_named(backend, endpoint).make(model, endpoint, precision)


def loaded_generators() -> int:
    """How many in-process generators are loaded (for the memory checks)."""
    return _shared_hf.cache_info().currsize + _shared_onnx.cache_info().currsize

