"""A re-ranker of the example plugin: reciprocal rank fusion (Cormack et al., 2009) of BM25's
and the dense index's ranks of the candidates, in any paradigm: {"reranker": "rrf"}."""
from dataclasses import dataclass

import numpy as np

from engine.api import BM25, Dense, Reranker, RerankerSpec, Resources

RRF_K = 60  # a candidate ranked r-th by one ranking gains 1 / (RRF_K + r)


@dataclass(frozen=True)
class Rankings(Resources):
    bm25: BM25
    dense: Dense


class RRF(Reranker):
    """Candidates by their fused ranks (ties keep the candidates' order)."""
    def __init__(self, uses, granularity="passages", name="rrf"):
        self.uses, self.granularity, self.name = uses, granularity, name

    @property
    def stand_in(self):  # BM25 answering for the dense index while it builds: in the trace
        return self.uses.stand_in

    def scores(self, query, candidates):
        ids, fused = [c.unit.id for c in candidates], np.zeros(len(candidates))
        for index in (self.uses.bm25, self.uses.dense):
            ranked = np.argsort(-index.score_units(query, ids), kind="stable")
            fused[ranked] += 1 / (RRF_K + np.arange(1, len(ids) + 1))
        return fused.tolist()


RRF_RERANKER = RerankerSpec(
    "rrf", "reciprocal rank fusion of BM25's and the dense index's ranks",
    make=lambda corpus, passages, uses, **how: RRF(uses, **how),
    resources=lambda at: Rankings(BM25(at.units), Dense(at.units, at.bi_encoder)))
