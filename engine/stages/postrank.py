"""FunnelRAG post-ranking: the FiD reader's attention ranks passages, fused with a prior
order (no answer here: the paradigm's reader answers in its own LLM step).

A small reader's attention alone orders passages worse than the pre-ranker did
(docs/benchmarks/funnel.md, "The post-ranker"), so the score is a linear rank fusion: with n
passages, a passage's score is

    w * (1 - attention_rank / n) + (1 - w) * (1 - prior_rank / n)      (ranks from 0)

The prior is the order the passages arrive in (the pre-ranker's) unless a `prior` scorer is
given. `w = 1` is FunnelRAG's pure attention order, `w = 0` keeps the prior order and skips
the reader's pass. Ranks, not raw scores, are fused: attention scores are tiny and their
scale differs between questions, passage counts and aggregation schemes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.documents import Candidate
from engine.errors import ConfigError, check_range
from engine.stages.base import Stage, StageOutput, rerank
from engine.trace_details import StageDetails

if TYPE_CHECKING:
    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig

Prior = Callable[[str, Sequence[Candidate]], Sequence[float]]  # (query, passages) -> scores


def fused_scores(attention: Sequence[float], weight: float,
                 prior: Sequence[float] | None = None) -> list[float]:
    """Rank fusion of attention scores with a prior order, attention weighted `weight`.

    The prior is the input order, or the order of `prior` scores when given; ties keep the
    input order.
    """
    n = len(attention)
    attention_rank = _ranks(attention)
    prior_rank = _ranks(prior) if prior is not None else list(range(n))
    return [weight * (1 - attention_rank[i] / n) + (1 - weight) * (1 - prior_rank[i] / n)
            for i in range(n)]


def _ranks(scores: Sequence[float]) -> list[int]:
    """Each item's rank (0 = best) by descending score, ties in input order."""
    ranks = [0] * len(scores)
    for rank, i in enumerate(sorted(range(len(scores)), key=lambda i: -scores[i])):
        ranks[i] = rank
    return ranks


class FiDPostRanker(Stage):
    """Scores every candidate passage by the reader's first-token attention (Eq. 3 or
    another scheme of the config) fused with a prior rank, and keeps the top `k`.

    Its details carry the reader's attention (`ReaderAttention`: heatmap cells [passage,
    layer, head], each passage's representative tokens and raw attention score, the tokens
    the reader read and its encoding seconds) and a note on how it scored.
    """

    name = "postranker"
    granularity = "passages"

    def __init__(self, config: ReaderConfig, reader: FiDReader | None,
                 attention_weight: float = 1.0, prior: Prior | None = None,
                 prior_name: str = "the pre-ranker's order") -> None:
        """`reader` reads the passages (the FiD reader sharing the reader's weights; None
        for a backend without one, such as a server, which only attention weight 0 runs
        without);
        `attention_weight` is w above; `prior` scores the passages
        whose order attention is fused with (None: the order they arrive in), and
        `prior_name` says what it is in the trace."""
        check_range("attention_weight", attention_weight, 0.0, 1.0)
        if reader is None and attention_weight > 0:
            raise ConfigError(f"Post-ranking reads the passages through the reader's "
                              f"attention, which the {config.backend_of().name!r} backend "
                              "cannot give (it has no FiD reader). Set attention_weight 0, "
                              "or use a backend that reads attention (transformers).")
        self.config, self._reader, self.attention_weight = config, reader, attention_weight
        self.prior, self.prior_name = prior, prior_name

    def settings(self) -> dict:
        return {"attention_weight": self.attention_weight,
                "aggregation": self.config.aggregation, "lr": self.config.lr,
                "prior": self.prior_name}

    def _note(self) -> str:
        w, prior = self.attention_weight, self.prior_name
        if w == 0:
            return f"attention weight 0: ranked by {prior}, the reader's pass skipped"
        if w == 1:
            return f"score: the reader's attention ({self.config.aggregation}) alone"
        return (f"score: rank fusion, {w:g} x the reader's attention "
                f"({self.config.aggregation}) + {1 - w:g} x {prior}")

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        from engine.readers.reader import reader_attention

        if not candidates:
            return StageOutput(())
        prior = self.prior(query, candidates) if self.prior else None
        if self.attention_weight == 0:
            kept = rerank(candidates, fused_scores([0.0] * len(candidates), 0.0, prior), k)
            return StageOutput(kept, StageDetails(note=self._note()))
        out = self._reader.read(query, [(c.unit.title, c.unit.text) for c in candidates],
                          self.config, answer=False)
        kept = rerank(candidates, fused_scores(out.scores, self.attention_weight, prior), k)
        attention = replace(
            reader_attention(candidates, out.token_attention, out.top_tokens, self.config.lr,
                             ()),
            answered_from=tuple(c.unit.id for c in kept),
            scores=tuple(round(s, 8) for s in out.scores), input_tokens=out.input_tokens,
            encode_seconds=round(out.encode_seconds, 4))
        return StageOutput(kept, StageDetails(note=self._note(), attention=attention))
