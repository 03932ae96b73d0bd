"""Bi-encoders that plugins add, beside the aliases, folders and hub ids sentence-transformers
loads: the entry-point group `funnel_explorer.encoders` names an `EncoderSpec`.

A plugin encoder is a name every `bi_encoder` option takes (dense indexes, the document
scores, the bi-encoder re-ranker, the summariser, HyDE's search). `load(precision)` returns
an object with sentence-transformers' encoding interface: `encode_query(texts, batch_size=,
show_progress_bar=, convert_to_numpy=)`, `encode_document(...)` (the same arguments) and
`get_embedding_dimension()`; vectors are L2-normalised after it. `version` enters the cache
key of every index and vector store built with it, so a changed encoder never reads the
vectors of its earlier version. The built-in encoders are the aliases of
engine.models.loading and anything sentence-transformers loads, so the group holds plugins
only. Ray workers (encoding on a cluster) need the plugin installed too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine import plugins
from engine.errors import ConfigError


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    description: str
    load: Callable[[str], Any]  # precision ("fp32" or "bf16") -> the encoder
    version: str = "1"


ENCODERS: dict[str, EncoderSpec] = {}
PLUGINS: list[plugins.Plugin] = []
_LOADING = threading.RLock()  # re-entrant: a plugin's import may ask for the table
_loaded = False


def add_encoder(spec: object) -> None:
    """Register a plugin's encoder, refusing what would shadow another."""
    from engine.models.loading import ALIASES

    if not isinstance(spec, EncoderSpec):
        raise ConfigError(f"names a {type(spec).__name__}, not an EncoderSpec")
    if spec.name in ENCODERS or spec.name in ALIASES:
        raise ConfigError(f"its encoder name {spec.name!r} is taken already")
    if not callable(spec.load):
        raise ConfigError(f"encoder {spec.name!r}: its load is not callable")
    ENCODERS[spec.name] = spec


def known_encoders() -> dict[str, EncoderSpec]:
    """The plugins' encoders by name, their entry points loaded on the first call."""
    global _loaded
    with _LOADING:
        if not _loaded:
            _loaded = True
            PLUGINS.extend(plugins.load(plugins.ENCODER_GROUP, add_encoder))
    return ENCODERS
