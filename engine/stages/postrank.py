"""FunnelRAG post-ranking: the FiD reader's attention ranks passages (no answer here: the
paradigm's reader answers in its own LLM step)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.stages.base import Stage, StageOutput, rerank
from engine.types import Candidate

if TYPE_CHECKING:
    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig


class FiDPostRanker(Stage):
    """Scores every candidate passage by the reader's first-token attention (Eq. 3 or
    another scheme of the config) and keeps the top `k`.

    `extras` carries the attention heatmap cells ([passage, layer, head]), each passage's
    representative tokens, the tokens the reader read and its encoding seconds.
    """

    name = "postranker"
    granularity = "passages"

    def __init__(self, config: ReaderConfig, reader: FiDReader | None = None) -> None:
        """`reader` defaults to the process's shared FiD reader for `config.model`."""
        self.config, self._reader = config, reader

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        from engine.readers.fid import shared_fid_reader
        from engine.readers.reader import attention_extras

        if not candidates:
            return StageOutput((), {"input_tokens": 0})
        reader = self._reader or shared_fid_reader(self.config.model)
        out = reader.read(query, [(c.unit.title, c.unit.text) for c in candidates],
                          self.config, answer=False)
        kept = rerank(candidates, out.scores, k)
        extras = attention_extras(candidates, out.token_attention, out.top_tokens,
                                  self.config.lr, ())
        extras["answered_from"] = [c.unit.id for c in kept]
        extras |= {"input_tokens": out.input_tokens,
                   "encode_seconds": round(out.encode_seconds, 4)}
        return StageOutput(kept, extras)
