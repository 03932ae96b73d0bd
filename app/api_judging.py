"""The app's named API endpoints for judging a corpus (app.api registers them with the
others), so a team scripts a judging round as the Judge tab runs it: a question set made
(from a list, the saved runs or generated), a pool of a stored evaluation's runs, the next
unit to judge and a judgment recorded or undone, the LLM judge over a pool, judgments
exported and imported, and two assessors compared over an evaluation. Each converts
strings and numbers to an `explorer.judging` call (engine.service.judging) and its result
to JSON; an engine refusal becomes a gr.Error that names the bad value and the fix.
"""

from __future__ import annotations

import json
from collections import deque

from app.endpoints import endpoint, uploaded
from engine.data.loaders.jsonio import read_text
from engine.errors import ConfigError
from engine.results import plain
from engine.service.explorer import Explorer


def judging_api(explorer: Explorer) -> None:
    """Every judging endpoint, over `explorer.judging` (its role checks are the door's)."""
    for register in (_question_sets, _pools, _judgments):
        register(explorer.judging)


def _question_sets(judging) -> None:
    """Question sets made: from a list, an uploaded file, the saved runs, or generated."""

    def add_question_set(corpus: str, name: str, questions: str = "",
                         from_runs: bool = False) -> str:
        """Question set `name` of added corpus `corpus` (listed from then on as
        "corpus (name)"): `questions` one a line, or with `from_runs` the questions of the
        saved runs (a pipeline's, received over OTLP or imported). Returns {"dataset",
        "questions"}."""
        split = judging.add_run_questions(corpus, name) if from_runs else \
            judging.add_questions(corpus, name, text=questions or "")
        return json.dumps({"dataset": split.label, "questions": split.questions})


    def add_question_file(corpus: str, name: str, file: dict) -> str:
        """Question set `name` of added corpus `corpus` from an uploaded list
        (handle_file of a txt, csv or jsonl). Returns {"dataset", "questions"}."""
        path, original = uploaded(file)
        split = judging.add_questions(corpus, name, original, read_text(path))
        return json.dumps({"dataset": split.label, "questions": split.questions})


    def generate_question_set(corpus: str, name: str, count: int = 30,
                              model: str = "smollm2", endpoint: str = "",
                              seed: int = 0) -> str:
        """Question set `name` of added corpus `corpus`, generated: a question per passage
        of a stratified sample of `count` through reader `model` (or an OpenAI-compatible
        `endpoint`, by the name the operator allowed it by), kept where BM25 or the
        bi-encoder finds its source passage in its top 20, the source's document judged 3.
        Returns {"dataset", "asked", "written", "kept", "pass_rate"}."""
        (last,) = deque(judging.generate_questions(corpus, name, int(count), model,
                                                   endpoint, int(seed)), maxlen=1)
        return json.dumps({"dataset": f"{corpus} ({name})", "asked": last.asked,
                           "written": last.written, "kept": len(last.kept),
                           "pass_rate": last.pass_rate})


    endpoint(add_question_set, "question_set_json", 'JSON text: {"dataset", "questions"}')
    endpoint(add_question_file, "question_set_json", 'JSON text: {"dataset", "questions"}')
    endpoint(generate_question_set, "generated_json", 'JSON text: {"dataset", "asked", '
             '"written", "kept", "pass_rate"}')


def _pools(judging) -> None:
    """Pools of a stored evaluation, and their units judged: by a person (the next unit,
    a grade, an undo) or by the LLM judge."""

    def pool_evaluation(evaluation_id: int, depth: int = 5, stages: str = "",
                        name: str = "") -> str:
        """Pool a stored evaluation of a question set (start one with /evaluate, follow it
        with /evaluation_status): each paradigm's top `depth` documents per question, at
        its last cut or at the comma-separated `stages`, what a person judged left out.
        Returns {"pool", "estimate"}."""
        cut = tuple(s.strip() for s in str(stages or "").split(",") if s.strip())
        pool, estimate = judging.pool_evaluation(int(evaluation_id), int(depth), cut, name)
        return json.dumps({"pool": pool, "estimate": estimate})


    def list_pools(dataset: str = "") -> str:
        """The pools (of question set `dataset` only, if given), newest first."""
        return json.dumps([plain(p) for p in judging.pools(dataset or None)])


    def next_unit(pool_id: int, assessor: str) -> str:
        """The next unit of the pool `assessor` has to judge: {"unit": {question_id,
        document_id, title, text, found_by, position} or null, "question", "judged",
        "units"}."""
        unit, question, (judged, units) = judging.to_judge(int(pool_id), assessor)
        return json.dumps({"unit": None if unit is None else plain(unit),
                           "question": question, "judged": judged, "units": units})


    def record_judgment(pool_id: int, question_id: str, document_id: str, grade: int,
                        assessor: str, seconds: float | None = None) -> str:
        """`assessor`'s grade (0-3) of a pooled document for a question, with the seconds
        it took; published at once. Returns {"judged", "units"} of the assessor's
        progress."""
        if grade != int(grade):
            raise ConfigError(f"grade={grade!r}: a grade is a whole number, 0 (irrelevant), 1 "
                              "(related), 2 (highly relevant) or 3 (perfectly relevant).")
        judged, units = judging.judge(int(pool_id), question_id, document_id, int(grade),
                                      assessor, seconds)
        return json.dumps({"judged": judged, "units": units})


    def undo_judgment(pool_id: int, assessor: str) -> str:
        """Take back `assessor`'s last judgment of the pool: the judgment taken back, or
        null."""
        undone = judging.undo(int(pool_id), assessor)
        return json.dumps(None if undone is None else plain(undone))


    def llm_judge(pool_id: int, model: str = "smollm2", endpoint: str = "",
                  limit: int = 0) -> str:
        """The LLM judge (UMBRELA's prompt) over the pool's units it has not judged
        (`limit`: at most so many; 0 every one), through reader `model` or an
        OpenAI-compatible `endpoint` (by the name the operator allowed it by). Returns
        {"judged", "unreadable", "left"}."""
        ended = deque(judging.llm_judge(int(pool_id), model, endpoint,
                                        int(limit) or None), maxlen=1)
        return json.dumps(plain(ended[0]) if ended else
                          {"judged": 0, "unreadable": 0, "left": 0})


    endpoint(pool_evaluation, "pool_json", 'JSON text: {"pool": its id, "estimate"}')
    endpoint(list_pools, "pools_json", "JSON text: the pools, newest first, each {id, name, "
             "collection, corpus, depth, systems, units, evaluation_id, ...}")
    endpoint(next_unit, "unit_json", 'JSON text: {"unit", "question", "judged", "units"}')
    endpoint(record_judgment, "progress_json", 'JSON text: {"judged", "units"}')
    endpoint(undo_judgment, "undone_json", "JSON text: the judgment taken back, or null")
    endpoint(llm_judge, "judged_json", 'JSON text: {"judged", "unreadable", "left"}')


def _judgments(judging) -> None:
    """Judgments out and in, and two assessors compared over an evaluation."""

    def export_judgments(dataset: str, fmt: str = "qrels", assessor: str = "") -> str:
        """Question set `dataset`'s judgments as TREC qrels (the published grades, or
        `assessor`'s) or JSONL with who judged each."""
        return judging.export_judgments(dataset, fmt, assessor)


    def import_judgments(dataset: str, file: dict, assessor: str = "") -> str:
        """Judgments of question set `dataset` from an uploaded qrels file (all
        `assessor`'s) or judgments JSONL (handle_file), stored whole or not at all.
        Returns {"imported"}."""
        path, original = uploaded(file)
        found = judging.import_judgments(dataset, read_text(path), original, assessor)
        return json.dumps({"imported": found})


    def compare_assessors(evaluation_id: int, first: str, second: str) -> str:
        """Two assessors over a stored evaluation of a question set: {"pairs", "exact",
        "kappa", "weighted_kappa", "weighted_ci", "matrix" (rows: first's grade), "scores"
        ({paradigm: [nDCG@10 under first, under second]}), "tau", "p"}."""
        return json.dumps(plain(judging.compared(int(evaluation_id), first, second)))

    endpoint(export_judgments, "judgments_text", "TREC qrels lines, or JSONL")
    endpoint(import_judgments, "imported_json", 'JSON text: {"imported"}')
    endpoint(compare_assessors, "compared_json", "JSON text: agreement, scores and tau")
