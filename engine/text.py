"""Token counting and sentence splitting, shared by every stage that sizes text.

Tokens are counted as words and punctuation marks (`\\w+` runs and single non-space
symbols), not with a model tokenizer: it is fast, model-independent and stable, so budgets
such as the cluster size S mean the same thing for every reader. Measured on 2,000 pooled-
corpus documents (bench/token_ratio.py): one token counted here is 1.22 SmolLM2 tokens,
1.10 MiniLM tokens and 0.83 whitespace-separated words.

The sentence splitter is rule-based on purpose (no model download): it splits after `.`,
`!` or `?` (plus closing quotes/brackets) followed by whitespace and an upper-case letter,
digit or opening quote, except after common abbreviations and single-letter initials, and
always at blank lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
WORD_RE = re.compile(r"\w+")

_BOUNDARY_RE = re.compile(r"[.!?][\"')\]»”’]*\s+(?=[\"'(\[«“‘]?[A-Z0-9À-Ý])|\n\s*\n")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e no nos fig figs inc ltd co corp mt ft gen col "
    "lt sgt capt rev hon sen rep gov pres jan feb mar apr jun jul aug sep sept oct nov dec "
    "approx ca cf al u.s u.k u.n d.c op vol ed eds pp ch".split()
)


def count_tokens(text: str) -> int:
    """Number of word and punctuation tokens in `text` (see module docstring)."""
    return len(TOKEN_RE.findall(text))


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the tokens of `text`."""
    return [m.span() for m in TOKEN_RE.finditer(text)]


def clip_tokens(text: str, max_tokens: int) -> str:
    """`text` up to the end of its `max_tokens`-th token (all of it when shorter)."""
    for n, match in enumerate(TOKEN_RE.finditer(text), start=1):
        if n == max_tokens:
            return text[: match.end()]
    return text


def _is_abbreviation(text: str, dot: int) -> bool:
    """True if the `.` at position `dot` ends an abbreviation or an initial, not a sentence."""
    if text[dot] != ".":
        return False
    start = dot
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "(\"'[":
        start -= 1
    word = text[start:dot].lower()
    if len(word) == 1 and word.isalpha():  # an initial, as in "J. R. R. Tolkien"
        return True
    return word in _ABBREVIATIONS


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of `text`, whitespace trimmed, in order."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY_RE.finditer(text):
        paragraph_break = match.group().count("\n") >= 2
        if not paragraph_break and _is_abbreviation(text, match.start()):
            continue
        end = match.start() + len(match.group().rstrip())
        spans.append((start, end))
        start = match.end()
    spans.append((start, len(text)))
    return [_trim(text, s, e) for s, e in spans if text[s:e].strip()]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --- snippets ---------------------------------------------------------------------------------

_SNIPPET_STOP = frozenset(
    "the and for was who what which when where how are did does with from that this his her "
    "its their one two also into than then has had have were been being not but they them "
    "she him you your our out all any can through about after over".split())


def query_terms(query: str) -> set[str]:
    """The lower-cased words of `query` worth finding in a text (3+ letters, no stopwords)."""
    return {w for w in WORD_RE.findall(query.lower()) if len(w) > 2} - _SNIPPET_STOP


def snippet(text: str, query: str = "", width: int = 160, phrases: tuple[str, ...] = ()) -> str:
    """A one-line window of at most `width` characters of `text`, placed where the query's
    words (and any `phrases`, e.g. gold answers) occur most densely: a query-biased summary,
    so a long cluster shows the part that matched, not its first document. '…' marks cuts.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    patterns = [rf"\b{re.escape(w)}" for w in query_terms(query)]
    patterns += [re.escape(p) for p in phrases if p.strip()]
    hits = sorted(m.start() for p in patterns for m in re.finditer(p, flat, re.IGNORECASE))
    start = 0
    if hits:
        lead = width // 6  # a little context before the first hit of the window
        # the hit that opens the window holding the most hits
        i = max(range(len(hits)), key=lambda i: bisect_left(hits, hits[i] + width - lead) - i)
        start = max(0, hits[i] - lead)
        start = flat.rfind(" ", 0, start) + 1 if start else 0  # whole words only
    end = start + width - 2
    if end < len(flat):
        end = max(flat.rfind(" ", start, end), start + width // 2)
    piece = flat[start:end].strip()
    return ("… " if start else "") + piece + (" …" if end < len(flat) else "")


def question_key(text: str) -> str:
    """A question as matched across sources (a trace, a QA file, a label): case and
    spacing aside."""
    return " ".join(text.casefold().split())
