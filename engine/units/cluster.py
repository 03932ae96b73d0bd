"""Grouping documents into retrieval units of at most S tokens along the link graph.

Two algorithms, both greedy merges over the graph, differing in visiting and merge order:

- `funnelrag` (FunnelRAG, Algorithm 1): visit documents by local clustering coefficient,
  highest first; merge the clusters of a document's neighbours in order of their closeness
  to it. The paper leaves "closeness centrality to the document" open; here it is the
  closeness centrality of the document inside the candidate union (cluster + document),
  Wasserman-Faust normalised, so a cluster the document sits at the centre of comes first.
- `longrag` (LongRAG, Algorithm 1): visit documents by degree, lowest first; merge the
  groups of a document's neighbours smallest first.

Visiting a document opens a new unit holding it and absorbs each related unit while the
total stays <= S tokens, so every document ends in exactly one unit and no unit exceeds S
unless a single document does. Ties break by document index, so results are deterministic.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from engine.cache import existing_entry, load_or_build
from engine.documents import Corpus, Document
from engine.errors import check_choice, check_range
from engine.progress import LoggedProgress
from engine.text import count_tokens
from engine.units.graph import LinkConfig, LinkGraph, link_graph

logger = logging.getLogger(__name__)

CLUSTER_VERSION = 1
ALGORITHMS = ("funnelrag", "longrag")


@dataclass(frozen=True)
class Clustering:
    """Units as tuples of document indexes, in the order they were formed."""

    algorithm: str
    max_tokens: int
    clusters: tuple[tuple[int, ...], ...]

    @cached_property
    def assignment(self) -> np.ndarray:
        """Cluster index of each document."""
        n = sum(len(c) for c in self.clusters)
        out = np.full(n, -1, dtype=np.int64)
        for k, members in enumerate(self.clusters):
            out[list(members)] = k
        return out

    def save(self, folder: Path) -> None:
        flat = np.fromiter((d for c in self.clusters for d in c), dtype=np.int64)
        offsets = np.cumsum([0] + [len(c) for c in self.clusters])
        np.savez(folder / "clusters.npz", members=flat, offsets=offsets)
        (folder / "clustering.json").write_text(json.dumps(
            {"algorithm": self.algorithm, "max_tokens": self.max_tokens}))

    @classmethod
    def load(cls, folder: Path) -> Clustering:
        meta = json.loads((folder / "clustering.json").read_text())
        with np.load(folder / "clusters.npz") as arrays:
            members, offsets = arrays["members"].tolist(), arrays["offsets"].tolist()
        clusters = tuple(tuple(members[a:b]) for a, b in zip(offsets, offsets[1:], strict=False))
        return cls(meta["algorithm"], meta["max_tokens"], clusters)


def doc_tokens(doc: Document) -> int:
    """A document's size as a unit member: its title line plus its text."""
    return count_tokens(doc.title) + count_tokens(doc.text)


def clustering(corpus: Corpus, algorithm: str = "funnelrag", max_tokens: int = 4096,
               links: LinkConfig = LinkConfig(), *, keep: bool = True) -> Clustering:
    """The cached clustering of `corpus` (graph and clusters built on first use;
    `keep=False`: clustered anew and not cached when missing)."""
    check_choice("cluster algorithm", algorithm, ALGORITHMS)
    check_range("S (max cluster tokens)", max_tokens, 64, 1_000_000)
    key = _cache_key(corpus, algorithm, max_tokens, links)

    def build(folder: Path) -> None:
        graph = link_graph(corpus, links)
        sizes = [doc_tokens(doc) for doc in corpus.documents]
        cluster_documents(sizes, graph, algorithm, max_tokens).save(folder)

    if not keep and existing_entry("clusters", key) is None:
        return cluster_documents([doc_tokens(doc) for doc in corpus.documents],
                                 link_graph(corpus, links), algorithm, max_tokens)
    return load_or_build("clusters", key, build, Clustering.load)


def cluster_documents(sizes: Sequence[int], graph: LinkGraph, algorithm: str,
                      max_tokens: int) -> Clustering:
    """Run `algorithm` over `graph` with document token `sizes` and budget `max_tokens`."""
    check_choice("cluster algorithm", algorithm, ALGORITHMS)
    if len(sizes) != graph.n:
        raise ValueError(f"{len(sizes)} sizes for a graph of {graph.n} documents")
    if algorithm == "funnelrag":
        lcc = local_clustering_coefficients(graph)
        order = sorted(range(graph.n), key=lambda d: (-lcc[d], d))
        merge_key = _closeness_key(graph)
    else:
        order = sorted(range(graph.n), key=lambda d: (graph.degree[d], d))
        merge_key = None
    clusters = _grow(order, graph, list(sizes), max_tokens, merge_key)
    return Clustering(algorithm, max_tokens, clusters)


# --- the shared greedy merge ----------------------------------------------------------------

MergeKey = Callable[[int, list[int]], tuple]


def _grow(order: Sequence[int], graph: LinkGraph, sizes: list[int], budget: int,
          merge_key: MergeKey | None) -> tuple[tuple[int, ...], ...]:
    group_of = np.full(graph.n, -1, dtype=np.int64)
    members: dict[int, list[int]] = {}
    tokens: dict[int, int] = {}
    progress = LoggedProgress(logger, "Clustering", "documents")  # a line, not a bar
    for gid, doc in enumerate(order):
        related = sorted({int(g) for g in group_of[graph.neighbors(doc)] if g >= 0})
        if merge_key is None:  # LongRAG: smallest related group first
            related.sort(key=lambda g: (tokens[g], g))
        else:
            related.sort(key=lambda g: (*merge_key(doc, members[g]), tokens[g], g))
        new, size = [doc], sizes[doc]
        for g in related:
            if size + tokens[g] <= budget:
                new += members.pop(g)
                size += tokens.pop(g)
        members[gid], tokens[gid] = new, size
        group_of[new] = gid
        progress(gid + 1, len(order))
    return tuple(tuple(members[g]) for g in sorted(members))


# --- graph measures -----------------------------------------------------------------------


def local_clustering_coefficients(graph: LinkGraph) -> np.ndarray:
    """Share of each node's neighbour pairs that are linked themselves (0 if degree < 2)."""
    adj = graph.adjacency
    triangles = np.asarray((adj @ adj).multiply(adj).sum(axis=1)).ravel() / 2.0
    degree = graph.degree.astype(np.float64)
    pairs = degree * (degree - 1) / 2.0
    return np.divide(triangles, pairs, out=np.zeros_like(triangles), where=pairs > 0)


def closeness_in(graph: LinkGraph, source: int, nodes: set[int]) -> float:
    """Closeness centrality of `source` in the subgraph induced by `nodes` plus itself.

    Wasserman-Faust form: (r / (N - 1)) * (r / total distance), where r nodes besides the
    source are reachable and N is the subgraph size; 0 when nothing is reachable.
    """
    neighbors = graph.neighbor_sets
    remaining = set(nodes) - {source}
    others = len(remaining)
    frontier, depth, reached, total = [source], 0, 0, 0
    while frontier and remaining:
        depth += 1
        found: set[int] = set()
        for u in frontier:
            found |= neighbors[u] & remaining  # CPython intersects from the smaller set
        remaining -= found
        reached += len(found)
        total += depth * len(found)
        frontier = list(found)
    if reached == 0:
        return 0.0
    return (reached / others) * (reached / total)


def _closeness_key(graph: LinkGraph) -> MergeKey:
    def key(doc: int, cluster: list[int]) -> tuple:
        return (-closeness_in(graph, doc, set(cluster)),)
    return key


def cluster_size_histogram(clustering: Clustering, sizes: Sequence[int],
                           edges: Sequence[int]) -> list[tuple[str, int]]:
    """(label, count) of units by token size in right-closed bins: with edges 0, 512, 1024
    the bins are 1-512, 513-1024 and >1024, so a unit of exactly S tokens counts as <= S."""
    totals = np.array([sum(sizes[d] for d in c) for c in clustering.clusters])
    bins = np.searchsorted(np.asarray(edges[1:]), totals, side="left")
    counts = np.bincount(bins, minlength=len(edges))
    labels = [f"{a + 1}-{b}" for a, b in zip(edges, edges[1:], strict=False)] + [f">{edges[-1]}"]
    return list(zip(labels, counts.tolist(), strict=True))


def _cache_key(corpus: Corpus, algorithm: str, max_tokens: int, links: LinkConfig) -> dict:
    return {"corpus": corpus.fingerprint, "links": asdict(links), "algorithm": algorithm,
            "max_tokens": max_tokens, "version": CLUSTER_VERSION}


# the wiki corpus's 10,033 documents: the link graph in 0.7 s, each clustering in 0.4-0.7 s
# on this machine's 2 cores (issue 67)
BUILD_DOCUMENTS_PER_SECOND = 8_000


def build_seconds(corpus: Corpus, algorithm: str = "funnelrag", max_tokens: int = 4096,
                  links: LinkConfig = LinkConfig()) -> float:
    """About how long `clustering(...)` takes here: 0 when its cache exists, else the
    corpus's documents at BUILD_DOCUMENTS_PER_SECOND (never 0: a build is a build)."""
    if existing_entry("clusters", _cache_key(corpus, algorithm, max_tokens, links)):
        return 0.0
    return max(len(corpus.documents) / BUILD_DOCUMENTS_PER_SECOND, 0.1)
