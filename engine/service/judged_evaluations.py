"""Stored evaluations measured by the latest judgments, without running anything again.

An evaluation of a question set of an added corpus (engine.data.collection_store) is
measured against the judgments its questions had when it ran. Judging goes on afterwards
(the Judge tab, the LLM judge, an import), and each judgment rewrites the question set's
file (engine.service.judging publishes it). `JudgedEvaluations` is the evaluation store
every reader of evaluations uses (Evaluate, Diagnose, the API and CLI): before it hands out
an evaluation of a question set whose file changed since it was last measured, it measures
every stored run again by the file's judgments (engine.paradigms.base.annotate over the
stored cuts) and stores the new rows and summary, stamped with the file it read.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace

from engine.data.collection_store import split_of
from engine.eval.summary import row, summarise
from engine.paradigms.base import annotate
from engine.service.labelled import PREFIX
from engine.store.evaluations import EvaluationStore, StoredEvaluation
from engine.trace import RunTrace

logger = logging.getLogger(__name__)


class JudgedEvaluations(EvaluationStore):
    """An EvaluationStore whose question-set evaluations read as measured by the latest
    judgments."""

    def get(self, evaluation_id: int) -> StoredEvaluation:
        self.fresh(evaluation_id)
        return super().get(evaluation_id)

    def rows(self, evaluation_id: int) -> list[dict]:
        self.fresh(evaluation_id)
        return super().rows(evaluation_id)

    def trace(self, evaluation_id: int, position: int, paradigm: str) -> RunTrace:
        self.fresh(evaluation_id)
        return super().trace(evaluation_id, position, paradigm)

    def traces(self, evaluation_id: int) -> list[RunTrace]:
        self.fresh(evaluation_id)
        return super().traces(evaluation_id)

    def fresh(self, evaluation_id: int) -> bool:
        """Measure evaluation `evaluation_id` again if it is of a question set whose
        judgments changed since it was last measured (not while it runs); True if it was."""
        from engine.data.loaders import read_dataset

        found = self.judged_with(evaluation_id)
        if found is None or found[1] == "running":
            return False
        dataset, _, stamp = found
        split = split_of(dataset)
        if split is None or not split.path.is_file():
            return False
        now = _stamp(split.path)
        if now == stamp:
            return False
        questions = {q.id: q for q in read_dataset(split.path).questions}
        rows = super().rows(evaluation_id)
        runs = []
        for stored, trace in zip(rows, super().traces(evaluation_id), strict=True):
            gold = questions.get(trace.gold.id) if trace.gold is not None else None
            if gold is not None and trace.stages:
                labelled = {k: v for k, v in trace.metrics.items() if k.startswith(PREFIX)}
                again = annotate(trace, gold)
                trace = replace(again, metrics={**again.metrics, **labelled})
                stored = {**stored, **row(trace), "paradigm": stored["paradigm"]}
            stored.pop("position", None)
            runs.append((int(rows[len(runs)]["position"]), trace, stored))
        self.remeasure(evaluation_id, runs, summarise([r for _, _, r in runs]), now)
        logger.info("evaluation %s: %d runs measured again by the judgments of %s",
                    evaluation_id, len(runs), split.label)
        return True


def _stamp(path: os.PathLike) -> str:
    """Which version of a question set's file: its size and modification time (each
    judgment published rewrites it atomically)."""
    status = os.stat(path)
    return f"{status.st_mtime_ns}:{status.st_size}"
