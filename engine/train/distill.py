"""FunnelRAG's local-to-global distillation (Sec. 3.2), as pure functions.

The post-ranker's passage scores are aggregated into document scores, the top documents
plus the gold-hit ones become positives, and the pre-ranker learns from them with the
pairwise BPR loss. Not yet used in training: the reader's scores must first be good
enough to teach from (docs/benchmarks/diagnosis.md, "Attention against leave-one-out
attribution").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from engine.errors import ConfigError

if TYPE_CHECKING:
    import torch


def document_scores_from_passages(passage_scores: Mapping[str, Sequence[float]],
                                  a: float = 0.5) -> dict[str, float]:
    """Document score = a * max + (1 - a) * mean of its passages' post-ranking scores.

    Documents without passages are left out. Raises ConfigError unless 0 <= a <= 1.
    """
    if not 0.0 <= a <= 1.0:
        raise ConfigError(f"a={a!r} is out of range; allowed: 0 to 1.")
    return {doc: a * max(s) + (1 - a) * sum(s) / len(s)
            for doc, s in passage_scores.items() if len(s)}


def l2g_pairs(doc_scores: Mapping[str, float], top_k: int,
              gold_doc_ids: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(positives, negatives): the top-`top_k` documents by score plus every gold document
    among the scored ones are positives; the rest are negatives. Both lists are best first
    (ties keep the input order)."""
    ranked = sorted(doc_scores, key=lambda d: -doc_scores[d])
    positive = set(ranked[:max(0, top_k)]) | (set(gold_doc_ids) & set(doc_scores))
    return ([d for d in ranked if d in positive], [d for d in ranked if d not in positive])


def bpr_loss(pos_scores: torch.Tensor, neg_scores: torch.Tensor) -> torch.Tensor:
    """Pairwise BPR loss: mean of -log(sigmoid(pos - neg)) over aligned (or broadcast) pairs.

    Computed as softplus(neg - pos), which equals -log(sigmoid(pos - neg)) without overflow.
    """
    import torch

    return torch.nn.functional.softplus(neg_scores - pos_scores).mean()
