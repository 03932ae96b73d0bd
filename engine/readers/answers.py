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


CUT_MARK = "…"  # shown after an answer the token cap cut (never part of the answer scored)
_WHOLE_END = ".!?)]}\"'”’%"  # an answer ending in one of these ends at a whole word
_DANGLING = " \t,;:-–—(/&+"  # what a cut answer may be left ending in, dropped


def short_answer_of(text: str, at_cap: bool) -> tuple[str, bool]:
    """The short answer of what a reader said (`short_answer`), and whether the token cap
    cut it: the generation reached its cap (`at_cap`) and nothing ended the answer before
    (a line break after it did). A cut answer ends at its last whole word (`at_word`)."""
    answer = short_answer(text)
    if not at_cap or not answer or not text.rstrip().endswith(answer):
        return answer, False
    return at_word(answer, whole=text[-1:].isspace()), True


def at_word(answer: str, whole: bool = False) -> str:
    """A short answer the token cap cut, ended at its last whole word: the cap may have
    split the last word ("director Akira Kuro" -> "director Akira"), so the text after its
    last space goes unless it ends in a mark that closes a word ("1998.", "(film)") or
    `whole` says the cap fell after a space; a comma, colon or dash left dangling goes too.
    An answer of one word (nothing to fall back on) is kept whole."""
    answer = answer.rstrip()
    if not whole and answer[-1:] not in _WHOLE_END and len(answer.split()) > 1:
        answer = answer.rsplit(maxsplit=1)[0]
    return answer.rstrip(_DANGLING) or answer


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
