"""The bi-encoder through ONNX Runtime (engine.models.onnx_encoder), on the packaged MiniLM:
fp32 gives torch's vectors, int8 nearly them, the export is cached, checked and refused
when wrong, and the precision is chosen by name or by $FUNNEL_ENCODER_PRECISION."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from engine.errors import ConfigError, EngineError
from engine.index.encoding import encode_with
from engine.models import loading, onnx_encoder
from engine.models.loading import resolve_encoder_precision
from tests.conftest import TINY_DOCS

TEXTS = [f"{title}. {text}" for title, text in TINY_DOCS]
QUESTIONS = ["Who devised pointillism?", "Which river flows through Budapest?",
             "How do plants turn light into energy?"]


@pytest.fixture
def no_encoders():
    """No encoder loaded before the test, none kept after it."""
    loading._bi_encoder.cache_clear()
    yield
    loading._bi_encoder.cache_clear()


@pytest.fixture
def fresh_encoders(no_encoders, shared_models):
    """`no_encoders`, exports kept in the session's model cache."""
    return shared_models


@pytest.fixture(scope="module")
def torch_fp32():
    from sentence_transformers import SentenceTransformer

    return loading.from_pretrained(SentenceTransformer, loading.resolve("minilm"),
                                   device="cpu", local_files_only=True)


def runs_onnx(model) -> bool:
    return type(model[0].model).__name__ == "OnnxTransformer"


def test_fp32_gives_torch_vectors_and_rankings(fresh_encoders, torch_fp32):
    model = loading.load_bi_encoder("minilm", "fp32")
    assert runs_onnx(model)
    expected, got = encode_with(torch_fp32, TEXTS), encode_with(model, TEXTS)
    assert np.min(np.sum(expected * got, axis=1)) > 0.99999
    queries = encode_with(model, QUESTIONS, queries=True)
    assert (np.argsort(-queries @ got.T, axis=1)
            == np.argsort(-encode_with(torch_fp32, QUESTIONS) @ expected.T, axis=1)).all()
    assert model.get_embedding_dimension() == 384


@pytest.mark.slow
def test_int8_is_near_fp32_but_not_it(fresh_encoders, torch_fp32):
    model = loading.load_bi_encoder("minilm", "int8")
    assert runs_onnx(model)
    cosines = np.sum(encode_with(torch_fp32, TEXTS) * encode_with(model, TEXTS), axis=1)
    assert cosines.min() > onnx_encoder.INT8_COSINE
    assert cosines.min() < 0.9999  # quantised weights: not fp32's vectors
    def best(encoder) -> list[str]:
        scores = encode_with(encoder, QUESTIONS, queries=True) @ encode_with(encoder, TEXTS).T
        return [TINY_DOCS[i][0] for i in np.argmax(scores, axis=1)]

    assert best(model) == best(torch_fp32)
    assert best(model)[1:] == ["Danube", "Photosynthesis"]


def test_bf16_stays_in_torch(fresh_encoders):
    import torch

    model = loading.load_bi_encoder("minilm", "bf16")
    assert not runs_onnx(model)
    assert next(model.parameters()).dtype == torch.bfloat16


@pytest.mark.slow
def test_export_is_cached_and_a_damaged_one_rebuilt(fresh_encoders, monkeypatch):
    loading.load_bi_encoder("minilm", "fp32")
    entries = list((fresh_encoders / "cache" / "onnx-encoder").iterdir())
    graph = next(e for e in entries if e.is_dir() and "fp32" in
                 (e / "manifest.json").read_text()) / "model.onnx"
    exports, real = [], onnx_encoder.export
    monkeypatch.setattr(onnx_encoder, "export",
                        lambda *args: exports.append(args) or real(*args))
    loading._bi_encoder.cache_clear()
    loading.load_bi_encoder("minilm", "fp32")
    assert exports == []  # loaded from the cache
    with graph.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\0" * 64)
    loading._bi_encoder.cache_clear()
    assert runs_onnx(loading.load_bi_encoder("minilm", "fp32"))
    assert len(exports) == 1  # the damaged export was rebuilt, not read


@pytest.mark.slow
@pytest.mark.fresh_data
def test_an_int8_graph_unlike_the_model_is_refused(no_encoders, data_dir, monkeypatch):
    # this test's own data directory: a new export
    monkeypatch.setattr(onnx_encoder, "INT8_COSINE", 0.999999)
    with pytest.raises(EngineError, match="FUNNEL_ENCODER_PRECISION=bf16"):
        loading.load_bi_encoder("minilm", "int8")
    assert not (data_dir / "cache" / "onnx-encoder").exists() or not any(
        p.name == "manifest.json" for p in (data_dir / "cache" / "onnx-encoder").rglob("*"))


@pytest.mark.fresh_data
def test_a_failed_fp32_export_falls_back_to_torch(no_encoders, monkeypatch, caplog):
    # this test's own data directory: nothing exported yet
    def broken(*_):
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(onnx_encoder, "export", broken)
    with caplog.at_level(logging.WARNING):
        model = loading.load_bi_encoder("minilm", "fp32")
    assert not runs_onnx(model)
    assert "unsupported operator" in caplog.text
    with pytest.raises(RuntimeError, match="unsupported operator"):
        loading.load_bi_encoder("minilm", "int8")  # int8 has no torch to fall back to


def test_precision_by_name_by_environment_and_refused(monkeypatch):
    monkeypatch.delenv(loading.ENCODER_PRECISION_ENV, raising=False)
    assert resolve_encoder_precision("int8") == "int8"
    assert resolve_encoder_precision("auto", frozenset({"avx2"})) == "fp32"
    assert resolve_encoder_precision("auto", frozenset({"avx512_bf16"})) == "bf16"
    monkeypatch.setenv(loading.ENCODER_PRECISION_ENV, "int8")
    assert resolve_encoder_precision("auto", frozenset({"avx512_bf16"})) == "int8"
    assert resolve_encoder_precision("fp32") == "fp32"  # a name beats the environment
    monkeypatch.setenv(loading.ENCODER_PRECISION_ENV, "fp8")
    with pytest.raises(ConfigError, match="FUNNEL_ENCODER_PRECISION.*fp8"):
        resolve_encoder_precision()
    with pytest.raises(ConfigError, match="int4"):
        resolve_encoder_precision("int4")


def test_queries_against_bf16_documents_are_encoded_in_fp32(fresh_encoders, monkeypatch,
                                                            torch_fp32):
    from engine.index.encoding import encode
    from engine.models import encoders

    assert loading.query_precision("minilm", "bf16") == "fp32"
    assert loading.query_precision("minilm", "int8") == "int8"
    vector = encode(QUESTIONS[:1], queries=True, precision="bf16")
    assert np.dot(vector[0], encode_with(torch_fp32, QUESTIONS[:1])[0]) > 0.99999
    assert runs_onnx(loading.load_bi_encoder("minilm", "fp32"))
    encoders.known_encoders()
    monkeypatch.setitem(encoders.ENCODERS, "plugin-words",
                        encoders.EncoderSpec("plugin-words", "a plugin", lambda _: None))
    assert loading.query_precision("plugin-words", "bf16") == "bf16"  # its own, as asked


def test_the_models_view_lists_the_exports(fresh_encoders):
    from engine.service.models import encoder_rows

    loading.load_bi_encoder("minilm", "fp32")
    minilm = next(row for row in encoder_rows({}) if row.name == "minilm")
    assert any(thing.startswith("ONNX Runtime export (fp32): ") for thing in minilm.built)
    documents = loading.resolve_encoder_precision()
    assert f"; encodes documents in {documents}, " in minilm.status
    assert "queries in fp32, ONNX Runtime" in minilm.status or documents == "int8"


def test_the_app_names_a_wrong_encoder_precision_at_start(monkeypatch, capsys):
    from tests.fakes import app_refuses_at_start

    monkeypatch.setenv(loading.ENCODER_PRECISION_ENV, "fp8")
    assert "FUNNEL_ENCODER_PRECISION 'fp8'" in app_refuses_at_start([], monkeypatch, capsys)
