"""Relevance judgments of a collection's questions, and the pools they are judged from.

A judgment grades one document for one question on the TREC DL / UMBRELA scale: 0
irrelevant, 1 related, 2 highly relevant, 3 perfectly relevant. It keeps who judged it
(`assessor`: a person's name, "generated:<backend>" for a generated question's source
passage, "llm:<backend>:<model>" for an LLM judge), the pool it was judged from, the
seconds it took and the reasoning an LLM judge gave. Nothing is overwritten: two
assessors, or two people at once, judging the same document are both kept and attributed;
`grades` reads one assessor's view (each document's latest grade), and `undo` takes back an
assessor's last judgment of a pool.

A pool is what a collection's questions are judged from (TREC depth-d pooling,
engine.judging.pools): per question, the documents of every system's top d, each shown by
the unit that ranked it best, in the order they are judged. A pool is stored whole, so
judging it can stop and resume.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.store.sessions import SessionStore

GRADES = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}
MAX_ASSESSOR_CHARS = 200
MAX_REASONING_CHARS = 20_000


@dataclass(frozen=True)
class Judgment:
    collection: str  # the dataset its questions are listed as: "mydocs (questions)"
    question_id: str
    document_id: str
    grade: int
    assessor: str
    pool_id: int | None = None
    seconds: float | None = None  # how long it took to judge
    reasoning: str = ""  # an LLM judge's, where it gives one
    id: int = 0  # 0 until stored
    created: str = ""

    def __post_init__(self) -> None:
        if self.grade not in GRADES:
            raise ConfigError(f"grade={self.grade!r}: use 0 ({GRADES[0]}), 1 ({GRADES[1]}), "
                              f"2 ({GRADES[2]}) or 3 ({GRADES[3]}).")
        for name in ("collection", "question_id", "document_id", "assessor"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"A judgment needs its {name.replace('_', ' ')}; it is "
                                  "empty.")
        check_lengths(self.assessor, self.reasoning)


def check_lengths(assessor: str, reasoning: str = "") -> None:
    """A ConfigError where an assessor's name or an LLM judge's reasoning is too long to keep
    (a judgment's, or a nugget assignment's)."""
    if len(assessor) > MAX_ASSESSOR_CHARS:
        raise ConfigError(f"The assessor's name has {len(assessor):,} characters; the limit "
                          f"is {MAX_ASSESSOR_CHARS}.")
    if len(reasoning) > MAX_REASONING_CHARS:
        raise ConfigError(f"The reasoning has {len(reasoning):,} characters; the limit is "
                          f"{MAX_REASONING_CHARS:,}.")


@dataclass(frozen=True)
class PoolUnit:
    """One document of a pool, for one question, shown by the unit that ranked it best."""

    question_id: str
    document_id: str
    unit_id: str
    title: str
    text: str
    found_by: tuple[tuple[str, int], ...]  # (system: "flat/reranker", rank) that found it
    position: int = 0  # its place in judging order


@dataclass(frozen=True)
class Pool:
    id: int
    name: str
    collection: str
    corpus: str
    corpus_fingerprint: str
    depth: int
    systems: tuple[str, ...]
    created: str
    units: int
    evaluation_id: int | None = None  # the evaluation whose runs it pools


JUDGMENT_FIELDS = ("collection", "question_id", "document_id", "grade", "assessor", "pool_id",
                   "seconds", "reasoning")


class JudgmentStore:
    """The judgments and pools tables of a `SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    # --- judgments ----------------------------------------------------------------------

    def add(self, judgment: Judgment) -> int:
        """Store `judgment`; one of a pool must judge a unit of that pool."""
        if judgment.pool_id is not None and not self.store.execute(
                "SELECT 1 FROM pool_units WHERE pool_id = ? AND question_id = ? "
                "AND document_id = ?",
                [judgment.pool_id, judgment.question_id, judgment.document_id]):
            raise ConfigError(f"Pool {judgment.pool_id} holds no document "
                              f"{judgment.document_id!r} for question "
                              f"{judgment.question_id!r}: judge the units of the pool shown.")
        (row,) = self.store.execute(
            f"INSERT INTO judgments ({', '.join(JUDGMENT_FIELDS)}) "
            f"VALUES ({', '.join('?' * len(JUDGMENT_FIELDS))}) RETURNING id",
            [getattr(judgment, k) for k in JUDGMENT_FIELDS])
        return int(row[0])

    def add_all(self, judgments: list[Judgment]) -> int:
        """Store every judgment in one transaction (all or none); returns how many."""
        insert = (f"INSERT INTO judgments ({', '.join(JUDGMENT_FIELDS)}) "
                  f"VALUES ({', '.join('?' * len(JUDGMENT_FIELDS))})")
        self.store.transaction([(insert, [getattr(j, k) for k in JUDGMENT_FIELDS])
                                for j in judgments])
        return len(judgments)

    def undo(self, assessor: str, pool_id: int) -> Judgment | None:
        """Take back `assessor`'s last judgment of pool `pool_id` (None: there is none)."""
        rows = self.store.execute(
            "DELETE FROM judgments WHERE id = (SELECT max(id) FROM judgments "
            "WHERE assessor = ? AND pool_id = ?) "
            f"RETURNING id, {', '.join(JUDGMENT_FIELDS)}, "
            "strftime(created, '%Y-%m-%d %H:%M:%S')", [assessor, pool_id])
        return _judgment(rows[0]) if rows else None

    def judgments(self, collection: str, assessor: str | None = None) -> list[Judgment]:
        """Every judgment of `collection` (by `assessor` only, if given), oldest first."""
        where, params = "collection = ?", [collection]
        if assessor is not None:
            where, params = where + " AND assessor = ?", [*params, assessor]
        rows = self.store.execute(
            f"SELECT id, {', '.join(JUDGMENT_FIELDS)}, "
            f"strftime(created, '%Y-%m-%d %H:%M:%S') FROM judgments WHERE {where} "
            "ORDER BY id", params)
        return [_judgment(row) for row in rows]

    def assessors(self, collection: str) -> dict[str, int]:
        """{assessor: judgments} of `collection`, the busiest first."""
        rows = self.store.execute(
            "SELECT assessor, count(*) FROM judgments WHERE collection = ? "
            "GROUP BY assessor ORDER BY count(*) DESC, assessor", [collection])
        return {assessor: int(n) for assessor, n in rows}

    def grades(self, collection: str, assessor: str | None = None) -> dict[str, dict[str, int]]:
        """{question id: {document id: grade}} of `collection`: each document's latest
        grade, by `assessor` (by anyone, the latest of all, when None)."""
        found: dict[str, dict[str, int]] = {}
        for j in self.judgments(collection, assessor):  # oldest first: the latest wins
            found.setdefault(j.question_id, {})[j.document_id] = j.grade
        return found

    # --- pools --------------------------------------------------------------------------

    def create_pool(self, name: str, collection: str, corpus: str, fingerprint: str,
                    depth: int, systems: list[str], units: list[PoolUnit],
                    evaluation_id: int | None = None) -> int:
        """Store a pool (of `evaluation_id`'s runs) and its units (in the order given) in
        one transaction."""
        if not units:
            raise ConfigError("The pool holds no unit to judge: every document the systems "
                              "found is judged already. Pool deeper, or pool other systems.")
        (row,) = self.store.execute(
            "INSERT INTO pools (name, collection, corpus, corpus_fingerprint, depth, systems, "
            "evaluation_id) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [name, collection, corpus, fingerprint, depth, json.dumps(systems), evaluation_id])
        pool_id = int(row[0])
        insert = ("INSERT INTO pool_units (pool_id, position, question_id, document_id, "
                  "unit_id, title, text, found_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        try:
            self.store.transaction([(insert, [pool_id, n, u.question_id, u.document_id,
                                              u.unit_id, u.title, u.text,
                                              json.dumps(u.found_by)])
                                    for n, u in enumerate(units)])
        except Exception:
            self.store.execute("DELETE FROM pools WHERE id = ?", [pool_id])
            raise
        return pool_id

    def pools(self, collection: str | None = None) -> list[Pool]:
        """Every pool (of `collection` only, if given), newest first."""
        where, params = ("WHERE p.collection = ?", [collection]) if collection else ("", [])
        rows = self.store.execute(
            "SELECT p.id, p.name, p.collection, p.corpus, p.corpus_fingerprint, p.depth, "
            "p.systems, strftime(p.created, '%Y-%m-%d %H:%M:%S'), "
            "(SELECT count(*) FROM pool_units u WHERE u.pool_id = p.id), p.evaluation_id "
            f"FROM pools p {where} ORDER BY p.id DESC", params)
        return [Pool(*row[:6], tuple(json.loads(row[6])), row[7], int(row[8]),
                     None if row[9] is None else int(row[9])) for row in rows]

    def pool(self, pool_id: int) -> Pool:
        found = [p for p in self.pools() if p.id == pool_id]
        if not found:
            raise ConfigError(f"No pool with id {pool_id}; the Judge tab lists the pools.")
        return found[0]

    def units(self, pool_id: int) -> list[PoolUnit]:
        """Pool `pool_id`'s units in judging order."""
        rows = self.store.execute(
            "SELECT question_id, document_id, unit_id, title, text, found_by, position "
            "FROM pool_units WHERE pool_id = ? ORDER BY position", [pool_id])
        return [PoolUnit(*row[:5], tuple(tuple(f) for f in json.loads(row[5])), row[6])
                for row in rows]

    def to_judge(self, pool_id: int, assessor: str, skipped: tuple[int, ...] = ()
                 ) -> PoolUnit | None:
        """The first unit of the pool `assessor` has not judged (nor skipped: positions),
        None when every one is."""
        rows = self.store.execute(
            "SELECT question_id, document_id, unit_id, title, text, found_by, position "
            "FROM pool_units u WHERE pool_id = ? AND NOT EXISTS (SELECT 1 FROM judgments j "
            "WHERE j.pool_id = u.pool_id AND j.question_id = u.question_id "
            "AND j.document_id = u.document_id AND j.assessor = ?) "
            f"{'AND position NOT IN (SELECT unnest(?))' if skipped else ''} "
            "ORDER BY position LIMIT 1",
            [pool_id, assessor, *([list(skipped)] if skipped else [])])
        if not rows:
            return None
        row = rows[0]
        return PoolUnit(*row[:5], tuple(tuple(f) for f in json.loads(row[5])), row[6])

    def progress(self, pool_id: int, assessor: str) -> tuple[int, int]:
        """(units `assessor` judged, units) of the pool."""
        (row,) = self.store.execute(
            "SELECT count(DISTINCT (j.question_id, j.document_id)), "
            "(SELECT count(*) FROM pool_units WHERE pool_id = ?) "
            "FROM judgments j WHERE j.pool_id = ? AND j.assessor = ?",
            [pool_id, pool_id, assessor])
        return int(row[0]), int(row[1])


def _judgment(row: tuple) -> Judgment:
    names = ("id", *JUDGMENT_FIELDS, "created")
    return Judgment(**dict(zip(names, row, strict=True)))
