"""The reader through ONNX Runtime (the "onnx" backend): the export computes the torch model's
logits, greedy decoding says what torch says, the prefix cache changes nothing, and `auto`
picks it only for runs that ask for nothing only torch gives."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents import Candidate, Document, Question
from engine.errors import ConfigError
from engine.readers.generator import GeneratorError
from engine.readers.hf_generator import HFGenerator
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.units.lazy import document_unit
from tests.conftest import random_llama, torch_single_thread

pytest.importorskip("onnxruntime")
one_thread = pytest.fixture(autouse=True)(torch_single_thread)

PROMPT = "The Danube is a river that flows through Budapest and Vienna. Vienna is the"


@pytest.fixture(scope="module")
def tiny_lm(tiny_causal_lm):
    """(tokenizer, model): the tiny Llama's tokenizer over a seeded random 2-layer Llama
    with heads of 16 (ONNX Runtime's fused attention takes multiples of 16)."""
    tokenizer, _ = tiny_causal_lm
    return tokenizer, random_llama(tokenizer, hidden_size=64)


@pytest.fixture(scope="module")
def tiny_folder(tiny_lm, tmp_path_factory):
    """The tiny Llama saved as a checkpoint folder (what the exporter reads)."""
    tokenizer, model = tiny_lm
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """One data directory for this module's exports."""
    import os

    before = os.environ.get("FUNNEL_DATA_DIR")
    os.environ["FUNNEL_DATA_DIR"] = str(tmp_path_factory.mktemp("onnx-cache"))
    yield
    if before is None:
        del os.environ["FUNNEL_DATA_DIR"]
    else:
        os.environ["FUNNEL_DATA_DIR"] = before


@pytest.fixture(scope="module")
def tiny_onnx(tiny_folder, onnx_cache):
    from engine.readers.onnx_runtime import ORTGenerator

    return ORTGenerator(str(tiny_folder), "fp32", threads=1)


@pytest.mark.slow
def test_the_export_computes_the_torch_models_logits(tiny_lm, tiny_onnx):
    import torch

    tokenizer, model = tiny_lm
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        want = model(input_ids=torch.tensor([ids])).logits[0, -1].float().numpy()
    whole = tiny_onnx._forward(ids, 0, tiny_onnx._new_cache()).numpy()
    # the same again in two pieces, the second on the first's key/value states
    cache = tiny_onnx._new_cache()
    tiny_onnx._forward(ids[:7], 0, cache)
    pieces = tiny_onnx._forward(ids[7:], 7, cache).numpy()
    assert cache.layers[0].keys.shape[2] == len(ids)
    np.testing.assert_allclose(whole, want, atol=1e-4)
    np.testing.assert_allclose(pieces, want, atol=1e-4)


@pytest.mark.slow  # the tiny Llama's ONNX export, shared with the test above
def test_greedy_decoding_says_what_torch_says(tiny_lm, tiny_onnx):
    tokenizer, model = tiny_lm
    torch_side = HFGenerator("tiny", tokenizer, model)
    for prompt in (PROMPT, "Photosynthesis lets plants turn"):
        a = tiny_onnx.generate(prompt, max_new_tokens=8, prefix=PROMPT[:40])
        b = torch_side.generate(prompt, max_new_tokens=8, prefix=PROMPT[:40])
        assert (a.text, a.output_tokens) == (b.text, b.output_tokens)
        assert a.output_tokens == 8 and a.prompt_tokens == b.prompt_tokens
        assert a.at_cap and b.at_cap  # 8 tokens said, none a stop: the cap ended them
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-3)


def test_the_prefix_cache_changes_nothing_but_the_tokens_read(tiny_onnx):
    opening, prompt = PROMPT + " ", PROMPT + " " + PROMPT
    tiny_onnx.prefix_cache.enabled = False
    plain = tiny_onnx.generate(prompt, max_new_tokens=6, prefix=opening)
    tiny_onnx.prefix_cache.enabled = True
    cached = tiny_onnx.generate(prompt, max_new_tokens=6, prefix=opening)
    assert plain.cached_tokens == 0 and cached.cached_tokens >= 16
    assert cached.text == plain.text
    np.testing.assert_allclose(cached.logprobs, plain.logprobs, atol=1e-4)


@pytest.mark.slow
def test_the_int8_export_quantises_every_matmul_and_still_reads(tiny_folder, onnx_cache):
    import onnx

    from engine.models.onnx_export import onnx_model_dir
    from engine.readers.onnx_runtime import ORTGenerator

    folder = onnx_model_dir(str(tiny_folder), "int8")
    ops = {n.op_type for n in onnx.load(str(folder / "model.onnx"),
                                        load_external_data=False).graph.node}
    assert "MatMul" not in ops and {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    said = ORTGenerator(str(tiny_folder), "int8", threads=1).generate(PROMPT, max_new_tokens=5)
    assert said.output_tokens == 5 and said.prompt_tokens > 5
    assert onnx_model_dir(str(tiny_folder), "int8") == folder  # cached, not exported again


def test_attention_is_refused_with_the_backend_that_gives_it(tiny_onnx):
    with pytest.raises(GeneratorError, match="transformers backend"):
        tiny_onnx.generate(PROMPT, spans=((0, 10),))


def test_auto_answers_through_onnx_only_when_nothing_needs_torch():
    def picked(**options) -> str:
        return ReaderConfig(**options).backend_of().name

    assert picked() == "transformers"  # the heatmap is wanted by default
    assert picked(attention=False) == "onnx"
    assert picked(attention=False, precision="int8") == "onnx"
    assert picked(attention=False, ablation=True) == "transformers"
    assert picked(attention=False, prompt="fid") == "transformers"
    assert picked(attention=False, precision="bf16") == "transformers"
    assert picked(attention=False, endpoint="http://127.0.0.1:9/v1") == "openai"
    with pytest.raises(ConfigError, match="'int8'.*onnx"):
        ReaderConfig(precision="int8")  # int8 is ONNX's, and attention wants torch
    with pytest.raises(ConfigError, match="'bf16'"):
        ReaderConfig(backend="onnx", precision="bf16")


@pytest.mark.slow  # the packaged reader, converted and exported (about 45 s the first time)
@pytest.mark.usefixtures("shared_models")
def test_the_packaged_reader_answers_from_the_passage_that_holds_it():
    from engine.readers.backends import shared_generator

    generator = shared_generator("smollm2", backend="onnx")  # auto precision: fp32
    assert generator.name == "smollm2 (onnx fp32)"
    pairs = [("Orla Quinn", "Orla Quinn is an Irish sculptor born in the town of Kesh in 1970."),
             ("Bray", "Bray is a coastal town in County Wicklow.")]
    passages = [Candidate(document_unit(Document(t, t, x)), 0.0, i)
                for i, (t, x) in enumerate(pairs, start=1)]
    config = ReaderConfig(attention=False)
    first = answer("In which town was Orla Quinn born?", passages, config,
                   ReaderModels(generator))
    again = answer("In which town was Orla Quinn born?", passages, config,
                   ReaderModels(generator))
    assert first.answer == again.answer == "Kesh"
    assert first.attention is None and first.cached_tokens > 100
    assert first.model == "smollm2 (onnx fp32)"


def test_evaluations_read_without_the_heatmap_unless_their_config_asks_for_it():
    from engine.paradigms.registry import unattended
    from engine.service.evaluation_request import EvaluationRequest

    assert unattended("flat") == {"reader": {"attention": False}}
    asked = {"k": 3, "reader": {"attention": True, "prompt": "plain"}}
    assert unattended("flat", asked) == asked
    assert unattended("flat", {"reader": {"prompt": "plain"}})["reader"] == {
        "attention": False, "prompt": "plain"}
    asked = (Question("q1", "Which river flows through Vienna?", ("Danube",)),)
    request = EvaluationRequest("toy", asked, ("flat", "funnel"), {"funnel": {"K": 5}})
    assert request.config("funnel") == {"K": 5, "reader": {"attention": False}}
    assert request.config("flat") == {"reader": {"attention": False}}
    # a ceiling reads as the evaluation it comes from: its configs as stored
    ceiling = EvaluationRequest("toy", asked, ("flat",), {"flat": {"k": 2}}, baseline=4)
    assert ceiling.config("flat") == {"k": 2}


def test_an_export_of_a_checkpoint_in_the_cache_is_keyed_by_its_place_there(data_dir,
                                                                          tmp_path,
                                                                          monkeypatch):
    """A data directory moved or copied keeps its exports of the checkpoints it converted
    (the packaged SmolLM2's); a folder elsewhere is keyed by where it is."""
    import shutil

    from engine.models.onnx_export import fingerprint

    converted = data_dir / "cache" / "models" / "b41f9858"
    converted.mkdir(parents=True)
    (converted / "model.safetensors").write_bytes(b"weights")
    here = fingerprint(converted)
    assert here["folder"] == "<cache>/models/b41f9858"
    moved = tmp_path / "moved"
    shutil.copytree(data_dir, moved)  # copy2: the weights keep their change time
    monkeypatch.setenv("FUNNEL_DATA_DIR", str(moved))
    assert fingerprint(moved / "cache" / "models" / "b41f9858") == here
    elsewhere = tmp_path / "mine"
    shutil.copytree(converted, elsewhere)
    assert fingerprint(elsewhere)["folder"] == str(elsewhere.resolve())
