"""Leave-one-out attribution: the generator's reuse of the full prompt's states gives what
reading each variant whole gives; the real packaged reader loses its answer without the
passage that holds it; attention and ablation are compared passage by passage."""

from __future__ import annotations

import json

import pytest

from engine.documents import Candidate, Unit
from engine.errors import ConfigError
from engine.eval.ablations import agreement_summary
from engine.readers.ablation import agreement, reading_step
from engine.readers.hf_generator import HFGenerator
from engine.readers.prompts import answer_prompt
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.trace import RunTrace, failed_run
from engine.trace_details import Ablation, ReaderAttention
from tests.conftest import torch_single_thread
from tests.fakes import answer_step

one_thread = pytest.fixture(autouse=True)(torch_single_thread)

PASSAGES = [("Danube", "The Danube is a river that flows through Budapest and Vienna."),
            ("Vienna", "Vienna is the capital of Austria, on the Danube."),
            ("Photosynthesis", "Photosynthesis lets plants turn light into chemical energy.")]
QUESTION = "Which river flows through Budapest?"


@pytest.fixture
def generator(tiny_causal_lm) -> HFGenerator:
    tokenizer, model = tiny_causal_lm
    return HFGenerator("tiny", tokenizer, model)


def _candidates(pairs) -> list[Candidate]:
    return [Candidate(Unit(f"{t}#0", t, x, (t,), "passages"), 1.0 - i / 10, i + 1)
            for i, (t, x) in enumerate(pairs)]


def _teacher_forced(generator: HFGenerator, prompt: str, answer_text_ids: list[int]) -> float:
    """The answer's log-probability under `prompt`, the prompt read whole, no states reused."""
    import torch

    ids = generator.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = generator.model(torch.tensor([ids + answer_text_ids])).logits[0].float()
    logprobs = logits.log_softmax(-1)
    return float(sum(logprobs[len(ids) - 1 + j, t] for j, t in enumerate(answer_text_ids)))


@pytest.mark.parametrize("template", ["fewshot", "plain"])
def test_each_variant_scores_and_answers_as_if_read_whole(generator, template):
    built = answer_prompt(template, QUESTION, PASSAGES)
    variants = [answer_prompt(template, QUESTION, PASSAGES[:i] + PASSAGES[i + 1:]).prompt
                for i in range(len(PASSAGES))]
    out = generator.ablate(built.prompt, variants, max_new_tokens=5, stop=built.stop,
                           prefix=built.prefix)
    whole = generator.generate(built.prompt, max_new_tokens=5, stop=built.stop)
    assert out.base.text == whole.text and out.base.logprobs == pytest.approx(whole.logprobs,
                                                                              abs=1e-4)
    said = list(generator._run([_plain_request(generator, built.prompt, built.stop)])[0][0])
    assert len(said) == out.base.output_tokens
    for variant, scored in zip(variants, out.variants, strict=True):
        assert scored.logprob == pytest.approx(_teacher_forced(generator, variant, said),
                                               abs=1e-3)
        assert scored.text == generator.generate(variant, max_new_tokens=5,
                                                 stop=built.stop).text
    # only what follows the passage left out is read again: the first costs the most
    reads = [v.tokens_read for v in out.variants]
    prompt_tokens = len(generator.tokenizer(built.prompt)["input_ids"])
    assert reads[0] > reads[-1] and max(reads) < prompt_tokens


def _plain_request(generator: HFGenerator, prompt: str, stop):
    from engine.readers.greedy import Request as _Request

    ids = generator.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    return _Request(ids, [], False, 5, stop, frozenset())


def test_the_reader_keeps_the_ablation_in_its_step_and_the_trace(generator):
    config = ReaderConfig(model="tiny", max_answer_tokens=4, ablation=True)
    step = answer(QUESTION, _candidates(PASSAGES), config, ReaderModels(generator))
    ablation = step.ablation
    assert ablation.passages == step.attention.passages  # the prompt's order (reversed)
    assert ablation.passages[0] == "Photosynthesis#0"
    assert len(ablation.without) == len(ablation.answers_without) == 3
    assert ablation.answer == step.answer and ablation.answer_tokens == step.output_tokens
    assert ablation.effects == pytest.approx([ablation.logprob - w for w in ablation.without])
    assert ablation.most in ablation.passages and ablation.tokens_read > 0
    trace = RunTrace(QUESTION, "flat", {}, (), llm_steps=(step,), answer=step.answer)
    again = RunTrace.from_json(trace.to_json())
    assert again.llm_steps[0].ablation == ablation and reading_step(again) == again.llm_steps[0]
    assert "ablation" not in json.dumps(RunTrace(QUESTION, "flat", {}, ()).to_dict()["stages"])
    plain = answer(QUESTION, _candidates(PASSAGES), ReaderConfig(model="tiny"),
                   ReaderModels(generator))
    assert plain.ablation is None  # only when asked for


def test_ablation_is_refused_where_a_backend_or_prompt_cannot_give_it():
    with pytest.raises(ConfigError, match="reader.ablation .* 'openai' backend cannot"):
        ReaderConfig(endpoint="http://127.0.0.1:9/v1", ablation=True)
    with pytest.raises(ConfigError, match="'fid' prompt reads each passage on its own, so its "
                                          "answers cannot be attributed"):
        ReaderConfig(prompt="fid", ablation=True)


def _ablation(effects: list[float], answers=("x", "x", "x")) -> Ablation:
    ids = ("a", "b", "c")[: len(effects)]
    return Ablation(ids, "x", -1.0, tuple(-1.0 - e for e in effects),
                    tuple(answers[: len(effects)]), 2, 30, 0.5)


def _attention(scores: list[float]) -> ReaderAttention:
    ids = ("a", "b", "c")[: len(scores)]
    return ReaderAttention(cells=tuple(((s, s),) for s in scores), passages=ids,
                           top_tokens=((),) * len(scores))


def test_attention_and_ablation_are_compared_passage_by_passage():
    agreed = agreement(_attention([0.1, 0.5, 0.2]), _ablation([0.0, 2.0, 0.5]))
    assert agreed.same_top and agreed.spearman == pytest.approx(1.0)
    agreed = agreement(_attention([0.9, 0.5, 0.2]), _ablation([0.0, 2.0, 0.5]))
    assert not agreed.same_top and agreed.attended == "a" and agreed.most == "b"
    assert agreed.spearman == pytest.approx(-0.5)
    two = agreement(_attention([0.1, 0.5]), _ablation([3.0, 0.5]))
    assert two.spearman is None and not two.same_top  # two passages: no rank correlation
    assert _ablation([0.0, 2.0, 0.5], ("x", "y", "X")).changed == (False, True, False)


def test_an_evaluation_counts_agreement_and_cost_per_paradigm():
    def run(paradigm, scores, effects, answers=("x", "x", "x")):
        step = answer_step(seconds=1.0, prompt_tokens=100)
        from dataclasses import replace

        step = replace(step, attention=_attention(scores),
                       ablation=_ablation(effects, answers))
        return RunTrace("q", paradigm, {}, (), llm_steps=(step,), answer="x")

    traces = [run("flat", [0.1, 0.5, 0.2], [0.0, 2.0, 0.5]),
              run("flat", [0.9, 0.5, 0.2], [0.0, 2.0, 0.5], ("x", "y", "x")),
              RunTrace("q", "flat", {}, (), llm_steps=(answer_step(),)),  # none asked for
              failed_run("q", "flat", {}, RuntimeError("boom")),
              run("funnel", [0.9, 0.5, 0.2], [3.0, 2.0, 0.5])]
    summary = agreement_summary(traces)
    assert list(summary) == ["flat", "funnel"]
    flat = summary["flat"]
    assert flat.runs == flat.compared == 2 and flat.same_top == 0.5
    assert flat.spearman_mean == pytest.approx(0.25) and flat.answer_changes == 0.5
    assert flat.cost_ratio == pytest.approx(0.5) and flat.tokens_ratio == 0.3
    assert summary["funnel"].same_top == 1.0
    # an evaluation's labels (a sweep's points, a ceiling's cuts) keep their runs apart
    labelled = agreement_summary(traces, ["flat: cut 1", "flat: cut 2", "flat: cut 1",
                                          "flat: cut 2", "funnel"])
    assert list(labelled) == ["flat: cut 1", "flat: cut 2", "funnel"]
    assert labelled["flat: cut 1"].runs == labelled["flat: cut 2"].runs == 1


@pytest.fixture(scope="module")
def smollm2(models_dir):
    """The packaged reader (the logic here is the model's), converted from its GGUF into the
    session's model cache (conftest's models_dir) once for every test that reads with it.
    Module-scoped, it is made before any test's own data directory is set, so it names the
    cache itself (else it would land in the project's data/ folder)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUNNEL_DATA_DIR", str(models_dir))
        return HFGenerator("smollm2", precision="fp32")


@pytest.mark.slow
def test_the_packaged_reader_loses_its_answer_without_the_passage_that_holds_it(smollm2):
    pairs = [("Orla Quinn", "Orla Quinn is an Irish sculptor born in the town of Kesh in "
                            "1970."),
             ("Bray", "Bray is a coastal town in County Wicklow."),
             ("Photosynthesis", PASSAGES[2][1])]
    config = ReaderConfig(ablation=True, precision="fp32")
    step = answer("In which town was Orla Quinn born?", _candidates(pairs), config,
                  ReaderModels(smollm2))
    ablation = step.ablation
    assert ablation.answer == step.answer == "Kesh"
    holder = ablation.passages.index("Orla Quinn#0")
    assert ablation.changed[holder] and "Kesh" not in ablation.answers_without[holder]
    assert ablation.most == "Orla Quinn#0" and ablation.effects[holder] > 2.0
    others = [e for i, e in enumerate(ablation.effects) if i != holder]
    assert all(abs(e) < ablation.effects[holder] / 4 for e in others)
