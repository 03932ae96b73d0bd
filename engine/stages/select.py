"""DR-RAG's second retrieval and its selection (Hei et al.).

- `QueryDocumentConcatenation` (QDC): each static-relevant document d found by similarity
  matching is appended to the query, and `q + d` retrieves dynamic-relevant documents, the
  ones the question alone ranks low (the second hop). A document found that way records d
  as its parent.
- `ForwardSelection` (CFS): for each static document, walk its QDC documents in order and
  keep the first that the classifier C(q, d_static, d) calls positive.
- `InverseSelection` (CIS): score every pair of the candidates with C and drop each
  document that no pair containing it makes positive (if none is left, the best one stays).

Both selections record every classifier call (`ClassifierCall`: the two documents, the
probability, the threshold and the decision) in their stage's details.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from typing import TYPE_CHECKING

from engine.documents import Candidate
from engine.stages.base import Stage, StageOutput
from engine.trace_details import ClassifierCall, StageDetails, StandIn

if TYPE_CHECKING:
    from engine.models.selection_classifier import PairClassifier
    from engine.stages.retrieve import DocumentRetriever


# how each stage lists what it keeps (scores come from different queries, so not by score)
QDC_ORDER = ("the static documents first (scored by the question), then each one's q + d "
             "documents round-robin (scored by their own q + d query)")
CFS_ORDER = "the static documents, then each one's first q + d document the classifier kept"
CIS_ORDER = "as the previous stage listed them"


def _renumber(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    return tuple(replace(c, rank=rank) for rank, c in enumerate(candidates, start=1))


def is_static(candidate: Candidate) -> bool:
    """Found by the question alone (QDC documents carry their static document as parent)."""
    return not candidate.parents


class QueryDocumentConcatenation(Stage):
    """Static documents followed by their dynamic ones, round-robin, cut to `k`."""

    name = "qdc"
    granularity = "documents"

    def __init__(self, retriever: DocumentRetriever, per_document: int) -> None:
        """`per_document` (k2): new documents retrieved with each `q + d`."""
        self.retriever, self.per_document = retriever, per_document

    @property
    def stand_in(self) -> StandIn | None:
        return self.retriever.stand_in

    @property
    def haystack(self) -> int:
        """It searches the whole corpus again (with `q + d`)."""
        return self.retriever.haystack

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        seen = frozenset(c.unit.id for c in candidates)
        found: list[tuple[Candidate, ...]] = []
        for static in candidates:
            hits = self.retriever.search(f"{query} {static.unit.text}", self.per_document,
                                         exclude=seen, parents=(static.unit.id,))
            seen |= {c.unit.id for c in hits}
            found.append(hits)
        # round-robin: every static document's best dynamic one before any second one
        dynamic = [hits[i] for i in range(self.per_document) for hits in found if i < len(hits)]
        return StageOutput(_renumber([*candidates, *dynamic][:k]), StageDetails(order=QDC_ORDER))


class _Selection(Stage):
    """A selection by the classifier C against `threshold`; its settings name both."""

    granularity = "documents"

    def __init__(self, classifier: PairClassifier, threshold: float) -> None:
        self.classifier, self.threshold = classifier, threshold

    @property
    def stand_in(self) -> StandIn | None:
        return self.classifier.stand_in  # the untrained stand-in decides until training ends

    def settings(self) -> dict:
        return {"model": getattr(self.classifier, "location", type(self.classifier).__name__),
                "threshold": self.threshold}


def _call(first: Candidate, second: Candidate, probability: float,
          threshold: float) -> ClassifierCall:
    return ClassifierCall(first.unit.id, first.unit.title, second.unit.id, second.unit.title,
                          round(probability, 4), threshold, probability >= threshold)


def _text(candidate: Candidate) -> str:
    return f"{candidate.unit.title}\n{candidate.unit.text}"


class ForwardSelection(_Selection):
    """CFS: each static document keeps the first of its QDC documents that C accepts."""

    name = "cfs"

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        statics = [c for c in candidates if is_static(c)]
        kept, calls = list(statics), []
        for static in statics:
            walk = [c for c in candidates if c.parents[-1:] == (static.unit.id,)]
            if not walk:
                continue
            for candidate in walk:  # one call at a time: the walk stops at the first yes
                (p,) = self.classifier.probabilities(query, [(_text(static), _text(candidate))])
                calls.append(_call(static, candidate, p, self.threshold))
                if p >= self.threshold:
                    kept.append(candidate)
                    break
        return StageOutput(_renumber(kept[:k]), StageDetails(order=CFS_ORDER,
                                                             calls=tuple(calls)))


class InverseSelection(_Selection):
    """CIS: score every pair of the candidates; drop documents in no accepted pair."""

    name = "cis"

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        pairs = list(combinations(candidates, 2))  # in rank order: the better one first
        probs = self.classifier.probabilities(query, [(_text(a), _text(b)) for a, b in pairs])
        calls = [_call(a, b, p, self.threshold) for (a, b), p in zip(pairs, probs, strict=True)]
        accepted = {doc for c in calls if c.kept for doc in (c.d1, c.d2)}
        kept = [c for c in candidates if c.unit.id in accepted]
        note = ""
        if not kept and candidates:  # the reader always gets the best document
            kept, note = [candidates[0]], "no pair accepted: kept the top one"
        return StageOutput(_renumber(kept[:k]), StageDetails(note=note, order=CIS_ORDER,
                                                             calls=tuple(calls)))
