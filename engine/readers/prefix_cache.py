"""Key/value states of fixed prompt openings, computed once per in-process model.

Most of what the reader reads is the same every time: the `fewshot` answer prompt opens with
four worked examples (about 480 of its 850 tokens), LongRAG's extraction turn and HyDE with
their own. A prompt declares its fixed opening (`BuiltPrompt.prefix`); the generator looks
the opening's token ids up here and starts the prompt's prefill after them, as serving
engines do with automatic prefix caching (vLLM) or a radix cache (SGLang).

The states are kept per generator, that is per model and precision; a template's opening is
its key (token ids), so each template gets its own entry. Entries are read, never written
into: a prefill appends to a fresh cache built from copies of them. Used under the model's
lock (engine.models.loading.model_lock), like the model itself.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

MIN_PREFIX_TOKENS = 16  # shorter openings cost less to prefill than to look up and copy


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading token ids `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PrefixCache:
    """Per-layer key and value tensors of prompt openings, least recently used dropped.

    `forward(ids, position, cache)` runs the model over `ids` into `cache` (the generator's
    forward); `new_cache()` makes an empty cache of the model's kind.
    """

    def __init__(self, forward, new_cache, capacity: int = 16) -> None:
        self._forward, self._new_cache, self.capacity = forward, new_cache, capacity
        self._entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self.enabled = True

    def __len__(self) -> int:
        return len(self._entries)

    def start(self, ids: Sequence[int], prefix_ids: Sequence[int]) -> tuple[Any, int]:
        """A cache holding the states of the first tokens of `ids` that the opening
        `prefix_ids` covers, and how many those are (always fewer than `len(ids)`: the
        prompt's last token runs in the caller's forward, for its logits and attention).
        With no usable opening: an empty cache and 0."""
        cache = self._new_cache()
        n = min(common_length(ids, prefix_ids), len(ids) - 1)
        if not self.enabled or n < MIN_PREFIX_TOKENS:
            return cache, 0
        states = self._states(tuple(prefix_ids))
        if states is None:
            return cache, 0
        return holding(cache, states, n), n

    def _states(self, key: tuple[int, ...]) -> list[tuple[Any, Any]] | None:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        cache = self._new_cache()
        self._forward(list(key), 0, cache)
        if not plain_layers(cache):
            # a sliding-window or quantised cache does not keep every position's states
            logger.info("prefix cache off: this model's cache is not a plain growing one")
            self.enabled = False
            return None
        self._entries[key] = layer_states(cache)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return self._entries[key]


def plain_layers(cache: Any) -> bool:
    """Whether `cache` keeps every position's states, layer by layer (a cache of another
    runtime says so itself, `plain`)."""
    if hasattr(cache, "plain"):
        return bool(cache.plain)
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def layer_states(cache: Any) -> list[tuple[Any, Any]]:
    """Each layer's (keys, values) of a plain cache. Kept, they stay as they are: a cache
    grows by concatenation into new tensors (DynamicLayer), never writing into these."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def holding(cache: Any, states: Sequence[tuple[Any, Any]], n: int) -> Any:
    """`cache` (empty) filled with the first `n` positions of every layer's `states`."""
    for layer, (keys, values) in enumerate(states):
        cache.update(keys[..., :n, :], values[..., :n, :], layer)
    return cache
