"""The generator interface: a prompt in; text, token counts and seconds out.

A prompt is either plain text (a completion prompt) or a tuple of chat messages; a
generator that only knows one of the two renders the other (an in-process model applies its
chat template, an HTTP endpoint picks /completions or /chat/completions). Prompt templates
live in engine/readers/prompts.py; readers combine a template with a generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from engine.errors import EngineError


class GeneratorError(EngineError):
    """A generator could not produce text (an endpoint that fails or answers nonsense)."""


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


Prompt = str | tuple[Message, ...]


def prompt_text(prompt: Prompt) -> str:
    """A prompt as one readable string (chat messages as "role: content" lines)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"[{m.role}] {m.content}" for m in prompt)


@dataclass(frozen=True)
class Generation:
    """What one generator call produced.

    `attention`, when asked for with `spans`, is per span `[layer, head, token]`: the
    attention the first generated token paid to the prompt tokens inside that span.
    """

    text: str
    prompt_tokens: int
    output_tokens: int
    seconds: float
    attention: tuple[np.ndarray, ...] = field(default=(), repr=False)
    span_tokens: tuple[tuple[str, ...], ...] = ()  # the tokens of each span, for display
    cached_tokens: int = 0  # prompt tokens whose states came from the prefix cache
    # each generated token's log-probability under the model (a backend with `logprobs`),
    # one per output token, the stop string's included
    logprobs: tuple[float, ...] = ()
    # it ended because it reached max_new_tokens (no stop string, end token or loop ended
    # it first): what it said may stop mid-word (engine.readers.answers.short_answer_of)
    at_cap: bool = False


@dataclass(frozen=True)
class Variant:
    """A prompt with something left out, as leave-one-out scores it (`Generator.ablate`):
    the full prompt's answer's log-probability under it (its tokens' sum), its own greedy
    continuation, and the tokens the model read for it."""

    logprob: float
    text: str
    tokens_read: int


@dataclass(frozen=True)
class Ablated:
    """The full prompt's greedy answer (`base`) and each variant's scoring of it."""

    base: Generation
    variants: tuple[Variant, ...]
    seconds: float


@dataclass(frozen=True)
class Capabilities:
    """What a generator backend can do. What needs one checks it here, never the backend's
    name: the attention heatmap, FiD post-ranking and the "fid" prompt need `attention`
    (the first answer token's attention over parts of the prompt); `ban_first` refuses
    words at the answer's start; `prefix_cache` reads a prompt's fixed opening once;
    `batching` answers concurrent calls as one batch; `logprobs` gives token
    log-probabilities; `ablation` scores a prompt's answer under variants of the prompt
    (leave-one-out attribution, `ablate`)."""

    attention: bool = False
    ban_first: bool = False
    prefix_cache: bool = False
    batching: bool = False
    logprobs: bool = False
    ablation: bool = False

    def names(self) -> list[str]:
        return [name for name, able in vars(self).items() if able]


@runtime_checkable
class Generator(Protocol):
    """Anything that turns a prompt into text, declaring what else it can do."""

    name: str
    capabilities: Capabilities

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 32, stop: tuple[str, ...] = (),
                 spans: tuple[tuple[int, int], ...] = (),
                 ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Generation:
        """Greedy continuation of `prompt`, cut before the first `stop` string.

        `spans` are character spans of a plain-text prompt whose attention is wanted;
        `ban_first` are words the first generated token may not start; `prefix` is the
        prompt's fixed opening (text, or its leading chat messages), which a generator may
        read once and reuse. A generator refuses (GeneratorError) what its `capabilities`
        do not include rather than ignore it; callers pass only what it declares.
        """
        ...
