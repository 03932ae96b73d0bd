"""An evaluation's questions as Ray tasks: `python -m engine eval ... --ray ADDRESS`.

One task answers one question through every paradigm and returns the runs as JSON traces.
Workers share nothing with the driver but the data directory: each loads the corpus and the
paradigms' indexes and models through the same fingerprinted caches (written atomically, so
safe across processes) and keeps them in its process-wide stores for its next tasks. A
worker whose corpus does not match the driver's fingerprint refuses to answer, so a cluster
pointed at another data directory fails loudly instead of mixing corpora.

Ray is imported here only, and this module only when an evaluation asks for Ray: the app
and the one-process `eval` never load it. `ADDRESS` is a running cluster ("ray://host:10001"
or "host:6379", which must see the same data directory and packages) or "local": a cluster
of `workers` one-CPU workers started on this machine for the run and stopped after it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.documents import Corpus, Question
from engine.errors import ConfigError
from engine.index.on_ray import LOCAL, ray_cluster
from engine.paradigms.base import MakeParadigm
from engine.trace import RunTrace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Haystack:
    """How a worker loads the driver's corpus: corpus `spec`, plus the QA file's own
    paragraphs when `dataset` names one (as `eval` does), checked against `fingerprint`."""

    spec: str
    fingerprint: str
    dataset: str = ""

    @classmethod
    def of(cls, spec: str, corpus: Corpus, dataset: str = "") -> Haystack:
        """The haystack of `corpus`, loaded from `spec`; paths made absolute (a worker
        does not start in the driver's folder)."""
        def absolute(path: str) -> str:
            return str(Path(path).resolve()) if path and Path(path).exists() else path

        return cls(absolute(spec), corpus.fingerprint, absolute(dataset))

    def load(self) -> Corpus:
        from engine.data.corpus import eval_corpus, load_corpus

        if self.dataset:
            from engine.data.loaders import read_dataset

            corpus = eval_corpus(read_dataset(self.dataset), self.spec)
        else:
            corpus = load_corpus(self.spec)
        if corpus.fingerprint != self.fingerprint:
            raise ConfigError(
                f"This Ray worker's corpus {self.spec!r} has fingerprint "
                f"{corpus.fingerprint[:12]}, the driver's {self.fingerprint[:12]}: the workers "
                "must see the same corpus files and data directory as the driver.")
        return corpus


@lru_cache(maxsize=2)
def _worker_corpus(haystack: Haystack) -> Corpus:
    return haystack.load()


def answer(haystack: Haystack, paradigms: Sequence[str], configs: dict,
           question: Question, make: MakeParadigm) -> list[str]:
    """One question through every paradigm, in a worker: the traces as JSON. `make` makes
    a paradigm handed what it uses in the worker's process (the caller's
    engine.service.store.make_paradigm, sent by reference)."""
    corpus = _worker_corpus(haystack)
    return [make(name, corpus, configs.get(name)).run(question).to_json()
            for name in paradigms]


def run_on_ray(address: str, haystack: Haystack, paradigms: Sequence[str], configs: dict,
               questions: Sequence[Question], make: MakeParadigm, workers: int = 2,
               cancelled=lambda: False) -> Iterator[list[RunTrace]]:
    """Yield each question's traces (in `paradigms` order) in question order, answered by
    Ray tasks at `address` ("local": `workers` workers on this machine, for this run).
    `cancelled()` is asked between questions; when it says so, tasks not started are
    cancelled and nothing more is yielded."""
    logger.info("Ray: %s, %d questions x %d paradigms", "a local cluster of "
                f"{workers} workers" if address == LOCAL else address, len(questions),
                len(paradigms))
    with ray_cluster(address, workers) as ray:
        task = ray.remote(num_cpus=1, max_retries=0)(answer)
        pending = [task.remote(haystack, tuple(paradigms), configs, q, make) for q in questions]
        for position, ref in enumerate(pending):
            if cancelled():
                for rest in pending[position:]:
                    ray.cancel(rest)
                return
            yield [RunTrace.from_json(text) for text in ray.get(ref)]
