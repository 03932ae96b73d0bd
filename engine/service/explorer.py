"""The engine as the app sees it: one object that runs paradigms, lists datasets and saves runs.

`Explorer` ties together the background `Preparation` of one corpus, the paradigm registry,
the QA datasets found in the shared data folder, and the `SessionStore`. A paradigm object
is cheap (its indexes and models live in process-wide stores), so each run builds its own;
no config ever loads a second copy of anything. It holds no UI code; the Gradio callbacks
only convert what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import lru_cache

from engine.errors import ConfigError, EngineError
from engine.paradigms.base import Paradigm, check_question
from engine.paradigms.registry import make_paradigm, parse_config, spec
from engine.service.annotation import Annotation
from engine.service.readiness import Preparation
from engine.store.sessions import SessionStore
from engine.trace import RunTrace
from engine.types import Dataset, Question

logger = logging.getLogger(__name__)

# QA files of the shared data folder offered in the question picker (path -> label).
DATASETS = {
    "hotpotqa/dev500_contexts.jsonl": "HotpotQA dev500",
    "hotpotqa/train100.json": "HotpotQA train100",
    "musique/train100.json": "MuSiQue train100",
    "squad/small_v2.json": "SQuAD v2 (small)",
    "nq_open/dev.jsonl": "NQ-open dev",
}


class NotReady(EngineError):
    """A paradigm's models or indexes are still being prepared."""


class Explorer:
    """Runs questions through paradigms over one prepared corpus; saves and reloads runs."""

    def __init__(self, preparation: Preparation, store: SessionStore) -> None:
        self.preparation = preparation
        self.store = store
        self.annotation = Annotation(lambda: self.preparation.corpus, store)

    # --- running --------------------------------------------------------------------------

    def paradigm(self, name: str, config_json: str = "") -> Paradigm:
        """The paradigm `name` with a JSON config (defaults when empty)."""
        spec(name)  # an unknown name: the ConfigError listing the registered ones
        config = parse_config(config_json)
        waiting = self.preparation.missing(name)
        if waiting:
            raise NotReady(f"'{name}' is not ready yet; waiting for: "
                           + "; ".join(t.describe() for t in waiting))
        return make_paradigm(name, self.preparation.corpus, config)

    def stream(self, question: str | Question, name: str,
               config_json: str = "") -> Iterator[RunTrace]:
        """The run's trace after every stage, then the finished trace."""
        if isinstance(question, str):
            question = check_question(question)
        return self.paradigm(name, config_json).stream(question)

    def run(self, question: str | Question, name: str, config_json: str = "") -> RunTrace:
        *_, trace = self.stream(question, name, config_json)
        return trace

    def status(self) -> list[str]:
        return self.preparation.status_lines()

    # --- datasets -------------------------------------------------------------------------

    def datasets(self) -> dict[str, str]:
        """{relative path: label} of the QA files present in the shared data folder."""
        from engine.paths import shared_data_dir

        root = shared_data_dir()
        return {path: label for path, label in DATASETS.items() if (root / path).exists()}

    def questions(self, dataset: str, limit: int = 300) -> tuple[Question, ...]:
        """The first `limit` questions of a listed dataset."""
        if dataset not in DATASETS:
            raise ConfigError(f"Unknown dataset {dataset!r}. Choose one of: "
                              f"{', '.join(DATASETS)}.")
        return _dataset(dataset).questions[:limit]

    def supporting_in_corpus(self, question: Question) -> tuple[int, int]:
        """(how many of the question's supporting documents the corpus holds, how many it
        has); (0, n) too while the corpus is still loading."""
        corpus = self.preparation.corpus
        titles = question.supporting_titles
        held = sum(t in corpus.by_id for t in titles) if corpus is not None else 0
        return held, len(titles)


@lru_cache(maxsize=8)
def _dataset(path: str) -> Dataset:
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    return read_dataset(shared_data_dir() / path)
