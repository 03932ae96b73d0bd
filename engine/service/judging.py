"""Judging a user's corpus, as the app, the API and the command line see it.

`Judging` turns a question list into a question set of an added corpus (a split the pickers
list as "<corpus> (<name>)"), pools the paradigms' top documents for its questions (each
paradigm run retrieval only, as an evaluation runs it), records judgments (a person's, from
the Judge tab's keys; an LLM judge's, through any reader backend) and publishes them as the
split's judgments after each one, so every measure of the split reads them at once
(engine.judging.measures). It reads agreement between two assessors.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path

from engine.data.collection_store import (
    CollectionSplit,
    add_questions,
    collection_splits,
    set_judgments,
    split_of,
)
from engine.data.loaders.jsonio import read_text
from engine.documents import Corpus, Document
from engine.errors import ConfigError, check_choice
from engine.judging.agreement import Agreement, agreement, pairwise, same_order
from engine.judging.exchange import FORMATS, judgments_jsonl, qrels_text, read_judgments
from engine.judging.generate import Generated, generate, stratified
from engine.judging.llm_judge import Judged, judge_pool
from engine.judging.measures import (
    GENERATED,
    LLM,
    is_person,
    judge_name,
    published,
    remeasured,
)
from engine.judging.pools import (
    NothingToPool,
    contributions,
    cuts,
    judging_estimate,
    median_pace,
    pool_units,
)
from engine.judging.questions import read_question_list
from engine.results import plain
from engine.service.door import Door, guarded
from engine.store.evaluations import EvaluationStore
from engine.store.judgments import Judgment, JudgmentStore, Pool, PoolUnit
from engine.store.sessions import SessionStore
from engine.trace import RunTrace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AssessorComparison:
    """Two assessors, `first` and `second`, over stored evaluation `evaluation` of question
    set `dataset`: their `agreement` on what both judged; each paradigm's `measure` under
    each one's grades alone over the `questions` both judged (`scores`: paradigm -> (under
    first, under second), None where unscored); Kendall's `tau` of the two orders of the
    paradigms and its `p` (None under two paradigms scored by both). `to_dict` is its JSON
    form (the API's): the agreement's fields beside the others."""

    evaluation: int
    dataset: str
    first: str
    second: str
    measure: str
    agreement: Agreement
    questions: int
    scores: dict[str, tuple[float | None, float | None]]
    tau: float | None
    p: float | None

    def to_dict(self) -> dict:
        found = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "agreement"}
        return {**plain(self.agreement), **plain(found)}


@guarded
class Judging:
    """Question sets, pools and judgments in the sessions database."""

    def __init__(self, store: SessionStore, door: Door | None = None,
                 corpus_of: Callable[[str], Corpus | None] = lambda _: None) -> None:
        """`door` checks each method's role (engine.service.door) and names the assessor
        when people log in; `corpus_of` gives a loaded corpus by name (None while it
        loads), for the whole document of a pooled unit."""
        self.judgments = JudgmentStore(store)
        self.door = door or Door()
        self._corpus_of = corpus_of

    def add_questions(self, corpus: str, name: str, source: str | Path = "",
                      text: str = "") -> CollectionSplit:
        """A question list (a file at `source`, or pasted `text`) as question set `name` of
        added corpus `corpus`."""
        if not str(source).strip() and not text.strip():
            raise ConfigError("Give a question list: a file (one question a line, a CSV "
                              "`question` column or JSONL) or questions pasted one a line.")
        if not text.strip():  # a file: refused by its name, not the server's path to it
            text = read_text(Path(source))
        questions = read_question_list(Path(source).name or "pasted.txt", text)
        return add_questions(corpus, name, questions)

    def add_run_questions(self, corpus: str, name: str, evaluation_id: int | None = None
                          ) -> CollectionSplit:
        """The questions of the saved runs (a pipeline's, received over OTLP or imported
        as traces), or of stored evaluation `evaluation_id`, as question set `name` of
        added corpus `corpus`."""
        if evaluation_id is None:
            asked = [run.question for run in self.judgments.store.list()]
            where = "saved runs"
        else:
            asked = [r["question"] for r in EvaluationStore(self.judgments.store).rows(
                int(evaluation_id))]
            where = f"evaluation {int(evaluation_id)}"
        if not asked:
            raise ConfigError(f"No {where} to take questions from: save or import runs, "
                              "or send them to the OTLP receiver, first.")
        lines = "\n".join(json.dumps({"question": q}) for q in asked)
        return add_questions(corpus, name, read_question_list(f"{where}.jsonl", lines))

    def generate_questions(self, corpus: str, name: str, count: int = 30,
                           model: str = "smollm2", endpoint: str = "", seed: int = 0,
                           cancelled: Callable[[], bool] = lambda: False
                           ) -> Iterator[Generated]:
        """Question set `name` of added corpus `corpus`, generated (engine.judging.generate):
        a question per passage of a stratified sample of `count` through reader `model` (or
        the OpenAI-compatible `endpoint`), kept where BM25 or the bi-encoder finds its source
        in its top 20, with the source's document judged 3 by "generated:<backend>". Yields
        the round as it goes; the set is stored when it ends with any question kept."""
        from engine.data.corpus import load_corpus
        from engine.paradigms.flat import FlatConfig
        from engine.readers.backends import shared_generator
        from engine.service.store import make_paradigm
        from engine.units.build import build_units

        if split_of(f"{corpus} ({name})") is not None:
            raise ConfigError(f"Question set {corpus} ({name}) exists already: name the "
                              "generated one otherwise.")
        searched = load_corpus(self._added(corpus))
        passages = stratified(build_units(searched, FlatConfig().passages()), count, seed)
        first_stages = [(r, make_paradigm("flat", searched, {"retriever": r, "M": 20},
                                          retrieval_only=True)) for r in ("bm25", "dense")]
        assessor = judge_name(GENERATED, model, endpoint)
        last = None
        for last in generate(passages, shared_generator(model, endpoint), first_stages,
                             assessor, cancelled):
            yield last
        if last is None or not last.kept:
            raise ConfigError(f"No generated question found its source passage again "
                              f"({last.written if last else 0} written): nothing is stored. "
                              "Try a stronger model (an endpoint).")
        split = add_questions(corpus, name, tuple(q for q, _, _ in last.kept))
        self.judgments.add_all([Judgment(split.label, q.id, doc, 3, assessor)
                                for q, unit, _ in last.kept for doc in unit.doc_ids])
        self._publish(split.label)

    def make_pool(self, dataset: str, paradigms: list[str], depth: int = 5,
                  stages: tuple[str, ...] = (), name: str = "") -> tuple[int, str]:
        """Run `paradigms` over question set `dataset` here, retrieval only, store the runs
        as an evaluation and pool them (`pool_evaluation`): (pool id, how many units and
        how long judging them takes). The app runs the evaluation in the background
        instead (Explorer.evaluate) and pools it when it is done."""
        from engine.eval.runner import run_eval
        from engine.eval.summary import summarise
        from engine.service.evaluation_jobs import code_version
        from engine.service.store import make_paradigm

        split = self._split(dataset)
        if not paradigms:
            raise ConfigError("Pick the paradigms to pool, e.g. flat, funnel and best.")
        traces: list[RunTrace] = []
        rows = list(run_eval(split.path, paradigms, split.corpus, None, None,
                             make=partial(make_paradigm, retrieval_only=True),
                             keep=traces.append, label=split.label))
        order = {q: n for n, q in enumerate(dict.fromkeys(r["question_id"] for r in rows))}
        runs = [(order[r["question_id"]], t, r) for t, r in zip(traces, rows, strict=True)]
        evaluations = EvaluationStore(self.judgments.store)
        evaluation = evaluations.store_whole(
            runs, summarise(rows), dataset=split.label, paradigms=paradigms,
            configs={p: {} for p in paradigms}, corpus=split.corpus,
            corpus_fingerprint=traces[0].corpus.get("fingerprint", "") if traces else "",
            code_version=code_version(), name=f"{split.label}: {', '.join(paradigms)}")
        evaluations.set_owner(evaluation, self.door.name())
        try:
            return self.pool_evaluation(evaluation, depth, stages, name)
        except NothingToPool:  # run for this pool alone: not kept when it found nothing
            evaluations.delete(evaluation)
            raise

    def pool_evaluation(self, evaluation_id: int, depth: int = 5,
                        stages: tuple[str, ...] = (), name: str = "") -> tuple[int, str]:
        """Pool the top `depth` documents of stored evaluation `evaluation_id`'s runs (each
        paradigm's last cut, or its `stages`) of a question set, what a person judged left
        out: (pool id, how many units and how long judging them takes)."""
        evaluations = EvaluationStore(self.judgments.store)
        stored = evaluations.get(evaluation_id)
        split = self._split(stored.dataset)
        if stored.state == "running":
            raise ConfigError(f"Evaluation {stored.id} is still running; pool it when it "
                              "is done.")
        runs: dict[str, list[RunTrace]] = {}
        for trace in evaluations.traces(stored.id):
            if trace.gold is not None:
                runs.setdefault(trace.gold.id, []).append(trace)
        found = {s.name for ts in runs.values() for t in ts for s in t.stages}
        if stages and not set(stages) & found:
            raise ConfigError(f"Evaluation {stored.id} has no cut named "
                              f"{', '.join(stages)}; its cuts: {', '.join(sorted(found))}.")
        done = published(self.judgments.judgments(split.label))
        units = pool_units(runs, depth, {q: set(d) for q, d in done.items()}, stages)
        if not units:
            raise NothingToPool(runs, depth, stages, found)
        systems = sorted({f"{t.paradigm}/{cut.name}" for ts in runs.values() for t in ts
                          for cut in cuts(t, stages)})
        pool = self.judgments.create_pool(
            name or f"{split.label}: {', '.join(stored.paradigms)} at depth {depth}",
            split.label, split.corpus, stored.corpus_fingerprint, depth, systems, units,
            evaluation_id=stored.id)
        return pool, (f"{judging_estimate(len(units), self._paces())} "
                      f"({contributions(runs, units, stages)})")

    def question_sets(self) -> list[str]:
        """Every question set (an added collection's split) by the name pickers list."""
        return [split.label for split in collection_splits()]

    def pools(self, dataset: str | None = None) -> list[Pool]:
        return self.judgments.pools(self._split(dataset).label if dataset else None)

    def to_judge(self, pool_id: int, assessor: str, skipped: tuple[int, ...] = ()
                 ) -> tuple[PoolUnit | None, str, tuple[int, int]]:
        """(the next unit `assessor` has to judge, its question's text, (judged, units))."""
        assessor = self._assessor(assessor)
        pool = self.judgments.pool(pool_id)  # an unknown pool is refused, not shown judged
        unit = self.judgments.to_judge(pool_id, assessor, skipped)
        question = self._questions(pool).get(unit.question_id, "") if unit is not None \
            else ""
        return unit, question, self.judgments.progress(pool_id, assessor)

    def document(self, pool_id: int, document_id: str) -> Document | None:
        """The whole document of pool `pool_id`'s unit `document_id`, from the pool's corpus;
        None while the corpus loads or when the document is gone from it."""
        corpus = self._corpus_of(self.judgments.pool(pool_id).corpus)
        return None if corpus is None else corpus.by_id.get(document_id)

    def pace(self, pool_id: int, assessor: str) -> float | None:
        """`assessor`'s median seconds a judgment in pool `pool_id` (None before one)."""
        return median_pace(j.seconds for j in self.judgments.judgments(
            self.judgments.pool(pool_id).collection, self._assessor(assessor))
            if j.pool_id == pool_id and j.seconds is not None)

    def judge(self, pool_id: int, question_id: str, document_id: str, grade: int,
              assessor: str, seconds: float | None = None) -> tuple[int, int]:
        """Record a person's judgment of a pooled unit and publish; (judged, units)."""
        pool, assessor = self.judgments.pool(pool_id), self._assessor(assessor)
        self.judgments.add(Judgment(pool.collection, question_id, document_id, int(grade),
                                    assessor, pool_id, seconds))
        self._publish(pool.collection)
        return self.judgments.progress(pool_id, assessor)

    def undo(self, pool_id: int, assessor: str) -> Judgment | None:
        """Take back `assessor`'s last judgment of the pool, and publish."""
        self.judgments.pool(pool_id)
        undone = self.judgments.undo(self._assessor(assessor), pool_id)
        if undone is not None:
            self._publish(undone.collection)
        return undone

    def llm_judge(self, pool_id: int, model: str = "smollm2", endpoint: str = "",
                  limit: int | None = None) -> Iterator[Judged]:
        """The LLM judge over the pool's units it has not judged (engine.judging.llm_judge),
        through reader `model` (or the OpenAI-compatible `endpoint`)."""
        from engine.readers.backends import shared_generator

        pool = self.judgments.pool(pool_id)
        yield from judge_pool(self.judgments, pool_id, self._questions(pool),
                              shared_generator(model, endpoint),
                              judge_name(LLM, model, endpoint), limit)

    def agreement(self, dataset: str, first: str, second: str) -> Agreement:
        """How far assessors `first` and `second` agree on question set `dataset`."""
        label = self._split(dataset).label
        return agreement(self.judgments.grades(label, first),
                         self.judgments.grades(label, second))

    def pairwise_agreement(self, dataset: str) -> list[tuple[str, str, Agreement]]:
        """(first, second, their agreement) for every two people who judged a document of
        question set `dataset` in common (the judges, llm: and generated:, left out)."""
        label = self._split(dataset).label
        people = [who for who in self.judgments.assessors(label) if is_person(who)]
        return pairwise({who: self.judgments.grades(label, who) for who in people})

    def export_judgments(self, dataset: str, fmt: str = "qrels", assessor: str = "") -> str:
        """Question set `dataset`'s judgments as TREC qrels (the published grades, or
        `assessor`'s alone) or as JSONL with who judged each (every judgment, or
        `assessor`'s)."""
        check_choice("format", fmt, FORMATS)
        label = self._split(dataset).label
        if assessor:
            self._judged_by(label, assessor)
        if fmt == "jsonl":
            return judgments_jsonl(self.judgments.judgments(label, assessor or None))
        return qrels_text(self.judgments.grades(label, assessor) if assessor else
                          published(self.judgments.judgments(label)))

    def import_judgments(self, dataset: str, text: str, filename: str,
                         assessor: str = "") -> int:
        """Judgments of question set `dataset` from a qrels file (all `assessor`'s) or a
        judgments JSONL, stored whole or not at all, then published; returns how many."""
        from engine.data.loaders import read_dataset

        split = self._split(dataset)
        asked = {q.id for q in read_dataset(split.path).questions}
        found = read_judgments(text, filename, split.label, asked, " ".join(
            str(assessor or "").split()))
        self.judgments.add_all(found)
        self._publish(split.label)
        return len(found)

    def assessors(self, dataset: str) -> dict[str, int]:
        """{assessor: judgments} of question set `dataset`, the busiest first."""
        return self.judgments.assessors(self._split(dataset).label)

    def compared(self, evaluation_id: int, first: str, second: str,
                 measure: str = "nDCG@10") -> AssessorComparison:
        """Two assessors over a stored evaluation of a question set: their agreement on
        what both judged; each paradigm's `measure` (at its last cut) under each one's
        grades alone, over the questions both judged (so that the two means are of the
        same questions); and whether the paradigms rank the same (Kendall's tau)."""
        if first == second:
            raise ConfigError(f"Compare {first!r} with another assessor, not with itself.")
        evaluations = EvaluationStore(self.judgments.store)
        stored = evaluations.get(evaluation_id)
        label = self._split(stored.dataset).label
        grades = [self.judgments.grades(self._judged_by(label, who), who)
                  for who in (first, second)]
        both = set(grades[0]) & set(grades[1])
        traces = [t for t in evaluations.traces(stored.id)
                  if t.gold is not None and t.gold.id in both]
        scores = [remeasured(traces, {q: d for q, d in given.items() if q in both}, measure)
                  for given in grades]
        tau, p = same_order(*scores) if len(set(scores[0]) & set(scores[1])) > 1 \
            else (None, None)
        if tau is not None and math.isnan(tau):  # one paradigm order tied throughout
            tau = p = None
        return AssessorComparison(
            evaluation=stored.id, dataset=label, first=first, second=second, measure=measure,
            agreement=agreement(*grades), questions=len(both),
            scores={paradigm: (scores[0].get(paradigm), scores[1].get(paradigm))
                    for paradigm in dict.fromkeys([*scores[0], *scores[1]])},
            tau=tau, p=p)

    # --- helpers ------------------------------------------------------------------------

    def _split(self, dataset: str) -> CollectionSplit:
        split = split_of(dataset)
        if split is None:
            raise ConfigError(f"{dataset!r} is no question set of an added corpus: add one "
                              "from a question list first (Judge tab, or funnel-engine "
                              "judge questions).")
        return split

    def _judged_by(self, label: str, assessor: str) -> str:
        """`label`, once `assessor` is among those who judged its questions."""
        if assessor not in self.judgments.assessors(label):
            raise ConfigError(f"{assessor!r} judged nothing of {label}; its assessors: "
                              f"{', '.join(self.judgments.assessors(label)) or 'none'}.")
        return label

    def _added(self, corpus: str) -> str:
        from engine.data.ingest import stored_corpora

        names = [c.name for c in stored_corpora()]
        if corpus not in names:
            added = ", ".join(names) or "none yet"
            raise ConfigError(f"No added corpus {corpus!r} (added: {added}). Add it in the "
                              "Corpora tab first.")
        return corpus

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


    def _assessor(self, name: str) -> str:
        return person(self.door, name, "Assessor")


def person(door: Door, name: str, box: str) -> str:
    """Who judges or writes: the logged-in user (another name typed is refused), else the
    name typed in the `box` box, a person's (llm: and generated: name the judges)."""
    if door.user() is not None:
        return door.signed(name, box)
    name = " ".join(str(name or "").split())
    if not name:
        raise ConfigError(f"Say who is judging: type your name in the {box} box.")
    if not is_person(name):
        raise ConfigError(f"{box} {name!r}: names starting llm: or generated: are the "
                          "judges'; type a person's name.")
    return name

