"""Extractive summarisation before the reader, as in the best-practices pipeline (Recomp's
extractive compressor, with the bi-encoder as the sentence scorer).

Every sentence of the ranked passages is scored by its cosine to the question; the best
ones are kept until a token budget is spent. Each passage keeps its kept sentences in
their original order, and a passage with none left is dropped, so the reader reads fewer
tokens in the passages' own order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from engine.documents import Candidate
from engine.errors import check_range
from engine.stages.base import Stage, StageOutput
from engine.text import count_tokens, split_sentences
from engine.trace_details import StageDetails, WeighedSentence

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class ExtractiveSummariser(Stage):
    """Keep the sentences closest to the question, up to `max_tokens` in all."""

    name = "summary"
    granularity = "passages"

    def __init__(self, encoder: SentenceTransformer, model: str = "minilm",
                 max_tokens: int = 200) -> None:
        """`encoder` (the bi-encoder named `model`, loaded) scores the sentences."""
        check_range("max_tokens", max_tokens, 1, 100_000)
        self.encoder, self.model, self.max_tokens = encoder, model, max_tokens

    def settings(self) -> dict:
        return {"max_tokens": self.max_tokens, "sentence_scorer": self.model}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The compressed `candidates` (input order); `k` is unused."""
        from engine.index.dense import encode_with

        sentences = [(i, a, b) for i, c in enumerate(candidates)
                     for a, b in split_sentences(c.unit.text)]
        if not sentences:
            return StageOutput(())
        texts = [candidates[i].unit.text[a:b] for i, a, b in sentences]
        cosines = encode_with(self.encoder, texts) @ encode_with(self.encoder, [query],
                                                                 queries=True)[0]
        kept, used = set(), 0
        for s in np.argsort(-cosines, kind="stable"):
            size = count_tokens(texts[s])
            if used + size > self.max_tokens and kept:
                continue  # a shorter sentence further down may still fit
            kept.add(int(s))
            used += size
        out = []
        for i, cand in enumerate(candidates):
            mine = [s for s, (j, _, _) in enumerate(sentences) if j == i and s in kept]
            if mine:
                text = " ".join(texts[s] for s in mine)
                out.append(replace(cand, unit=replace(cand.unit, text=text), rank=len(out) + 1))
        before = sum(count_tokens(c.unit.text) for c in candidates)
        return StageOutput(tuple(out), StageDetails(
            note=f"{len(kept)} of {len(sentences)} sentences kept: {used:,} of {before:,} "
                 f"tokens (budget {self.max_tokens:,})",
            tokens=used, tokens_in=before,
            sentences=tuple(WeighedSentence(candidates[i].unit.id, texts[s],
                                            round(float(cosines[s]), 4), s in kept)
                            for s, (i, _, _) in enumerate(sentences))))
