from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.errors import ConfigError, ResourceMissingError
from engine.index import dense, encoding, vectors
from engine.index.dense import dense_index, load_dense
from engine.index.encoding import model_identity
from engine.models.loading import resolve_precision
from engine.paths import PROJECT_ROOT
from engine.text import count_tokens
from engine.units.build import UnitConfig, build_units, index_text
from tests.fakes import Clock

RIVER_QUESTION = "Which river flows through Budapest?"


@pytest.fixture(scope="session")
def minilm():
    """The packaged MiniLM, loaded once per session (load_bi_encoder caches it)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    try:
        return dense.load_bi_encoder("minilm")
    except ResourceMissingError as err:
        pytest.skip(str(err))


def _entries(data_dir):
    return sorted((data_dir / "cache" / "dense").iterdir())


def test_river_question_ranks_a_danube_passage_first(tiny_corpus, minilm):
    results = dense_index(tiny_corpus).search(RIVER_QUESTION, 3)
    top = results[0].unit
    assert top.granularity == "passages" and top.doc_ids[0] in {"Danube", "Budapest"}
    assert "Danube" in top.text and "Budapest" in top.text
    assert [c.rank for c in results] == [1, 2, 3]


def test_scores_are_cosines_best_first_and_k_is_clamped(tiny_corpus, minilm):
    index = dense_index(tiny_corpus)
    results = index.search("French painter", 100)
    assert len(results) == len(index.units) == len(build_units(tiny_corpus,
                                                               UnitConfig("passages")))
    scores = [c.score for c in results]
    assert all(-1 - 1e-5 <= s <= 1 + 1e-5 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert [c.rank for c in results] == list(range(1, len(results) + 1))
    vectors = index.encode_queries(["French painter", RIVER_QUESTION])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_cache_is_reused_and_keyed_by_units_not_batch_size(tiny_corpus, minilm, data_dir,
                                                           monkeypatch):
    first = dense_index(tiny_corpus).search(RIVER_QUESTION, 3)

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached index should have been loaded, not rebuilt")

    with monkeypatch.context() as patched:  # not monkeypatch.undo(): keep FUNNEL_DATA_DIR
        patched.setattr(dense, "build_dense", no_rebuild)
        again = dense_index(tiny_corpus, batch_size=4).search(RIVER_QUESTION, 3)
    assert [(c.unit.id, c.score) for c in again] == [(c.unit.id, c.score) for c in first]
    assert len(_entries(data_dir)) == 1
    dense_index(tiny_corpus, UnitConfig("documents"))
    assert len(_entries(data_dir)) == 2


def test_a_damaged_faiss_file_is_rebuilt_with_a_warning(tiny_corpus, minilm, data_dir,
                                                        monkeypatch, caplog):
    dense_index(tiny_corpus)
    (folder,) = _entries(data_dir)
    (folder / dense.INDEX_FILE).write_bytes(b"not a faiss index")
    builds = []
    real_build = dense.build_dense

    def counted_build(*args, **kwargs):
        builds.append(1)
        real_build(*args, **kwargs)

    monkeypatch.setattr(dense, "build_dense", counted_build)
    with caplog.at_level(logging.WARNING, logger="engine.cache"):
        results = dense_index(tiny_corpus).search(RIVER_QUESTION, 1)
    assert "stale or damaged" in caplog.text and dense.INDEX_FILE in caplog.text
    assert builds == [1]
    assert results[0].unit.doc_ids[0] in {"Danube", "Budapest"}


def test_load_checks_the_unit_ids(tiny_corpus, minilm, data_dir):
    index = dense_index(tiny_corpus)
    (folder,) = _entries(data_dir)
    with pytest.raises(ValueError, match="unit ids do not match"):
        load_dense(index.units[:-1], folder)


def test_k_out_of_range_is_refused(tiny_corpus, minilm):
    index = dense_index(tiny_corpus)
    with pytest.raises(ConfigError, match=re.escape("k=0 is out of range; allowed: 1 to 10000.")):
        index.search(RIVER_QUESTION, 0)
    with pytest.raises(ConfigError, match=re.escape("k=10001 is out of range")):
        index.search(RIVER_QUESTION, 10_001)


def test_model_identity_names_alias_or_path_and_config(tmp_path, monkeypatch):
    alias = model_identity("minilm")
    assert alias["alias"] == "minilm" and len(alias["config_sha256"]) == 64
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    monkeypatch.chdir(tmp_path)
    by_path = model_identity(".")
    assert by_path["path"] == str(tmp_path.resolve()) and len(by_path["config_sha256"]) == 64
    (tmp_path / "bare").mkdir()
    assert model_identity(str(tmp_path / "bare"))["config_sha256"] is None


def test_importing_the_engine_does_not_import_torch_or_faiss():
    code = ("import sys, engine, engine.index.dense, engine.stages.retrieve; "
            "print(sorted({'torch', 'faiss', 'sentence_transformers'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PROJECT_ROOT)
    assert out.stdout.strip() == "[]"


def test_progress_is_reported_in_slices_and_gives_the_same_vectors(tiny_corpus, minilm,
                                                                   data_dir, monkeypatch):
    plain = dense_index(tiny_corpus).search(RIVER_QUESTION, 5)
    shutil.rmtree(data_dir / "cache" / "dense")
    shutil.rmtree(data_dir / "cache" / "vectors")  # else nothing is left to encode
    monkeypatch.setattr(vectors, "SLICE_TEXTS", 3)
    calls = []
    again = dense_index(tiny_corpus, progress=lambda done, total: calls.append((done, total)))
    total = len(again.units)
    assert calls[-1] == (total, total) and len(calls) == -(-total // 3)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert [c.unit.id for c in again.search(RIVER_QUESTION, 5)] == [c.unit.id for c in plain]


def test_a_grown_corpus_encodes_only_its_new_passages(tiny_corpus, minilm, monkeypatch):
    from engine.documents import Corpus, Document

    before = dense_index(tiny_corpus)
    grown = Corpus("grown", (*tiny_corpus.documents,
                             Document("Rhine", "Rhine", "The Rhine flows through Basel.")))
    encoded = []
    real = dense.encode
    monkeypatch.setattr(dense, "encode", lambda texts, *a, **k: encoded.append(texts) or
                        real(texts, *a, **k))
    after = dense_index(grown)
    assert encoded == [["Rhine\nThe Rhine flows through Basel."]]
    assert len(after.units) == len(before.units) + 1
    assert np.allclose(after.vectors[:len(before.units)], before.vectors, atol=1e-6)
    assert after.search("Which river flows through Basel?", 1)[0].unit.doc_ids == ("Rhine",)


def test_stages_asking_the_same_question_encode_it_once(tiny_corpus, minilm, monkeypatch):
    expected = [c.unit.id for c in dense_index(tiny_corpus).search(RIVER_QUESTION, 3)]
    index = dense_index(tiny_corpus)
    first = index.encode_queries([RIVER_QUESTION])
    encoded = []
    real = dense.encode
    monkeypatch.setattr(dense, "encode", lambda texts, *a, **k: encoded.append(texts) or
                        real(texts, *a, **k))
    again = index.encode_queries([RIVER_QUESTION])
    assert encoded == [] and np.array_equal(again, first) and again.shape == (1, 384)
    assert [c.unit.id for c in index.search(RIVER_QUESTION, 3)] == expected
    both = index.encode_queries(["Who painted it?", RIVER_QUESTION])
    assert encoded == [["Who painted it?"]] and np.array_equal(both[1], first[0])
    assert index.encode_queries([]).shape == (0, 384)


def test_bf16_vectors_are_unit_length_close_to_fp32_and_cached_apart(tiny_corpus, minilm,
                                                                     data_dir):
    fp32 = dense_index(tiny_corpus, precision="fp32")
    bf16 = dense_index(tiny_corpus, precision="bf16")
    assert bf16.precision == "bf16" and len(_entries(data_dir)) == 2
    assert np.allclose(np.linalg.norm(bf16.vectors, axis=1), 1, atol=1e-5)
    cosines = (fp32.vectors * bf16.vectors).sum(axis=1)
    assert cosines.min() > 0.99 and not np.array_equal(fp32.vectors, bf16.vectors)
    assert bf16.search(RIVER_QUESTION, 1)[0].unit.doc_ids[0] in {"Danube", "Budapest"}


def test_build_seconds_counts_only_what_a_build_would_encode(tiny_corpus, minilm, data_dir):
    shutil.rmtree(data_dir / "cache" / "dense", ignore_errors=True)
    shutil.rmtree(data_dir / "cache" / "vectors", ignore_errors=True)
    documents = UnitConfig("documents")
    tokens = sum(count_tokens(index_text(u)) for u in build_units(tiny_corpus, documents))
    rate = encoding.ENCODE_TOKENS_PER_SECOND[resolve_precision(dense.DEFAULT_PRECISION)]
    assert dense.build_seconds(tiny_corpus, documents) == pytest.approx(tokens / rate)
    dense_index(tiny_corpus, documents)
    assert dense.build_seconds(tiny_corpus, documents) == 0.0  # cached: a load
    shutil.rmtree(data_dir / "cache" / "dense")
    assert dense.build_seconds(tiny_corpus, documents) == 0.0  # its vectors are all stored


def test_the_exact_index_holds_its_vectors_once(tiny_corpus, minilm):
    index = dense_index(tiny_corpus, kind="exact")
    assert index.exact and index.description == "exact"
    again = index.index.reconstruct_n(0, index.index.ntotal)
    assert np.array_equal(index.vectors, again)
    assert np.shares_memory(index.vectors, dense.faiss_vectors(index.index))
    assert not index.vectors.flags.writeable


def _mapped_file(address: int) -> str:
    """The file whose memory mapping holds `address` in this process ('' or '[heap]' for
    the process's own memory)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if start <= address < end:
            return fields[5] if len(fields) > 5 else ""
    raise AssertionError(f"{address:#x} is not mapped")


def test_a_loaded_approximate_index_is_memory_mapped_from_its_cache_file(tiny_corpus, minilm,
                                                                        data_dir):
    """A loaded HNSW index's graph and codes are pages of its file, not the process's own
    memory (what keeps a million-passage process within its memory goal); an exact index,
    scanned whole by every search, is read into memory."""
    import faiss

    approximate = dense_index(tiny_corpus, kind="hnsw")
    hnsw = faiss.downcast_index(approximate.index)
    codes = faiss.downcast_index(hnsw.storage).codes.data()
    assert _mapped_file(int(codes)).endswith(f"/{dense.INDEX_FILE}")
    exact = dense_index(tiny_corpus, kind="exact")
    assert not _mapped_file(exact.vectors.__array_interface__["data"][0]).endswith(
        f"/{dense.INDEX_FILE}")
    query = exact.encode_queries([RIVER_QUESTION])[0]
    assert approximate.top(query, 5)[0].tolist() == exact.top(query, 5)[0].tolist()


def test_an_approximate_index_finds_what_the_exact_one_finds(tiny_corpus, minilm, data_dir):
    exact = dense_index(tiny_corpus, kind="exact")
    approximate = dense_index(tiny_corpus, kind="hnsw")
    assert not approximate.exact and isinstance(approximate.vectors, np.memmap)
    assert np.allclose(approximate.vectors, exact.vectors, atol=1e-6)
    # a tiny corpus is searched whole by HNSW_EF_SEARCH: recall is complete
    assert approximate.recall == 1.0 and "recall@100 1.000" in approximate.description
    for query in (RIVER_QUESTION, "French painter"):
        found = approximate.search(query, 5)
        expected = exact.search(query, 5)
        assert [c.unit.id for c in found] == [c.unit.id for c in expected]
        assert np.allclose([c.score for c in found], [c.score for c in expected], atol=1e-5)
    kinds = sorted(json.loads((entry / "manifest.json").read_text())["key"].get("index", {})
                   .get("kind", "exact") for entry in _entries(data_dir))
    assert kinds == ["exact", "hnsw"]  # keyed apart; the exact key is the one it always was


def test_auto_picks_the_approximate_index_from_the_threshold():
    assert dense.index_kind("auto", dense.APPROXIMATE_FROM - 1) == "exact"
    assert dense.index_kind("auto", dense.APPROXIMATE_FROM) == "hnsw"
    assert dense.index_kind("exact", 10**9) == "exact"
    with pytest.raises(ConfigError, match="'ivf'"):
        dense.index_kind("ivf", 10)


def test_recall_measures_a_degraded_index_as_worse(monkeypatch):
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, 32), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = faiss.IndexFlatIP(32)
    exact.add(vectors)
    assert dense.measure_recall(exact, vectors, k=10, queries=20) == 1.0
    coarse = faiss.IndexHNSWFlat(32, 2, faiss.METRIC_INNER_PRODUCT)
    coarse.hnsw.efConstruction = 2
    coarse.add(vectors)
    from engine.index import faiss_index

    monkeypatch.setattr(faiss_index, "HNSW_EF_SEARCH", 10)
    assert dense.measure_recall(coarse, vectors, k=10, queries=20) < 0.9


def test_document_scores_over_an_approximate_index_floor_the_unreached(tiny_corpus, minilm,
                                                                        monkeypatch):
    from engine.index import document_scores as documents
    from engine.index.document_scores import DocumentScorer

    exact = DocumentScorer(tiny_corpus, dense=dense_index(tiny_corpus, kind="exact"),
                           how="dense").semantic(RIVER_QUESTION)
    monkeypatch.setattr(documents, "APPROXIMATE_DEPTH", 3)
    near = DocumentScorer(tiny_corpus, dense=dense_index(tiny_corpus, kind="hnsw"),
                          how="dense").semantic(RIVER_QUESTION)
    reached = np.sort(exact)[::-1]
    floor = np.sort(np.concatenate([  # the third best passage's cosine
        dense_index(tiny_corpus, kind="exact").vectors
        @ dense_index(tiny_corpus).encode_queries([RIVER_QUESTION])[0]]))[::-1][2]
    best = exact >= floor - 1e-6
    assert np.allclose(near[best], exact[best], atol=1e-5)  # the reached keep their cosine
    assert np.allclose(near[~best], floor, atol=1e-5)  # the others score as the last reached
    assert reached[0] == pytest.approx(near.max(), abs=1e-5)


def test_the_vectors_view_outlives_its_index(tiny_corpus, minilm):
    import gc

    expected = np.array(dense_index(tiny_corpus, kind="exact").vectors)
    view = dense_index(tiny_corpus, kind="exact").vectors  # the index object is dropped
    gc.collect()
    np.zeros((2000, 384), dtype=np.float32) + 1  # reuse freed memory, if it was freed
    assert np.array_equal(view, expected)


@pytest.mark.slow
def test_another_encoders_build_is_estimated_at_its_own_speed(tiny_corpus, minilm, data_dir,
                                                              monkeypatch):
    from engine.index import encoding
    from engine.models.packaged import minilm_path

    folder = str(minilm_path())  # MiniLM named by its folder: "another encoder" here
    passages = UnitConfig("passages")
    estimate = dense.build_seconds(tiny_corpus, passages, folder)
    texts = [index_text(u) for u in build_units(tiny_corpus, passages)]
    name = json.dumps(dense.encoder_identity(folder, "auto"), sort_keys=True)
    measured = encoding._RATES[name]
    assert estimate == pytest.approx(sum(count_tokens(t) for t in texts) / measured)
    real_encode, clock = dense.encode, Clock()

    def slow(texts, *args, **kwargs):  # an encoder that takes 2 s a call...
        clock.advance(2.0)
        return real_encode(texts, *args, **kwargs)

    monkeypatch.setattr(encoding, "clock", clock)
    monkeypatch.setattr(encoding, "encode", slow)
    monkeypatch.setattr(encoding, "_RATES", {})
    # ...is estimated at 2 s or more: the tiny corpus's texts are all in the timed sample
    assert len(texts) <= encoding.SAMPLE_TEXTS
    assert dense.build_seconds(tiny_corpus, passages, folder) >= 2.0
    monkeypatch.setattr(encoding, "encode", real_encode)
    dense_index(tiny_corpus, passages, folder)
    assert dense.build_seconds(tiny_corpus, passages, folder) == 0.0  # built: a load


def test_a_unit_the_index_does_not_hold_is_encoded_as_the_index_encodes_its_own(
        tiny_corpus, minilm):
    """(a stage's ceiling adds a gold paragraph the passage index never held; a re-ranker
    reading stored vectors scores it like the rest)"""
    from dataclasses import replace

    from engine.units.build import index_text

    index = dense_index(tiny_corpus)
    held = index.units[:2]
    stranger = replace(index.units[3], id="oracle:" + index.units[3].id)
    vectors = index.unit_vectors([held[0], stranger, held[1]])
    assert np.array_equal(vectors[0], index.vectors[0])
    assert np.array_equal(vectors[2], index.vectors[1])
    alone = dense.encode([index_text(stranger)], precision=index.precision)[0]
    assert np.allclose(vectors[1], alone, atol=1e-6)
    assert float(vectors[1] @ index.vectors[3]) > 0.99  # same text (encoded in a batch there)
    assert index.unit_vectors([]).shape == (0, index.vectors.shape[1])


def test_a_build_estimate_follows_the_pace_measured_on_this_machine(tiny_corpus, monkeypatch):
    """Issue 67: a build estimated at 3 minutes took 27. The pace a build measured here is
    kept (pauses left out) and the next estimate of that encoder uses it; a pace measured
    on another machine is not."""
    from engine.index import encoding
    from engine.index.dense import build_seconds
    from engine.text import count_tokens
    from engine.units.build import UnitConfig, build_units, index_text

    config = UnitConfig("passages")
    tokens = sum(count_tokens(index_text(u)) for u in build_units(tiny_corpus, config))
    default = build_seconds(tiny_corpus, config, precision="fp32")
    assert default == pytest.approx(tokens / encoding.ENCODE_TOKENS_PER_SECOND["fp32"])
    encoding.record_rate("minilm", "fp32", 10, 1.0)  # too few tokens to say anything
    assert build_seconds(tiny_corpus, config, precision="fp32") == default
    encoding.record_rate("minilm", "fp32", 40_000, 100.0)  # 400 tokens/s measured here
    assert build_seconds(tiny_corpus, config, precision="fp32") == pytest.approx(tokens / 400)
    monkeypatch.setattr(encoding, "_machine", lambda: "another CPU x64")
    assert build_seconds(tiny_corpus, config, precision="fp32") == default
