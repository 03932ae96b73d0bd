"""Leave-one-out attribution: which of the passages read the answer depends on.

Attention is where the reader looked at its first answer token, not what its answer came
from (on the packaged reader, attention ordered passages worse than the pre-ranker;
docs/benchmarks/diagnosis.md, "Attention against leave-one-out attribution").
Ablation asks the model instead, as ContextCite and AttriBoT do: the
answer's log-probability with every passage read, and with each one left out, the rest of
the prompt unchanged; and whether the greedy answer changes without it. The generator
reads each variant only from where the left-out passage stood, on the full prompt's
key/value states before it (`Generator.ablate`), so the passage read last, next to the
question, costs the fewest tokens. `reader.ablation` asks for it with every answer;
`Explorer.ablation` adds it to a stored run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.readers.answers import short_answer
from engine.readers.generator import Ablated
from engine.trace import LLMStep, RunTrace
from engine.trace_details import Ablation, ReaderAttention


def record(ablated: Ablated, passages: Sequence[str], short: bool = True) -> Ablation:
    """What a trace keeps of a generator's leave-one-out scoring; `passages` are the ids of
    the passages left out one at a time, in the variants' order; `short`: answers as the
    short answer (a long-answer turn keeps its text). Its seconds are those beyond the
    answer's own."""
    said = short_answer if short else str.strip
    return Ablation(
        passages=tuple(passages), answer=said(ablated.base.text),
        logprob=round(sum(ablated.base.logprobs), 5),
        without=tuple(round(v.logprob, 5) for v in ablated.variants),
        answers_without=tuple(said(v.text) for v in ablated.variants),
        answer_tokens=ablated.base.output_tokens,
        tokens_read=sum(v.tokens_read for v in ablated.variants),
        seconds=round(ablated.seconds - ablated.base.seconds, 4))


def reading_step(trace: RunTrace) -> LLMStep | None:
    """The run's last reader call over passages that has an ablation, else None."""
    return next((s for s in reversed(trace.llm_steps) if s.ablation is not None), None)


@dataclass(frozen=True)
class Agreement:
    """How attention and ablation rank the same passages.

    `spearman`: rank correlation of each passage's attention (the heatmap's eq3 score) and
    its ablation effect, None with fewer than three passages or a tie throughout;
    `same_top`: attention's most attended passage is the one the answer depends on most.
    """

    passages: int
    spearman: float | None
    same_top: bool
    attended: str  # attention's most attended passage
    most: str  # the passage whose removal costs the answer most


def attention_scores(read: ReaderAttention) -> dict[str, float]:
    """Each passage's attention score: its raw post-ranking score where the pass kept one,
    else the mean of its heatmap cells (eq3: layers, heads, representative tokens)."""
    if read.scores:
        return dict(zip(read.passages, read.scores, strict=True))
    return {p: _mean(cells) for p, cells in zip(read.passages, read.cells, strict=True)}


def agreement(read: ReaderAttention, ablation: Ablation) -> Agreement | None:
    """Attention against ablation over the passages both cover (None: fewer than two)."""
    from scipy.stats import spearmanr

    scores = attention_scores(read)
    effects = dict(zip(ablation.passages, ablation.effects, strict=True))
    shared = [p for p in ablation.passages if p in scores]
    if len(shared) < 2:
        return None
    x, y = [scores[p] for p in shared], [effects[p] for p in shared]
    rho = None
    if len(shared) >= 3 and len(set(x)) > 1 and len(set(y)) > 1:
        rho = float(spearmanr(x, y).statistic)
        rho = None if math.isnan(rho) else round(rho, 4)
    attended = max(shared, key=scores.__getitem__)
    most = max(shared, key=effects.__getitem__)
    return Agreement(len(shared), rho, attended == most, attended, most)


def _mean(cells) -> float:
    values = [v for layer in cells for v in layer]
    return sum(values) / len(values) if values else 0.0
