"""BM25 (bm25s, Lucene scoring) over the units of one granularity, cached on disk.

Text is lower-cased, split into words of two or more characters, stripped of English
stopwords and Snowball-stemmed (PyStemmer), for documents and queries alike. The cache
holds bm25s' sparse score matrix and the unit ids; unit texts are rebuilt from the corpus.
A large index's matrix is memory-mapped (MMAP_FROM).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cache import load_or_build
from engine.documents import Candidate, Corpus, Unit
from engine.errors import check_range
from engine.index.unit_scores import row_mapping, scores_by_id
from engine.units.build import UnitConfig, build_units, index_text, units_fingerprint

if TYPE_CHECKING:
    import bm25s

logger = logging.getLogger(__name__)

BM25_VERSION = 1
# the wiki corpus's 10,033 documents (917k tokens) indexed in 1.3 s and chunked into
# passages in 1.0 s more, on this machine's 2 cores (issue 67)
BUILD_TOKENS_PER_SECOND = 400_000
MAX_K = 10_000
# from this many units the score matrix is memory-mapped, not read into memory: a query
# touches only its terms' postings (bench/funnel_scale.py, peak memory at 1M documents)
MMAP_FROM = 100_000


def _bm25s():
    """The bm25s package, its logger kept at WARNING: bm25s sets it to DEBUG when imported,
    which puts "Building index from IDs" and the like in the log at any level."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: list[str], show_progress: bool = False, return_ids: bool = False):
    """Lower-cased, stopword-free, stemmed words (the index's analyser).

    With `return_ids` the result is bm25s' `Tokenized(ids, vocab)`, which holds one small
    int per token instead of one string: the form used to build large indexes.
    """
    return _bm25s().tokenize(texts, stopwords="en", stemmer=_stemmer(), return_ids=return_ids,
                          show_progress=show_progress)


@dataclass(frozen=True)
class BM25Index:
    """A searchable BM25 index aligned with `units`."""

    units: tuple[Unit, ...]
    retriever: bm25s.BM25
    stand_in = None  # the real index (declared by every loaded resource: engine.trace_details)

    def _known_tokens(self, query: str) -> list[str]:
        """The query's analysed words that occur in the index (bm25s drops the others)."""
        return [t for t in tokenize([query])[0] if t in self.retriever.vocab_dict]

    def search(self, query: str, k: int = 10) -> list[Candidate]:
        """Top-`k` units for `query` with a positive score, best first."""
        check_range("k", k, 1, MAX_K)
        tokens = self._known_tokens(query)
        if not tokens or not self.units:
            return []
        k = min(k, len(self.units))
        ids, scores = self.retriever.retrieve([tokens], k=k, show_progress=False,
                                              n_threads=1)
        return [Candidate(unit=self.units[int(i)], score=float(s), rank=rank)
                for rank, (i, s) in enumerate(zip(ids[0], scores[0], strict=True), start=1)
                if s > 0]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every unit for `query` (zeros when no query word is known)."""
        tokens = self._known_tokens(query)
        if not tokens:
            return np.zeros(len(self.units), dtype=np.float32)
        return self.retriever.get_scores(tokens)

    @cached_property
    def row_of(self) -> Mapping[str, int]:
        """Each unit id's row in the index."""
        return row_mapping(self.units)

    def score_units(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """The BM25 score of each unit of `ids` for `query`, as `search` scores it (0: no
        query word in it; -inf: a unit the index does not hold): engine.index.unit_scores."""
        return scores_by_id(self.row_of, ids, lambda rows: self.scores(query)[rows])


def build_bm25(units: tuple[Unit, ...], folder: Path) -> None:
    """Index `units` and save the index plus their ids into `folder`."""
    retriever = _bm25s().BM25()
    logger.info("BM25: indexing %d %s", len(units), units[0].granularity if units else "units")
    tokens = tokenize([index_text(u) for u in units], return_ids=True)
    retriever.index(tokens, show_progress=False)  # seconds: a bar would only clutter the log
    retriever.save(folder / "bm25", show_progress=False)
    (folder / "unit_ids.json").write_text(json.dumps([u.id for u in units]), encoding="utf-8")


def load_bm25(units: tuple[Unit, ...], folder: Path, mmap: bool = False) -> BM25Index:
    """Load a saved index, checking that it was built over exactly `units`."""
    ids = json.loads((folder / "unit_ids.json").read_text(encoding="utf-8"))
    if ids != [u.id for u in units]:
        raise ValueError("index unit ids do not match the corpus units")
    retriever = _bm25s().BM25.load(folder / "bm25", mmap=mmap, show_progress=False)
    return BM25Index(units, retriever)


def bm25_index(corpus: Corpus, config: UnitConfig = UnitConfig()) -> BM25Index:
    """The cached BM25 index of `corpus` at `config.granularity` (built on first use)."""
    units = build_units(corpus, config)
    key = _cache_key(corpus, config, units)
    return load_or_build("bm25", key, lambda folder: build_bm25(units, folder),
                         lambda folder: load_bm25(units, folder,
                                                  mmap=len(units) >= MMAP_FROM))


def _cache_key(corpus: Corpus, config: UnitConfig, units: Sequence[Unit]) -> dict:
    return {"corpus": corpus.fingerprint, "units": config.key(),
            "unit_texts": units_fingerprint(units), "version": BM25_VERSION}


def build_seconds(corpus: Corpus, config: UnitConfig = UnitConfig()) -> float:
    """About how long `bm25_index(corpus, config)` takes here: 0 when its cache exists,
    else its units' tokens at BUILD_TOKENS_PER_SECOND (never 0: a build is a build)."""
    from engine.cache import existing_entry
    from engine.text import count_tokens

    units = build_units(corpus, config, keep=False)
    if existing_entry("bm25", _cache_key(corpus, config, units)):
        return 0.0
    return max(sum(count_tokens(index_text(u)) for u in units) / BUILD_TOKENS_PER_SECOND,
               0.1)
