"""Extractive summarisation before the reader, as in the best-practices pipeline (Recomp's
extractive compressor, with the bi-encoder as the sentence scorer).

It is the sentence cut (engine.stages.prune) with best's settings: the sentences closest to
the question by cosine, within a token budget, without neighbours; each passage keeps its
kept sentences in their original order, and a passage with none left is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import check_range
from engine.stages.prune import BUDGET, EncoderScorer, PruneConfig, SentencePruner

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class ExtractiveSummariser(SentencePruner):
    """Keep the sentences closest to the question, up to `max_tokens` in all."""

    def __init__(self, encoder: SentenceTransformer, model: str = "minilm",
                 max_tokens: int = 200) -> None:
        """`encoder` (the bi-encoder named `model`, loaded) scores the sentences."""
        check_range("max_tokens", max_tokens, 1, 100_000)
        super().__init__(EncoderScorer(encoder), PruneConfig(BUDGET, neighbours=False),
                         model, name="summary", tokens=max_tokens)

    def settings(self) -> dict:
        return {"max_tokens": self.tokens, "sentence_scorer": self.model}
