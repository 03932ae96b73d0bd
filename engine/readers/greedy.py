"""Greedy decoding over a tokenizer, the same for every in-process runtime.

A generator that runs a model in this process (torch in engine/readers/backends.py, ONNX
Runtime in engine/readers/onnx_runtime.py) renders and tokenises its prompt, refuses
tokens, cuts stop strings and detects loops here, so two runtimes of one model differ only
in the logits they compute. `TokenGenerator` holds the tokenizer's side; `Continuation`
chooses one prompt's tokens from logits, one step at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from engine.errors import ConfigError
from engine.readers.answers import LOOP_NGRAM, repeats_tail
from engine.readers.generator import Prompt


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """`text` up to the first stop string, and whether one was found."""
    hits = [text.index(s) for s in stop if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


@dataclass(frozen=True)
class Request:
    """One generator call as a runtime runs it."""

    ids: list[int]
    prefix_ids: list[int]
    want_attention: bool
    max_new_tokens: int
    stop: tuple[str, ...]
    banned_first: frozenset[int]


class Continuation:
    """One prompt's greedy continuation, token by token (alone or in a batch, the same
    rules). Until something visible is said, the end token, line breaks and the banned first
    tokens are refused (an empty answer is never the best one; a bare space may open a
    number, so it stays allowed); stop strings count from the first visible character on; a
    looping tail ends it."""

    def __init__(self, request: Request, eos_ids: set[int], line_breaks: frozenset[int],
                 decode: Callable[[list[int]], str]) -> None:
        self.request, self.eos_ids, self.decode = request, eos_ids, decode
        self.refused = eos_ids | request.banned_first | line_breaks
        self.out: list[int] = []
        self.logprobs: list[float] = []  # each token's, under the model's own distribution
        self.said = ""

    def step(self, logits) -> int | None:
        """Choose the next token from `logits` (a torch vector, changed in place); return it
        if it is to be fed back, None when the continuation has ended."""
        if len(self.out) >= self.request.max_new_tokens:
            return None
        normaliser = float(logits.float().logsumexp(-1))  # before any token is refused
        if not self.said.strip():
            for token in self.refused:
                logits[token] = float("-inf")
        token = int(logits.argmax())
        if token in self.eos_ids:
            return None
        self.out.append(token)
        self.logprobs.append(float(logits[token]) - normaliser)
        if repeats_tail(self.out):  # "2014S/S/S/S...": a loop, not an answer
            del self.out[-LOOP_NGRAM:], self.logprobs[-LOOP_NGRAM:]
            return None
        self.said = self.decode(self.out)
        stop = self.request.stop
        if stop and cut_at_stop(self.said.lstrip(), stop)[1]:
            return None
        return token if len(self.out) < self.request.max_new_tokens else None


def tokens_in(offsets: list[tuple[int, int]], start: int, end: int) -> list[int]:
    """The tokens whose characters (`offsets`) lie inside [start, end)."""
    return [i for i, (a, b) in enumerate(offsets) if a >= start and b <= end and b > a]


class TokenGenerator:
    """The tokenizer's side of an in-process generator: the prompt rendered (chat template)
    and tokenised, its fixed opening's ids, the tokens refused at the start, what was said.
    A runtime subclass computes logits."""

    name: str

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._prefix_ids: dict[str, list[int]] = {}
        self.eos_ids = {i for i in (tokenizer.eos_token_id,
                                    tokenizer.convert_tokens_to_ids("<|im_end|>")
                                    if "<|im_end|>" in tokenizer.get_vocab() else None)
                        if i is not None}

    def render(self, prompt: Prompt) -> str:
        """Chat messages through the tokenizer's chat template; text as it is."""
        if isinstance(prompt, str):
            return prompt
        if not getattr(self.tokenizer, "chat_template", None):
            return "\n\n".join(m.content for m in prompt) + "\n"
        return self.tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in prompt],
            tokenize=False, add_generation_prompt=True)

    def prefix_ids(self, prefix: Prompt, text: str) -> list[int]:
        """The token ids of a prompt's fixed opening (chat: its leading messages, rendered as
        the template renders them inside the prompt), or none when `text` does not start with
        it (a chat template that renders earlier turns differently once more follow)."""
        if not prefix:
            return []
        if isinstance(prefix, str):
            opening = prefix
        elif getattr(self.tokenizer, "chat_template", None):
            opening = self.tokenizer.apply_chat_template(
                [{"role": m.role, "content": m.content} for m in prefix], tokenize=False)
        else:
            opening = "\n\n".join(m.content for m in prefix) + "\n\n"
        if not text.startswith(opening):
            return []
        if opening not in self._prefix_ids:
            self._prefix_ids[opening] = self.tokenizer(opening, add_special_tokens=False)[
                "input_ids"]
        return self._prefix_ids[opening]

    def _request(self, prompt: Prompt, max_new_tokens: int, stop: tuple[str, ...],
                 spans: tuple[tuple[int, int], ...], ban_first: tuple[str, ...],
                 prefix: Prompt) -> tuple[Any, Request]:
        """The prompt tokenised (with offsets when spans are asked for) and its call."""
        text = self.render(prompt)
        encoded = self.tokenizer(text, add_special_tokens=False,
                                 return_offsets_mapping=bool(spans))
        ids = encoded["input_ids"]
        if not ids:
            raise ConfigError("The prompt is empty; there is nothing to continue.")
        return encoded, Request(ids, self.prefix_ids(prefix, text), bool(spans),
                                max_new_tokens, stop,
                                frozenset(self._first_token_ids(ban_first)))

    def _continuation(self, request: Request) -> Continuation:
        return Continuation(request, self.eos_ids, self._line_break_ids, self.tokenizer.decode)

    def _said(self, out: list[int], stop: tuple[str, ...]) -> str:
        return cut_at_stop(self.tokenizer.decode(out, skip_special_tokens=True).lstrip(),
                           stop)[0]

    def _at_cap(self, out: list[int], request: Request) -> bool:
        """Whether a continuation ended at its token cap: it holds `max_new_tokens` tokens
        and no stop string (an end token is never kept, a loop's tail is dropped)."""
        return len(out) >= request.max_new_tokens and not cut_at_stop(
            self.tokenizer.decode(out, skip_special_tokens=True).lstrip(), request.stop)[1]

    def _first_token_ids(self, words: tuple[str, ...]) -> set[int]:
        """Token ids that open any of `words` (as written, capitalised, after a space)."""
        ids = set()
        for word in words:
            for form in (word, word.capitalize(), " " + word, " " + word.capitalize()):
                encoded = self.tokenizer.encode(form, add_special_tokens=False)
                if encoded:
                    ids.add(encoded[0])
        return ids

    @cached_property
    def _line_break_ids(self) -> frozenset[int]:
        """Tokens that are only white space with a line break in it."""
        vocab = self.tokenizer.get_vocab().values()
        return frozenset(i for i in vocab if "\n" in (text := self.tokenizer.decode([i]))
                         and not text.strip())
