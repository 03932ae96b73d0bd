"""Stored evaluations measured by the latest judgments, without running anything again.

An evaluation of a question set of an added corpus (engine.data.collection_store) is
measured against the judgments its questions had when it ran. Judging goes on afterwards
(the Judge tab, the LLM judge, an import), and each judgment rewrites the question set's
file (engine.service.judging publishes it). `JudgedEvaluations` is the evaluation store
the Explorer reads evaluations through (Evaluate, Diagnose, the API): before it hands out
one evaluation of a question set whose file changed since it was last measured, it
measures every stored run again by the file's judgments (engine.paradigms.base.annotate
over the stored cuts) and stores the new rows and summary, stamped with the hash of the
file it read. The list of evaluations shows each one's summary as last measured.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import replace
from pathlib import Path

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
        judgments changed since it was last measured (not while it runs); True if it was.
        One re-measure at a time: a second reader waits, then finds it fresh."""
        found = self.judged_with(evaluation_id)
        if found is None or found[1] == "running":
            return False
        split = split_of(found[0])
        if split is None or not split.path.is_file() or _stamp(split.path) == found[2]:
            return False
        with _REMEASURING:
            found = self.judged_with(evaluation_id)
            now = _stamp(split.path)
            if found is None or found[1] == "running" or now == found[2]:
                return False
            self._remeasure(evaluation_id, split, now)
        return True

    def _remeasure(self, evaluation_id: int, split, stamp: str) -> None:
        """Every stored run of the evaluation annotated again by the question set's file
        (runs without a stage or a gold, failed ones among them, as they are)."""
        from engine.data.loaders import read_dataset

        questions = {q.id: q for q in read_dataset(split.path).questions}
        runs = []
        for position, stored, trace in self.stored_runs(evaluation_id):
            gold = questions.get(trace.gold.id) if trace.gold is not None else None
            if gold is not None and trace.stages and not trace.error:
                labelled = {k: v for k, v in trace.metrics.items() if k.startswith(PREFIX)}
                again = annotate(trace, gold)
                trace = replace(again, metrics={**again.metrics, **labelled})
                stored = {**stored, **row(trace), "paradigm": stored["paradigm"]}
            runs.append((position, trace, stored))
        self.remeasure(evaluation_id, runs, summarise([r for _, _, r in runs]), stamp)
        logger.info("evaluation %s: %d runs measured again by the judgments of %s",
                    evaluation_id, len(runs), split.label)


def _stamp(path: Path) -> str:
    """Which version of a question set's file: its content's hash (a regrade from 2 to 3
    keeps its size, and a coarse clock its time)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:32]


_REMEASURING = threading.Lock()
