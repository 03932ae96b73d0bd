"""Answers scored by nuggets, and nuggets and assignments in the TREC RAG track's files.

A nugget (engine.store.nuggets) is an atomic fact a good answer to its question holds, vital
or okay; an answer is judged against each nugget of its question: `support` (it states the
fact), `partial_support` or `not_support`. This is the TREC 2024 RAG track's nugget evaluation
(Pradeep et al. 2025, "The Great Nugget Recall"; castorini's AutoNuggetizer), whose labels
and file layouts are used here as they are, so nuggets and assignments go out to and come in
from the track's tools unchanged.

Scores of one answer, each in [0, 1], from s = 1 for support and 0.5 for partial support
(0 in the strict forms): All, the mean s over every nugget; Vital, over the vital ones;
Weighted, the vital nuggets at weight 1 and the okay ones at 0.5.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from engine.data.loaders.jsonio import jsonl_lines
from engine.errors import ConfigError, DataFormatError
from engine.store.nuggets import Nugget, check_assignment

CREDIT = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
OKAY_WEIGHT = 0.5  # an okay nugget's weight in the Weighted score


@dataclass(frozen=True)
class NuggetScores:
    """One answer's scores over its question's nuggets (None: no nugget of that kind)."""

    nuggets: int
    vital_nuggets: int
    all: float | None
    all_strict: float | None
    vital: float | None
    vital_strict: float | None
    weighted: float | None
    weighted_strict: float | None

    def as_row(self) -> dict[str, float | None]:
        """The six scores by the names an evaluation's row gives them."""
        return {f"nuggets_{name}": getattr(self, name) for name in SCORE_NAMES}


SCORE_NAMES = ("all", "all_strict", "vital", "vital_strict", "weighted", "weighted_strict")


def nugget_scores(judged: Iterable[tuple[str, str]]) -> NuggetScores:
    """The scores of one answer from (importance, assignment) of each of its question's
    nuggets; an unassigned nugget counts as not supported, so pass every nugget."""
    pairs = [(importance, check_assignment(label)) for importance, label in judged]
    vital = [label for importance, label in pairs if importance == "vital"]
    okay = [label for importance, label in pairs if importance != "vital"]

    def mean(labels: Sequence[str], strict: bool) -> float | None:
        return (sum(_credit(x, strict) for x in labels) / len(labels)) if labels else None

    def weighted(strict: bool) -> float | None:
        weight = len(vital) + OKAY_WEIGHT * len(okay)
        if not weight:
            return None
        return (sum(_credit(x, strict) for x in vital)
                + OKAY_WEIGHT * sum(_credit(x, strict) for x in okay)) / weight

    labels = [label for _, label in pairs]
    return NuggetScores(len(pairs), len(vital), mean(labels, False), mean(labels, True),
                        mean(vital, False), mean(vital, True), weighted(False), weighted(True))


def _credit(label: str, strict: bool) -> float:
    return float(label == "support") if strict else CREDIT[label]


def gold_nuggets(collection: str, answers: Mapping[str, Sequence[str]]) -> list[Nugget]:
    """Each gold answer as a vital nugget of its question ({question id: answers}; "gold"
    their author), so nugget scores can be set beside EM and F1 where gold answers exist."""
    return [Nugget(collection, qid, answer, "vital", "gold")
            for qid, given in answers.items()
            for answer in dict.fromkeys(a.strip() for a in given if a.strip())]


# --- TREC RAG's files -------------------------------------------------------------------

def nugget_file(nuggets: Iterable[Nugget], queries: Mapping[str, str]) -> str:
    """TREC RAG's nugget file: one JSON line per question, `{"qid", "query", "nuggets":
    [{"text", "importance"}]}`, the questions in the order their nuggets come."""
    by_question: dict[str, list[Nugget]] = {}
    for nugget in nuggets:
        by_question.setdefault(nugget.question_id, []).append(nugget)
    return "".join(json.dumps({"qid": qid, "query": queries.get(qid, ""), "nuggets": [
        {"text": n.text, "importance": n.importance} for n in found]},
        ensure_ascii=False) + "\n" for qid, found in by_question.items())


def read_nugget_file(text: str, name: str, collection: str, questions: set[str],
                     author: str) -> list[Nugget]:
    """The nuggets of a TREC RAG nugget file (`nugget_file`'s layout), as `author`'s, for
    question set `collection` whose question ids are `questions`. Read strictly: a line
    that is not one, a question the set lacks or a nugget that is not one is refused by
    file, line and field, and nothing is returned."""
    found = []
    for line, row in jsonl_lines(text, name):
        if not isinstance(row, dict) or not isinstance(row.get("nuggets"), list):
            raise DataFormatError(name, "is not a nugget file's line", line=line,
                                  field="nuggets", fix='{"qid": ..., "query": ..., '
                                  '"nuggets": [{"text": ..., "importance": "vital"}]}')
        qid = str(row.get("qid", ""))
        if qid not in questions:
            raise DataFormatError(name, f"names question {qid!r}, which the question set "
                                  f"{collection} lacks", line=line, field="qid")
        for n, item in enumerate(row["nuggets"], 1):
            try:
                if not isinstance(item, dict):
                    raise ConfigError('it is not an object {"text": ..., "importance": ...}')
                found.append(Nugget(collection, qid, str(item.get("text", "")),
                                    _importance(item.get("importance", "vital")), author))
            except ConfigError as err:
                raise DataFormatError(name, f"nugget {n}: {err}", line=line,
                                      field="nuggets") from None
    if not found:
        raise DataFormatError(name, "holds no nuggets")
    return found


def _importance(value: object) -> str:
    """The track writes "okay"; some of its tools "ok"."""
    return "okay" if value == "ok" else str(value)


def assignment_file(answers: Iterable[tuple[str, str, str, Sequence[tuple[Nugget, str]]]],
                    queries: Mapping[str, str]) -> str:
    """TREC RAG's assignment file: one JSON line per answer, `{"qid", "query",
    "answer_text", "response_length", "run_id", "nuggets": [{"text", "importance",
    "assignment"}]}`, from (question id, run id, answer text, [(nugget, assignment)])."""
    return "".join(json.dumps({
        "qid": qid, "query": queries.get(qid, ""), "answer_text": answer,
        "response_length": len(answer.split()), "run_id": run_id,
        "nuggets": [{"text": n.text, "importance": n.importance, "assignment": label}
                    for n, label in judged]}, ensure_ascii=False) + "\n"
        for qid, run_id, answer, judged in answers)
