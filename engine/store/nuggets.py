"""Nuggets of a question set's questions, and the answers' assignments to them.

A nugget is a short fact (1 to 40 words) a good answer to its question states, drawn from
the passages judged relevant, marked vital (an answer must hold it) or okay (good to hold);
an answer holds it (`support`), in part (`partial_support`) or not (`not_support`): the
TREC 2024 RAG track's labels, kept as the track writes them (engine.judging.nuggets scores
answers by them and reads and writes the track's files).

A nugget is never changed in place, as a judgment is never
overwritten: editing one stores the new text as a new nugget that replaces it, merging
several stores one that replaces them all (its sources theirs together), and removing one
marks it removed. So an assignment made to a nugget before it was edited still names the
text it was made against, and `nuggets` reads the current ones.

An assignment says whether one answer (an evaluation's run of one question by one
paradigm, or an imported pipeline's) holds one nugget: support, partial_support or
not_support, by whom (a person, or "llm:<backend>:<model>"), in how many seconds, with an
LLM judge's reasoning. Two people assigning one pair are both kept; `labels` reads one
assessor's view (each pair's latest), and `undo` takes back an assessor's last one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.store.judgments import MAX_ASSESSOR_CHARS, check_lengths
from engine.store.sessions import SessionStore

IMPORTANCE = ("vital", "okay")
ASSIGNMENTS = ("support", "partial_support", "not_support")  # the keys 2, 1, 0
MAX_NUGGET_WORDS = 40  # the track's nuggets have 1-12 words; a sentence is the most we take


@dataclass(frozen=True)
class Nugget:
    collection: str  # the question set it belongs to, as its evaluations name it
    question_id: str
    text: str
    importance: str  # "vital" or "okay"
    author: str  # a person's name, "gold" for a gold answer, "llm:<backend>:<model>"
    sources: tuple[str, ...] = ()  # the document ids it was drawn from
    id: int = 0  # 0 until stored
    created: str = ""

    def __post_init__(self) -> None:
        words = len(self.text.split())
        if not words:
            raise ConfigError(f"The nugget for question {self.question_id!r} has no text: "
                              "type the fact a good answer states, in a few words.")
        if words > MAX_NUGGET_WORDS:
            raise ConfigError(f"The nugget for question {self.question_id!r} has {words} "
                              f"words; a nugget is one fact of at most {MAX_NUGGET_WORDS} "
                              "words: split it into two.")
        if self.importance not in IMPORTANCE:
            raise ConfigError(f"importance={self.importance!r}: a nugget is vital or okay.")
        for name in ("collection", "question_id", "author"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"A nugget needs its {name.replace('_', ' ')}; it is empty.")
        if len(self.author) > MAX_ASSESSOR_CHARS:
            raise ConfigError(f"The author's name has {len(self.author):,} characters; the "
                              f"limit is {MAX_ASSESSOR_CHARS}.")


def check_assignment(label: str) -> str:
    """`label` if it is one of ASSIGNMENTS; a ConfigError naming the three otherwise."""
    if label not in ASSIGNMENTS:
        raise ConfigError(f"assignment={label!r}: use support (2), partial_support (1) or "
                          "not_support (0).")
    return label


@dataclass(frozen=True)
class Assignment:
    nugget_id: int
    evaluation_id: int
    question_id: str
    paradigm: str  # the run's paradigm (an imported pipeline's name)
    assignment: str  # support, partial_support or not_support
    assessor: str
    seconds: float | None = None
    reasoning: str = ""
    id: int = 0  # 0 until stored
    created: str = ""

    def __post_init__(self) -> None:
        check_assignment(self.assignment)
        for name in ("question_id", "paradigm", "assessor"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"An assignment needs its {name.replace('_', ' ')}; it is "
                                  "empty.")
        check_lengths(self.assessor, self.reasoning)


NUGGET_FIELDS = ("collection", "question_id", "text", "importance", "author", "sources")
ASSIGNMENT_FIELDS = ("nugget_id", "evaluation_id", "question_id", "paradigm", "assignment",
                     "assessor", "seconds", "reasoning")
CURRENT = "replaced_by IS NULL AND NOT removed"


class NuggetStore:
    """The nuggets and nugget_assignments tables of a `SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    # --- nuggets ------------------------------------------------------------------------

    def add(self, nugget: Nugget) -> int:
        (row,) = self.store.execute(_insert("nuggets", NUGGET_FIELDS) + " RETURNING id",
                                    _nugget_values(nugget))
        return int(row[0])

    def add_all(self, nuggets: Iterable[Nugget]) -> int:
        """Store every nugget in one transaction (all or none); returns how many."""
        statements = [(_insert("nuggets", NUGGET_FIELDS), _nugget_values(n)) for n in nuggets]
        self.store.transaction(statements)
        return len(statements)

    def nuggets(self, collection: str, question_id: str | None = None,
                with_replaced: bool = False) -> list[Nugget]:
        """`collection`'s current nuggets (of `question_id` only, if given; with the
        replaced and removed ones too, if `with_replaced`), oldest first."""
        where, params = ["collection = ?"], [collection]
        if question_id is not None:
            where, params = [*where, "question_id = ?"], [*params, question_id]
        if not with_replaced:
            where.append(CURRENT)
        rows = self.store.execute(
            f"SELECT id, {', '.join(NUGGET_FIELDS)}, strftime(created, '%Y-%m-%d %H:%M:%S') "
            f"FROM nuggets WHERE {' AND '.join(where)} ORDER BY id", params)
        return [_nugget(row) for row in rows]

    def nugget(self, nugget_id: int) -> Nugget:
        rows = self.store.execute(
            f"SELECT id, {', '.join(NUGGET_FIELDS)}, strftime(created, '%Y-%m-%d %H:%M:%S') "
            f"FROM nuggets WHERE id = ? AND {CURRENT}", [nugget_id])
        if not rows:
            raise ConfigError(f"No current nugget with id {nugget_id}: it was edited, merged "
                              "or removed, or never stored; the Judge tab lists the current "
                              "ones.")
        return _nugget(rows[0])

    def edit(self, nugget_id: int, author: str, text: str | None = None,
             importance: str | None = None) -> int:
        """Replace nugget `nugget_id` by one with the new text or importance (by `author`);
        returns the new one's id."""
        old = self.nugget(nugget_id)
        new = Nugget(old.collection, old.question_id, old.text if text is None else text,
                     old.importance if importance is None else importance, author,
                     old.sources)
        return self._replace([old], new)

    def merge(self, nugget_ids: Sequence[int], text: str, importance: str,
              author: str) -> int:
        """Replace nuggets `nugget_ids` (two or more, of one question) by one, whose sources
        are theirs together; returns its id."""
        if len(set(nugget_ids)) < 2:
            raise ConfigError(f"Merging needs two nuggets or more; got {list(nugget_ids)}.")
        old = [self.nugget(i) for i in dict.fromkeys(nugget_ids)]
        if len({n.question_id for n in old}) > 1:
            raise ConfigError("Nuggets of different questions cannot be merged: "
                              f"{sorted({n.question_id for n in old})}.")
        if importance not in IMPORTANCE:
            raise ConfigError(f"importance={importance!r}: a nugget is vital or okay.")
        sources = tuple(dict.fromkeys(s for n in old for s in n.sources))
        return self._replace(old, Nugget(old[0].collection, old[0].question_id, text,
                                         importance, author, sources))

    def _replace(self, old: Sequence[Nugget], new: Nugget) -> int:
        """Store `new` and mark `old` replaced by it, all or none."""
        (rows, _) = self.store.transaction([
            (_insert("nuggets", NUGGET_FIELDS) + " RETURNING id", _nugget_values(new)),
            ("UPDATE nuggets SET replaced_by = currval('nugget_ids') "
             "WHERE id IN (SELECT unnest(?))", [[n.id for n in old]])])
        return int(rows[0][0])

    def remove(self, nugget_id: int) -> Nugget:
        """Mark nugget `nugget_id` removed (its assignments are kept); returns it."""
        nugget = self.nugget(nugget_id)
        self.store.execute("UPDATE nuggets SET removed = true WHERE id = ?", [nugget_id])
        return nugget

    # --- assignments --------------------------------------------------------------------

    def assign(self, assignment: Assignment) -> int:
        """Store `assignment`, to a current nugget of the answer's own question."""
        nugget = self.nugget(assignment.nugget_id)
        if nugget.question_id != assignment.question_id:
            raise ConfigError(f"Nugget {nugget.id} belongs to question {nugget.question_id!r}, "
                              f"not to {assignment.question_id!r}: assign the nuggets of the "
                              "answer's own question.")
        (row,) = self.store.execute(
            _insert("nugget_assignments", ASSIGNMENT_FIELDS) + " RETURNING id",
            [getattr(assignment, k) for k in ASSIGNMENT_FIELDS])
        return int(row[0])

    def assignments(self, evaluation_id: int, assessor: str | None = None
                    ) -> list[Assignment]:
        """Every assignment to evaluation `evaluation_id`'s answers (by `assessor` only, if
        given), oldest first."""
        where, params = "evaluation_id = ?", [evaluation_id]
        if assessor is not None:
            where, params = where + " AND assessor = ?", [*params, assessor]
        rows = self.store.execute(
            f"SELECT id, {', '.join(ASSIGNMENT_FIELDS)}, "
            f"strftime(created, '%Y-%m-%d %H:%M:%S') FROM nugget_assignments "
            f"WHERE {where} ORDER BY id", params)
        return [_assignment(row) for row in rows]

    def labels(self, evaluation_id: int, assessor: str | None = None
               ) -> dict[tuple[str, str], dict[int, str]]:
        """{(question id, paradigm): {nugget id: assignment}} of evaluation
        `evaluation_id`: each pair's latest, by `assessor` (by anyone, if None)."""
        found: dict[tuple[str, str], dict[int, str]] = {}
        for a in self.assignments(evaluation_id, assessor):  # oldest first: latest wins
            found.setdefault((a.question_id, a.paradigm), {})[a.nugget_id] = a.assignment
        return found

    def assessors(self, evaluation_id: int) -> dict[str, int]:
        """{assessor: assignments} of evaluation `evaluation_id`, the busiest first."""
        rows = self.store.execute(
            "SELECT assessor, count(*) FROM nugget_assignments WHERE evaluation_id = ? "
            "GROUP BY assessor ORDER BY count(*) DESC, assessor", [evaluation_id])
        return {assessor: int(n) for assessor, n in rows}

    def undo(self, assessor: str, evaluation_id: int) -> Assignment | None:
        """Take back `assessor`'s last assignment in evaluation `evaluation_id` (None: there
        is none)."""
        rows = self.store.execute(
            "DELETE FROM nugget_assignments WHERE id = (SELECT max(id) FROM "
            "nugget_assignments WHERE assessor = ? AND evaluation_id = ?) "
            f"RETURNING id, {', '.join(ASSIGNMENT_FIELDS)}, "
            "strftime(created, '%Y-%m-%d %H:%M:%S')", [assessor, evaluation_id])
        return _assignment(rows[0]) if rows else None


def _insert(table: str, fields: Sequence[str]) -> str:
    return (f"INSERT INTO {table} ({', '.join(fields)}) "
            f"VALUES ({', '.join('?' * len(fields))})")


def _nugget_values(nugget: Nugget) -> list:
    return [*(getattr(nugget, k) for k in NUGGET_FIELDS[:-1]), json.dumps(nugget.sources)]


def _nugget(row: tuple) -> Nugget:
    nugget_id, *values, created = row
    values[-1] = tuple(json.loads(values[-1]))
    return Nugget(*values, id=int(nugget_id), created=created)


def _assignment(row: tuple) -> Assignment:
    names = ("id", *ASSIGNMENT_FIELDS, "created")
    return Assignment(**dict(zip(names, row, strict=True)))
