"""Clustering on small hand-built graphs whose clusters were worked out by hand.

The walk-throughs in the docstrings follow engine/units/cluster.py's rules: a visited document
opens a unit and absorbs the units of its already-visited neighbours, in the algorithm's
merge order, while the total stays <= S.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.units.cluster import (
    Clustering,
    closeness_in,
    cluster_documents,
    cluster_size_histogram,
    clustering,
    local_clustering_coefficients,
)
from engine.units.graph import LinkGraph


def graph(n: int, edges: list[tuple[int, int]]) -> LinkGraph:
    arr = np.array(edges, dtype=np.int32).reshape(-1, 2)
    return LinkGraph(n, arr[:, 0], arr[:, 1], np.ones(len(arr), np.int8))


# Triangle 0-1-2, tail 2-3-4, isolated 5; every document 10 tokens, S = 30.
TRIANGLE_TAIL = graph(6, [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])


def test_local_clustering_coefficients_by_hand():
    lcc = local_clustering_coefficients(TRIANGLE_TAIL)
    assert lcc.tolist() == pytest.approx([1.0, 1.0, 1 / 3, 0.0, 0.0, 0.0])


def test_longrag_on_triangle_with_tail():
    """Degree order (low first): 5, 4, 0, 1, 3, 2.

    5 -> {5}; 4 -> {4}; 0 -> {0}; 1 absorbs {0} -> {1,0}; 3 absorbs {4} -> {3,4};
    2 sees {1,0} and {3,4} (both 20 tokens, older first): {2,1,0} = 30 fits, +{3,4} does not.
    """
    result = cluster_documents([10] * 6, TRIANGLE_TAIL, "longrag", 30)
    assert result.clusters == ((5,), (3, 4), (2, 1, 0))


def test_funnelrag_on_triangle_with_tail():
    """Clustering-coefficient order (high first): 0, 1, 2, 3, 4, 5.

    0 -> {0}; 1 -> {1,0}; 2 -> {2,1,0} (30); 3 cannot absorb 30 more -> {3};
    4 -> {4,3}; 5 -> {5}.
    """
    result = cluster_documents([10] * 6, TRIANGLE_TAIL, "funnelrag", 30)
    assert result.clusters == ((2, 1, 0), (4, 3), (5,))


# Path 0-1-2 and star 3-(4,5); document 6 links to 3 (the star's centre) and 0 (the path's
# end). All coefficients are 0, so FunnelRAG visits in index order and 6 comes last.
STAR_AND_PATH = graph(7, [(0, 1), (1, 2), (3, 4), (3, 5), (6, 3), (6, 0)])


def test_closeness_of_a_document_to_a_star_and_a_path():
    """6 reaches the star {3,4,5} at distances 1,2,2 and the path {0,1,2} at 1,2,3."""
    assert closeness_in(STAR_AND_PATH, 6, {3, 4, 5}) == pytest.approx(3 / 5)
    assert closeness_in(STAR_AND_PATH, 6, {0, 1, 2}) == pytest.approx(3 / 6)
    assert closeness_in(STAR_AND_PATH, 6, {4, 5}) == 0.0


def test_funnelrag_merges_the_closer_cluster_first():
    """Path {2,1,0} forms first, then star {5,4,3}; both 30 tokens, S = 40, so 6 can take
    one. The star is closer to 6 (3/5 > 1/2), so FunnelRAG takes it although it is newer."""
    result = cluster_documents([10] * 7, STAR_AND_PATH, "funnelrag", 40)
    assert result.clusters == ((2, 1, 0), (6, 5, 4, 3))


def test_longrag_merges_the_smallest_group_first():
    """Degree order: 2, 4, 5 (degree 1), 0, 1, 6 (degree 2), 3 (degree 3).

    2 -> {2}; 4 -> {4}; 5 -> {5}; 0 -> {0}; 1 absorbs {2} then {0} -> {1,2,0};
    6 absorbs {1,2,0} -> {6,1,2,0} (40); 3 absorbs {4}, {5}, not the 40-token unit.
    """
    result = cluster_documents([10] * 7, STAR_AND_PATH, "longrag", 40)
    assert result.clusters == ((6, 1, 2, 0), (3, 4, 5))


@pytest.mark.parametrize("algorithm", ["funnelrag", "longrag"])
def test_an_oversized_document_stays_alone(algorithm):
    result = cluster_documents([10, 100, 10], graph(3, [(0, 1), (1, 2)]), algorithm, 30)
    assert (1,) in result.clusters
    assert sorted(d for c in result.clusters for d in c) == [0, 1, 2]


@pytest.mark.parametrize("algorithm", ["funnelrag", "longrag"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_graphs_partition_within_budget_deterministically(algorithm, seed):
    rng = np.random.default_rng(seed)
    n = 300
    edges = [tuple(e) for e in rng.integers(0, n, size=(900, 2)) if e[0] != e[1]]
    sizes = rng.integers(5, 400, size=n).tolist()
    g = graph(n, edges)
    result = cluster_documents(sizes, g, algorithm, 1000)
    members = [d for c in result.clusters for d in c]
    assert sorted(members) == list(range(n))  # every document exactly once
    for c in result.clusters:
        assert sum(sizes[d] for d in c) <= 1000 or len(c) == 1
    assert cluster_documents(sizes, g, algorithm, 1000).clusters == result.clusters
    assert result.assignment[members[0]] == 0


def test_cached_clustering_round_trips(tiny_corpus, data_dir):
    built = clustering(tiny_corpus, "funnelrag", 64)
    loaded = Clustering.load(next((data_dir / "cache" / "clusters").iterdir()))
    assert loaded == built
    members = {frozenset(tiny_corpus.documents[d].id for d in c) for c in built.clusters}
    assert frozenset({"Danube", "Budapest", "Vienna"}) in members
    assert frozenset({"Photosynthesis"}) in members


def test_bad_names_and_budgets_are_rejected(tiny_corpus):
    with pytest.raises(ConfigError, match=re.escape(
            "Unknown cluster algorithm 'kmeans'. Choose from: funnelrag, longrag.")):
        clustering(tiny_corpus, "kmeans", 4096)
    with pytest.raises(ConfigError, match=re.escape("S (max cluster tokens)=10 is out of range")):
        clustering(tiny_corpus, "longrag", 10)


def test_size_histogram_bins_are_right_closed():
    found = Clustering("longrag", 512, ((0,), (1,), (2, 3), (4,)))
    sizes = [256, 257, 256, 256, 900]  # units of 256, 257, 512, 900 tokens
    assert cluster_size_histogram(found, sizes, (0, 256, 512)) == [
        ("1-256", 1), ("257-512", 2), (">512", 1)]
