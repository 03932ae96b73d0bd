"""Cross-encoder re-ranking: FunnelRAG's pre-ranker (and the flat paradigm's reranker).

Each candidate is scored as the pair (query, "title\\ntext") by a sentence-transformers
`CrossEncoder` with one output logit; candidates are re-sorted by that logit (no sigmoid, so
confident scores do not tie). The model is loaded on the first `run`, once per process.

`model` is "trained" (the pre-ranker `python -m engine train preranker` caches; it is never
trained at query time), an alias of engine.models.loading, a local folder or a hub id.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.errors import ConfigError, check_choice, check_range
from engine.models.cross_encoder import load_cross_encoder, model_location, score_pairs
from engine.stages.base import Stage, StageOutput, rerank
from engine.types import Candidate
from engine.units.build import GRANULARITIES

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder
class CrossEncoderReranker(Stage):
    """Re-rank incoming candidates by a cross-encoder's score of (query, title + text)."""

    def __init__(self, model: str = "trained", *, batch_size: int = 32, max_length: int = 256,
                 granularity: str = "documents", name: str = "preranker") -> None:
        """
        Args:
            model: "trained", an alias (e.g. "minilm"), a local folder or a hub id.
            batch_size: pairs per forward pass.
            max_length: tokens per (query, text) pair; longer texts are truncated.
            granularity: of the candidates it receives, and so of those it returns.
            name: the stage's name in traces ("preranker" in FunnelRAG, "rerank" in flat).
        """
        check_range("batch_size", batch_size, 1, 4096)
        check_range("max_length", max_length, 16, 8192)
        self.model = model
        self.batch_size = batch_size
        self.max_length = max_length
        self.granularity = check_choice("granularity", granularity, GRANULARITIES)
        self.name = name
        self._location: str | None = None

    def config(self) -> dict:
        """The stage's settings, JSON-friendly (for the run trace)."""
        return {"model": self.model, "batch_size": self.batch_size,
                "max_length": self.max_length, "granularity": self.granularity}

    def _model(self) -> CrossEncoder:
        if self._location is None:
            self._location = model_location(self.model)
        return load_cross_encoder(self._location, self.max_length)

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        """The cross-encoder's logit for each candidate, in input order."""
        if not candidates:
            return []
        pairs = [(query, f"{c.unit.title}\n{c.unit.text}") for c in candidates]
        return score_pairs(self._model(), pairs, self.batch_size)

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        """The top-`k` of `candidates` by cross-encoder score, ranks renumbered from 1."""
        check_range("k", k, 1, 1_000_000)
        wrong = {c.unit.granularity for c in candidates} - {self.granularity}
        if wrong:
            raise ConfigError(
                f"{type(self).__name__}(granularity={self.granularity!r}) got "
                f"{', '.join(sorted(wrong))} candidates; construct it with "
                f"granularity={sorted(wrong)[0]!r}."
            )
        return StageOutput(rerank(candidates, self.scores(query, candidates), k))


BI_ENCODER = "bi-encoder"


class BiEncoderReranker(Stage):
    """Re-rank incoming candidates by the cosine of bi-encoder embeddings of the query and
    of each candidate's "title\\ntext" (the "bi-encoder order" baseline of the pre-ranker
    benchmark). Candidate vectors are kept per unit, so a document seen by an earlier
    question is not encoded again."""

    def __init__(self, model: str = "minilm", *, granularity: str = "documents",
                 name: str = "preranker", max_cached: int = 200_000) -> None:
        self.model = model
        self.granularity = check_choice("granularity", granularity, GRANULARITIES)
        self.name = name
        self.max_cached = max_cached
        self._vectors: dict[tuple[str, str], object] = {}

    def config(self) -> dict:
        return {"model": self.model, "kind": BI_ENCODER, "granularity": self.granularity}

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        from engine.index.dense import encode
        from engine.units.build import index_text

        if not candidates:
            return []
        keys = [(c.unit.id, c.unit.text) for c in candidates]
        missing = [i for i, key in enumerate(keys) if key not in self._vectors]
        if missing:
            if len(self._vectors) + len(missing) > self.max_cached:
                self._vectors.clear()
            vectors = encode([index_text(candidates[i].unit) for i in missing], self.model)
            self._vectors.update(zip((keys[i] for i in missing), vectors, strict=True))
        q = encode([query], self.model, queries=True)[0]
        return [float(self._vectors[key] @ q) for key in keys]

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        check_range("k", k, 1, 1_000_000)
        return StageOutput(rerank(candidates, self.scores(query, candidates), k))


def make_reranker(model: str, *, granularity: str = "documents",
                  name: str = "preranker") -> Stage:
    """The re-ranking stage for `model`: "bi-encoder" (MiniLM cosine) or a cross-encoder
    ("trained", an alias, a local folder or a hub id)."""
    if model == BI_ENCODER:
        return BiEncoderReranker(granularity=granularity, name=name)
    return CrossEncoderReranker(model, granularity=granularity, name=name)


@lru_cache(maxsize=16)
def shared_reranker(model: str, *, granularity: str = "documents",
                    name: str = "preranker") -> Stage:
    """`make_reranker`, one per (model, granularity, name) for the whole process, so the
    candidate vectors a bi-encoder re-ranker keeps serve every paradigm and config."""
    return make_reranker(model, granularity=granularity, name=name)
