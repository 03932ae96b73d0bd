"""Passage scores from the reader's first-decoded-token attention (FunnelRAG Eq. 3).

Input everywhere: `attn[layer, head, token]` for one passage, the attention the first
decoded token pays to that passage's tokens (template and question tokens already removed,
so attention sinks do not count). Schemes, named as in FunnelRAG's Table 7:

- `eq3` (default): mean over layers and heads, then the mean of the top-`lr` tokens
  ("representative tokens"); equal to averaging over layers, heads and those tokens.
- `max_layers`: like eq3 per layer, then the max over layers.
- `max_heads`: mean over layers of the max over heads, top-`lr` tokens.
- `max_tokens`: mean over layers and heads, then the single most attended token.
- `last6`: eq3 over the last six layers only.
- `mean_tokens`: mean over layers, heads and all passage tokens (no representative
  tokens; the plain FiD attention score).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from engine.errors import check_choice, check_range

SCHEMES = ("eq3", "max_layers", "max_heads", "max_tokens", "last6", "mean_tokens")


def representative_tokens(attn: np.ndarray, lr: int) -> np.ndarray:
    """Indexes of the `lr` tokens with the highest attention averaged over layers and heads,
    most attended first."""
    per_token = attn.mean(axis=(0, 1))
    lr = min(lr, per_token.shape[0])
    top = np.argpartition(-per_token, lr - 1)[:lr]
    return top[np.argsort(-per_token[top], kind="stable")]


def content_tokens(token: Callable[[int], str], attn: np.ndarray, lr: int) -> list[str]:
    """The `lr` most attended tokens of a passage that carry meaning, most attended first:
    stop words, punctuation and white space are skipped. `token(i)` is the text of the
    passage's i-th token. What the heatmap shows; scores are unchanged."""
    if attn.shape[-1] == 0:
        return []
    shown = []
    for i in np.argsort(-attn.mean(axis=(0, 1)), kind="stable"):
        word = token(int(i)).strip()
        if any(ch.isalnum() for ch in word) and word.lower() not in _stopwords():
            shown.append(word)
            if len(shown) == lr:
                break
    return shown


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


def passage_score(attn: np.ndarray, scheme: str = "eq3", lr: int = 4) -> float:
    """One passage's post-ranking score from `attn[layer, head, token]`."""
    check_choice("aggregation scheme", scheme, SCHEMES)
    check_range("lr", lr, 1, 512)
    if attn.shape[-1] == 0:
        return 0.0
    if scheme == "mean_tokens":
        return float(attn.mean())
    if scheme == "max_tokens":
        return float(attn.mean(axis=(0, 1)).max())
    if scheme == "last6":
        attn = attn[-6:]
    if scheme == "max_layers":
        return float(max(_top_mean(layer[None], lr) for layer in attn))
    if scheme == "max_heads":
        return _top_mean(attn.max(axis=1, keepdims=True), lr)
    return _top_mean(attn, lr)


def _top_mean(attn: np.ndarray, lr: int) -> float:
    per_token = attn.mean(axis=(0, 1))
    return float(per_token[representative_tokens(attn, lr)].mean())


def summary(attn: np.ndarray, lr: int = 4) -> np.ndarray:
    """`[layer, head]` attention of one passage averaged over its representative tokens:
    the cells of the UI heatmap."""
    if attn.shape[-1] == 0:
        return np.zeros(attn.shape[:2], dtype=np.float32)
    return attn[:, :, representative_tokens(attn, lr)].mean(axis=-1)


def best_indexes(scores: list[float], top: int | None) -> tuple[int, ...]:
    """Indexes of the `top` highest scores (all when None), in their original order."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return tuple(sorted(order[: top or len(scores)]))
