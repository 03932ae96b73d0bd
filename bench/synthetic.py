"""Synthetic corpora of any size, made by resampling real sentences.

Each document gets a unique made-up two-word title, 2-6 sentences drawn from the pooled
corpus, and 0-3 sentences mentioning other documents' titles (mostly near neighbours in
index order, some anywhere), so the title-mention graph has local structure like a real
link graph. Deterministic for a given size and seed.

`synthetic_vectors` gives the passages of such a corpus vectors with the structure of real
ones (for measuring an approximate index's recall, where random vectors are the worst case
and no real corpus): each passage's vector mixes the real MiniLM vectors of the pooled
documents its document's sentences came from, plus noise, so passages of one document and
documents sharing sources lie near each other, as in a real embedding space.
"""

from __future__ import annotations

import numpy as np

from engine.data.corpus import load_corpus
from engine.documents import Corpus, Document
from engine.text import split_sentences

_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ar", "en",
                                                         "is", "or", "un")]


def _name(i: int, words: int = 2) -> str:
    parts = []
    for _ in range(words):
        syl = []
        for _ in range(3):
            i, r = divmod(i, len(_SYLLABLES))
            syl.append(_SYLLABLES[r])
        parts.append("".join(syl).capitalize())
    return " ".join(parts)


def real_sentences(owners: list[int] | None = None) -> list[str]:
    """The pooled corpus's sentences (over 20 characters); `owners` gets each one's
    document position."""
    sentences = []
    for position, doc in enumerate(load_corpus("pooled").documents):
        found = [doc.text[a:b] for a, b in split_sentences(doc.text) if b - a > 20]
        sentences.extend(found)
        if owners is not None:
            owners.extend([position] * len(found))
    return sentences


def _plan(n: int, pool: int, seed: int) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 7, size=n)
    return rng, lengths, rng.integers(0, pool, size=int(lengths.sum()))


def synthetic_corpus(n: int, seed: int = 0) -> Corpus:
    """`n` documents of resampled real sentences with title mentions between them."""
    pool = real_sentences()
    rng, lengths, picks = _plan(n, len(pool), seed)
    n_links = rng.integers(0, 4, size=n)
    titles = [_name(i) for i in range(n)]
    documents, cursor = [], 0
    for i in range(n):
        body = [pool[j] for j in picks[cursor:cursor + lengths[i]]]
        cursor += lengths[i]
        for _ in range(n_links[i]):
            near = rng.random() < 0.8
            j = (i + int(rng.integers(1, 200))) % n if near else int(rng.integers(0, n))
            body.insert(int(rng.integers(0, len(body) + 1)), f"It is linked to {titles[j]}.")
        documents.append(Document(id=titles[i], title=titles[i], text=" ".join(body),
                                  sources=("synthetic",)))
    return Corpus(f"synthetic-{n}", tuple(documents))


def synthetic_vectors(corpus: Corpus, passages, dense, seed: int = 0, noise: float = 0.5,
                      batch: int = 65_536):
    """Unit-length float32 vectors for `passages` of `synthetic_corpus(len(corpus), seed)`,
    yielded in slices of `batch` rows: a passage's vector is its document's (the normalised
    sum of the real pooled-corpus document vectors its sentences came from) plus Gaussian
    noise of norm about `noise`. `dense` is the pooled corpus's dense passage index."""
    pooled = load_corpus("pooled")
    owners: list[int] = []
    pool = real_sentences(owners)
    _, lengths, picks = _plan(len(corpus), len(pool), seed)
    rows_doc = np.fromiter((pooled.index_of[u.doc_ids[0]] for u in dense.units), np.int64)
    real = np.zeros((len(pooled), dense.vectors.shape[1]), dtype=np.float32)
    np.add.at(real, rows_doc, dense.vectors)
    real /= np.maximum(np.linalg.norm(real, axis=1, keepdims=True), 1e-12)
    source = np.asarray(owners, dtype=np.int64)[picks]
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    document = np.add.reduceat(real[source], starts, axis=0)
    document /= np.maximum(np.linalg.norm(document, axis=1, keepdims=True), 1e-12)
    of_passage = np.fromiter((corpus.index_of[p.doc_ids[0]] for p in passages), np.int64)
    rng = np.random.default_rng(seed + 1)
    dim = document.shape[1]
    for start in range(0, len(passages), batch):
        rows = document[of_passage[start:start + batch]]
        rows += rng.standard_normal(rows.shape, dtype=np.float32) * (noise / dim ** 0.5)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        yield rows
