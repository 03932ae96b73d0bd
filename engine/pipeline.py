"""Running stages: the pipeline, not the stage, times every call; and the two
granularity changes between stages (clusters -> documents, documents -> passages)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from engine.chunking import Chunker
from engine.stages.base import Stage
from engine.trace import StageResult
from engine.types import Candidate, Corpus
from engine.units import document_unit, passage_units


def run_stage(stage: Stage, query: str, candidates: Sequence[Candidate], k: int) -> StageResult:
    """Run `stage` and wrap its output with its name, input size and wall time.

    The input size of a first-stage retriever (no candidates in) is the number of units its
    index searched, so a funnel's first bar shows the whole haystack.
    """
    start = time.perf_counter()
    out = stage.run(query, candidates, k)
    n_in = len(candidates) or len(getattr(getattr(stage, "index", None), "units", ()))
    return StageResult(name=stage.name, granularity=stage.granularity, n_in=n_in,
                       candidates=out.candidates, seconds=time.perf_counter() - start,
                       extras=out.extras)


def expand_to_documents(corpus: Corpus, clusters: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """The documents of ranked clusters, in cluster order, each carrying its cluster's score
    and the cluster id as parent. A document in two retrieved units appears once."""
    out, seen = [], set()
    for cluster in clusters:
        for doc_id in cluster.unit.doc_ids:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            out.append(Candidate(document_unit(corpus.by_id[doc_id]), cluster.score,
                                 len(out) + 1, parents=(*cluster.parents, cluster.unit.id)))
    return tuple(out)


def chunk_documents(corpus: Corpus, documents: Sequence[Candidate],
                    chunker: Chunker) -> tuple[Candidate, ...]:
    """Later chunking: split ranked documents into passages that inherit their lineage."""
    out = []
    for doc in documents:
        for unit in passage_units([corpus.by_id[doc.unit.id]], chunker):
            out.append(Candidate(unit, doc.score, len(out) + 1,
                                 parents=(*doc.parents, doc.unit.id)))
    return tuple(out)
