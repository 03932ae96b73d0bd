"""Answer normalisation and recall measures (SQuAD conventions).

`normalize_answer` lower-cases, drops punctuation and the articles a/an/the, and folds
whitespace, as the SQuAD evaluation script does. Answer recall at k (AR@k, LongRAG) asks
whether any normalised gold answer occurs in the normalised concatenation of the top-k
units; like LongRAG, only questions with span answers count (yes/no are reported apart).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

from engine.types import Question

_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES_RE.sub(" ", text).split())


def has_span_answer(question: Question) -> bool:
    """True if the question has a gold answer that is a span (not yes/no, not empty)."""
    return any(normalize_answer(a) not in ("", "yes", "no") for a in question.answers)


def answer_in(texts: Iterable[str], answers: Sequence[str]) -> bool:
    """Whether any normalised answer occurs, on word boundaries, in the joined texts."""
    haystack = f" {normalize_answer(' '.join(texts))} "
    return any(f" {norm} " in haystack for a in answers if (norm := normalize_answer(a)))


def support_recall(doc_ids: Iterable[str], gold_titles: Sequence[str]) -> float:
    """Share of gold supporting documents among `doc_ids` (0 when there is no gold)."""
    if not gold_titles:
        return 0.0
    found = set(doc_ids)
    return sum(t in found for t in gold_titles) / len(gold_titles)
