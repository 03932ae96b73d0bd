"""Corpus statistics: documents, tokens, link edges by source, clusters and their sizes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.documents import Corpus
from engine.units.cluster import cluster_size_histogram, clustering, doc_tokens
from engine.units.graph import LinkConfig, link_graph

HISTOGRAM_EDGES = (0, 256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class ClusterStats:
    algorithm: str
    max_tokens: int
    clusters: int
    singletons: int
    mean_tokens: float
    max_tokens_seen: int
    histogram: list[tuple[str, int]]


@dataclass(frozen=True)
class CorpusStats:
    name: str
    documents: int
    tokens: int
    sources: dict[str, int]
    edges: dict[str, int]
    isolated_documents: int
    clusterings: list[ClusterStats]


def corpus_stats(corpus: Corpus, cluster_sizes: tuple[int, ...] = (2048, 4096),
                 algorithms: tuple[str, ...] = ("funnelrag", "longrag"),
                 links: LinkConfig = LinkConfig()) -> CorpusStats:
    """Compute (and cache the inputs of) the statistics `corpus-stats` prints."""
    sizes = [doc_tokens(doc) for doc in corpus.documents]
    graph = link_graph(corpus, links)
    sources: dict[str, int] = {}
    for doc in corpus.documents:
        for source in doc.sources:
            sources[source] = sources.get(source, 0) + 1
    found = []
    for algorithm in algorithms:
        for max_tokens in cluster_sizes:
            result = clustering(corpus, algorithm, max_tokens, links)
            totals = np.array([sum(sizes[d] for d in c) for c in result.clusters])
            found.append(ClusterStats(
                algorithm, max_tokens, len(result.clusters),
                sum(len(c) == 1 for c in result.clusters), round(float(totals.mean()), 1),
                int(totals.max()), cluster_size_histogram(result, sizes, HISTOGRAM_EDGES),
            ))
    return CorpusStats(corpus.name, len(corpus), int(sum(sizes)), sources,
                       graph.edge_counts(), int((graph.degree == 0).sum()), found)
