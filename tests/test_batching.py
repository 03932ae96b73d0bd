"""Batched reader calls: the batcher's queue (a fake run) and the generator's batched
decoding on a tiny randomly initialised causal LM, against the same calls one at a time."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine.readers.batching import Batcher
from engine.readers.hf_generator import HFGenerator
from engine.readers.prompts import answer_prompt
from tests.conftest import torch_single_thread

one_thread = pytest.fixture(autouse=True)(torch_single_thread)


def submit_together(batcher: Batcher, lock: threading.Lock, calls: list) -> list:
    """Each call submitted from its own thread while `lock` is held, released once all are
    queued: they reach the batcher together, as concurrent users' calls do."""
    results: list = [None] * len(calls)

    def one(i):
        try:
            results[i] = calls[i]()
        except Exception as err:  # noqa: BLE001 - the test looks at what each call raised
            results[i] = err

    with lock:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while batcher.waiting < len(calls) and time.monotonic() < deadline:
            time.sleep(0.01)
    for t in threads:
        t.join(60)
    return results


def test_calls_that_arrive_together_run_in_batches_of_at_most_max_batch():
    lock, runs = threading.Lock(), []
    batcher = Batcher(lambda payloads: runs.append(list(payloads)) or
                      [p * 10 for p in payloads], lock, max_batch=3)
    results = submit_together(batcher, lock, [lambda i=i: batcher.submit(i) for i in range(7)])
    assert results == [i * 10 for i in range(7)]  # each caller gets its own result
    assert sorted(len(r) for r in runs) == [1, 3, 3] and sorted(sum(runs, [])) == list(range(7))
    assert batcher.submit(5) == 50 and runs[-1] == [5]  # a call alone runs alone, at once


def test_a_failing_batch_fails_its_calls_only():
    lock = threading.Lock()

    def run(payloads):
        if "bad" in payloads:
            raise RuntimeError("model broke")
        return [p.upper() for p in payloads]

    batcher = Batcher(run, lock, max_batch=2)
    results = submit_together(batcher, lock, [lambda p=p: batcher.submit(p)
                                              for p in ("a", "bad", "c", "d")])
    failed = [r for r in results if isinstance(r, RuntimeError)]
    assert len(failed) == 2 and "bad" not in results and {"C", "D"} <= set(results)
    with pytest.raises(ValueError, match="max_batch=0"):
        Batcher(run, lock, max_batch=0)


QUESTIONS = ["Which river flows through Budapest?", "What is the capital of Austria?",
             "Who wrote War and Peace?", "Where does the Danube flow?", "Is Vienna a city?"]
PASSAGES = [("Danube", "The Danube is a river that flows through Budapest and Vienna."),
            ("Vienna", "Vienna is the capital of Austria, on the Danube."),
            ("War and Peace", "War and Peace is a novel by Leo Tolstoy.")]


def test_batched_decoding_says_what_one_call_at_a_time_says(tiny_causal_lm):
    """Prompts of different lengths, answer budgets, stops and spans, decoded together,
    give the texts, token counts and attention they give alone."""
    from engine.models.loading import model_lock

    tokenizer, model = tiny_causal_lm
    generator = HFGenerator("tiny", tokenizer, model)
    calls = []
    for n, question in enumerate(QUESTIONS):
        built = answer_prompt("fewshot" if n % 2 else "plain", question, PASSAGES[:1 + n % 3])
        calls.append(dict(prompt=built.prompt, max_new_tokens=3 + 4 * (n % 3),
                          stop=built.stop if n % 2 else (), spans=built.spans,
                          prefix=built.prefix))
    alone = [generator.generate(**c) for c in calls]
    together = submit_together(generator.batcher, model_lock(model),
                               [lambda c=c: generator.generate(**c) for c in calls])
    assert generator.batcher.last_size == len(calls)
    for a, b in zip(alone, together, strict=True):
        assert (b.text, b.prompt_tokens, b.output_tokens) == \
            (a.text, a.prompt_tokens, a.output_tokens)
        assert len(a.attention) == len(b.attention) > 0
        for x, y in zip(a.attention, b.attention, strict=True):
            assert np.abs(x - y).max() < 1e-3
    assert {out.output_tokens for out in alone} != {1}  # the rows end at different steps
