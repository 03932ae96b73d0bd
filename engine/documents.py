"""Documents and what is made of them (passages, units, candidates), questions, datasets and
corpora: the records every layer passes around, small, immutable and JSON-friendly.

Lineage is explicit: a passage knows its document and character span, a unit (cluster,
document or passage as a retrieval unit) knows the documents it is made of.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property


@dataclass(frozen=True)
class Document:
    """One corpus document. `id` is stable and never contains whitespace-only text."""

    id: str
    title: str
    text: str
    sources: tuple[str, ...] = ()
    links: tuple[str, ...] = ()  # hyperlink targets (ids or titles) given by the corpus itself


@dataclass(frozen=True)
class Passage:
    """A chunk of a document: `text == document.text[start:end]`, id `doc_id#n`."""

    id: str
    doc_id: str
    n: int
    start: int
    end: int
    text: str
    n_tokens: int


@dataclass(frozen=True)
class Unit:
    """A retrieval unit at some granularity, with the documents it is made of."""

    id: str
    title: str
    text: str
    doc_ids: tuple[str, ...]
    granularity: str  # "clusters" | "documents" | "passages"
    span: tuple[int, int] | None = None  # passages: character span in their document


@dataclass(frozen=True)
class Candidate:
    """A ranked retrieval result; `parents` are the coarser units it came from
    (e.g. its cluster id, then its document id), coarse to fine."""

    unit: Unit
    score: float
    rank: int
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Question:
    """A QA item: gold answers (aliases included) and gold supporting documents; or a test
    collection's query: graded judgments and, most often, no answers."""

    id: str
    text: str
    answers: tuple[str, ...] = ()
    supporting_titles: tuple[str, ...] = ()
    supporting_paragraph_ids: tuple[str, ...] = ()  # the dataset's own paragraph ids
    # the sentence-level gold where the dataset marks it (HotpotQA's supporting_facts): the
    # supporting sentences' text, which a stage holds when one of its units contains it
    supporting_sentences: tuple[str, ...] = ()
    type: str = ""
    source: str = ""
    # a test collection's judgments, (document id, grade): grade 0 is judged not relevant, a
    # document not named is unjudged; `supporting_titles` holds those of grade 1 or more
    judgments: tuple[tuple[str, int], ...] = ()
    # the corpus document this query is (ArguAna's queries are its documents: same id, same
    # text): its runs leave it out of every cut and its measures out of every ranking, as
    # BEIR does (ignore_identical_ids); "" for any other question
    own_document: str = ""

    @property
    def grades(self) -> dict[str, int]:
        """{document id: grade} of every judged document: a collection's judgments, or a QA
        file's supporting documents, each of grade 1."""
        if self.judgments:
            return dict(self.judgments)
        return dict.fromkeys(self.supporting_titles, 1)

    @property
    def judged_only(self) -> bool:
        """A test collection's query: judged documents, no answer to find."""
        return bool(self.judgments) and not self.answers


def question_from_dict(d: dict) -> Question:
    """A Question from its `asdict` form (JSON lists back to tuples)."""
    d = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
    if d.get("judgments"):
        d["judgments"] = tuple((str(doc), int(grade)) for doc, grade in d["judgments"])
    return Question(**d)


def judged_question(qid: str, text: str, grades: dict[str, int], source: str,
                    own_document: str = "") -> Question:
    """A test collection's query with its judgments (`with_judgments`); `own_document`: the
    corpus document it is, if any."""
    return with_judgments(Question(qid, text, source=source, own_document=own_document),
                          grades)


def with_judgments(question: Question, grades: dict[str, int]) -> Question:
    """`question` judged by `grades` ({document id: grade}): the judgments kept, those of
    grade 1 or more its supporting documents."""
    return replace(question, judgments=tuple(grades.items()),
                   supporting_titles=tuple(d for d, g in grades.items() if g >= 1))


def unanswered(questions: Iterable[Question]) -> bool:
    """No question has an answer (a test collection's, judged only): their runs stop
    before the reader, which would have nothing to be measured against."""
    return not any(q.answers for q in questions)


@dataclass(frozen=True)
class Dataset:
    """Questions plus the documents a QA file ships with (may be empty, e.g. NQ-open)."""

    name: str
    format: str
    questions: tuple[Question, ...]
    documents: tuple[Document, ...]
    split: str = ""  # a test collection's (test, dev, train)


@dataclass(frozen=True)
class Corpus:
    """An ordered collection of documents with unique ids."""

    name: str
    documents: tuple[Document, ...] = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.by_id) != len(self.documents):
            seen: set[str] = set()
            dup = next(d.id for d in self.documents if d.id in seen or seen.add(d.id))
            raise ValueError(f"Corpus {self.name!r} has duplicate document id {dup!r}")

    def __len__(self) -> int:
        return len(self.documents)

    @cached_property
    def by_id(self) -> dict[str, Document]:
        return {doc.id: doc for doc in self.documents}

    @cached_property
    def index_of(self) -> dict[str, int]:
        return {doc.id: i for i, doc in enumerate(self.documents)}

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over every document's id, title, text and links, in order."""
        digest = hashlib.sha256()
        for doc in self.documents:
            for part in (doc.id, doc.title, doc.text, "\x1f".join(doc.links)):
                digest.update(part.encode("utf-8"))
                digest.update(b"\x1e")
        return digest.hexdigest()
