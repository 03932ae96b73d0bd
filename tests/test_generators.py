"""Generators and readers on a tiny randomly initialised causal LM built in the test, and the
OpenAI-compatible client against a small fake server started on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from engine.documents import Candidate
from engine.readers.generator import GeneratorError, Message
from engine.readers.greedy import cut_at_stop
from engine.readers.hf_generator import HFGenerator
from engine.readers.openai_client import OpenAIGenerator
from engine.readers.prompts import answer_prompt
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.trace_details import ReadCount
from engine.units.lazy import document_unit
from tests.conftest import torch_single_thread

one_thread = pytest.fixture(autouse=True)(torch_single_thread)

PASSAGES = [("Danube", "The Danube is a river that flows through Budapest and Vienna."),
            ("Vienna", "Vienna is the capital of Austria, on the Danube."),
            ("Photosynthesis", "Photosynthesis lets plants turn light into chemical energy.")]


@pytest.fixture(scope="module")
def generator(tiny_causal_lm) -> HFGenerator:
    tokenizer, model = tiny_causal_lm
    return HFGenerator("tiny", tokenizer, model)


def test_stop_strings_cut_at_the_first_one():
    assert cut_at_stop("Budapest\nQuestion: x", ("\n",)) == ("Budapest", True)
    assert cut_at_stop("a. b\n", ("\n", ".")) == ("a", True)
    assert cut_at_stop("no stop here", ("\n",)) == ("no stop here", False)


def test_hf_generator_counts_tokens_and_keeps_to_its_budget(generator):
    prompt = answer_prompt("plain", "Which river flows through Budapest?", PASSAGES)
    out = generator.generate(prompt.prompt, max_new_tokens=5)
    assert out.prompt_tokens == len(generator.tokenizer(prompt.prompt)["input_ids"])
    assert 1 <= out.output_tokens <= 5 and out.seconds > 0
    again = generator.generate(prompt.prompt, max_new_tokens=5)
    assert again.text == out.text  # greedy: the same prompt gives the same text


def test_span_attention_covers_each_passage_and_sums_to_at_most_one(generator):
    built = answer_prompt("fewshot", "Which river flows through Budapest?", PASSAGES)
    for (start, end), (_, text) in zip(built.spans, PASSAGES, strict=True):
        assert built.prompt[start:end] == text  # spans point at the passages' texts
    out = generator.generate(built.prompt, max_new_tokens=2, spans=built.spans)
    assert len(out.attention) == 3
    for attn, tokens, (_, text) in zip(out.attention, out.span_tokens, PASSAGES, strict=True):
        assert attn.shape[:2] == (2, 4) and attn.shape[2] == len(tokens) > 0
        assert "".join(tokens).strip() == text  # exactly the passage's tokens
    total = sum(a.sum(axis=-1) for a in out.attention)  # one softmax per layer and head
    assert np.all(total <= 1.0 + 1e-5) and np.all(total > 0)


def test_fused_attention_reads_the_prompt_and_the_model_is_left_eager(generator):
    """The prompt is read with SDPA but for its last token; the logits match an all-eager
    forward pass, and the shared model is eager again afterwards (the FiD reader reads
    attention weights from it)."""
    import torch

    built = answer_prompt("fewshot", "Which river flows through Budapest?", PASSAGES)
    ids = generator.tokenizer(built.prompt, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits, _, attention, cached = generator._prefill(ids, [], want_attention=True)
        assert generator.model.config._attn_implementation == "sdpa"  # decoding goes fused
        generator._attention("eager")
        eager = generator.model(input_ids=torch.tensor([ids])).logits[0, -1]
    assert attention is not None and attention.shape[:2] == (2, 4) and cached == 0
    assert torch.allclose(logits.float(), eager.float(), atol=1e-4)
    generator.generate(built.prompt, max_new_tokens=2, spans=built.spans)
    assert generator.model.config._attn_implementation == "eager"


def test_chat_prompts_go_through_the_chat_template(generator):
    generator.tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n")
    try:
        chat = (Message("system", "Answer briefly."), Message("user", "Which river?"))
        rendered = generator.render(chat)
        assert rendered.startswith("<|im_start|>system\nAnswer briefly.<|im_end|>")
        assert rendered.rstrip().endswith("<|im_start|>assistant")
        assert generator.generate(chat, max_new_tokens=2).prompt_tokens == \
            len(generator.tokenizer(rendered)["input_ids"])
    finally:
        generator.tokenizer.chat_template = None


def test_reader_answer_is_one_llm_step_with_attention(generator, tiny_corpus):
    passages = [Candidate(document_unit(d), 1.0, i) for i, d in
                enumerate(tiny_corpus.documents[4:7], start=1)]
    config = ReaderConfig(model="tiny", max_answer_tokens=4, packing="forward")
    step = answer("Which river flows through Budapest?", passages, config, ReaderModels(generator))
    assert step.purpose == "answer" and step.model == "tiny"
    assert step.prompt.endswith("Question: Which river flows through Budapest?\nAnswer:")
    assert "Danube: The Danube is a river" in step.prompt
    assert step.prompt_tokens == len(generator.tokenizer(step.prompt)["input_ids"])
    assert step.output_tokens <= 4 and "\n" not in step.answer
    read = step.attention
    assert read.passages == tuple(c.unit.id for c in passages)
    assert np.asarray(read.cells).shape == (3, 2, 4)
    assert all(len(t) <= config.lr for t in read.top_tokens)
    assert step.capped is None  # no cap, nothing to count

    capped = replace(config, max_context_tokens=20)  # the first passage and part of the second
    step = answer("Which river flows through Budapest?", passages, capped, ReaderModels(generator))
    assert step.capped == ReadCount(read=2, offered=3)
    assert step.attention.passages == tuple(c.unit.id for c in passages[:2])


# --- FiD with a decoder-only model ----------------------------------------------------------


def test_fid_reader_scores_every_block_and_answers_from_the_best(tiny_causal_lm):
    from engine.readers.fid import FiDReader

    tokenizer, model = tiny_causal_lm
    reader = FiDReader("tiny", tokenizer, model)
    config = ReaderConfig(model="tiny", max_answer_tokens=3, aggregation="mean_tokens")
    out = reader.read("Which river flows through Budapest?", PASSAGES, config, answer_top=2)
    assert len(out.scores) == 3 and all(s > 0 for s in out.scores)
    assert out.attention.shape == (3, 2, 4)  # passages x layers x heads
    top_two = sorted(np.argsort(-np.array(out.scores))[:2].tolist())
    assert list(out.answered_from) == top_two and out.answer_tokens <= 3
    # the first token's attention is one softmax over all fused blocks: at most 1 in all
    total = sum(a.sum(axis=-1) for a in out.token_attention)
    assert np.all(total <= 1.0 + 1e-5)
    again = reader.read("Which river flows through Budapest?", PASSAGES, config, answer_top=2)
    assert again.scores == out.scores and again.answer == out.answer
    scored = reader.read("Which river flows through Budapest?", PASSAGES, config, answer=False)
    assert scored.scores == out.scores and scored.answer_tokens == 0


# --- an OpenAI-compatible endpoint ------------------------------------------------------------


class FakeOpenAI(BaseHTTPRequestHandler):
    """Answers /v1/completions and /v1/chat/completions; 401 without the right key."""

    requests: list[tuple[str, dict, str]] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.requests.append((self.path, body, self.headers.get("Authorization", "")))
        if self.headers.get("Authorization") != "Bearer sekret":
            return self._send(401, {"error": {"message": "bad key"}})
        usage = {"prompt_tokens": 11, "completion_tokens": 2}
        if self.path == "/v1/completions":
            return self._send(200, {"choices": [{"text": " Danube\nQuestion: more",
                                                 "finish_reason": "length"}],
                                    "usage": usage})
        if self.path == "/v1/chat/completions":
            return self._send(200, {"choices": [{"message": {"content": "The Danube"},
                                                 "finish_reason": "length"}],
                                    "usage": usage})
        return self._send(404, {"error": "no such path"})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_server(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeOpenAI.requests = []
    monkeypatch.setenv("FUNNEL_API_KEY", "sekret")
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_generator_completion_and_chat(fake_server):
    gen = OpenAIGenerator("tiny-remote", fake_server, api_key="sekret")
    out = gen.generate("Context: ...\nAnswer:", max_new_tokens=8, stop=("\n",))
    assert out.text == " Danube" and (out.prompt_tokens, out.output_tokens) == (11, 2)
    assert not out.at_cap  # the server hit its cap, but our stop string ended the answer first
    path, body, auth = FakeOpenAI.requests[-1]
    assert path == "/v1/completions" and auth == "Bearer sekret"
    assert body == {"model": "tiny-remote", "prompt": "Context: ...\nAnswer:",
                    "max_tokens": 8, "temperature": 0, "stop": ["\n"]}
    chat = gen.generate((Message("user", "Which river?"),))
    assert chat.text == "The Danube" and FakeOpenAI.requests[-1][0] == "/v1/chat/completions"
    assert chat.at_cap  # finish_reason "length": the server's max_tokens cap ended it
    assert FakeOpenAI.requests[-1][1]["messages"] == [{"role": "user", "content": "Which river?"}]


def test_openai_generator_errors_name_the_cause(fake_server, monkeypatch):
    with pytest.raises(GeneratorError, match="answered HTTP 401.*bad key.*key_env or key_file"):
        OpenAIGenerator("m", fake_server, api_key="wrong").generate("x")
    with pytest.raises(GeneratorError, match="Cannot reach the endpoint http://127.0.0.1:9/v1"):
        OpenAIGenerator("m", "http://127.0.0.1:9/v1", timeout=2).generate("x")
    from engine.errors import ConfigError

    with pytest.raises(ConfigError, match="'localhost:8000' is not an http"):
        OpenAIGenerator("m", "localhost:8000")


def test_flat_answers_through_an_endpoint(fake_server, tiny_corpus):
    pytest.importorskip("faiss")
    from engine.service.store import make_paradigm

    config = {"M": 4, "k": 2, "reader": {"model": "tiny-remote", "endpoint": fake_server}}
    trace = make_paradigm("flat", tiny_corpus, config).run("Which river flows through Budapest?")
    (step,) = trace.llm_steps
    assert trace.answer == "Danube" and step.model == "tiny-remote"
    assert trace.reader_input_tokens == 11 and step.attention is None  # no attention remotely
    sent = FakeOpenAI.requests[-1][1]["prompt"]
    assert sent.endswith("Question: Which river flows through Budapest?\nAnswer:")


@pytest.mark.parametrize(("packing", "order"), [("forward", [0, 1, 2, 3, 4]),
                                                ("reverse", [4, 3, 2, 1, 0]),
                                                ("sides", [0, 2, 4, 3, 1])])
def test_repacking_puts_the_best_passages_where_asked(packing, order):
    from engine.readers.reader import repack

    assert repack(5, packing) == order
    assert sorted(repack(4, packing)) == [0, 1, 2, 3] and repack(0, packing) == []


@pytest.mark.parametrize(("question", "yes_no"), [
    ("Are Pelle Arnsen and Ida Brook both composers?", True),
    ("did the Danube flood in 2013?", True),
    ("Who painted the Mona Lisa?", False),
    ("Which river is longer, the Ostra or the Vell?", False),
    ("Isabella of Castile was born where?", False),  # "Is" only as a whole word
])
def test_yes_no_questions_are_told_apart(question, yes_no):
    from engine.readers.answers import is_yes_no_question

    assert is_yes_no_question(question) is yes_no


def test_a_banned_first_word_is_never_said_first(generator):
    prompt = answer_prompt("plain", "Which river flows through Budapest?", PASSAGES).prompt
    free = generator.generate(prompt, max_new_tokens=3)
    first = generator.tokenizer.decode(generator.tokenizer.encode(free.text)[:1]).strip()
    assert first, "the tiny model said nothing to ban"
    banned = generator.generate(prompt, max_new_tokens=3, ban_first=(first,))
    assert banned.text != free.text  # the greedy first token was refused
    assert not banned.text.startswith(free.text[: len(first) + 1])


def test_the_reader_reads_passages_in_its_packing_order(generator, tiny_corpus):
    passages = [Candidate(document_unit(d), 1.0, i) for i, d in
                enumerate(tiny_corpus.documents[4:7], start=1)]
    titles = [c.unit.title for c in passages]
    step = answer("Which river flows through Budapest?", passages,
                  ReaderConfig(model="tiny", max_answer_tokens=2, packing="reverse"),
                  ReaderModels(generator))
    context = step.prompt.rsplit("Context:\n", 1)[1]
    assert [line.split(":")[0] for line in context.splitlines()[:3]] == titles[::-1]
    assert step.attention.passages == tuple(c.unit.id for c in passages[::-1])


def test_any_causal_lm_folder_loads_as_a_generator(tiny_causal_lm, tmp_path):
    """The real loading path (engine.models.loading) on a model saved to a folder, as a user
    with their own checkpoint would give it; a hub id that cannot be reached says so."""
    import torch

    from engine.errors import ResourceMissingError
    from engine.readers.backends import shared_generator

    tokenizer, model = tiny_causal_lm
    model.save_pretrained(tmp_path / "tiny-llama")
    tokenizer.save_pretrained(tmp_path / "tiny-llama")
    folder = str(tmp_path / "tiny-llama")
    loaded = shared_generator(folder, precision="fp32")
    assert loaded is shared_generator(folder, precision="fp32")  # one per model and precision
    prompt = answer_prompt("plain", "Which river flows through Budapest?", PASSAGES).prompt
    direct = HFGenerator("tiny", tokenizer, model).generate(prompt, max_new_tokens=3)
    assert loaded.generate(prompt, max_new_tokens=3).text == direct.text
    bf16 = shared_generator(folder, precision="bf16")
    assert bf16 is not loaded and next(bf16.model.parameters()).dtype == torch.bfloat16
    said = bf16.generate(prompt, max_new_tokens=3)
    assert said.prompt_tokens == direct.prompt_tokens and 0 < said.output_tokens <= 3
    with pytest.raises(ResourceMissingError, match="neither an alias nor a local folder"):
        shared_generator("no-such-org/no-such-model")


def test_a_context_budget_keeps_the_best_passages_and_cuts_the_last(tiny_corpus):
    from engine.readers.reader import within_budget
    from engine.text import count_tokens
    from engine.units.lazy import document_unit

    docs = [Candidate(document_unit(d), 1.0, i) for i, d in
            enumerate(tiny_corpus.documents[:3], start=1)]
    sizes = [count_tokens(c.unit.title) + count_tokens(c.unit.text) for c in docs]
    assert within_budget(docs, 0) == docs  # no cap
    kept = within_budget(docs, sizes[0] + 5)
    assert [c.unit.id for c in kept] == [docs[0].unit.id, docs[1].unit.id]
    assert kept[0] == docs[0] and docs[1].unit.text.startswith(kept[1].unit.text)
    assert count_tokens(kept[1].unit.title) + count_tokens(kept[1].unit.text) == 5
    assert within_budget(docs, sum(sizes)) == docs


def test_each_backend_declares_what_it_can_and_the_reader_checks_it():
    from engine.config import config_from_dict
    from engine.errors import ConfigError
    from engine.readers.backends import BACKENDS
    from engine.readers.hf_generator import HFGenerator
    from engine.readers.reader import ReaderConfig

    assert BACKENDS["transformers"].capabilities.attention is True
    assert BACKENDS["openai"].capabilities.names() == []
    assert HFGenerator.capabilities == BACKENDS["transformers"].capabilities
    assert ReaderConfig().backend_of().name == "transformers"
    assert ReaderConfig(endpoint="http://127.0.0.1:1/v1").backend_of().name == "openai"
    for values, message in (
            ({"backend": "openai"}, "reader.backend 'openai' reaches a server: set "
                                    "reader.endpoint"),
            ({"backend": "transformers", "endpoint": "http://127.0.0.1:1/v1"},
             "reader.endpoint is set, but reader.backend 'transformers'"),
            ({"endpoint": "http://127.0.0.1:1/v1", "prompt": "fid"},
             "the 'openai' backend cannot give (it can: text alone)"),
            ({"backend": "vllm"},
             "Unknown backend 'vllm'. Choose from: auto, transformers, onnx, openai")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            config_from_dict(ReaderConfig, values)


def test_an_endpoint_refuses_what_it_cannot_honour_instead_of_ignoring_it(fake_server):
    gen = OpenAIGenerator("tiny-remote", fake_server)
    with pytest.raises(GeneratorError, match="cannot honour spans \\(attention\\), ban_first"):
        gen.generate("x", spans=((0, 1),), ban_first=("no",))
    with pytest.raises(GeneratorError, match="cannot honour prefix"):
        gen.generate("x", prefix="Context:")
    assert FakeOpenAI.requests == []  # refused before anything was sent


def test_the_funnel_answers_through_an_endpoint_once_it_reads_no_attention(fake_server,
                                                                          tiny_corpus):
    from engine.service.store import make_paradigm

    config = {"cluster_tokens": 128, "K": 2, "N": 2, "H": 2, "attention_weight": 0.0,
              "reader": {"model": "tiny-remote", "endpoint": fake_server}}
    trace = make_paradigm("funnel", tiny_corpus, config).run(
        "Which river flows through Budapest?")
    assert trace.answer == "Danube" and [s.name for s in trace.stages] == [
        "clusters", "preranker", "postranker"]
    assert "skipped" in trace.stages[-1].details.note  # attention weight 0: no reader pass


def test_each_token_said_has_the_models_own_log_probability(generator):
    """(the logprobs capability: what leave-one-out attribution reads)"""
    import torch

    from engine.readers.greedy import Request as _Request

    ids = generator.tokenizer("Budapest lies on the river", add_special_tokens=False)[
        "input_ids"]
    ((said, _, _, logprobs),) = generator._run([_Request(ids, [], False, 3, (), frozenset())])
    assert len(logprobs) == len(said) >= 1 and all(lp < 0 for lp in logprobs)
    with torch.inference_mode():
        logits = generator.model(torch.tensor([ids + said[:1]])).logits[0].float()
    expected = torch.log_softmax(logits, -1)
    assert logprobs[0] == pytest.approx(float(expected[-2, said[0]]), abs=1e-3)
    if len(said) > 1:
        assert logprobs[1] == pytest.approx(float(expected[-1, said[1]]), abs=1e-3)
    out = generator.generate("Budapest lies on the river", max_new_tokens=3)
    assert len(out.logprobs) == out.output_tokens
    assert generator.capabilities.logprobs is True
