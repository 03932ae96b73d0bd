"""The prefix cache: a prompt's fixed opening is read once per generator, and a prompt read
after it says the same as one read whole (text, token counts, attention over passages)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents import Candidate
from engine.readers.generator import Message
from engine.readers.hf_generator import HFGenerator
from engine.readers.prefix_cache import MIN_PREFIX_TOKENS, PrefixCache, common_length
from engine.readers.prompts import answer_prompt, extract_prompt, hyde_prompt
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.trace import LLMStep
from engine.units.lazy import document_unit
from tests.conftest import torch_single_thread

one_thread = pytest.fixture(autouse=True)(torch_single_thread)

PASSAGES = [("Danube", "The Danube is a river that flows through Budapest and Vienna."),
            ("Vienna", "Vienna is the capital of Austria, on the Danube.")]
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture
def generator(tiny_causal_lm) -> HFGenerator:
    tokenizer, model = tiny_causal_lm
    return HFGenerator("tiny", tokenizer, model)  # a fresh prefix cache per test


def test_common_length():
    assert common_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_length([], [1]) == 0 and common_length([7, 8], [7, 8]) == 2


@pytest.mark.parametrize("template", ["fewshot", "plain"])
def test_an_answer_read_after_its_cached_opening_is_the_answer_read_whole(generator, template):
    built = answer_prompt(template, "Which river flows through Budapest?", PASSAGES)
    whole = generator.generate(built.prompt, max_new_tokens=6, spans=built.spans)
    first = generator.generate(built.prompt, max_new_tokens=6, spans=built.spans,
                               prefix=built.prefix)
    again = generator.generate(built.prompt, max_new_tokens=6, spans=built.spans,
                               prefix=built.prefix)
    opening = len(generator.tokenizer(built.prefix)["input_ids"])
    if template == "plain":  # "Context:\n" alone is not worth a lookup
        assert opening < MIN_PREFIX_TOKENS and again.cached_tokens == 0
    else:
        assert again.cached_tokens == first.cached_tokens == opening > MIN_PREFIX_TOKENS
    assert whole.cached_tokens == 0
    for out in (first, again):
        assert (out.text, out.prompt_tokens, out.output_tokens) == \
            (whole.text, whole.prompt_tokens, whole.output_tokens)
        for a, b in zip(out.attention, whole.attention, strict=True):
            assert a.shape == b.shape and np.abs(a - b).max() < 1e-3


def test_each_opening_is_computed_once_and_the_oldest_is_dropped(generator):
    generator.prefix_cache.capacity = 2
    prompts = [answer_prompt("fewshot", "Which river?", PASSAGES), hyde_prompt("Which river?"),
               extract_prompt("Which river?", "The Danube flows through Budapest.")]
    calls = []
    forward = generator.prefix_cache._forward
    generator.prefix_cache._forward = lambda *a: calls.append(len(a[0])) or forward(*a)
    for built in prompts[:1] * 3:
        generator.generate(built.prompt, max_new_tokens=2, prefix=built.prefix)
    assert len(calls) == 1 and len(generator.prefix_cache) == 1
    for built in prompts:
        generator.generate(built.prompt, max_new_tokens=2, prefix=built.prefix)
    assert len(calls) == 3 and len(generator.prefix_cache) == 2  # the answer's fell out


def test_a_prefix_the_prompt_does_not_open_with_is_not_used(generator):
    built = answer_prompt("fewshot", "Which river?", PASSAGES)
    out = generator.generate(built.prompt, max_new_tokens=2, prefix="Something else entirely. " * 5)
    assert out.cached_tokens == 0 and len(generator.prefix_cache) == 0


def test_a_prompt_no_longer_than_its_opening_still_runs_its_last_token(generator):
    """The cache gives at most all but the last prompt token: that one runs for its logits."""
    text = "Context:\nThe Danube is a river that flows through Budapest and Vienna, " * 3
    cache, n = generator.prefix_cache.start(generator.tokenizer(text)["input_ids"],
                                            generator.tokenizer(text)["input_ids"])
    assert n == len(generator.tokenizer(text)["input_ids"]) - 1 == cache.get_seq_length()
    whole = generator.generate(text, max_new_tokens=4)
    assert generator.generate(text, max_new_tokens=4, prefix=text).text == whole.text


def test_chat_prompts_reuse_their_leading_messages(generator):
    generator.tokenizer.chat_template = CHATML
    try:
        built = answer_prompt("chat-fewshot", "Which river flows through Budapest?", PASSAGES)
        assert isinstance(built.prefix, tuple) and all(isinstance(m, Message)
                                                       for m in built.prefix)
        whole = generator.generate(built.prompt, max_new_tokens=4)
        cached = generator.generate(built.prompt, max_new_tokens=4, prefix=built.prefix)
        assert cached.cached_tokens > MIN_PREFIX_TOKENS and cached.text == whole.text
    finally:
        generator.tokenizer.chat_template = None


def test_the_readers_step_records_what_came_from_the_cache(generator, tiny_corpus):
    passages = [Candidate(document_unit(d), 1.0, i)
                for i, d in enumerate(tiny_corpus.documents[:3], start=1)]
    step = answer("Which river flows through Budapest?", passages,
                  ReaderConfig(max_answer_tokens=4), ReaderModels(generator))
    assert 0 < step.cached_tokens < step.prompt_tokens
    old = {k: v for k, v in step.__dict__.items() if k not in ("cached_tokens", "attention")}
    assert LLMStep(**old).cached_tokens == 0  # a step stored before the cache reads as none


def test_a_sliding_window_cache_turns_the_prefix_cache_off():
    class Layer:  # not a plain growing layer
        keys = values = None

    class Cache:
        layers = [Layer()]

        def update(self, *_):
            raise AssertionError("nothing is copied from a cache that is off")

    cache = PrefixCache(lambda ids, position, c: None, Cache)
    ids = list(range(40))
    assert cache.start(ids, ids[:30])[1] == 0 and not cache.enabled
    assert cache.start(ids, ids[:30])[1] == 0 and len(cache) == 0
