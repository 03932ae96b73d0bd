"""Losses for ranking models: listwise softmax over each query's candidates, and pointwise
binary cross-entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from engine.train.preranker_pairs import Pair

def listwise_loss(logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
    """Per query, each positive against that query's negatives: mean over positives of
    -log softmax(positive | {positive} + negatives). Falls back to binary cross-entropy
    when no query in the batch has both a positive and a negative."""
    import torch

    terms = []
    by_query: dict[str, list[int]] = {}
    for i, pair in enumerate(batch):
        by_query.setdefault(pair.query, []).append(i)
    for rows in by_query.values():
        pos = [i for i in rows if batch[i].label > 0.5]
        neg = logits[[i for i in rows if batch[i].label <= 0.5]]
        if pos and len(neg):
            for i in pos:
                terms.append(torch.logsumexp(torch.cat([logits[i:i + 1], neg]), 0) - logits[i])
    return torch.stack(terms).mean() if terms else bce_loss(logits, batch)


def bce_loss(logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
    import torch

    labels = torch.tensor([float(p.label) for p in batch])
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
