from __future__ import annotations

import re
from dataclasses import replace

import pytest

from engine.errors import ConfigError
from engine.index.bm25 import bm25_index
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker


def test_documents_rank_by_bm25(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    results = index.search("Who painted A Sunday Afternoon on the Island of La Grande Jatte?", 3)
    assert results[0].unit.id == "A Sunday Afternoon"
    assert [c.rank for c in results] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in zip(results, results[1:], strict=False))


def test_stemming_matches_word_forms(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    assert index.search("rivers flowing", 1)[0].unit.id == "Danube"


def test_unknown_words_give_no_results_and_k_is_checked(tiny_corpus):
    index = bm25_index(tiny_corpus, UnitConfig("documents"))
    assert index.search("zzzyx qwerty", 5) == []
    assert len(index.search("capital", 100)) == 2  # only positive scores, k clamped
    with pytest.raises(ConfigError, match=re.escape("k=0 is out of range; allowed: 1 to")):
        index.search("capital", 0)


def test_passages_carry_lineage(tiny_corpus):
    config = UnitConfig("passages", chunker=Chunker(max_tokens=10))
    index = bm25_index(tiny_corpus, config)
    top = index.search("Hungary capital", 1)[0].unit
    assert top.id.startswith("Budapest#") and top.doc_ids == ("Budapest",)
    assert "Hungary" in top.text


def test_clusters_group_linked_documents(tiny_corpus):
    config = UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=64)
    top = bm25_index(tiny_corpus, config).search("capital of Hungary", 1)[0].unit
    assert set(top.doc_ids) == {"Danube", "Budapest", "Vienna"}
    assert top.granularity == "clusters"


def test_cache_is_keyed_by_granularity_and_reused(tiny_corpus, data_dir):
    bm25_index(tiny_corpus, UnitConfig("documents"))
    bm25_index(tiny_corpus, UnitConfig("passages"))
    bm25_index(tiny_corpus, UnitConfig("documents"))
    assert len(list((data_dir / "cache" / "bm25").iterdir())) == 2


@pytest.mark.slow
def test_wiki_answers_the_seurat_question():
    from engine.data.corpus import load_corpus

    index = bm25_index(load_corpus("wiki"), UnitConfig("documents"))
    top = index.search("Who painted A Sunday Afternoon on the Island of La Grande Jatte?", 5)
    assert top[0].unit.title == "A Sunday Afternoon on the Island of La Grande Jatte"
    assert "Georges Seurat" in top[0].unit.text


def test_index_key_follows_the_unit_texts(tiny_corpus, data_dir, monkeypatch):
    """Changing how units are made (here: the chunker's output) must not reuse an index."""
    import engine.index.bm25

    config = UnitConfig("passages", chunker=Chunker(max_tokens=10))
    bm25_index(tiny_corpus, config)
    original = engine.index.bm25.build_units

    def shouted(corpus, config):
        return tuple(replace(u, text=u.text.upper()) for u in original(corpus, config))

    monkeypatch.setattr(engine.index.bm25, "build_units", shouted)
    bm25_index(tiny_corpus, config)
    assert len(list((data_dir / "cache" / "bm25").iterdir())) == 2


def test_a_large_index_is_memory_mapped_and_scores_the_same(tiny_corpus, data_dir,
                                                             monkeypatch):
    import numpy as np

    from engine.index import bm25

    query = "Which river flows through Budapest?"
    in_memory = bm25_index(tiny_corpus, UnitConfig("documents"))
    monkeypatch.setattr(bm25, "MMAP_FROM", len(tiny_corpus))
    mapped = bm25_index(tiny_corpus, UnitConfig("documents"))
    matrix = mapped.retriever.scores["data"]
    assert isinstance(matrix, np.memmap)
    assert not isinstance(in_memory.retriever.scores["data"], np.memmap)
    assert np.array_equal(mapped.scores(query), in_memory.scores(query))
    assert [c.unit.id for c in mapped.search(query, 3)] == [
        c.unit.id for c in in_memory.search(query, 3)]
