"""Training pairs of DR-RAG's selection classifier, and how its held-out pairs are scored.

For each question, C(q, d*, d*) over ordered pairs of its distinct supporting paragraphs is
positive; negatives C(q, d*, d-) (either order) and C(q, d-, d-), half each, sampled 1:1
with the positives, seeded. Annotated labels join them unless they are on a held-out or
dev500 question (`usable_labels`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations

from engine.paths import shared_data_dir
from engine.train.preranker_pairs import QuestionGroup


@dataclass(frozen=True)
class PairExample:
    """C(query, first, second) = label; texts are "title\\ntext"."""

    query: str
    first: str
    second: str
    label: int
    source: str = "gold"  # "gold" (from a dataset's supporting flags) or "human"


def question_pairs(group: QuestionGroup, rng: random.Random) -> list[PairExample]:
    """One question's positives and as many negatives, half with one supporting paragraph."""
    gold = [text for _, text, positive in group.paragraphs if positive]
    other = [text for _, text, positive in group.paragraphs if not positive]
    positives = [PairExample(group.query, a, b, 1) for a, b in permutations(gold, 2)]
    mixed = [(a, b) for a in gold for b in other] + [(b, a) for a in gold for b in other]
    plain = list(permutations(other, 2))
    n_mixed = min(len(mixed), math.ceil(len(positives) / 2))
    n_plain = min(len(plain), len(positives) - n_mixed)
    negatives = rng.sample(mixed, n_mixed) + rng.sample(plain, n_plain)
    return positives + [PairExample(group.query, a, b, 0) for a, b in negatives]


def dataset_pairs(groups: Sequence[QuestionGroup], seed: int) -> list[PairExample]:
    rng = random.Random(seed)
    return [pair for group in groups for pair in question_pairs(group, rng)]


# --- metrics and the threshold ------------------------------------------------------------


def pair_metrics(probs: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    """Accuracy, precision, recall and F1 of "P >= threshold" against `labels`."""
    tp = sum(p >= threshold and y == 1 for p, y in zip(probs, labels, strict=True))
    fp = sum(p >= threshold and y == 0 for p, y in zip(probs, labels, strict=True))
    fn = sum(p < threshold and y == 1 for p, y in zip(probs, labels, strict=True))
    correct = sum((p >= threshold) == (y == 1) for p, y in zip(probs, labels, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": round(correct / max(1, len(labels)), 4),
            "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "pairs": len(labels)}


def choose_threshold(probs: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold with the best accuracy on these pairs (ties: the one nearest 0.5)."""
    candidates = sorted({round(p, 4) for p in probs} | {0.5})
    return max(candidates, key=lambda t: (pair_metrics(probs, labels, t)["accuracy"],
                                          -abs(t - 0.5)))


def roc_auc(probs: Sequence[float], labels: Sequence[int]) -> float:
    """P(a positive pair scores above a negative one), ties counting half."""
    positives = [p for p, y in zip(probs, labels, strict=True) if y == 1]
    negatives = [p for p, y in zip(probs, labels, strict=True) if y == 0]
    if not positives or not negatives:
        return 0.5
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def _key(question: str) -> str:
    return " ".join(question.lower().split())


def usable_labels(labels: Sequence[PairExample], held_out: Sequence[QuestionGroup],
                  ) -> tuple[list[PairExample], int]:
    """(labels to train on, how many were set aside): none on a held-out or dev500
    question, so held-out figures stay comparable and evaluation stays clean."""
    from engine.data.loaders import read_dataset
    from engine.train.preranker_pairs import DEV_SOURCE

    banned = {_key(g.query) for g in held_out}
    dev = shared_data_dir() / DEV_SOURCE
    if dev.exists():
        banned |= {_key(q.text) for q in read_dataset(dev).questions}
    kept = [x for x in labels if _key(x.query) not in banned]
    return kept, len(labels) - len(kept)
