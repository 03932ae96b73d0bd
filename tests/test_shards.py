"""engine.index.shards: a dense index served by Ray actors, one shard each, gives what one
index gives (a local Ray cluster of two workers)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.index.dense import dense_index
from engine.index.document_scores import DocumentScorer
from engine.index.shards import ShardedDenseIndex, merge_top, sharded_dense_index
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker
from tests.fakes import serves_as

# short passages: the tiny corpus's eight documents make seventeen rows to shard
PASSAGES = UnitConfig("passages", Chunker(max_tokens=10))
QUESTIONS = ("Which river flows through Budapest?", "Who painted A Sunday Afternoon?",
             "pointillism technique dots", "capital city on the Danube")


def test_the_merge_keeps_the_best_of_every_shard_ties_by_row():
    found = [(np.array([3, 1]), np.array([0.9, 0.5], dtype=np.float32)),
             (np.array([7, 5, 6]), np.array([0.9, 0.8, 0.1], dtype=np.float32)),
             (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))]
    rows, scores = merge_top(found, 4)
    assert rows.tolist() == [3, 7, 5, 1] and scores.tolist() == pytest.approx([.9, .9, .8, .5])
    assert merge_top(found, 10)[0].tolist() == [3, 7, 5, 1, 6]


@pytest.fixture
def local_ray(data_dir):
    """A local Ray cluster of two workers that see this test's data directory."""
    from engine.index.on_ray import disconnect

    yield "local"
    disconnect()


@pytest.mark.server
def test_two_ray_shards_give_one_index_top_k_and_unit_scores(tiny_corpus, local_ray, data_dir):
    """Also units scored by id (engine.index.unit_scores): their vectors gathered from the
    shards holding them, as the shards' merged search scores them."""
    from tests.test_unit_scores import scores_as_searched

    one = dense_index(tiny_corpus, PASSAGES, kind="exact")
    sharded = sharded_dense_index(tiny_corpus, PASSAGES, "minilm", local_ray, 2, workers=2,
                                  kind="exact")
    assert isinstance(sharded, ShardedDenseIndex) and sharded.exact
    assert len(sharded.index.actors) == 2 and len(sharded.units) == len(one.units) > 12
    assert "2 Ray shards (exact)" in sharded.description
    # the same top k, and rows gathered from the shards that hold them, identical
    serves_as(sharded, one, QUESTIONS, score_atol=1e-6)
    scores_as_searched(sharded, QUESTIONS, atol=1e-5)
    # the first stage's document scores read the shards as they read one index
    bm25 = None
    for how in ("dense",):
        local = DocumentScorer(tiny_corpus, bm25, one, how).scores(QUESTIONS[0])
        remote = DocumentScorer(tiny_corpus, bm25, sharded, how).scores(QUESTIONS[0])
        assert np.allclose(local, remote, atol=1e-6)
    # an HNSW shard builds its graph once (cached) and finds the same rows here
    hnsw = sharded_dense_index(tiny_corpus, PASSAGES, "minilm", local_ray, 3, kind="hnsw")
    assert not hnsw.exact and len(hnsw.index.actors) == 3
    assert len(list((data_dir / "cache" / "dense-shard").iterdir())) == 3
    vector = one.encode_queries([QUESTIONS[1]])[0]
    assert hnsw.top(vector, 10)[0].tolist() == one.top(vector, 10)[0].tolist()
    memory = hnsw.index.memory()
    assert len(memory) == 3 and all(m["anonymous"] > 0 for m in memory)
    # one process, one Ray cluster: another address is refused, naming both
    with pytest.raises(ConfigError, match="'local'.*'10.0.0.1:6379'"):
        sharded_dense_index(tiny_corpus, PASSAGES, "minilm", "10.0.0.1:6379", 2)


@pytest.mark.server
def test_the_store_serves_a_corpus_from_shards_when_asked(tiny_corpus, local_ray):
    from engine.service.store import LoadedResources

    store = LoadedResources()
    with pytest.raises(ConfigError, match="shards=0"):
        store.serve_on_ray(tiny_corpus, local_ray, shards=0)
    with pytest.raises(ConfigError, match="not host:port"):
        store.serve_on_ray(tiny_corpus, "nowhere", shards=2)
    store.serve_on_ray(tiny_corpus, local_ray, shards=2)
    assert store.served_by(tiny_corpus.fingerprint) == "2 Ray shards at 'local'"
    assert store.served_by("another corpus") == ""
    # loaded on a thread that then ends, as a corpus's preparation loads it: the shards
    # outlive it (a local cluster's processes die with the thread that started them)
    loaded = []
    preparing = threading.Thread(target=lambda: loaded.append(store.dense(tiny_corpus,
                                                                          PASSAGES)))
    preparing.start()
    preparing.join()
    time.sleep(1)
    import ray  # the cluster's own processes (GCS, raylet) are alive: Ray's record of them
    assert not ray._private.worker._global_node.dead_processes()  # noqa: SLF001
    index = loaded[0]
    assert isinstance(index, ShardedDenseIndex) and index is store.dense(tiny_corpus, PASSAGES)
    found = index.search(QUESTIONS[0], 3)
    assert found[0].unit.doc_ids[0] in {"Danube", "Budapest"}


def test_the_corpora_table_says_where_a_corpus_is_served():
    from app.tabs.corpora import corpora_table
    from engine.service.corpus_rows import CorpusRow

    here = CorpusRow("wiki", "started with", "ready", 8, "abc")
    there = CorpusRow("big <one>", "added", "ready", 8, "def", served_by="2 Ray shards at 'local'")
    html = corpora_table([here, there])
    assert html.count("dense index:") == 1
    assert "dense index: 2 Ray shards at &#x27;local&#x27;" in html and "big &lt;one&gt;" in html


@pytest.mark.parametrize(("argv", "named"), [
    (["--ray", "nowhere"], "--ray 'nowhere' --shards 2: Ray address 'nowhere' is not host:port"),
    (["--ray", "local", "--shards", "0"], "shards=0 is out of range; allowed: 1 to 64"),
    (["--shards", "4"], "--shards 4 sets how many Ray shards serve the dense indexes: give "
                        "--ray ADDRESS too"),
])
def test_the_app_names_a_wrong_ray_setting_at_start(argv, named, monkeypatch, capsys):
    from tests.fakes import app_refuses_at_start

    assert named in app_refuses_at_start(argv, monkeypatch, capsys)
