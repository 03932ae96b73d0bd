"""What a stage or a reader call records beside its ranked candidates.

Small frozen records that stages and the reader construct and that the app, annotation,
exports and benchmarks import and read by attribute, so a renamed field fails where it is
read instead of silently blanking a table. Every record is JSON-friendly through `asdict`;
`engine.trace` rebuilds them (and converts traces stored as free-form `extras` before these
records existed).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StandIn:
    """What answers in place of a resource that is not ready, declared by the loaded
    resource itself (its `stand_in`, None for the real one) and read into the trace: `what`
    stands in (a stage's `stand_in` setting: "bm25" for a dense index still being built,
    "cosines" for an untrained selection classifier) and the `note` the stage shows."""

    what: str
    note: str


@dataclass(frozen=True)
class ClassifierCall:
    """One call of DR-RAG's selection classifier C(q, d1, d2) and what it decided."""

    d1: str  # document ids and titles, d1 the better-ranked (or static) one
    d1_title: str
    d2: str
    d2_title: str
    probability: float
    threshold: float
    kept: bool  # probability >= threshold


@dataclass(frozen=True)
class WeighedSentence:
    """A sentence the sentence cut (or best's summariser) scored against the question."""

    passage: str  # the id of the passage it comes from
    text: str
    score: float  # the scorer's: a cosine (bi-encoder), a logit (cross-encoder), a plugin's
    kept: bool
    tokens: int = 0
    why: str = ""  # how a kept sentence was kept: "" by its score, "neighbour" of one that was


def weighed_sentence(d: dict) -> WeighedSentence:
    """A `WeighedSentence` from its `asdict` form (stored before scorers other than the
    bi-encoder: its score was called "cosine")."""
    d = dict(d)
    if "cosine" in d:
        d["score"] = d.pop("cosine")
    return WeighedSentence(**d)


@dataclass(frozen=True)
class BestChunk:
    """The chunk that won a long unit its MaxP score (LongRAG's retriever)."""

    unit: str  # the id of the unit it scored
    id: str
    title: str
    text: str
    cosine: float


@dataclass(frozen=True)
class QueryDecision:
    """Query classification: does the request need retrieval?"""

    retrieve: bool
    probability: float  # P(needs retrieval)
    threshold: float


@dataclass(frozen=True)
class ReaderAttention:
    """The reader's first-token attention over the passages it read.

    `cells[p][l][h]`: passage p's attention at layer l, head h, over its most attended
    tokens (`top_tokens[p]`). A post-ranking pass adds each passage's raw `scores`, the
    tokens it encoded and how long that took.
    """

    cells: tuple[tuple[tuple[float, ...], ...], ...]
    passages: tuple[str, ...]  # passage ids, in `cells` order
    top_tokens: tuple[tuple[str, ...], ...]
    answered_from: tuple[str, ...] = ()  # the passages the answer (or the ranking) kept
    scores: tuple[float, ...] = ()
    input_tokens: int = 0
    encode_seconds: float = 0.0
    # after a sentence cut, the same attention per sentence read (grouped by passage, in the
    # prompt's order): cells[s][l][h], the passage each is from, and its text
    sentence_cells: tuple[tuple[tuple[float, ...], ...], ...] = ()
    sentence_passages: tuple[str, ...] = ()
    sentence_texts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ablation:
    """Leave-one-out attribution of a reader call (engine/readers/ablation.py).

    `logprob` is the log-probability of the answer the reader gave with every passage read
    (its tokens' sum, the stop token's included); `without[p]` is that of the same answer
    with passage p left out and the rest of the prompt unchanged; `answers_without[p]` is
    what the reader says then (greedy). Passages in `ReaderAttention`'s order (the prompt's).
    """

    passages: tuple[str, ...]
    answer: str
    logprob: float
    without: tuple[float, ...]
    answers_without: tuple[str, ...]
    answer_tokens: int  # tokens of the answer scored
    tokens_read: int  # tokens the model read for all the variants
    seconds: float

    @property
    def effects(self) -> tuple[float, ...]:
        """Per passage: how much less likely the answer is without it (log-probability
        with minus without; below 0: more likely without it)."""
        return tuple(self.logprob - w for w in self.without)

    @property
    def changed(self) -> tuple[bool, ...]:
        """Per passage: whether the answer without it is another answer (normalised as
        exact match normalises)."""
        from engine.metrics import normalize_answer

        said = normalize_answer(self.answer)
        return tuple(normalize_answer(a) != said for a in self.answers_without)

    @property
    def most(self) -> str:
        """The passage the answer depends on most ("" when none was read)."""
        effects = self.effects
        return self.passages[max(range(len(effects)), key=effects.__getitem__)] \
            if effects else ""


@dataclass(frozen=True)
class StageDetails:
    """What a stage says about its run beyond the candidates; every field optional."""

    note: str = ""  # one human line: how it scored, what a budget cut
    order: str = ""  # how the candidates are listed, when not best score first
    tokens: int | None = None  # tokens of the text it kept, where it counts them
    tokens_in: int | None = None  # tokens of the text it was given (summarisation)
    decision: QueryDecision | None = None
    calls: tuple[ClassifierCall, ...] = ()
    sentences: tuple[WeighedSentence, ...] = ()
    best_chunks: tuple[BestChunk, ...] = ()
    attention: ReaderAttention | None = None

    def best_chunk(self, unit_id: str) -> BestChunk | None:
        return next((c for c in self.best_chunks if c.unit == unit_id), None)


@dataclass(frozen=True)
class ReadCount:
    """Under a token cap: how many of the passages offered the reader read (best first)."""

    read: int
    offered: int


NO_DETAILS = StageDetails()


def deep_tuple(value):
    """Lists (from JSON) back to tuples, at every depth."""
    if isinstance(value, list | tuple):
        return tuple(deep_tuple(v) for v in value)
    return value


def details_from_dict(d: dict) -> StageDetails:
    """`StageDetails` from its `asdict` form."""
    attention = d.get("attention")
    decision = d.get("decision")
    return StageDetails(
        note=d.get("note", ""), order=d.get("order", ""), tokens=d.get("tokens"),
        tokens_in=d.get("tokens_in"),
        decision=QueryDecision(**decision) if decision else None,
        calls=tuple(ClassifierCall(**c) for c in d.get("calls", ())),
        sentences=tuple(weighed_sentence(s) for s in d.get("sentences", ())),
        best_chunks=tuple(BestChunk(**c) for c in d.get("best_chunks", ())),
        attention=attention_from_dict(attention) if attention else None)


def attention_from_dict(d: dict) -> ReaderAttention:
    return ReaderAttention(**{k: deep_tuple(v) for k, v in d.items()})


def ablation_from_dict(d: dict) -> Ablation:
    return Ablation(**{k: deep_tuple(v) for k, v in d.items()})


# --- traces stored before these records: free-form `extras` dicts -----------------------


def details_from_extras(extras: dict) -> StageDetails:
    """A stage's `StageDetails` from the `extras` dict traces stored before them."""
    note = extras.get("note", "")
    if extras.get("fallback"):
        note = "; ".join(filter(None, (note, extras["fallback"])))
    decision = None
    if "retrieve" in extras:
        decision = QueryDecision(extras["retrieve"], extras.get("probability", 0.0),
                                 extras.get("threshold", 0.0))
    return StageDetails(
        note=note, tokens=extras.get("tokens", extras.get("tokens_after")),
        tokens_in=extras.get("tokens_before"), decision=decision,
        calls=tuple(ClassifierCall(**c) for c in extras.get("classifier", ())),
        sentences=tuple(weighed_sentence(s) for s in extras.get("sentences", ())),
        best_chunks=tuple(BestChunk(unit=uid, **c)
                          for uid, c in extras.get("best_chunks", {}).items()),
        attention=attention_from_extras(extras))


def attention_from_extras(extras: dict) -> ReaderAttention | None:
    """The reader attention an old `extras` dict held, if any."""
    if not extras.get("attention"):
        return None
    return ReaderAttention(
        cells=deep_tuple(extras["attention"]),
        passages=tuple(extras.get("attention_passages", ())),
        top_tokens=deep_tuple(extras.get("top_tokens", ())),
        answered_from=tuple(extras.get("answered_from", ())),
        scores=tuple(extras.get("attention_scores", ())),
        input_tokens=extras.get("input_tokens", 0),
        encode_seconds=extras.get("encode_seconds", 0.0))


def settings_from_extras(extras: dict) -> dict:
    """The settings old post-ranking traces kept among their extras."""
    return {k: extras[k] for k in ("attention_weight", "aggregation", "lr") if k in extras}

