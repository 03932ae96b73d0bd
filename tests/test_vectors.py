"""The content-addressed vector store and per-document scores from stored vectors."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from engine.index.document_scores import DocumentScorer, Groups, group_max, group_top2, top_k
from engine.index.vectors import VectorStore
from tests.conftest import torch_single_thread

torch_one_thread = pytest.fixture(autouse=True)(torch_single_thread)


class CountingEncoder:
    """A deterministic fake encoder that records every text it is asked to encode."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return np.array([[len(t), sum(map(ord, t)) % 97, 1.0] for t in texts],
                        dtype=np.float32)


class FailsOnSlice:
    """An encoder interrupted (as by Ctrl-C or a kill) when asked for its `n`-th slice."""

    def __init__(self, n: int) -> None:
        self.n, self.calls = n, 0

    def __call__(self, batch: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return CountingEncoder()(batch)


def test_only_texts_never_seen_are_encoded(data_dir):
    encoder = CountingEncoder()
    store = VectorStore({"alias": "fake"})
    first = store.encode(["alpha", "beta", "alpha"], encoder)
    assert encoder.seen == ["alpha", "beta"]  # a repeated text is encoded once
    assert np.array_equal(first[0], first[2])
    again = store.encode(["gamma", "beta", "alpha"], encoder)
    assert encoder.seen == ["alpha", "beta", "gamma"]
    assert np.array_equal(again[1:], first[[1, 0]])
    assert np.array_equal(again[0], encoder(["gamma"])[0])


def test_missing_names_the_first_of_each_text_never_encoded(data_dir):
    store = VectorStore({"alias": "fake-missing"})
    assert store.missing(["alpha", "beta", "alpha"]) == [0, 1]
    store.encode(["beta"], CountingEncoder())
    assert store.missing(["alpha", "beta", "gamma", "alpha"]) == [0, 2]


def test_encoders_do_not_share_vectors(data_dir):
    encoder = CountingEncoder()
    VectorStore({"alias": "fake", "precision": "fp32"}).encode(["alpha"], encoder)
    VectorStore({"alias": "fake", "precision": "bf16"}).encode(["alpha"], encoder)
    assert encoder.seen == ["alpha", "alpha"]


def test_an_interrupted_build_keeps_its_finished_shards(data_dir):
    texts = [f"passage {i}" for i in range(7)]
    fails_on_the_fourth_slice = FailsOnSlice(4)
    store = VectorStore({"alias": "fake"})
    with pytest.raises(KeyboardInterrupt):
        store.encode(texts, fails_on_the_fourth_slice, slice_size=2, shard_size=4)
    assert len(list(store.folder.iterdir())) == 1  # slices 1-2 made a shard, slice 3 was lost
    encoder = CountingEncoder()
    resumed = store.encode(texts, encoder, slice_size=2, shard_size=4)
    assert encoder.seen == texts[4:]
    assert np.array_equal(resumed, CountingEncoder()(texts))


def test_a_slow_build_writes_a_shard_every_shard_seconds(data_dir, monkeypatch):
    """On a slow or busy CPU a shard of SHARD_TEXTS texts takes minutes: the store writes
    what it encoded at least every SHARD_SECONDS, so a killed build loses only its last
    seconds (here every slice is past due)."""
    import engine.index.vectors

    monkeypatch.setattr(engine.index.vectors, "SHARD_SECONDS", 0.0)
    texts = [f"passage {i}" for i in range(7)]
    fails_on_the_fourth_slice = FailsOnSlice(4)
    store = VectorStore({"alias": "fake"})
    with pytest.raises(KeyboardInterrupt):
        store.encode(texts, fails_on_the_fourth_slice, slice_size=2, shard_size=1000)
    assert len(list(store.folder.iterdir())) == 3  # one a slice, none of the fourth
    encoder = CountingEncoder()
    assert np.array_equal(store.encode(texts, encoder, slice_size=2), CountingEncoder()(texts))
    assert encoder.seen == texts[6:]


def test_a_damaged_shard_is_deleted_and_its_texts_encoded_again(data_dir, caplog):
    encoder = CountingEncoder()
    store = VectorStore({"alias": "fake"})
    want = store.encode(["alpha", "beta"], encoder)
    (shard,) = store.folder.iterdir()
    (shard / "vectors.npy").write_bytes(b"damaged")
    with caplog.at_level(logging.WARNING, logger="engine.index.vectors"):
        got = store.encode(["alpha", "beta"], encoder)
    assert "damaged" in caplog.text and shard.name in caplog.text
    assert encoder.seen == ["alpha", "beta", "alpha", "beta"]
    assert np.array_equal(got, want)
    assert len(list(store.folder.iterdir())) == 1


def test_progress_counts_only_the_texts_encoded(data_dir):
    store = VectorStore({"alias": "fake"})
    store.encode(["a", "b"], CountingEncoder())
    calls = []
    store.encode(["a", "b", "c", "d", "e"], CountingEncoder(), slice_size=2,
                 progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 3), (3, 3)]


def test_group_max_and_top2():
    values = np.array([1, 5, 3, 2, -1, 4], dtype=np.float32)
    groups = np.array([0, 0, 0, 1, 1, 3])
    assert group_max(values, groups, 4).tolist() == [5, 2, -np.inf, 4]
    # a negative runner-up adds nothing; a lone member scores as itself
    assert group_top2(values, groups, 4).tolist() == [8, 2, -np.inf, 4]


def test_a_document_scores_as_its_best_passage(tiny_corpus):
    pytest.importorskip("faiss")
    from engine.index.bm25 import bm25_index
    from engine.index.dense import dense_index
    from engine.units.build import UnitConfig
    from engine.units.chunking import Chunker

    dense = dense_index(tiny_corpus, UnitConfig("passages", chunker=Chunker(12)))
    assert len(dense.units) > len(tiny_corpus)  # some documents hold several passages
    query = "Which river flows through Budapest?"
    scores = DocumentScorer(tiny_corpus, dense=dense, how="dense").semantic(query)
    q = dense.encode_queries([query])[0]
    for position, doc in enumerate(tiny_corpus.documents):
        rows = [dense.row_of[u.id] for u in dense.units if u.doc_ids == (doc.id,)]
        assert scores[position] == pytest.approx(max(dense.vectors[rows] @ q), abs=1e-6)
    assert tiny_corpus.documents[int(np.argmax(scores))].id in {"Danube", "Budapest"}
    lexical = bm25_index(tiny_corpus)
    hybrid = DocumentScorer(tiny_corpus, lexical, dense, "hybrid", 0.5).scores(query)
    assert hybrid.shape == (len(tiny_corpus),) and hybrid.max() <= 1.0 + 1e-6
    assert tiny_corpus.documents[int(np.argmax(hybrid))].id in {"Danube", "Budapest"}


def test_a_scorer_without_its_index_is_refused(tiny_corpus):
    from engine.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a dense passage index"):
        DocumentScorer(tiny_corpus, how="dense")
    with pytest.raises(ConfigError, match="needs a BM25 index"):
        DocumentScorer(tiny_corpus, how="hybrid")
    with pytest.raises(ConfigError, match="weight"):
        DocumentScorer(tiny_corpus, how="bm25", bm25=object(), weight=2.0)


@pytest.mark.parametrize("sorted_groups", [True, False])
def test_groups_max_equals_group_max(sorted_groups):
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 50, size=400)  # some of the 60 groups stay empty
    groups = np.sort(groups) if sorted_groups else groups
    grouping = Groups(groups, 60)
    for _ in range(3):
        values = rng.standard_normal(400).astype(np.float32)
        assert np.array_equal(grouping.max(values), group_max(values, groups, 60))
    assert Groups(np.zeros(0, dtype=np.int64), 3).max(np.zeros(0, np.float32)).tolist() == [
        -np.inf] * 3


def test_top_k_is_the_stable_argsort_prefix_ties_included():
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 5, size=300).astype(np.float32)  # many ties
    scores[:3] = -np.inf
    for k in (1, 10, 77, 299, 300, 500):
        assert top_k(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()
