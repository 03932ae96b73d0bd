"""The reader's OpenAI-compatible backend against a real server: llama.cpp's
(`llama-cpp-python[server]`, in its own virtualenv: its FastAPI pins are not gradio's)
serving the packaged SmolLM2 GGUF. `.ci/run` builds it once (about 6 minutes on 2 cores);
where it is not installed this module is skipped and says how to get it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from engine.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SERVER_PYTHON = Path(os.environ.get("FUNNEL_LLAMA_SERVER_PYTHON",
                                    ROOT / ".venvs" / "llama-server" / "bin" / "python"))
QUESTION = "Which river flows through Budapest?"

pytestmark = [pytest.mark.server, pytest.mark.skipif(
    not SERVER_PYTHON.exists(),
    reason=f"llama.cpp's server is not installed at {SERVER_PYTHON}: bash .ci/run installs "
           "it (about 6 minutes), or set FUNNEL_LLAMA_SERVER_PYTHON")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The base URL of llama.cpp's OpenAI-compatible server over the packaged GGUF."""
    from engine.models.packaged import smollm2_gguf_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    proc = subprocess.Popen([str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model",
                             str(smollm2_gguf_path()), "--model_alias", "smollm2-gguf",
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
                             "--n_threads", "2"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"the server exited (log: {log.name})"
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    assert json.load(answer)["data"][0]["id"] == "smollm2-gguf"
                    break
            except OSError:
                assert time.monotonic() < deadline, f"no answer in 120 s (log: {log.name})"
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_flat_and_the_funnel_answer_through_a_real_openai_compatible_server(server,
                                                                            tiny_corpus):
    pytest.importorskip("faiss")
    from engine.service.store import make_paradigm

    reader = {"model": "smollm2-gguf", "endpoint": server}
    flat = make_paradigm("flat", tiny_corpus, {"M": 4, "k": 2, "reader": reader}).run(QUESTION)
    (step,) = flat.llm_steps
    assert "Danube" in flat.answer and step.model == "smollm2-gguf"
    assert step.prompt_tokens > 100 and step.output_tokens > 0  # the server's own usage
    assert step.attention is None  # the backend declares none, and was asked for none
    funnel = make_paradigm("funnel", tiny_corpus, {"cluster_tokens": 128, "K": 2, "N": 2,
                                                   "H": 2, "reader": reader}).run(QUESTION)
    assert funnel.answer and funnel.llm_calls == 1
    with pytest.raises(ConfigError, match="the 'openai' backend cannot give"):
        make_paradigm("funnel", tiny_corpus, {"attention_weight": 0.5, "reader": reader})


def test_the_llm_judge_grades_a_pool_through_the_server_and_keeps_them_when_it_goes(
        server, tmp_path):
    from engine.errors import EngineError
    from engine.judging.llm_judge import judge_pool
    from engine.readers.openai_client import OpenAIGenerator
    from engine.store.judgments import JudgmentStore, PoolUnit
    from engine.store.sessions import SessionStore

    store = JudgmentStore(SessionStore(tmp_path / "sessions.duckdb"))
    units = [PoolUnit("q1", "Danube", "Danube#0", "Danube",
                      "The Danube is a river that flows through Budapest and Vienna.", ()),
             PoolUnit("q1", "Photosynthesis", "Photosynthesis#0", "Photosynthesis",
                      "Photosynthesis lets plants turn light into chemical energy.", ())]
    pool = store.create_pool("p", "tiny (questions)", "tiny", "f", 5, ["flat/reranker"],
                             units)
    judge = "llm:endpoint:smollm2-gguf"
    gone = OpenAIGenerator("smollm2-gguf", "http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(EngineError, match="stopped at question 'q1', document 'Danube'.*The 0 "
                                          "judgments made are kept"):
        next(judge_pool(store, pool, {"q1": QUESTION}, gone, judge))
    generator = OpenAIGenerator("smollm2-gguf", server)
    *_, last = judge_pool(store, pool, {"q1": QUESTION}, generator, judge)
    # the small model's grades are not checked (bench/judge_agreement.py measures them):
    # that each unit was asked once, and each grade read is stored with its judge
    assert last.judged + last.unreadable == 2
    stored = store.judgments("tiny (questions)", judge)
    assert len(stored) == last.judged and all(0 <= j.grade <= 3 for j in stored)
    assert all(j.pool_id == pool and j.seconds > 0 for j in stored)
