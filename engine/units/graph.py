"""The document link graph that clustering walks.

Edges come from hyperlinks when a corpus provides them (`Document.links`, by id or title)
and otherwise from title mentions: document A links to B when A's text contains B's title
as whole words. Mentions are matched on word tokens, case-sensitively (titles are mostly
proper nouns; "Water" the article should not match every "water"), longest title first, with
a trailing "(disambiguation)" stripped. Titles that mean little are skipped: shorter than
`min_title_chars`, a stopword, ambiguous (two documents share the surface form and none is
titled exactly so), or mentioned by more than `max_doc_freq` of all documents.

Each edge keeps its source so the UI and `corpus-stats` can tell them apart. Algorithms see
the graph as undirected (`adjacency`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cache import load_or_build
from engine.documents import Corpus
from engine.progress import LoggedProgress
from engine.text import WORD_RE

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

logger = logging.getLogger(__name__)

EDGE_SOURCES = ("hyperlink", "title_mention")
GRAPH_VERSION = 1
_PAREN_RE = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class LinkConfig:
    """How links are found; part of every cache key built on the graph."""

    hyperlinks: bool = True
    title_mentions: bool = True
    min_title_chars: int = 4
    max_title_words: int = 10
    max_doc_freq: float = 0.01  # share of documents; floor below keeps small corpora linked
    max_doc_freq_floor: int = 20


@dataclass(frozen=True)
class LinkGraph:
    """Directed edges `src -> dst` between document indexes, each with its source."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    source: np.ndarray  # index into EDGE_SOURCES

    @cached_property
    def adjacency(self) -> csr_matrix:
        """Symmetric 0/1 adjacency without self-loops (float32 CSR, sorted indices)."""
        from scipy.sparse import coo_matrix

        keep = self.src != self.dst
        rows = np.concatenate([self.src[keep], self.dst[keep]])
        cols = np.concatenate([self.dst[keep], self.src[keep]])
        matrix = coo_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                            shape=(self.n, self.n)).tocsr()
        matrix.data[:] = 1.0  # duplicates were summed
        matrix.sort_indices()
        return matrix

    @cached_property
    def neighbor_sets(self) -> list[set[int]]:
        """Each node's neighbours as a Python set, for fast set algebra in traversals."""
        adj = self.adjacency
        indices, indptr = adj.indices.tolist(), adj.indptr.tolist()
        return [set(indices[a:b]) for a, b in zip(indptr, indptr[1:], strict=False)]

    def neighbors(self, i: int) -> np.ndarray:
        adj = self.adjacency
        return adj.indices[adj.indptr[i]:adj.indptr[i + 1]]

    @cached_property
    def degree(self) -> np.ndarray:
        return np.diff(self.adjacency.indptr)

    def edge_counts(self) -> dict[str, int]:
        """Number of directed edges per source."""
        counts = np.bincount(self.source, minlength=len(EDGE_SOURCES))
        return {name: int(counts[i]) for i, name in enumerate(EDGE_SOURCES)}

    def save(self, folder: Path) -> None:
        np.savez(folder / "edges.npz", src=self.src, dst=self.dst, source=self.source)
        (folder / "graph.json").write_text(json.dumps({"n": self.n}))

    @classmethod
    def load(cls, folder: Path) -> LinkGraph:
        n = json.loads((folder / "graph.json").read_text())["n"]
        with np.load(folder / "edges.npz") as arrays:
            return cls(n, arrays["src"], arrays["dst"], arrays["source"])


def link_graph(corpus: Corpus, config: LinkConfig = LinkConfig()) -> LinkGraph:
    """The cached link graph of `corpus` (built on first use)."""
    key = {"corpus": corpus.fingerprint, "config": asdict(config), "version": GRAPH_VERSION}
    return load_or_build("graph", key, lambda folder: build_link_graph(corpus, config)
                         .save(folder), LinkGraph.load)


def build_link_graph(corpus: Corpus, config: LinkConfig = LinkConfig()) -> LinkGraph:
    """Find every edge of `corpus` (no cache)."""
    edges: set[tuple[int, int, int]] = set()
    if config.hyperlinks:
        edges |= {(s, d, 0) for s, d in _hyperlink_edges(corpus)}
    if config.title_mentions:
        linked = {(s, d) for s, d, _ in edges}
        edges |= {(s, d, 1) for s, d in _mention_edges(corpus, config) if (s, d) not in linked}
    ordered = sorted(edges)
    arr = np.array(ordered, dtype=np.int64).reshape(-1, 3)
    graph = LinkGraph(len(corpus), arr[:, 0].astype(np.int32), arr[:, 1].astype(np.int32),
                      arr[:, 2].astype(np.int8))
    logger.info("link graph of %s: %s", corpus.name, graph.edge_counts())
    return graph


def _hyperlink_edges(corpus: Corpus) -> set[tuple[int, int]]:
    by_title = {doc.title: i for i, doc in enumerate(corpus.documents)}
    edges, unresolved = set(), 0
    for i, doc in enumerate(corpus.documents):
        for target in doc.links:
            j = corpus.index_of.get(target, by_title.get(target))
            if j is None:
                unresolved += 1
            elif j != i:
                edges.add((i, j))
    if unresolved:
        logger.info("%d hyperlinks point outside the corpus and were skipped", unresolved)
    return edges


def title_surface(title: str) -> str:
    """The form a title is mentioned by: "Mercury (planet)" -> "Mercury"."""
    return _PAREN_RE.sub("", title).strip()


def _surface_table(corpus: Corpus, config: LinkConfig) -> dict[tuple[str, ...], int]:
    """Word tuple of each usable title surface -> the document it names."""
    from bm25s.stopwords import STOPWORDS_EN

    stop = set(STOPWORDS_EN)
    claims: dict[tuple[str, ...], list[int]] = {}
    for i, doc in enumerate(corpus.documents):
        surface = title_surface(doc.title)
        words = tuple(WORD_RE.findall(surface))
        if (len(surface) < config.min_title_chars or surface.lower() in stop or not words
                or len(words) > config.max_title_words):
            continue
        claims.setdefault(words, []).append(i)
    table = {}
    for words, docs in claims.items():
        exact = [i for i in docs if corpus.documents[i].title == " ".join(words)]
        if len(docs) == 1 or len(exact) == 1:
            table[words] = docs[0] if len(docs) == 1 else exact[0]
    return table


def _mention_edges(corpus: Corpus, config: LinkConfig) -> set[tuple[int, int]]:
    table = _surface_table(corpus, config)
    lengths: dict[str, set[int]] = {}
    for words in table:
        lengths.setdefault(words[0], set()).add(len(words))
    by_first = {first: sorted(found, reverse=True) for first, found in lengths.items()}
    mentions: list[set[tuple[str, ...]]] = []
    progress = LoggedProgress(logger, "Links: title mentions", "documents")  # not a bar
    for done, doc in enumerate(corpus.documents, start=1):
        mentions.append(_find_mentions(WORD_RE.findall(doc.text), by_first, table))
        progress(done, len(corpus.documents))
    doc_freq = Counter(words for found in mentions for words in found)
    cap = max(config.max_doc_freq * len(corpus), config.max_doc_freq_floor)
    common = {words for words, df in doc_freq.items() if df > cap}
    if common:
        logger.info("%d titles mentioned by more than %d documents skipped, e.g. %s",
                    len(common), cap, sorted(" ".join(w) for w in common)[:5])
    return {(i, table[words]) for i, found in enumerate(mentions) for words in found
            if words not in common and table[words] != i}


def _find_mentions(tokens: list[str], by_first: dict[str, list[int]],
                   titles: dict[tuple[str, ...], int]) -> set[tuple[str, ...]]:
    """Title word tuples occurring in `tokens`, longest match first, non-overlapping.

    `by_first` maps a first word to the lengths of the titles starting with it (longest
    first), so each position costs a few set lookups however many titles share a word.
    """
    found, i = set(), 0
    while i < len(tokens):
        step = 1
        for length in by_first.get(tokens[i], ()):
            words = tuple(tokens[i:i + length])
            if words in titles:
                found.add(words)
                step = length
                break
        i += step
    return found
