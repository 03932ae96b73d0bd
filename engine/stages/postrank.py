"""FunnelRAG post-ranking: the FiD reader's attention ranks passages, then it answers."""

from __future__ import annotations

from collections.abc import Sequence

from engine.fid import FiDReader, ReaderOutput
from engine.stages.base import Stage, StageOutput, rerank
from engine.types import Candidate


class FiDPostRanker(Stage):
    """Scores every candidate passage by the reader's first-token attention (Eq. 3), keeps
    the top `k` and decodes the answer over them, reusing the encoded blocks.

    `extras` carries the answer, the attention heatmap cells ([passage, layer, head]),
    each passage's representative tokens, reader token counts and timings.
    """

    name = "postranker"
    granularity = "passages"

    def __init__(self, reader: FiDReader) -> None:
        self.reader = reader

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        if not candidates:
            return StageOutput((), {"answer": "", "input_tokens": 0, "answer_seconds": 0.0})
        out = self.reader.read(query, [(c.unit.title, c.unit.text) for c in candidates],
                               answer_top=k)
        return StageOutput(rerank(candidates, out.scores, k), reader_extras(candidates, out))


def reader_extras(candidates: Sequence[Candidate], out: ReaderOutput) -> dict:
    """What a trace keeps of one reading: the answer, the attention heatmap cells
    ([passage, layer, head]) with each passage's representative tokens, tokens and timings."""
    return {
        "answer": out.answer,
        "answered_from": [candidates[i].unit.id for i in out.answered_from],
        "attention": out.attention.round(6).tolist(),
        "attention_passages": [c.unit.id for c in candidates],
        "top_tokens": [list(t) for t in out.top_tokens],
        "input_tokens": out.input_tokens,
        "answer_tokens": out.answer_tokens,
        "encode_seconds": round(out.encode_seconds, 4),
        "answer_seconds": round(out.answer_seconds, 4),
    }
