"""What an evaluation is asked to run (`EvaluationRequest`): a dataset's questions, which of
them, through which paradigms with which configs, and what kind of evaluation it is (a
sweep's grid points, a ceiling's cuts). The background job that runs one
(engine.service.evaluation_jobs) and a resume, which asks again for the questions one lacks
(engine.service.resume), both build on it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from engine.documents import Question
from engine.errors import ConfigError
from engine.paradigms.registry import unattended

MAX_QUESTIONS = 5_000


@dataclass(frozen=True)
class EvaluationRequest:
    """What to evaluate: a dataset's questions (the first `limit`, or a `sample` of them
    drawn with `seed`), through `paradigms` with their `configs`."""

    dataset: str  # the dataset's name as listed (or the file it came from)
    questions: tuple[Question, ...]
    paradigms: tuple[str, ...]
    configs: dict = field(default_factory=dict)  # {paradigm: config dict}
    limit: int = 0  # 0: every question
    sample: int = 0  # > 0: a seeded random sample of this many, in file order
    seed: int = 0
    name: str = ""
    ray: str = ""  # a Ray address, or "local": the questions run as Ray tasks
    workers: int = 2  # with ray="local"
    # a sweep: `paradigms` are its grid points' labels, each the paradigm `kinds[label]`
    # (engine.eval.sweep); its stages' results are reused across grid points
    kinds: dict = field(default_factory=dict)
    retrieval_only: bool = False  # stop before the reader
    # a ceiling evaluation (engine/eval/ceilings.py): each label's runs are `baseline`'s
    # runs of its paradigm with cut `cuts[label]` made perfect; `positions` are the
    # questions' positions in `baseline`
    baseline: int | None = None
    cuts: dict = field(default_factory=dict)
    positions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.paradigms:
            raise ConfigError("Pick at least one paradigm to evaluate.")
        if not self.questions:
            raise ConfigError(f"The dataset {self.dataset!r} holds no questions.")
        # named as the API and the CLI take them, and as Evaluate's form labels them
        for name, label, value in (("limit", "First N questions", self.limit),
                                   ("sample", "a random sample of", self.sample)):
            if not 0 <= value <= MAX_QUESTIONS:
                raise ConfigError(f"{name}={value} ({label}) is out of range; allowed: 0 "
                                  f"(every question) to {MAX_QUESTIONS:,}.")
        if self.limit and self.sample:
            raise ConfigError("Give a question limit or a sample size, not both.")
        if self.kinds and self.ray:
            raise ConfigError("A sweep or a preset runs here, not on Ray (a sweep reuses "
                              "each question's stages across grid points); leave the Ray "
                              "address empty.")

    def kind(self, label: str) -> str:
        """The paradigm a label runs (itself, but for a sweep's grid points)."""
        return self.kinds.get(label, label)

    def config(self, label: str) -> dict:
        """The config dict `label` runs with: as given, its reader's attention off unless
        the config sets it (no heatmap is shown: an auto reader answers through ONNX
        Runtime); a ceiling's as given (its runs read as its baseline's read)."""
        given = self.configs.get(label)
        return dict(given or {}) if self.baseline is not None else \
            unattended(self.kind(label), given)

    def chosen(self) -> list[tuple[int, Question]]:
        """(position in the file, question) of every question to run, in file order."""
        indexed = list(zip(self.positions, self.questions, strict=True)) if self.positions \
            else list(enumerate(self.questions))
        if self.sample:
            picked = random.Random(self.seed).sample(indexed, min(self.sample, len(indexed)))
            return sorted(picked, key=lambda pair: pair[0])
        return indexed[: self.limit] if self.limit else indexed
