"""The run trace every paradigm returns: immutable, JSON round-trippable.

A trace records the question, the corpus, the paradigm and its exact config, every stage's
ranked candidates with scores, ranks, lineage and seconds, every LLM call (its purpose, the
prompt's and the output's tokens, what it said, its seconds), the answer and, when gold is
known, which candidates hold it and the metrics. Reader tokens, reader seconds and the
number of LLM calls are counted from the LLM steps, never set by hand.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.documents import Candidate, Question, Unit, question_from_dict
from engine.metrics import answer_in, sentences_held
from engine.trace_details import (
    NO_DETAILS,
    Ablation,
    ReadCount,
    ReaderAttention,
    StageDetails,
    ablation_from_dict,
    attention_from_dict,
    attention_from_extras,
    details_from_dict,
    details_from_extras,
    settings_from_extras,
)

ANSWERED, FAILED, NO_CANDIDATES = "answered", "failed", "no candidates"
STATUSES = (ANSWERED, FAILED, NO_CANDIDATES)


@dataclass(frozen=True)
class StageResult:
    """One stage's output as the pipeline saw it: its candidates, what it says about them
    (`details`) and how it was set up (`settings`, the stage's own JSON-friendly dict)."""

    name: str
    granularity: str
    n_in: int
    candidates: tuple[Candidate, ...]
    seconds: float
    details: StageDetails = NO_DETAILS
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LLMStep:
    """One call to a generator: what it was for, what it read and said, and its cost.

    `answer` is the short answer extracted from `output` when `purpose` is "answer"; the
    run's answer is that of its last answer step. `attention` is the reader's over the
    passages it read (in-process readers only); `capped` says how many of the passages
    offered a token cap let it read; `ablation`, when asked for, what leaving each passage
    out does to the answer. `answer_cut`: the answer reached the reader's answer-token cap,
    so `answer` ends at the last whole word before it (shown with a trailing "…", scored
    without it).
    """

    purpose: str  # "answer", "long answer", "hyde", ...
    model: str
    prompt: str  # the prompt as sent (FiD: one block's layout, the passages elided)
    output: str
    prompt_tokens: int
    output_tokens: int
    seconds: float
    answer: str = ""
    attention: ReaderAttention | None = None
    capped: ReadCount | None = None
    cached_tokens: int = 0  # of prompt_tokens, those read from the prefix cache
    ablation: Ablation | None = None
    answer_cut: bool = False


@dataclass(frozen=True)
class GoldFlags:
    """Per candidate of one stage: does it hold a gold answer / a gold supporting doc."""

    answer: tuple[bool, ...]
    support: tuple[bool, ...]


@dataclass(frozen=True)
class RunTrace:
    question: str
    paradigm: str
    config: dict
    stages: tuple[StageResult, ...]
    llm_steps: tuple[LLMStep, ...] = ()
    answer: str = ""
    corpus: dict = field(default_factory=dict)  # {"name", "fingerprint", "documents"}
    gold: Question | None = None
    gold_flags: tuple[GoldFlags, ...] = ()
    metrics: dict = field(default_factory=dict)
    error: str = ""  # a run that failed: what went wrong (it has no stages or metrics)
    preset: str = ""  # the named preset that made it (engine/store/presets.py)

    @property
    def status(self) -> str:
        """"failed" (see `error`), "no candidates" (it ranked, and no stage returned
        anything), or "answered" (a run that decided it needs no retrieval included)."""
        if self.error:
            return FAILED
        ranking = [s for s in self.stages if s.granularity != "query"]
        if ranking and not any(s.candidates for s in ranking):
            return NO_CANDIDATES
        return ANSWERED

    @property
    def answered(self) -> bool:
        """Whether a reader's answer step ran (even one that answered nothing): none ran in
        a retrieval-only run, a test collection's question's among them."""
        return any(step.purpose == "answer" for step in self.llm_steps)

    @property
    def answer_cut(self) -> bool:
        """Whether the run's answer (its last answer step's) was cut at the reader's
        answer-token cap."""
        said = [step for step in self.llm_steps if step.purpose == "answer"]
        return bool(said) and said[-1].answer_cut

    @property
    def llm_calls(self) -> int:
        return len(self.llm_steps)

    @property
    def reader_input_tokens(self) -> int:
        """Prompt tokens of every LLM call of the run."""
        return sum(step.prompt_tokens for step in self.llm_steps)

    @property
    def reader_seconds(self) -> float:
        return sum(step.seconds for step in self.llm_steps)

    @property
    def read(self) -> tuple[Candidate, ...]:
        """What the reader read: the last stage's candidates, only the first ones when a
        token cap stopped it (its answer step counts them; the cap keeps the best first)."""
        sent = self.stages[-1].candidates if self.stages else ()
        n = next((step.capped.read for step in self.llm_steps if step.capped), None)
        return sent if n is None else sent[:n]

    @property
    def seconds(self) -> float:
        """Wall time of all stages plus every LLM call."""
        return sum(s.seconds for s in self.stages) + self.reader_seconds

    def stage(self, name: str) -> StageResult:
        for result in self.stages:
            if result.name == name:
                return result
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    def to_dict(self) -> dict[str, Any]:
        """`asdict` plus the counted totals (for readers of the JSON; ignored on load)."""
        return {**asdict(self), "llm_calls": self.llm_calls,
                "reader_input_tokens": self.reader_input_tokens,
                "reader_seconds": self.reader_seconds}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RunTrace:
        return from_dict(json.loads(text))


def failed_run(question: Question | str, paradigm: str, config: dict,
               err: BaseException) -> RunTrace:
    """The run of `question` that raised `err`: no stages, no metrics, the error named."""
    gold = question if isinstance(question, Question) else None
    text = question.text if isinstance(question, Question) else question
    return RunTrace(text, paradigm, config, (), gold=gold,
                    error=f"{type(err).__name__}: {err}")


def gold_flags(stage: StageResult, gold: Question) -> GoldFlags:
    """Which of a stage's candidates hold a gold answer or a gold supporting document."""
    titles = set(gold.supporting_titles)
    return GoldFlags(
        answer=tuple(answer_in([c.unit.text], gold.answers) for c in stage.candidates),
        support=tuple(bool(titles.intersection(c.unit.doc_ids)) for c in stage.candidates),
    )


def gold_sentences_held(stage: StageResult, gold: Question) -> tuple[bool, ...]:
    """For each of `gold`'s supporting sentences, whether one of the stage's units holds it
    whole (none when the dataset marks no sentences)."""
    return sentences_held([c.unit.text for c in stage.candidates], gold.supporting_sentences)


def gold_lost_at(trace: RunTrace) -> str | None:
    """The first stage whose candidates no longer hold a gold answer that an earlier stage
    had (None if it survived to the end, or was never retrieved)."""
    held = False
    for stage, flags in zip(trace.stages, trace.gold_flags, strict=False):
        if any(flags.answer):
            held = True
        elif held:
            return stage.name
    return None


# --- reconstruction from JSON -------------------------------------------------------------


def _candidate(d: dict[str, Any]) -> Candidate:
    unit = dict(d["unit"])
    unit["doc_ids"] = tuple(unit["doc_ids"])
    unit["span"] = tuple(unit["span"]) if unit.get("span") is not None else None
    return Candidate(unit=Unit(**unit), score=d["score"], rank=d["rank"],
                     parents=tuple(d.get("parents", ())))


def _stage(s: dict[str, Any]) -> StageResult:
    """A stage; one stored before typed records keeps what it said in `extras`."""
    if "extras" in s:
        details, settings = details_from_extras(s["extras"]), settings_from_extras(s["extras"])
    else:
        details, settings = details_from_dict(s.get("details", {})), s.get("settings", {})
    return StageResult(name=s["name"], granularity=s["granularity"], n_in=s["n_in"],
                       candidates=tuple(_candidate(c) for c in s["candidates"]),
                       seconds=s["seconds"], details=details, settings=settings)


def _llm_step(d: dict[str, Any]) -> LLMStep:
    """An LLM step; one stored before typed records keeps attention and counts in `extras`."""
    d = dict(d)
    extras = d.pop("extras", None)
    if extras is not None:
        attention = attention_from_extras(extras)
        capped = ReadCount(extras["read"], extras["offered"]) if "read" in extras else None
    else:
        attention = attention_from_dict(d["attention"]) if d.get("attention") else None
        capped = ReadCount(**d["capped"]) if d.get("capped") else None
    ablation = ablation_from_dict(d["ablation"]) if d.get("ablation") else None
    return LLMStep(**{**d, "attention": attention, "capped": capped, "ablation": ablation})


def from_dict(d: dict[str, Any]) -> RunTrace:
    """Rebuild a RunTrace from `asdict` output (tuples restored)."""
    stages = tuple(_stage(s) for s in d["stages"])
    gold = d.get("gold")
    if gold is not None:
        gold = question_from_dict(gold)
    flags = tuple(GoldFlags(tuple(f["answer"]), tuple(f["support"]))
                  for f in d.get("gold_flags", ()))
    if "llm_steps" in d:
        steps = tuple(_llm_step(step) for step in d["llm_steps"])
    else:
        steps = _legacy_steps(d)
    return RunTrace(
        question=d["question"], paradigm=d["paradigm"], config=d["config"], stages=stages,
        llm_steps=steps, answer=d.get("answer", ""), corpus=d.get("corpus", {}),
        gold=gold, gold_flags=flags, metrics=d.get("metrics", {}), error=d.get("error", ""),
        preset=d.get("preset", ""),
    )


def _legacy_steps(d: dict[str, Any]) -> tuple[LLMStep, ...]:
    """Traces saved before LLM steps existed kept only totals: one answer step holds them."""
    if not d.get("llm_calls") and not d.get("answer"):
        return ()
    return (LLMStep(purpose="answer", model="", prompt="", output=d.get("answer", ""),
                    prompt_tokens=d.get("reader_input_tokens", 0), output_tokens=0,
                    seconds=d.get("reader_seconds", 0.0), answer=d.get("answer", "")),)
