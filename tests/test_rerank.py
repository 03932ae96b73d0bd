from __future__ import annotations

import re

import pytest

from engine.documents import Candidate
from engine.errors import ConfigError, ResourceMissingError
from engine.models.kinds import PRERANKER
from engine.models.trained import model_location
from engine.service.store import process_store
from engine.stages.rerank import CrossEncoderReranker
from engine.units.build import UnitConfig
from engine.units.lazy import document_unit
from tests.conftest import torch_single_thread

QUERIES = ("Which river flows through Budapest?", "pointillism painter", "zzzyx qwerty")


one_thread = pytest.fixture(autouse=True)(torch_single_thread)


@pytest.fixture
def minilm_reranker() -> CrossEncoderReranker:
    """The untrained MiniLM cross-encoder: random head, but a real model for the contract."""
    pytest.importorskip("sentence_transformers")
    from engine.models.packaged import minilm_path

    try:
        minilm_path()
    except ResourceMissingError as err:
        pytest.skip(str(err))
    return CrossEncoderReranker(process_store().cross_encoder("minilm", max_length=64),
                                "minilm", batch_size=4)


def _candidates(corpus) -> tuple[Candidate, ...]:
    return tuple(Candidate(unit=document_unit(d), score=0.0, rank=i, parents=("c0",))
                 for i, d in enumerate(corpus.documents, start=1))


def test_trained_model_missing_says_how_to_train(tiny_corpus):
    with pytest.raises(ResourceMissingError) as err:  # nothing is cached in this data dir
        process_store().ranker("trained", tiny_corpus, UnitConfig("passages"))
    assert "No trained pre-ranker in " in str(err.value)
    assert str(err.value).endswith("Train it once (about 10 min on 2 CPU cores) with: "
                                   "python -m engine train preranker")


def test_trained_model_resolves_to_the_cached_folder(monkeypatch, tmp_path):
    import engine.models.cross_encoder

    monkeypatch.setattr(engine.models.cross_encoder, "cached_preranker_path",
                        lambda config=None: tmp_path)
    assert model_location("trained", PRERANKER) == str(tmp_path)


def test_unreachable_hub_id_names_the_offline_choices(tiny_corpus):
    pytest.importorskip("sentence_transformers")
    with pytest.raises(ResourceMissingError,
                       match=re.escape("Cannot load model 'no-such-org/no-such-cross-encoder'")):
        process_store().ranker("no-such-org/no-such-cross-encoder", tiny_corpus,
                               UnitConfig("passages"))


def test_reranker_rejects_other_granularities_and_bad_settings(tiny_corpus, minilm_reranker):
    encoder = minilm_reranker.encoder
    stage = CrossEncoderReranker(encoder, "minilm", granularity="passages")
    with pytest.raises(ConfigError, match=re.escape(
            "CrossEncoderReranker(granularity='passages') got documents candidates; "
            "construct it with granularity='documents'.")):
        stage.run("query", _candidates(tiny_corpus), 3)
    with pytest.raises(ConfigError, match=re.escape("Unknown granularity 'sentences'")):
        CrossEncoderReranker(encoder, granularity="sentences")
    with pytest.raises(ConfigError, match=re.escape("batch_size=0 is out of range")):
        CrossEncoderReranker(encoder, batch_size=0)


def test_stored_scores_rank_by_meaning_and_encode_only_the_query(minilm_reranker,
                                                                   tiny_corpus, monkeypatch):
    from engine.index import dense
    from engine.service.store import process_store
    from engine.stages.rerank import StoredScoreReranker
    from engine.units.build import UnitConfig
    from engine.units.chunking import Chunker

    passages = UnitConfig("passages", chunker=Chunker(12))
    stage = process_store().ranker("bi-encoder", tiny_corpus, passages)
    assert isinstance(stage, StoredScoreReranker) and stage.name == "preranker"
    assert "stored passage vectors" in stage.settings()["kind"]
    stage.run(QUERIES[0], _candidates(tiny_corpus), 1)  # the index is built here, once
    encoded = []
    real = dense.encode
    monkeypatch.setattr(dense, "encode", lambda texts, *a, **k: encoded.append(texts) or
                        real(texts, *a, **k))
    candidates = _candidates(tiny_corpus)
    ranked = stage.run("Which painter used pointillism?", candidates, 8).candidates
    art = {"Georges Seurat", "A Sunday Afternoon", "Pointillism", "Paul Signac"}
    assert {c.unit.id for c in ranked[:4]} == art
    assert stage.run(QUERIES[0], candidates, 1).candidates[0].unit.id in {"Danube", "Budapest"}
    # only queries are encoded, and the river question's scores were kept from its first run
    assert encoded == [["Which painter used pointillism?"]]
    # over passages: each passage's own stored vector, so the dense order is kept
    index = dense.dense_index(tiny_corpus, passages)
    found = index.search(QUERIES[0], 6)
    again = process_store().ranker("bi-encoder", tiny_corpus, passages, granularity="passages",
                          name="reranker").run(QUERIES[0], found, 6).candidates
    assert [c.unit.id for c in again] == [c.unit.id for c in found]
    assert [c.score for c in again] == pytest.approx([c.score for c in found], abs=1e-5)
    assert isinstance(process_store().ranker("minilm", tiny_corpus, passages), CrossEncoderReranker)


def test_stored_scores_that_cannot_rank_passages_are_refused(tiny_corpus):
    from engine.service.store import process_store
    from engine.units.build import UnitConfig

    with pytest.raises(ConfigError, match="Re-ranker 'bm25' scores documents"):
        process_store().ranker("bm25", tiny_corpus, UnitConfig("passages"), granularity="passages")
