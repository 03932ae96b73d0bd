"""Judging a user's corpus, as the app, the API and the command line see it.

`Judging` turns a question list into a question set of an added corpus (a split the pickers
list as "<corpus> (<name>)"), pools the paradigms' top documents for its questions (each
paradigm run retrieval only, as an evaluation runs it), records judgments (a person's, from
the Judge tab's keys; an LLM judge's, through any reader backend) and publishes them as the
split's judgments after each one, so every measure of the split reads them at once
(engine.judging.measures). It reads agreement between two assessors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from engine.data.collection_store import (
    CollectionSplit,
    add_questions,
    set_judgments,
    split_of,
)
from engine.errors import ConfigError
from engine.judging.agreement import Agreement, agreement
from engine.judging.llm_judge import Judged, judge_pool
from engine.judging.measures import is_person, published
from engine.judging.pools import cuts, judging_estimate, pool_units
from engine.judging.questions import read_question_list
from engine.store.judgments import Judgment, JudgmentStore, Pool, PoolUnit
from engine.store.sessions import SessionStore
from engine.trace import RunTrace

logger = logging.getLogger(__name__)


class Judging:
    """Question sets, pools and judgments in the sessions database."""

    def __init__(self, store: SessionStore) -> None:
        self.judgments = JudgmentStore(store)

    def add_questions(self, corpus: str, name: str, source: str | Path = "",
                      text: str = "") -> CollectionSplit:
        """A question list (a file at `source`, or pasted `text`) as question set `name` of
        added corpus `corpus`."""
        if not str(source).strip() and not text.strip():
            raise ConfigError("Give a question list: a file (one question a line, a CSV "
                              "`question` column or JSONL) or questions pasted one a line.")
        questions = read_question_list(source or "pasted.txt", text or None)
        return add_questions(corpus, name, questions)

    def make_pool(self, dataset: str, paradigms: list[str], depth: int = 5,
                  stages: tuple[str, ...] = (), name: str = "") -> tuple[int, str]:
        """Pool `paradigms`' top `depth` documents (their last cuts, or `stages`) for the
        questions of question set `dataset`, what is judged left out: (pool id, how many
        units and how long judging them takes)."""
        from engine.eval.runner import run_eval
        from engine.service.store import make_paradigm

        split = self._split(dataset)
        if not paradigms:
            raise ConfigError("Pick the paradigms to pool, e.g. flat, funnel and best.")
        runs: dict[str, list[RunTrace]] = {}

        def keep(trace: RunTrace) -> None:
            runs.setdefault(trace.gold.id, []).append(trace)

        for _ in run_eval(split.path, paradigms, split.corpus, None, None,
                          make=partial(make_paradigm, retrieval_only=True), keep=keep,
                          label=split.label):
            pass
        done = self.judgments.grades(split.label)
        units = pool_units(runs, depth, {q: set(d) for q, d in done.items()}, stages)
        fingerprint = next(iter(runs.values()))[0].corpus.get("fingerprint", "") \
            if runs else ""
        pool = self.judgments.create_pool(
            name or f"{split.label}: {', '.join(paradigms)} at depth {depth}", split.label,
            split.corpus, fingerprint, depth,
            sorted({f"{t.paradigm}/{cut.name}" for ts in runs.values() for t in ts
                    for cut in cuts(t, stages)}), units)
        return pool, judging_estimate(len(units), self._paces())

    def pools(self, dataset: str | None = None) -> list[Pool]:
        return self.judgments.pools(self._split(dataset).label if dataset else None)

    def to_judge(self, pool_id: int, assessor: str, skipped: tuple[int, ...] = ()
                 ) -> tuple[PoolUnit | None, str, tuple[int, int]]:
        """(the next unit `assessor` has to judge, its question's text, (judged, units))."""
        assessor = _assessor(assessor)
        unit = self.judgments.to_judge(pool_id, assessor, skipped)
        question = self._questions(self.judgments.pool(pool_id)).get(unit.question_id, "") \
            if unit is not None else ""
        return unit, question, self.judgments.progress(pool_id, assessor)

    def judge(self, pool_id: int, question_id: str, document_id: str, grade: int,
              assessor: str, seconds: float | None = None) -> tuple[int, int]:
        """Record a person's judgment of a pooled unit and publish; (judged, units)."""
        pool = self.judgments.pool(pool_id)
        self.judgments.add(Judgment(pool.collection, question_id, document_id, int(grade),
                                    _assessor(assessor), pool_id, seconds))
        self._publish(pool.collection)
        return self.judgments.progress(pool_id, _assessor(assessor))

    def undo(self, pool_id: int, assessor: str) -> Judgment | None:
        """Take back `assessor`'s last judgment of the pool, and publish."""
        undone = self.judgments.undo(_assessor(assessor), pool_id)
        if undone is not None:
            self._publish(undone.collection)
        return undone

    def llm_judge(self, pool_id: int, model: str = "smollm2", endpoint: str = "",
                  limit: int | None = None) -> Iterator[Judged]:
        """The LLM judge over the pool's units it has not judged (engine.judging.llm_judge),
        through reader `model` (or the OpenAI-compatible `endpoint`)."""
        from engine.readers.backends import shared_generator

        pool = self.judgments.pool(pool_id)
        judge = f"llm:{'endpoint' if endpoint else 'local'}:{model}"
        yield from judge_pool(self.judgments, pool_id, self._questions(pool),
                              shared_generator(model, endpoint), judge, limit)

    def agreement(self, dataset: str, first: str, second: str) -> Agreement:
        """How far assessors `first` and `second` agree on question set `dataset`."""
        label = self._split(dataset).label
        return agreement(self.judgments.grades(label, first),
                         self.judgments.grades(label, second))

    # --- helpers ------------------------------------------------------------------------

    def _split(self, dataset: str) -> CollectionSplit:
        split = split_of(dataset)
        if split is None:
            raise ConfigError(f"{dataset!r} is no question set of an added corpus: add one "
                              "from a question list first (Judge tab, or funnel-engine "
                              "judge questions).")
        return split

    def _questions(self, pool: Pool) -> dict[str, str]:
        from engine.data.loaders import read_dataset

        return {q.id: q.text for q in read_dataset(self._split(pool.collection).path).questions}

    def _publish(self, collection: str) -> None:
        set_judgments(self._split(collection),
                      published(self.judgments.judgments(collection)))

    def _paces(self) -> list[float]:
        """A person's seconds per judgment over the latest pools' question sets (each once)."""
        collections = dict.fromkeys(p.collection for p in self.judgments.pools()[:5])
        return [j.seconds for collection in collections
                for j in self.judgments.judgments(collection)
                if j.seconds and is_person(j.assessor)]


def _assessor(name: str) -> str:
    name = " ".join(str(name or "").split())
    if not name:
        raise ConfigError("Say who is judging: type your name in the Assessor box.")
    if name.startswith(("llm:", "generated:")):
        raise ConfigError(f"Assessor {name!r}: names starting llm: or generated: are the "
                          "judges'; type a person's name.")
    return name
