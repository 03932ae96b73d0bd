"""Synthetic corpora of any size, made by resampling real sentences.

Each document gets a unique made-up two-word title, 2-6 sentences drawn from the pooled
corpus, and 0-3 sentences mentioning other documents' titles (mostly near neighbours in
index order, some anywhere), so the title-mention graph has local structure like a real
link graph. Deterministic for a given size and seed.
"""

from __future__ import annotations

import numpy as np

from engine.data.corpus import load_corpus
from engine.text import split_sentences
from engine.types import Corpus, Document

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


def real_sentences() -> list[str]:
    sentences = []
    for doc in load_corpus("pooled").documents:
        sentences.extend(doc.text[a:b] for a, b in split_sentences(doc.text) if b - a > 20)
    return sentences


def synthetic_corpus(n: int, seed: int = 0) -> Corpus:
    """`n` documents of resampled real sentences with title mentions between them."""
    rng = np.random.default_rng(seed)
    pool = real_sentences()
    lengths = rng.integers(2, 7, size=n)
    picks = rng.integers(0, len(pool), size=int(lengths.sum()))
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
