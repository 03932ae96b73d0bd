"""An answer the reader's answer-token cap cuts ends at a whole word and says it was cut:
the cut on small strings, every runtime's "it reached its cap" (a tiny random Llama, a fake
OpenAI-compatible server's finish_reason), the flag through the trace and its JSON, EM/F1
scored without the mark, and the real packaged reader cut mid-name."""

from __future__ import annotations

import json

import pytest

from engine.documents import Candidate, Question, Unit
from engine.paradigms.base import annotate
from engine.readers.answers import CUT_MARK, at_word, short_answer, short_answer_of
from engine.readers.hf_generator import HFGenerator
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.trace import LLMStep, RunTrace
from tests.conftest import torch_single_thread

one_thread = pytest.fixture(autouse=True)(torch_single_thread)

SAMURAI = ("Seven Samurai", "Seven Samurai is a 1954 Japanese epic samurai film co-written, "
                            "edited and directed by Akira Kurosawa.")


@pytest.mark.parametrize(("said", "at_cap", "want"), [
    ("The film is by director Akira Kuro", True, ("The film is by director Akira", True)),
    ("Akira Kuro", False, ("Akira Kuro", False)),  # ended on its own: kept as said
    ("Answer: Akira Kurosawa\nQuestion: who", True, ("Akira Kurosawa", False)),  # ended first
    ("in 1998, the", True, ("in 1998", True)),  # the dangling comma goes too
    ("Seven Samurai (film)", True, ("Seven Samurai (film)", True)),  # closes a word
    ("Akira ", True, ("Akira", True)),  # the cap fell after a space: the word was whole
    ("Kurosawa", True, ("Kurosawa", True)),  # one word: nothing to fall back on
])
def test_a_cut_answer_ends_at_its_last_whole_word(said, at_cap, want):
    assert short_answer_of(said, at_cap) == want
    assert at_word("director Akira Kuro") == "director Akira"


@pytest.fixture(scope="module")
def generator(tiny_causal_lm) -> HFGenerator:
    tokenizer, model = tiny_causal_lm
    return HFGenerator("tiny", tokenizer, model)


def test_a_generation_says_whether_its_cap_ended_it(generator):
    out = generator.generate("The Danube is a river that", max_new_tokens=4)
    assert out.output_tokens == 4 and out.at_cap
    longer = generator.generate("The Danube is a river that", max_new_tokens=40)
    assert longer.at_cap == (longer.output_tokens == 40)  # a loop's tail may end it first
    # a stop string met ends it before or at the cap: not the cap's doing
    said = out.text.strip()
    stopped = generator.generate("The Danube is a river that", max_new_tokens=4,
                                 stop=(said[-1],))
    assert not stopped.at_cap and said[-1] not in stopped.text.lstrip()


def test_the_reader_step_and_the_trace_carry_the_cut(generator):
    passage = Candidate(Unit("Seven Samurai#0", *SAMURAI, ("Seven Samurai",), "passages"),
                        1.0, 1)
    config = ReaderConfig(max_answer_tokens=5, attention=False, prompt="plain",
                          backend="transformers")
    step = answer("Who directed Seven Samurai?", [passage], config, ReaderModels(generator))
    assert step.output_tokens == 5 and step.answer_cut
    assert step.answer == at_word(short_answer(step.output)) and CUT_MARK not in step.answer
    trace = RunTrace("Who directed Seven Samurai?", "flat", {}, (), (step,), answer=step.answer)
    again = RunTrace.from_json(trace.to_json())
    assert again.answer_cut and again.llm_steps[0].answer_cut
    assert json.loads(trace.to_json())["llm_steps"][0]["answer_cut"] is True
    # a trace stored before the flag existed reads as not cut
    old = json.loads(trace.to_json())
    del old["llm_steps"][0]["answer_cut"]
    assert not RunTrace.from_json(json.dumps(old)).answer_cut


def test_em_and_f1_score_the_cut_answer_without_the_mark():
    step = LLMStep("answer", "m", "p", "Akira Kuro", 10, 24, 0.1, answer="Akira",
                   answer_cut=True)
    gold = Question("q1", "Who directed Seven Samurai?", ("Akira",), ("Seven Samurai",))
    trace = annotate(RunTrace(gold.text, "flat", {}, (), (step,), answer="Akira"), gold)
    assert trace.answer_cut and trace.metrics["EM"] == 1.0 and trace.metrics["F1"] == 1.0


def test_the_answer_box_marks_the_cut_and_names_the_cap():
    from app.views.trace import answer_box, compare_table

    step = LLMStep("answer", "m", "p", "Akira Kuro", 10, 24, 0.1, answer="Akira",
                   answer_cut=True)
    cut = RunTrace("q", "flat", {"reader": {"max_answer_tokens": 24}}, (), (step,),
                   answer="Akira")
    box = answer_box(cut)
    assert "Akira<span class='fe-cut'" in box and CUT_MARK in box
    assert "24-token answer cap" in box
    whole = RunTrace("q", "flat", {}, (), (), answer="Akira Kurosawa")
    assert CUT_MARK not in answer_box(whole) and "cap" not in answer_box(whole)
    assert CUT_MARK in compare_table([cut, whole])


@pytest.mark.slow
def test_the_packaged_reader_cut_mid_name_ends_at_a_whole_word(shared_models):
    """SmolLM2 (the logic is the model's): at 24 tokens it says "Akira Kurosawa" whole;
    capped at 4 it says "Akira Kuro", which ends at "Akira", flagged. Its conversion from
    GGUF and its ONNX export come from the session's model cache (`shared_models`), made
    once for every test that reads with it."""
    from engine.readers.backends import shared_generator

    reader = ReaderModels(shared_generator("smollm2", backend="onnx"))
    passage = Candidate(Unit("Seven Samurai#0", *SAMURAI, ("Seven Samurai",), "passages"),
                        1.0, 1)
    question = "Who directed the film Seven Samurai?"
    whole = answer(question, [passage], ReaderConfig(attention=False), reader)
    assert whole.answer == "Akira Kurosawa" and not whole.answer_cut
    cut = answer(question, [passage], ReaderConfig(attention=False, max_answer_tokens=4),
                 reader)
    assert cut.output.startswith("Akira Kuro") and cut.output != "Akira Kurosawa"
    assert cut.answer == "Akira" and cut.answer_cut
