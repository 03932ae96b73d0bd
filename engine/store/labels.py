"""Selection-classifier labels in the sessions database: label, list, export, import.

A label says whether two documents together are evidence for a question: C(q, d1, d2) =
1 or 0. It keeps the question (and its dataset id when picked from a dataset), both
documents' ids, titles and texts (so training never depends on the corpus it came from),
a fingerprint of the texts, who labelled it, when, and its source: "human" (Annotate) or
"gold" (a dataset's supporting flags). Each annotator has their own label of a pair (two
people's labels of one pair are both kept, for their agreement); labelling a pair again
replaces one's own label; training takes each pair's latest label. An import adds labels
not yet stored and leaves stored ones alone, and a labels file with any
bad line is refused whole, naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError, DataFormatError
from engine.store.sessions import SessionStore

SOURCES = ("human", "gold")
MAX_TEXT_CHARS = 50_000
FIELDS = ("question", "question_id", "d1_id", "d1_title", "d1_text", "d2_id", "d2_title",
          "d2_text", "label", "source", "annotator")


@dataclass(frozen=True)
class Label:
    question: str
    d1_id: str
    d1_title: str
    d1_text: str
    d2_id: str
    d2_title: str
    d2_text: str
    label: int
    source: str = "human"
    annotator: str = ""
    question_id: str = ""
    id: int = 0  # 0 until stored
    created: str = ""

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ConfigError("A label needs its question; it is empty.")
        if self.label not in (0, 1):
            raise ConfigError(f"label={self.label!r}: use 1 (the two documents together "
                              "answer the question) or 0 (they do not).")
        if self.source not in SOURCES:
            raise ConfigError(f"source={self.source!r}: use one of {', '.join(SOURCES)}.")
        for name in ("d1_id", "d2_id"):
            if not getattr(self, name).strip():
                raise ConfigError(f"A label needs both document ids; {name} is empty.")
        for name in ("d1_text", "d2_text"):
            if len(getattr(self, name)) > MAX_TEXT_CHARS:
                raise ConfigError(f"{name} has {len(getattr(self, name)):,} characters; the "
                                  f"limit is {MAX_TEXT_CHARS:,}.")

    @property
    def texts_fingerprint(self) -> str:
        return hashlib.sha256(f"{self.d1_text}\x1e{self.d2_text}".encode()).hexdigest()[:16]

    def record(self) -> dict:
        """The label as one JSON line of an export (and of an import)."""
        out = {k: getattr(self, k) for k in FIELDS}
        out["texts_fingerprint"], out["created"] = self.texts_fingerprint, self.created
        return out


class LabelStore:
    """The labels table of a `SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def add(self, label: Label) -> int:
        """Store `label` (replacing its annotator's earlier label of the same question and
        pair)."""
        values = [getattr(label, k) for k in FIELDS]
        (row,) = self.store.execute(
            f"INSERT INTO labels ({', '.join(FIELDS)}, texts_fingerprint) "
            f"VALUES ({', '.join('?' * (len(FIELDS) + 1))}) "
            "ON CONFLICT (question, d1_id, d2_id, annotator) DO UPDATE SET "
            "label = excluded.label, source = excluded.source, "
            "d1_text = excluded.d1_text, d2_text = excluded.d2_text, "
            "texts_fingerprint = excluded.texts_fingerprint, created = now() "
            "RETURNING id", [*values, label.texts_fingerprint])
        return int(row[0])

    def list(self, question: str | None = None) -> list[Label]:
        """Every label (of `question` only, if given), newest first."""
        where, params = ("WHERE question = ?", [question]) if question else ("", [])
        rows = self.store.execute(
            f"SELECT id, {', '.join(FIELDS)}, strftime(created, '%Y-%m-%d %H:%M:%S') "
            f"FROM labels {where} ORDER BY id DESC", params)
        names = ("id", *FIELDS, "created")
        return [Label(**dict(zip(names, row, strict=True))) for row in rows]

    def count(self) -> int:
        return int(self.store.execute("SELECT count(*) FROM labels")[0][0])

    def delete(self, label_id: int) -> None:
        if not self.store.execute("DELETE FROM labels WHERE id = ? RETURNING id",
                                  [int(label_id)]):
            raise ConfigError(f"No label with id {label_id}.")

    def export_jsonl(self) -> str:
        return "".join(json.dumps(x.record(), ensure_ascii=False) + "\n"
                       for x in reversed(self.list()))

    def import_jsonl(self, text: str, filename: str = "labels.jsonl") -> tuple[int, int]:
        """(added, already stored) from a labels file; any bad line refuses the whole file
        before anything is written."""
        labels = parse_labels(text, filename)
        stored = {(x.question, x.d1_id, x.d2_id, x.annotator) for x in self.list()}
        new = [x for x in labels if (x.question, x.d1_id, x.d2_id, x.annotator) not in stored]
        insert = (f"INSERT INTO labels ({', '.join(FIELDS)}, texts_fingerprint) VALUES "
                  f"({', '.join('?' * (len(FIELDS) + 1))}) ON CONFLICT DO NOTHING")
        self.store.transaction([(insert, [*(getattr(x, k) for k in FIELDS),
                                          x.texts_fingerprint]) for x in new])
        return len(new), len(labels) - len(new)


def parse_labels(text: str, filename: str = "labels.jsonl") -> list[Label]:
    """Labels from JSONL text; the first bad line raises, naming file, line and field."""
    path = Path(filename)
    labels = []
    required = ("question", "d1_id", "d1_text", "d2_id", "d2_text", "label")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"not JSON ({err.msg})", line=number,
                                  fix="one JSON object per line, as an export writes") from None
        if not isinstance(record, dict):
            raise DataFormatError(path, "expected a JSON object", line=number)
        for name in required:
            if name not in record:
                raise DataFormatError(path, "missing", line=number, field=name,
                                      fix=f"every line needs {', '.join(required)}")
        if record["label"] not in (0, 1) or isinstance(record["label"], bool):
            raise DataFormatError(path, f"{record['label']!r} is not a label", line=number,
                                  field="label", fix="use 1 or 0")
        values = {k: record.get(k, "") for k in FIELDS}
        values["label"], values["source"] = record["label"], record.get("source") or "human"
        bad = [k for k in FIELDS if k != "label" and not isinstance(values[k], str)]
        if bad:
            raise DataFormatError(path, "must be a string", line=number, field=bad[0])
        values["d1_title"] = values["d1_title"] or values["d1_id"]
        values["d2_title"] = values["d2_title"] or values["d2_id"]
        try:
            labels.append(Label(**values))
        except ConfigError as err:
            raise DataFormatError(path, str(err), line=number) from None
    return labels


def latest(labels: list[Label]) -> list[Label]:
    """Each pair's latest label of `labels` (newest first, as `LabelStore.list` gives
    them), whoever labelled it."""
    return list({(x.question, x.d1_id, x.d2_id): x for x in reversed(labels)}.values())[::-1]


def by_annotator(labels: list[Label]) -> dict[str, dict[str, dict[str, int]]]:
    """{annotator: {question: {"d1_id\\td2_id": label}}} of the people's labels, for their
    agreement (engine.judging.agreement.pairwise)."""
    people: dict[str, dict[str, dict[str, int]]] = {}
    for x in reversed(labels):  # oldest first: a later label of a pair wins
        if x.source == "human" and x.annotator:
            people.setdefault(x.annotator, {}).setdefault(x.question, {})[
                f"{x.d1_id}\t{x.d2_id}"] = x.label
    return people


def training_examples(labels: list[Label]) -> list:
    """The labels as classifier training pairs (texts as "title\\ntext"), one a pair: its
    latest label."""
    from engine.train.selection_pairs import PairExample

    return [PairExample(x.question, f"{x.d1_title}\n{x.d1_text}",
                        f"{x.d2_title}\n{x.d2_text}", x.label, x.source)
            for x in latest(labels)]
