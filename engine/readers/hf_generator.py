"""The "transformers" backend's generator: a causal LM loaded in this process, decoding
greedily (engine.readers.greedy), its calls batched (engine.readers.batching), a prompt's
fixed opening read once (engine.readers.prefix_cache), and leave-one-out attribution read
on the prompt's own key/value states (`ablate`). engine.readers.backends names it in the
backends' table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from engine.errors import ConfigError
from engine.readers.batching import Batcher
from engine.readers.generator import Ablated, Capabilities, Generation, Prompt, Variant
from engine.readers.greedy import Continuation, Request, TokenGenerator, tokens_in
from engine.readers.prefix_cache import (
    PrefixCache,
    common_length,
    holding,
    layer_states,
    plain_layers,
)

logger = logging.getLogger(__name__)

# reader calls decoded together at most (docs/benchmarks/reader.md, "The reader's cost")
MAX_BATCH = 8


class HFGenerator(TokenGenerator):
    """Greedy generation with a causal LM loaded in this process (the "transformers"
    backend).

    The prompt is read with PyTorch's fused attention (SDPA) but for its last token, which
    runs with eager attention when its attention weights over parts of the prompt are wanted
    (SDPA returns none). On this CPU, eager attention over a whole prompt costs 2.9x SDPA's
    time at 2.3k tokens and 4.5x at 4.3k (docs/benchmarks/longrag-best.md, "The long
    reader's cost"). The model is shared with the FiD reader, so a generation holds the
    model's lock and leaves it eager.

    A prompt's declared fixed opening (`prefix`) is not read again: its key/value states are
    computed once and copied in (engine/readers/prefix_cache.py).

    Leave-one-out attribution (`ablate`) reads each variant of a prompt only from where it
    departs from the prompt, on the prompt's own key/value states (as AttriBoT does).
    """

    capabilities = Capabilities(attention=True, ban_first=True, prefix_cache=True,
                                batching=True, logprobs=True, ablation=True)

    def __init__(self, model: str = "smollm2", tokenizer: Any = None, lm: Any = None,
                 precision: str = "auto") -> None:
        from engine.models.loading import load_causal_lm, model_lock

        if lm is None:
            tokenizer, lm = load_causal_lm(model, precision)
        super().__init__(tokenizer)
        self.name, self.model = model, lm
        self.prefix_cache = PrefixCache(self._forward, self._new_cache)
        self.lock = model_lock(lm)
        self.batcher = Batcher(self._run, self.lock, MAX_BATCH)

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 32, stop: tuple[str, ...] = (),
                 spans: tuple[tuple[int, int], ...] = (),
                 ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Generation:
        start = time.perf_counter()
        encoded, request = self._request(prompt, max_new_tokens, stop, spans, ban_first, prefix)
        out_ids, attention, cached, logprobs = self.batcher.submit(request)
        return self._generation(encoded, request, spans, out_ids, attention, cached, logprobs,
                                start)

    def ablate(self, prompt: Prompt, variants: Sequence[Prompt], *, max_new_tokens: int = 32,
               stop: tuple[str, ...] = (), spans: tuple[tuple[int, int], ...] = (),
               ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Ablated:
        """`generate(prompt, ...)`, and under each of `variants` (the prompt with something
        left out) that answer's log-probability and the variant's own greedy answer.

        A variant is read from the first token where it departs from `prompt`, on
        `prompt`'s key/value states up to there; the answer's tokens go through in the same
        forward pass, whose logits also say whether the variant's greedy choice keeps to
        them. The variants that leave them are decoded on from there, together in one batch.
        """
        import torch

        start = time.perf_counter()
        encoded, request = self._request(prompt, max_new_tokens, stop, spans, ban_first, prefix)
        ids = request.ids
        with self.lock, torch.inference_mode():
            try:
                logits, cache, attention, cached = self._prefill(ids, request.prefix_ids,
                                                                 request.want_attention)
                # the prompt's states, kept: decoding appends to copies (DynamicLayer cats)
                states = layer_states(cache) if plain_layers(cache) else None
                base = self._continuation(request)
                self._decode(base, logits, cache, len(ids))
                said = self._generation(encoded, request, spans, base.out, attention, cached,
                                        base.logprobs, start)
                scored = [self._variant(v, ids, states, base.out, request) for v in variants]
                self._decode_departures([s for s in scored if s.departed is not None])
            finally:
                self._attention("eager")
        return Ablated(said, tuple(s.scored(self, stop) for s in scored),
                       time.perf_counter() - start)

    def _generation(self, encoded: Any, request: Request, spans: tuple[tuple[int, int], ...],
                    out_ids: list[int], attention: Any, cached: int, logprobs: list[float],
                    start: float) -> Generation:
        """A call's `Generation`: what it said, and its attention cut into the spans."""
        ids = encoded["input_ids"]
        span_attention, span_tokens = (), ()
        if spans and attention is not None:
            token_sets = [tokens_in(encoded["offset_mapping"], a, b) for a, b in spans]
            span_attention = tuple(attention[:, :, idx] for idx in token_sets)
            span_tokens = tuple(tuple(self.tokenizer.decode([ids[i]]) for i in idx)
                                for idx in token_sets)
        return Generation(self._said(out_ids, request.stop), len(ids), len(out_ids),
                          time.perf_counter() - start, span_attention, span_tokens,
                          cached_tokens=cached, logprobs=tuple(logprobs),
                          at_cap=self._at_cap(out_ids, request))

    def _variant(self, prompt: Prompt, ids: list[int], states: list | None,
                 answer: list[int], like: Request) -> _Scored:
        """One variant of `ids` scored on the answer `answer` (see `ablate`): its greedy
        continuation follows the answer's tokens until it departs from them, where it is
        left for `_decode_departures`."""
        import torch

        own_ids = self.tokenizer(self.render(prompt), add_special_tokens=False)["input_ids"]
        if not own_ids:
            raise ConfigError("A variant of the prompt is empty; there is nothing to score.")
        shared = min(common_length(ids, own_ids), len(own_ids) - 1) if states else 0
        cache = self._cache_of(states, shared)
        fed = own_ids[shared:] + answer
        # rows that predict each answer token, and the one after the answer
        rows = self._forward(fed, shared, cache, keep=len(answer) + 1).logits[0].float()
        logprob = float(rows[:-1].log_softmax(-1)[torch.arange(len(answer)),
                                                  torch.tensor(answer)].sum()) if answer else 0.0
        scored = _Scored(self._continuation(replace(like, ids=own_ids)), logprob, len(fed))
        for j, row in enumerate(rows):
            token = scored.own.step(row.clone())
            if token is None:
                break
            if j == len(answer) or token != answer[j]:  # its own way from here
                position = len(own_ids) + j
                scored.departed = (token, position,
                                   self._cache_of(layer_states(cache), position))
                break
        return scored

    def _decode_departures(self, departed: list[_Scored]) -> None:
        """The variants that left the answer, decoded on from where each left it: the token
        each chose read into its cache, then greedy decoding of all of them together."""
        if not departed:
            return
        prefilled, positions = [], []
        for scored in departed:
            token, position, cache = scored.departed
            logits = self._forward([token], position, cache).logits[0, -1]
            prefilled.append((logits, cache))
            positions.append(position + 1)
            scored.read += 1
        before = [len(s.own.out) for s in departed]
        self._decode_all([s.own for s in departed], prefilled, positions)
        for scored, n in zip(departed, before, strict=True):
            scored.read += len(scored.own.out) - n

    def _cache_of(self, states: list | None, n: int):
        """A new cache holding the first `n` positions of `states` (none: an empty one)."""
        cache = self._new_cache()
        return holding(cache, states, n) if states and n else cache

    # --- decoding -------------------------------------------------------------------------

    def _forward(self, ids: list[int], position: int, cache: Any, attentions: bool = False,
                 keep: int = 1):
        """The model over `ids` from `position` into `cache`; logits of the last `keep`
        tokens only (the vocabulary projection of a whole prompt is ~10% of its prefill)."""
        import torch

        return self.model(input_ids=torch.tensor([ids]),
                          position_ids=torch.arange(position, position + len(ids))[None],
                          past_key_values=cache, use_cache=True, output_attentions=attentions,
                          logits_to_keep=keep)

    def _new_cache(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def _prefill(self, ids: list[int], prefix_ids: list[int], want_attention: bool):
        """Logits after the prompt, its cache, (if wanted) the last prompt token's attention
        `[layer, head, prompt token]`, and how many prompt tokens came from the prefix cache:
        all but the last token run without attention weights (a full [L x L] map per layer
        would cost hundreds of MB)."""
        self._attention("sdpa")
        cache, cached = self.prefix_cache.start(ids, prefix_ids)
        if len(ids) - 1 > cached:
            self._forward(ids[cached:-1], cached, cache)
        if want_attention:
            self._attention("eager")
        out = self._forward(ids[-1:], len(ids) - 1, cache, attentions=want_attention)
        self._attention("sdpa")  # decoding needs no attention weights
        attention = None
        if want_attention and out.attentions:
            attention = np.stack([a[0, :, -1, :].float().numpy() for a in out.attentions])
        return out.logits[0, -1], cache, attention, cached

    def _attention(self, implementation: str) -> None:
        """Switch the model's attention implementation (a model without SDPA stays eager)."""
        if getattr(self.model.config, "_attn_implementation", None) == implementation:
            return
        try:
            self.model.set_attn_implementation(implementation)
        except (ValueError, ImportError, AttributeError) as err:
            logger.debug("attention %s unavailable for %s: %s", implementation, self.name, err)

    def _run(self, requests: Sequence[Request]) -> list[tuple[list[int], Any, int, list]]:
        """A batch of calls (engine/readers/batching.py): each prompt prefilled on its own,
        then greedy decoding of all of them at once. Per call: the tokens said, the last
        prompt token's attention (if asked for), the prompt tokens read from the prefix
        cache and each token's log-probability."""
        import torch

        with torch.inference_mode():
            try:
                prefilled = [self._prefill(r.ids, r.prefix_ids, r.want_attention)
                             for r in requests]
                answers = [self._continuation(r) for r in requests]
                self._decode_all(answers, prefilled, [len(r.ids) for r in requests])
            finally:
                self._attention("eager")  # as loaded: the FiD reader reads its weights
        return [(a.out, attention, cached, a.logprobs)
                for a, (_, _, attention, cached) in zip(answers, prefilled, strict=True)]

    def _decode_all(self, answers: list[Continuation], prefilled: list,
                    positions: list[int]) -> None:
        """Greedy tokens of several prompts, each prefilled as (logits, cache, ...) up to its
        position: in one batch where their caches stack, else one prompt at a time."""
        if len(answers) == 1 or not plain_layers(prefilled[0][1]):
            for answer, done, position in zip(answers, prefilled, positions, strict=True):
                self._decode(answer, done[0], done[1], position)
        else:
            self._decode_together(answers, prefilled, positions)

    def _decode(self, answer: Continuation, logits, cache, position: int) -> None:
        """One prompt's greedy tokens, one forward pass per token."""
        while (token := answer.step(logits)) is not None:
            logits = self._forward([token], position, cache).logits[0, -1]
            position += 1

    def _decode_together(self, answers: list[Continuation], prefilled: list,
                         lengths: list[int]) -> None:
        """Greedy tokens of several prompts, one forward pass per step for all of them: their
        caches are laid side by side, left-padded to the longest (the padding masked), each
        row at its own positions; a row that has ended leaves the batch."""
        import torch

        cache, mask = self._stack([p[1] for p in prefilled], lengths)
        logits = [p[0] for p in prefilled]
        live, positions = list(range(len(answers))), list(lengths)
        while True:
            tokens = [answers[i].step(row) for i, row in zip(live, logits, strict=True)]
            keep = [b for b, token in enumerate(tokens) if token is not None]
            if not keep:
                return
            if len(keep) < len(live):
                index = torch.tensor(keep)
                cache.batch_select_indices(index)
                mask = mask[index]
                live, tokens = [live[b] for b in keep], [tokens[b] for b in keep]
            mask = torch.cat([mask, mask.new_ones(len(live), 1)], dim=1)
            out = self.model(input_ids=torch.tensor(tokens)[:, None],
                             position_ids=torch.tensor([positions[i] for i in live])[:, None],
                             attention_mask=mask, past_key_values=cache, use_cache=True)
            for i in live:
                positions[i] += 1
            logits = list(out.logits[:, -1])

    def _stack(self, caches: list, lengths: list[int]):
        """One cache of several prompts' caches, left-padded to the longest, and its
        attention mask (1 for real tokens)."""
        import torch
        import torch.nn.functional as F  # noqa: N812

        longest = max(lengths)

        def padded(states):  # [1, heads, n, d] each -> [batch, heads, longest, d]
            return torch.cat([F.pad(s, (0, 0, longest - n, 0))
                              for s, n in zip(states, lengths, strict=True)])

        stacked = self._new_cache()
        for layer in range(len(caches[0].layers)):
            stacked.update(padded([c.layers[layer].keys for c in caches]),
                           padded([c.layers[layer].values for c in caches]), layer)
        mask = torch.tensor([[0] * (longest - n) + [1] * n for n in lengths])
        return stacked, mask


class _Scored:
    """A variant being scored (HFGenerator.ablate): its own greedy continuation, the
    answer's log-probability under it, tokens read, and where it departed from the answer
    (the token it chose, at which position, its cache up to there), if it did."""

    def __init__(self, own: Continuation, logprob: float, read: int) -> None:
        self.own, self.logprob, self.read = own, logprob, read
        self.departed: tuple[int, int, Any] | None = None

    def scored(self, generator: HFGenerator, stop: tuple[str, ...]) -> Variant:
        return Variant(self.logprob, generator._said(self.own.out, stop), self.read)
