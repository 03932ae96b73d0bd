"""Relevance from Annotate's labels: the IR measures of every cut against what a person judged.

A human label says that two documents together are evidence for a question (1) or are not
(0). The documents of a question's positive pairs are its relevant documents by label, and
a run of a question that has them carries `labels:`-prefixed measures beside those against
the dataset's supporting documents: `labels:nDCG@10@dense`, `labels:RR@dense`, ... (the
same engine.metrics.IR_MEASURES, trec_eval's code through ir_measures). A negative pair
names neither document irrelevant on its own (either may be evidence beside a third), so it
adds nothing; labels the dataset's supporting flags made ("gold") are the supporting
documents already, so only a person's count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from engine.metrics import at_stage, document_ranking, ir_measures_by_stage
from engine.stages.classify import QUERY
from engine.store.labels import Label
from engine.text import question_key
from engine.trace import RunTrace

PREFIX = "labels:"


def labelled_relevance(labels: Iterable[Label]) -> dict[str, tuple[str, ...]]:
    """{question id or question text (case and spacing aside): documents of its positive
    human pairs}."""
    found: dict[str, dict[str, None]] = {}
    for label in labels:
        if label.source != "human" or label.label != 1:
            continue
        for key in filter(None, (label.question_id, question_key(label.question))):
            found.setdefault(key, {}).update(dict.fromkeys((label.d1_id, label.d2_id)))
    return {key: tuple(docs) for key, docs in found.items()}


def with_label_measures(trace: RunTrace, relevance: dict[str, tuple[str, ...]]) -> RunTrace:
    """`trace` with its `labels:` measures when its question has positive labels (by the
    gold's id, else by its text); as it is otherwise."""
    relevant = (relevance.get(trace.gold.id) if trace.gold else None) or relevance.get(
        question_key(trace.question))
    ranked = [s for s in trace.stages if s.granularity != QUERY]
    if not relevant or not ranked:
        return trace
    rankings = {s.name: document_ranking([c.unit.doc_ids for c in s.candidates])
                for s in ranked}
    measured = {PREFIX + at_stage(measure, stage): round(value, 4)
                for stage, values in ir_measures_by_stage(rankings, relevant).items()
                for measure, value in values.items()}
    return replace(trace, metrics={**trace.metrics, **measured})
