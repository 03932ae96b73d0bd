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
only. Ray workers (encoding on a cluster) need the plugin installed too. Unlike a plugin's
re-ranker or retriever, an encoder declares no resources: its vectors are cached by text
and shared by every corpus, so they may not depend on one corpus's indexes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine import plugins
from engine.models.pretrained import ALIASES


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    description: str
    load: Callable[[str], Any]  # precision ("fp32" or "bf16") -> the encoder
    version: str = "1"


_TABLE = plugins.Table(plugins.ENCODER_GROUP, EncoderSpec, "encoder", reserved=ALIASES,
                       callables=("load",))  # an alias's name would shadow the packaged one
ENCODERS: dict[str, EncoderSpec] = _TABLE.entries
PLUGINS = _TABLE.plugins
add_encoder = _TABLE.add  # the registry's for encoders installed after start-up


def known_encoders() -> dict[str, EncoderSpec]:
    """The plugins' encoders by name, their entry points loaded on the first call."""
    return _TABLE.known()
