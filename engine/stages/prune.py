"""The funnel's last cut: sentences. Clusters -> documents -> passages -> sentences.

Every sentence of the passages a paradigm would read is scored against the question (the
bi-encoder's cosine, a cross-encoder's logit or a plugin re-ranker's score), and only the
best are read: those that fit a token budget, or those whose score, min-max scaled over the
question's sentences, reaches a threshold. This is the extractive compressor of RECOMP (Xu
et al., 2024) and the sentence pruning of Provence (Chirkova et al., 2025), with the
passage structure kept: each passage keeps its kept sentences in their own order under its
own title, and a passage with none kept is not read.

A sentence that opens with a pronoun ("He lives in Los Angeles.") means little without the
one before it, so with `neighbours` on, keeping it keeps its predecessor in the same passage
too (and that one's, if it dangles as well), counted against the budget as one piece.

The stage's details hold every sentence with its score, kept or cut (and why kept), and the
tokens before and after, which Explore shows and the trace stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from engine.config import check_config, param
from engine.documents import Candidate, Unit
from engine.errors import ConfigError
from engine.stages.base import Stage, StageOutput
from engine.text import WORD_RE, count_tokens, split_sentences
from engine.trace_details import StageDetails, WeighedSentence

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

OFF, BUDGET, THRESHOLD = "off", "budget", "threshold"
MODES = (OFF, BUDGET, THRESHOLD)
BI_ENCODER = "bi-encoder"
STORED_SCORES = ("bm25", "hybrid")  # re-rankers of stored document scores: no sentences
NEIGHBOUR = "neighbour"  # why a sentence kept for the one after it was kept

# a sentence opening with one of these leans on the sentence before it
DANGLING = frozenset(
    "he she it they him her his hers its their theirs them this these those such there "
    "both neither either another".split())


@dataclass(frozen=True)
class PruneConfig:
    """The sentence cut, an option of every paradigm (`prune`)."""

    mode: str = param(OFF, "sentence cut after the last passage cut: off, budget (the "
                      "best sentences within `tokens`) or threshold (every sentence whose "
                      "min-max scaled score reaches `threshold`)", choices=MODES)
    scorer: str = param(BI_ENCODER, "sentence scorer: bi-encoder (the paradigm's dense "
                        "encoder), trained (the trained cross-encoder), a plugin's "
                        "re-ranker, or a cross-encoder folder or hub id", names="models")
    # 150: on the training questions (flat, 100 questions) the best EM and F1 of 64-200,
    # ~40% of the passages' tokens cut (docs/benchmarks/reader.md, "The sentence cut")
    tokens: int = param(150, "budget: tokens of sentences read, over all passages", low=16,
                        high=4096)
    threshold: float = param(0.5, "threshold: the least score kept, min-max scaled over the "
                             "question's sentences (0 keeps all, 1 the best alone)", low=0.0,
                             high=1.0)
    neighbours: bool = param(True, "keep the sentence before a kept one that opens with a "
                             "pronoun (it would dangle without it)")

    def __post_init__(self) -> None:
        check_config(self)
        if self.scorer in STORED_SCORES:
            raise ConfigError(f"prune.scorer {self.scorer!r} reads stored document scores, "
                              "which a sentence has none of; score sentences with "
                              f"{BI_ENCODER!r}, 'trained', a plugin's re-ranker or a "
                              "cross-encoder folder or hub id.")

    @property
    def on(self) -> bool:
        return self.mode != OFF


class SentenceScorer(Protocol):
    """What scores sentences: any re-ranker (`scores(query, candidates)`, higher better)."""

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]: ...


class EncoderScorer:
    """A bi-encoder's cosine of each sentence to the question."""

    def __init__(self, encoder: SentenceTransformer) -> None:
        self.encoder = encoder

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        from engine.index.encoding import encode_with

        if not candidates:
            return []
        vectors = encode_with(self.encoder, [c.unit.text for c in candidates])
        return (vectors @ encode_with(self.encoder, [query], queries=True)[0]).tolist()


@dataclass(frozen=True)
class Sentence:
    passage: int  # index of its passage among the candidates
    text: str
    leans_on: int | None  # the sentence before it in its passage, when it dangles


def sentences_of(candidates: Sequence[Candidate], neighbours: bool = True) -> list[Sentence]:
    """Every sentence of `candidates`, in order; with `neighbours`, a sentence opening with
    a pronoun leans on the one before it in the same passage."""
    out: list[Sentence] = []
    for i, cand in enumerate(candidates):
        first = len(out)
        for a, b in split_sentences(cand.unit.text):
            text = cand.unit.text[a:b]
            leans = neighbours and len(out) > first and dangles(text)
            out.append(Sentence(i, text, len(out) - 1 if leans else None))
    return out


def dangles(sentence: str) -> bool:
    """Whether `sentence` opens with a word that points back (a pronoun, "this", "both")."""
    first = WORD_RE.search(sentence)
    return first is not None and first.group().lower() in DANGLING


def _with_predecessors(s: int, sentences: Sequence[Sentence], kept: dict[int, str]
                       ) -> list[int]:
    """Sentence `s` and the sentences it leans on, back to one that stands alone (or is
    already kept)."""
    group = [s]
    while (before := sentences[group[-1]].leans_on) is not None and before not in kept:
        group.append(before)
    return group


def keep_within(scores: Sequence[float], sentences: Sequence[Sentence], sizes: Sequence[int],
                budget: int) -> dict[int, str]:
    """{sentence: why kept} of the best-scored sentences (with what they lean on) whose
    tokens fit `budget`; a piece that does not fit is passed over for a shorter one further
    down. The best sentence is kept even when it alone is over the budget."""
    kept: dict[int, str] = {}
    used = 0
    for s in np.argsort(-np.asarray(scores, dtype=float), kind="stable"):
        s = int(s)
        if s in kept:
            continue
        group = _with_predecessors(s, sentences, kept)
        size = sum(sizes[g] for g in group)
        if kept and used + size > budget:
            continue
        kept.update({g: "" if g == s else NEIGHBOUR for g in group})
        used += size
    return kept


def keep_above(scores: Sequence[float], sentences: Sequence[Sentence],
               threshold: float) -> dict[int, str]:
    """{sentence: why kept} of the sentences whose score, min-max scaled over all of them,
    reaches `threshold` (all of them when every score is equal), with what they lean on."""
    values = np.asarray(scores, dtype=float)
    spread = values.max() - values.min()
    scaled = (values - values.min()) / spread if spread > 0 else np.ones_like(values)
    kept: dict[int, str] = {}
    for s in np.flatnonzero(scaled >= threshold - 1e-12):
        kept[int(s)] = ""
    for s in sorted(kept):
        if kept[s] == "":
            for g in _with_predecessors(s, sentences, kept)[1:]:
                kept.setdefault(g, NEIGHBOUR)
    return kept


class SentencePruner(Stage):
    """Keep the sentences of the candidates that best answer the question, under a token
    budget or above a score threshold (`PruneConfig`); passages keep their order, titles
    and ids, and a passage left with no sentence is dropped."""

    name = "sentences"
    granularity = "passages"

    def __init__(self, scorer: SentenceScorer, config: PruneConfig, model: str = BI_ENCODER,
                 *, name: str = "sentences", tokens: int | None = None) -> None:
        """`scorer` is the loaded scorer `model` names (`config.scorer`, or the summariser's
        bi-encoder); `tokens` overrides the config's budget (the summariser's own range)."""
        self.scorer, self.config, self.model, self.name = scorer, config, model, name
        self.tokens = config.tokens if tokens is None else tokens

    def settings(self) -> dict:
        cfg = self.config
        cut = {"max_tokens": self.tokens} if cfg.mode == BUDGET else {"threshold": cfg.threshold}
        return {"mode": cfg.mode, **cut, "sentence_scorer": self.model,
                "neighbours": cfg.neighbours}

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The candidates cut to their kept sentences, in input order; `k` is unused."""
        cfg = self.config
        sentences = sentences_of(candidates, cfg.neighbours)
        if not sentences:
            return StageOutput(())
        pieces = [_piece(candidates[s.passage], n, s.text) for n, s in enumerate(sentences)]
        scores = self.scorer.scores(query, pieces)
        sizes = [count_tokens(s.text) for s in sentences]
        kept = keep_within(scores, sentences, sizes, self.tokens) if cfg.mode == BUDGET \
            else keep_above(scores, sentences, cfg.threshold)
        out = cut_to(candidates, [(candidates[s.passage].unit.id, s.text)
                                  for n, s in enumerate(sentences) if n in kept])
        before = sum(count_tokens(c.unit.text) for c in candidates)
        used = sum(sizes[n] for n in kept)
        limit = f"threshold {cfg.threshold:g}" if cfg.mode != BUDGET else \
            f"budget {self.tokens:,}" + ("; the best sentence is kept even over it"
                                         if used > self.tokens else "")
        return StageOutput(out, StageDetails(
            note=f"{len(kept)} of {len(sentences)} sentences kept: {used:,} of {before:,} "
                 f"tokens ({limit}), {before - used:,} saved",
            tokens=used, tokens_in=before,
            sentences=tuple(WeighedSentence(candidates[s.passage].unit.id, s.text,
                                            round(float(scores[n]), 4), n in kept, sizes[n],
                                            kept.get(n, ""))
                            for n, s in enumerate(sentences))))


def cut_to(candidates: Sequence[Candidate], kept: Sequence[tuple[str, str]]
           ) -> tuple[Candidate, ...]:
    """`candidates` (in their order, ranks renumbered) each cut to its kept sentences
    ((passage id, text), in reading order), joined; a passage with none is dropped."""
    texts: dict[str, list[str]] = {}
    for passage, text in kept:
        texts.setdefault(passage, []).append(text)
    out: list[Candidate] = []
    for cand in candidates:
        if cand.unit.id in texts:
            out.append(replace(cand, unit=replace(cand.unit, text=joined(texts[cand.unit.id])),
                               rank=len(out) + 1))
    return tuple(out)


def joined(sentences: Sequence[str]) -> str:
    """Kept sentences as one passage text that splits (engine.text.split_sentences) into
    exactly them again, so the reader's per-sentence heatmap rows are the cut's sentences:
    a space where it splits there, else a blank line (a heading or list line without a
    full stop once ended at a paragraph break; a space would merge it with the next)."""
    text = ""
    for sentence in sentences:
        if text:
            tail = text[-200:]
            text += " " if len(split_sentences(f"{tail} {sentence}")) == \
                len(split_sentences(tail)) + 1 else "\n\n"
        text += sentence
    return text


def _piece(passage: Candidate, n: int, text: str) -> Candidate:
    """Sentence `n` as a candidate a re-ranker scores: its passage's title, documents and
    parents, its own text."""
    unit = passage.unit
    return Candidate(Unit(f"{unit.id}#s{n}", unit.title, text, unit.doc_ids, unit.granularity),
                     0.0, n + 1, (*passage.parents, unit.id))
