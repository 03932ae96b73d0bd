"""Unit sequences that make each unit when it is read.

A corpus's documents and passages as retrieval units are a view of the corpus, not a copy:
a tuple of a million `Unit` objects, each passage holding a copy of its text and its id,
took 1.1 GB beside the 1.1 GB corpus at 1.66M passages. `PassageUnits` holds one row of
integers per passage (its document, and the character span the chunker found) and slices
the text out of the document when the unit is read; `DocumentUnits` wraps the documents.
Both read like the tuple they replace: `len`, indexing, slicing, iteration, equality, and
`row_of` for an id's position without a dictionary of every id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np

from engine.documents import Document, Unit


class LazyUnits(Sequence[Unit]):
    """Units made on reading; subclasses say how many there are and how one is made."""

    documents: Sequence[Document]

    def _unit(self, row: int) -> Unit:
        raise NotImplementedError

    def position(self, unit_id: str) -> int | None:
        """The row of the unit with this id, or None."""
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Unit: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Unit, ...]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._unit(row) for row in range(*i.indices(len(self))))
        row = int(i)
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"unit {i} of {len(self)}")
        return self._unit(row)

    def __iter__(self) -> Iterator[Unit]:
        return (self._unit(row) for row in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                      strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a tuple, so not hashable as one

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} units)"

    @property
    def row_of(self) -> Mapping[str, int]:
        """Each unit id's row, computed on asking rather than held for every unit."""
        return _Rows(self)


class DocumentUnits(LazyUnits):
    """A corpus's documents as units (a unit's text is its document's own string)."""

    def __init__(self, documents: Sequence[Document],
                 index_of: Mapping[str, int] | None = None) -> None:
        self.documents = documents
        self._index_of = index_of

    def __len__(self) -> int:
        return len(self.documents)

    def _unit(self, row: int) -> Unit:
        return document_unit(self.documents[row])

    def position(self, unit_id: str) -> int | None:
        if self._index_of is None:
            self._index_of = {doc.id: i for i, doc in enumerate(self.documents)}
        return self._index_of.get(unit_id)


class PassageUnits(LazyUnits):
    """Passages as (document row, start, end) spans of `documents`: passage n of a document
    has the id `doc_id#n` and the text `doc.text[start:end]`, as `Chunker.split` makes."""

    def __init__(self, documents: Sequence[Document], spans: np.ndarray,
                 index_of: Mapping[str, int] | None = None) -> None:
        """`spans`: int array (passages, 3) of document row, start and end, in document
        order, a document's passages in order."""
        spans = np.asarray(spans)
        if spans.ndim != 2 or spans.shape[1] != 3:
            raise ValueError(f"passage spans must have shape (n, 3), not {spans.shape}")
        self.documents = documents
        self.spans = spans
        self._index_of = index_of
        # each document's first passage row: passage n of document d is row first[d] + n
        self._first = np.searchsorted(spans[:, 0], np.arange(len(documents) + 1))

    def __len__(self) -> int:
        return len(self.spans)

    def _unit(self, row: int) -> Unit:
        d, start, end = (int(x) for x in self.spans[row])
        doc = self.documents[d]
        return Unit(id=f"{doc.id}#{row - int(self._first[d])}", title=doc.title,
                    text=doc.text[start:end], doc_ids=(doc.id,), granularity="passages",
                    span=(start, end))

    def position(self, unit_id: str) -> int | None:
        doc_id, _, n = unit_id.rpartition("#")
        if not doc_id or not n.isdigit():
            return None
        if self._index_of is None:
            self._index_of = {doc.id: i for i, doc in enumerate(self.documents)}
        d = self._index_of.get(doc_id)
        if d is None or int(n) >= self._first[d + 1] - self._first[d]:
            return None
        return int(self._first[d]) + int(n)


def document_unit(doc: Document) -> Unit:
    """A document as a retrieval unit (its text is the document's own string)."""
    return Unit(id=doc.id, title=doc.title, text=doc.text, doc_ids=(doc.id,),
                granularity="documents")


class _Rows(Mapping[str, int]):
    """`LazyUnits.row_of`: a mapping from unit id to row that holds nothing of its own."""

    def __init__(self, units: LazyUnits) -> None:
        self._units = units

    def __getitem__(self, unit_id: str) -> int:
        row = self._units.position(unit_id)
        if row is None:
            raise KeyError(unit_id)
        return row

    def __contains__(self, unit_id: object) -> bool:
        return isinstance(unit_id, str) and self._units.position(unit_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (unit.id for unit in self._units)

    def __len__(self) -> int:
        return len(self._units)
