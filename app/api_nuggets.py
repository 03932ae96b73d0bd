"""The app's named API endpoints for judging answers by nuggets (app.api registers them
with the others): a dataset's nuggets listed, written, edited, merged, removed, made of its
gold answers, exported and imported as TREC RAG nugget files; a stored evaluation's next
answer to assign, an assignment recorded or undone, the evaluation's nugget scores and its
assignments as the track's file. Each converts strings and numbers to an
`explorer.nuggets` call (engine.service.nuggets) and its result to JSON; an engine refusal
becomes a gr.Error that names the bad value and the fix.
"""

from __future__ import annotations

import json

from app.endpoints import endpoint, uploaded
from engine.data.loaders.jsonio import read_text
from engine.errors import ConfigError
from engine.results import plain
from engine.service.explorer import Explorer


def nuggets_api(explorer: Explorer) -> None:
    """Every nugget endpoint, over `explorer.nuggets` (its role checks are the door's)."""
    for register in (_nuggets, _nugget_files, _assignments):
        register(explorer.nuggets)


def _ids(text: str) -> list[int]:
    try:
        return [int(part) for part in str(text).replace(",", " ").split()]
    except ValueError:
        raise ConfigError(f"nugget_ids={text!r}: give nugget ids, numbers separated by "
                          "commas (\"3, 7\").") from None


def _nuggets(nuggets) -> None:
    """A dataset's nuggets listed and written."""

    def list_nuggets(dataset: str, question_id: str = "") -> str:
        """Dataset `dataset`'s current nuggets (of `question_id` only, if given), each
        {"id", "question_id", "text", "importance", "author", "sources", "created"}."""
        return json.dumps([plain(n) for n in nuggets.nuggets(dataset, question_id or None)])


    def add_nugget(dataset: str, question_id: str, text: str, importance: str = "vital",
                   author: str = "") -> str:
        """A nugget (1-40 words, vital or okay) `author` wrote for question `question_id`
        of `dataset`. Returns {"id"}."""
        return json.dumps({"id": nuggets.add_nugget(dataset, question_id, text, importance,
                                                    author)})


    def edit_nugget(nugget_id: int, author: str, text: str = "", importance: str = "") -> str:
        """Nugget `nugget_id` replaced by one with the new `text` or `importance` (an empty
        one kept as it was); the old one's assignments are kept. Returns {"id"}."""
        return json.dumps({"id": nuggets.edit_nugget(int(nugget_id), author, text or None,
                                                     importance or None)})


    def merge_nuggets(nugget_ids: str, text: str, importance: str, author: str) -> str:
        """Nuggets `nugget_ids` ("3, 7": two or more of one question) replaced by one,
        their sources together. Returns {"id"}."""
        return json.dumps({"id": nuggets.merge_nuggets(_ids(nugget_ids), text, importance,
                                                       author)})


    def remove_nugget(nugget_id: int, author: str) -> str:
        """Nugget `nugget_id` marked removed (its assignments are kept). Returns it."""
        return json.dumps(plain(nuggets.remove_nugget(int(nugget_id), author)))

    endpoint(list_nuggets, "nuggets_json", "JSON text: the current nuggets, oldest first")
    endpoint(add_nugget, "nugget_id_json", 'JSON text: {"id"} of the nugget written')
    endpoint(edit_nugget, "edited_json", 'JSON text: {"id"} of the nugget that replaces it')
    endpoint(merge_nuggets, "merged_json", 'JSON text: {"id"} of the nugget merged into')
    endpoint(remove_nugget, "removed_json", "JSON text: the nugget removed")


def _nugget_files(nuggets) -> None:
    """Nuggets made of gold answers, and the track's nugget files out and in."""

    def add_gold_nuggets(dataset: str) -> str:
        """Each gold answer of QA dataset `dataset` stored as a vital nugget of its
        question, for the questions without nuggets. Returns {"added"}."""
        return json.dumps({"added": nuggets.add_gold_nuggets(dataset)})


    def export_nuggets(dataset: str) -> str:
        """Dataset `dataset`'s current nuggets as a TREC RAG nugget file (JSONL: {"qid",
        "query", "nuggets": [{"text", "importance"}]})."""
        return nuggets.export_nuggets(dataset)


    def import_nuggets(dataset: str, file: dict, author: str) -> str:
        """The nuggets of an uploaded TREC RAG nugget file (handle_file), as `author`'s,
        stored whole or not at all. Returns {"imported"}."""
        path, original = uploaded(file)
        return json.dumps({"imported": nuggets.import_nuggets(dataset, read_text(path),
                                                              original, author)})

    endpoint(add_gold_nuggets, "gold_json", 'JSON text: {"added"}: nuggets stored')
    endpoint(export_nuggets, "nuggets_text", "A TREC RAG nugget file's JSON lines")
    endpoint(import_nuggets, "nuggets_imported_json", 'JSON text: {"imported"}')


def _assignments(nuggets) -> None:
    """An evaluation's answers assigned nuggets, and scored by them."""

    def next_answer(evaluation_id: int, assessor: str) -> str:
        """The next answer of evaluation `evaluation_id` that `assessor` has a nugget to
        assign: {"answer" ({"position", "question_id", "paradigm", "question", "answer"}
        or null when every one is done), "nuggets", "assigned", "done", "answers"}."""
        return json.dumps(plain(nuggets.to_assign(int(evaluation_id), assessor)))


    def assign_nugget(evaluation_id: int, question_id: str, paradigm: str, nugget_id: int,
                      assignment: str, assessor: str, seconds: float = 0) -> str:
        """Whether the answer of question `question_id` by `paradigm` holds nugget
        `nugget_id`: support, partial_support or not_support, by `assessor` in `seconds`
        (0: not timed). Returns {"id", "done", "answers"}."""
        found = nuggets.assign(int(evaluation_id), question_id, paradigm, int(nugget_id),
                               assignment, assessor, float(seconds) or None)
        left = nuggets.to_assign(int(evaluation_id), assessor)
        return json.dumps({"id": found, "done": left.done, "answers": left.answers})


    def undo_assignment(evaluation_id: int, assessor: str) -> str:
        """Take back `assessor`'s last assignment in evaluation `evaluation_id`; returns
        it, or null when there is none."""
        return json.dumps(plain(nuggets.undo_assignment(int(evaluation_id), assessor)))


    def nugget_scores(evaluation_id: int, assessor: str = "") -> str:
        """Evaluation `evaluation_id`'s nugget scores by `assessor`'s assignments (or
        everyone's latest): {"per_paradigm" ({paradigm: {"all", "all_strict", "vital",
        "vital_strict", "weighted", "weighted_strict", "answers"}}), "per_answer",
        "unassigned"}."""
        return json.dumps(plain(nuggets.nugget_scores(int(evaluation_id), assessor)))


    def export_assignments(evaluation_id: int, assessor: str = "") -> str:
        """Evaluation `evaluation_id`'s assignments as a TREC RAG assignment file (JSONL,
        each paradigm a run_id)."""
        return nuggets.export_assignments(int(evaluation_id), assessor)

    endpoint(next_answer, "answer_json", 'JSON text: {"answer", "nuggets", "done", ...}')
    endpoint(assign_nugget, "assigned_json", 'JSON text: {"id", "done", "answers"}')
    endpoint(undo_assignment, "unassigned_json", "JSON text: the assignment taken back, or "
             "null")
    endpoint(nugget_scores, "nugget_scores_json", "JSON text: scores per paradigm and per "
             "answer")
    endpoint(export_assignments, "assignments_text", "A TREC RAG assignment file's JSON "
             "lines")
