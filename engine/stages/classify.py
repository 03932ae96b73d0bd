"""Query classification, the best-practices pipeline's first module: does the request need
retrieval at all? A stage of granularity "query": it ranks nothing, and its details hold the
decision, so a run that skips retrieval still records why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.documents import Candidate
from engine.stages.base import Stage, StageOutput
from engine.trace_details import QueryDecision, StageDetails, StandIn

if TYPE_CHECKING:
    from engine.models.query_classifier import QueryClassifier

QUERY = "query"  # the granularity of stages that decide about the query, not rank units


class QueryClassification(Stage):
    """P(needs retrieval) by the query classifier, against its threshold."""

    name = "classify"
    granularity = QUERY

    def __init__(self, classifier: QueryClassifier) -> None:
        self.classifier = classifier

    @property
    def stand_in(self) -> StandIn | None:
        return self.classifier.stand_in

    @property
    def haystack(self) -> int:
        return 1  # the query

    def settings(self) -> dict:
        return {"model": self.classifier.name, "threshold": self.classifier.threshold}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        retrieve, p = self.classifier.needs_retrieval(query)
        verdict = "retrieve" if retrieve else "answer without retrieval"
        threshold = self.classifier.threshold
        note = f"P(needs retrieval) = {p:.3f} against threshold {threshold:.2f}: {verdict}"
        if self.classifier.stand_in is not None:  # its note says it all (run_stage adds it)
            note = ""
        return StageOutput((), StageDetails(
            note=note,
            decision=QueryDecision(retrieve, round(p, 4), threshold)))
