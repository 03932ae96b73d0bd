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

Shortcuts taken on purpose: greedy decoding only (answers must be reproducible); stop strings
are matched on the decoded text after every token (simple and exact, a few microseconds).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from engine import plugins
from engine.errors import ConfigError, check_choice
from engine.models.loading import PRECISION_CHOICES
from engine.models.onnx_export import ONNX_PRECISIONS
from engine.readers.batching import Batcher
from engine.readers.generator import (
    Ablated,
    Capabilities,
    Generation,
    Generator,
    GeneratorError,
    Prompt,
    Variant,
)
from engine.readers.greedy import (
    Continuation,
    Request,
    TokenGenerator,
    cut_at_stop,
    tokens_in,
)
from engine.readers.onnx_runtime import ORTGenerator
from engine.readers.prefix_cache import (
    PrefixCache,
    common_length,
    holding,
    layer_states,
    plain_layers,
)

logger = logging.getLogger(__name__)

API_KEY_VARIABLES = ("FUNNEL_API_KEY", "OPENAI_API_KEY")
READER_PRECISIONS = tuple(dict.fromkeys((*PRECISION_CHOICES, *ONNX_PRECISIONS)))  # + int8
MAX_BATCH = 8  # reader calls decoded together at most (bench/README.md, "The reader's cost")


class HFGenerator(TokenGenerator):
    """Greedy generation with a causal LM loaded in this process (the "transformers"
    backend).

    The prompt is read with PyTorch's fused attention (SDPA) but for its last token, which
    runs with eager attention when its attention weights over parts of the prompt are wanted
    (SDPA returns none). On this CPU, eager attention over a whole prompt costs 2.9x SDPA's
    time at 2.3k tokens and 4.5x at 4.3k (bench/README.md, "LongRAG"). The model is shared
    with the FiD reader, so a generation holds the model's lock and leaves it eager.

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


class OpenAIGenerator:
    """An OpenAI-compatible server: /completions for text prompts, /chat/completions for
    chat prompts; temperature 0. Token counts come from the server's `usage`."""

    capabilities = Capabilities()  # text in, text out: nothing else over this API

    def __init__(self, model: str, base_url: str, api_key: str | None = None,
                 timeout: float = 120.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint {base_url!r} is not an http(s) URL; give the server's "
                              "base URL, e.g. http://127.0.0.1:8000/v1.")
        self.name, self.base_url, self.timeout = model, base_url.rstrip("/"), timeout
        self.api_key = api_key if api_key is not None else next(
            (os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), "")

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 32, stop: tuple[str, ...] = (),
                 spans: tuple[tuple[int, int], ...] = (),
                 ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Generation:
        """`spans`, `ban_first` and `prefix` are refused: the API has nothing for them (a
        server caches prefixes its own way)."""
        asked = [name for name, value in (("spans (attention)", spans),
                                          ("ban_first", ban_first), ("prefix", prefix))
                 if value]
        if asked:
            raise GeneratorError(f"The OpenAI-compatible backend at {self.base_url} cannot "
                                 f"honour {', '.join(asked)}: it has none of "
                                 "attention, ban_first or prefix_cache.")
        start = time.perf_counter()
        body: dict[str, Any] = {"model": self.name, "max_tokens": max_new_tokens,
                                "temperature": 0}
        if stop:
            body["stop"] = list(stop)[:4]  # the API takes at most four
        if isinstance(prompt, str):
            path, body["prompt"] = "/completions", prompt
        else:
            path = "/chat/completions"
            body["messages"] = [{"role": m.role, "content": m.content} for m in prompt]
        reply = self._post(path, body)
        try:
            choice = reply["choices"][0]
            text = choice["text"] if path == "/completions" else choice["message"]["content"]
            usage = reply.get("usage") or {}
        except (KeyError, IndexError, TypeError) as err:
            raise GeneratorError(f"{self.base_url}{path} answered without choices[0] "
                                 f"({err!r}); is it an OpenAI-compatible server?") from None
        text, stopped = cut_at_stop(text or "", stop)
        # the server says why it stopped: "length" is the max_tokens cap
        return Generation(text, int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)), time.perf_counter() - start,
                          at_cap=choice.get("finish_reason") == "length" and not stopped)

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            self.base_url + path, data=json.dumps(body).encode("utf-8"), method="POST",
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", "replace")[:300]
            raise GeneratorError(f"{self.base_url}{path} answered HTTP {err.code}: {detail}. "
                                 f"Check the model name {self.name!r} and the key in "
                                 f"{' or '.join(API_KEY_VARIABLES)}.") from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise GeneratorError(f"Cannot reach the endpoint {self.base_url}: {err}. Is the "
                                 "server running, and is the base URL right?") from None
        except ValueError as err:
            raise GeneratorError(f"{self.base_url}{path} did not answer JSON ({err}).") from None


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
    changed half of them (bench/README.md, "Reader runtimes side by side")."""
    with _LOCK:
        return _shared_onnx(model, "fp32" if precision == "auto" else precision)


def _fid_beside_onnx(model: str, precision: str) -> Any:
    """The torch FiD reader for post-ranking beside an ONNX generator (its weights in the
    CPU's own precision: ONNX's int8 is not torch's)."""
    return _fid_in_process(model, "fp32" if precision == "fp32" else "auto")


def _client(model: str, endpoint: str, precision: str) -> OpenAIGenerator:
    return OpenAIGenerator(model, endpoint)  # the precision is the server's business


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

