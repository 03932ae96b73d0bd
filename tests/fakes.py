"""Deterministic fake stages and a small annotated run trace, shared by several tests."""

from __future__ import annotations

from collections.abc import Sequence

from engine.paradigms import annotate
from engine.pipeline import expand_to_documents, run_stage
from engine.stages.base import Stage, StageOutput, rerank
from engine.trace import RunTrace
from engine.types import Candidate, Question, Unit


class WordOverlapRanker(Stage):
    """Scores a candidate by how many query words its text contains."""

    granularity = "documents"

    def __init__(self, name: str = "overlap") -> None:
        self.name = name

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        words = set(query.lower().split())
        scores = [len(words & set(c.unit.text.lower().split())) for c in candidates]
        return StageOutput(rerank(candidates, scores, k), {"note": "fake"})


def clusters(tiny_corpus) -> tuple[Candidate, ...]:
    groups = [("Danube", "Budapest", "Vienna"), ("Georges Seurat", "A Sunday Afternoon")]
    return tuple(Candidate(Unit(f"c{i}", g[0], "", g, "clusters"), 10.0 - i, i + 1)
                 for i, g in enumerate(groups))


def sample_trace(tiny_corpus) -> RunTrace:
    docs = expand_to_documents(tiny_corpus, clusters(tiny_corpus))
    first = run_stage(WordOverlapRanker(), "seurat painting", docs, 5)
    second = run_stage(WordOverlapRanker("rivers"), "river capital", first.candidates, 2)
    trace = RunTrace(question="Who painted A Sunday Afternoon?", paradigm="fake",
                     config={"K": 5}, stages=(first, second), answer="Georges Seurat",
                     reader_input_tokens=42)
    gold = Question("q1", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
                    supporting_titles=("A Sunday Afternoon",))
    return annotate(trace, gold)
