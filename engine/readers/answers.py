"""Answer extraction from what a small reader says, and the loop guard for greedy decoding."""

from __future__ import annotations

import re
from collections.abc import Sequence

_PREAMBLE_RE = re.compile(r"^\s*(?:(?:so,?\s+)?the\s+(?:final\s+|short\s+)?answer\s+is\s*:?"
                          r"|answer\s*:|a\s*:)\s*", re.IGNORECASE)


def short_answer(text: str) -> str:
    """The answer a reader gave, without its leading "The answer is:", "Answer:" or "A:"
    (however many: "The answer is:\nA:"), and its first non-empty line only (the small
    reader tends to repeat itself after a line break)."""
    text = text.strip()
    while (bare := _PREAMBLE_RE.sub("", text, count=1)) != text:
        text = bare
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


_YES_NO_RE = re.compile(r"^\s*(are|is|was|were|do|does|did|can|could|has|have|had|will|"
                        r"would|should|shall|may|might|must)\b", re.IGNORECASE)
YES_NO = ("yes", "no")


def is_yes_no_question(question: str) -> bool:
    """Whether the question asks for yes or no ("Are both ...?", "Did ...?")."""
    return bool(_YES_NO_RE.match(question))


LOOP_NGRAM = 3


def repeats_tail(tokens: Sequence[int], n: int = LOOP_NGRAM) -> bool:
    """Whether the last `n` tokens already occurred, in order, earlier in `tokens`: greedy
    decoding by a small reader that starts repeating itself never stops on its own."""
    if len(tokens) < 2 * n:
        return False
    tail = list(tokens[-n:])
    return any(list(tokens[i:i + n]) == tail for i in range(len(tokens) - 2 * n + 1))
