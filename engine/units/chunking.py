"""Sentence-aware chunking into passages, the same splitter for early and later chunking.

Early chunking splits the whole corpus up front (the flat paradigm's passages); later
chunking splits only the documents that survive pre-ranking (FunnelRAG). Both call
`Chunker.split`, so a passage id `doc_id#n` names the same text whichever made it.

Passages hold whole sentences, at most `max_tokens` tokens (counted as in engine.text);
a sentence longer than that is cut at token boundaries. With `overlap > 0` a passage starts
with the trailing sentences of the previous one, up to `overlap` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.documents import Document, Passage
from engine.errors import check_range
from engine.text import split_sentences, token_spans


@dataclass(frozen=True)
class Chunker:
    """Splits documents into passages of at most `max_tokens` tokens."""

    max_tokens: int = 100
    overlap: int = 0

    def __post_init__(self) -> None:
        check_range("max_tokens", self.max_tokens, 8, 100_000)
        check_range("overlap", self.overlap, 0, self.max_tokens // 2)

    def split(self, doc: Document) -> tuple[Passage, ...]:
        """Passages of `doc`, in order, with ids `doc.id#0`, `doc.id#1`, ..."""
        pieces = self._pieces(doc.text)
        groups = self._pack(pieces)
        return tuple(
            Passage(
                id=f"{doc.id}#{n}", doc_id=doc.id, n=n,
                start=group[0][0], end=group[-1][1],
                text=doc.text[group[0][0]:group[-1][1]],
                n_tokens=sum(p[2] for p in group),
            )
            for n, group in enumerate(groups)
        )

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The character span (start, end) of each passage of `text`, in order: what
        `split` makes, without the passages."""
        return [(group[0][0], group[-1][1]) for group in self._pack(self._pieces(text))]

    def _pieces(self, text: str) -> list[tuple[int, int, int]]:
        """(start, end, n_tokens) of each sentence, long sentences cut to fit."""
        pieces = []
        for start, end in split_sentences(text):
            spans = [(s + start, e + start) for s, e in token_spans(text[start:end])]
            for i in range(0, len(spans), self.max_tokens):
                window = spans[i:i + self.max_tokens]
                pieces.append((window[0][0], window[-1][1], len(window)))
        return pieces

    def _pack(self, pieces: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
        groups: list[list[tuple[int, int, int]]] = []
        current: list[tuple[int, int, int]] = []
        size = 0
        for piece in pieces:
            if current and size + piece[2] > self.max_tokens:
                groups.append(current)
                current = self._overlap_tail(current, budget=self.max_tokens - piece[2])
                size = sum(p[2] for p in current)
            current.append(piece)
            size += piece[2]
        if current:
            groups.append(current)
        return groups

    def _overlap_tail(self, group: list[tuple[int, int, int]], budget: int) -> list:
        """Trailing pieces of `group` worth at most `overlap` tokens that leave room."""
        tail: list[tuple[int, int, int]] = []
        size = 0
        for piece in reversed(group[1:]):  # never repeat a whole passage
            if size + piece[2] > min(self.overlap, budget):
                break
            tail.insert(0, piece)
            size += piece[2]
        return tail
