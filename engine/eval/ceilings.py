"""Each stage's ceiling: a run's end metrics had one of its cuts been perfect.

Haystack 1.x evaluated each node "isolated" (given perfect input) against "integrated";
here, over a funnel: for a stored run of a dataset question and one of its cuts (its
ranking stages, in order), the stages before the cut give back their stored results, the
cut's output is made perfect, and the later stages and the reader run as usual
(engine.stages.base.replaying). Perfect means: the units holding a gold supporting
document first (a test collection's: the higher grade first), as many as there are —
those the stage was given (a first-stage retriever is given the whole corpus: those it
ranked), then each gold document none of them holds, added as a unit of its own (its
whole paragraph, as the oracle re-reader adds it) — then the rest of what the stage kept,
as many as it kept in all. A sentence cut made perfect keeps every gold sentence of the
passages it was given beside what it kept (`perfect_sentences`). A cut that is perfect
already, or a run with no such cut, is its own ceiling (nothing runs again).

A ceiling evaluation stores these runs as "paradigms" labelled by their cut ("funnel:
perfect cut 2 (preranker)"), each paired against the evaluation it came from
(engine.service.diagnosis.ceilings_of).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.documents import Candidate, Corpus, Question, Unit
from engine.metrics import is_gold_sentence
from engine.paradigms.base import Paradigm
from engine.paradigms.reanswer import ORACLE
from engine.stages.base import replaying
from engine.stages.classify import QUERY
from engine.stages.prune import SentencePruner, cut_to
from engine.text import count_tokens
from engine.trace import FAILED, RunTrace, StageResult
from engine.trace_details import WeighedSentence
from engine.units.lazy import document_unit

PERFECT = "perfect"  # the settings key of the stage made perfect


def cut_stages(trace: RunTrace) -> list[int]:
    """The indexes in `trace.stages` of its cuts: every ranking stage (a query
    classification is none), in order."""
    return [i for i, s in enumerate(trace.stages) if s.granularity != QUERY]


def label(paradigm: str, cut: int, stage: str) -> str:
    """How a ceiling evaluation names the runs with cut `cut` (from 1) perfect."""
    return f"{paradigm}: perfect cut {cut} ({stage})"


def perfect(result: StageResult, given: Sequence[Candidate], gold: Question,
            corpus: Corpus) -> StageResult:
    """`result` with its output made perfect (see the module docstring); `result` itself
    when that changes nothing."""
    if result.name == SentencePruner.name and result.details.sentences:
        return perfect_sentences(result, given, gold)
    grades = gold.grades  # a collection's judgments: the higher grades first
    titles = sorted(dict.fromkeys(gold.supporting_titles), key=lambda t: -grades.get(t, 1))
    wanted = set(titles)
    pool = {c.unit.id: c for c in (*result.candidates, *given)}  # output first
    held = sorted((c for c in pool.values() if wanted.intersection(c.unit.doc_ids)),
                  key=lambda c: -max(grades.get(d, 1) for d in c.unit.doc_ids if d in wanted))
    covered = {d for c in held for d in c.unit.doc_ids}
    added = [corpus.by_id[t] for t in titles if t not in covered and t in corpus.by_id]
    added_units = [_unit(doc, result.granularity) for doc in added]
    top = max((c.score for c in result.candidates), default=0.0)
    head = [*held, *(Candidate(u, top, 0) for u in added_units)]
    ids = {c.unit.id for c in head}
    rest = [c for c in result.candidates if c.unit.id not in ids]
    kept = (head + rest)[:max(len(result.candidates), len(head))]
    if [c.unit.id for c in kept] == [c.unit.id for c in result.candidates]:
        return result
    moved = [c.unit.id for c in held]
    missing = [t for t in titles if t not in covered and t not in corpus.by_id]
    settings = {**result.settings, PERFECT: {"gold_first": moved,
                                             "added": [u.id for u in added_units],
                                             "not_in_corpus": missing}}
    note = (f"made perfect: {len(moved)} gold unit(s) first, {len(added_units)} added"
            + (f", {len(missing)} gold document(s) not in the corpus" if missing else ""))
    return replace(result, candidates=tuple(replace(c, rank=n)
                                            for n, c in enumerate(kept, start=1)),
                   settings=settings, details=replace(result.details, note=note))


def perfect_sentences(result: StageResult, given: Sequence[Candidate],
                      gold: Question) -> StageResult:
    """A sentence cut made perfect: every gold sentence of the passages it was given kept
    beside what it kept, each passage's sentences in their own order. A gold sentence is
    one the dataset marks (HotpotQA's supporting facts) or, where it marks none, any
    sentence of a gold supporting document. A gold sentence lost before the cut stays lost
    (that is an earlier cut's ceiling)."""
    titles = set(gold.supporting_titles)
    by_passage = {c.unit.id: c for c in given}

    def is_gold(sentence: WeighedSentence) -> bool:
        if gold.supporting_sentences:
            return is_gold_sentence(sentence.text, gold.supporting_sentences)
        passage = by_passage.get(sentence.passage)
        return passage is not None and bool(titles.intersection(passage.unit.doc_ids))

    sentences = result.details.sentences
    added = [n for n, s in enumerate(sentences) if not s.kept and is_gold(s)]
    if not added:
        return result
    marked = tuple(replace(s, kept=True, why=PERFECT) if n in added else s
                   for n, s in enumerate(sentences))
    out = cut_to(given, [(s.passage, s.text) for s in marked if s.kept])
    settings = {**result.settings, PERFECT: {"gold_sentences_added": len(added)}}
    note = f"made perfect: {len(added)} gold sentence(s) the cut had cut kept"
    return replace(result, candidates=out, settings=settings,
                   details=replace(result.details, note=note, sentences=marked,
                                   tokens=sum(s.tokens or count_tokens(s.text)
                                              for s in marked if s.kept)))


def _unit(doc, granularity: str) -> Unit:
    """A gold document added to a stage's output, as a unit of the stage's granularity
    (a document as itself; otherwise its whole paragraph, named as the oracle's)."""
    if granularity == "documents":
        return document_unit(doc)
    return Unit(f"{ORACLE}{doc.id}", doc.title, doc.text, (doc.id,), granularity)


class _Unchanged(Exception):
    """The cut is perfect already: the run is its own ceiling."""


def ceiling(paradigm: Paradigm, actual: RunTrace, cut: int) -> RunTrace:
    """`actual`, a run of `paradigm` (same config) of a dataset question, run again with
    its `cut`-th cut (from 1) perfect; `actual` itself where that changes nothing, where
    the run has no such cut or no gold, or where it failed."""
    stages = cut_stages(actual)
    if actual.status == FAILED or actual.gold is None or not 1 <= cut <= len(stages):
        return actual

    def change(stored: StageResult, given: Sequence[Candidate]) -> StageResult:
        better = perfect(stored, given, actual.gold, paradigm.corpus)
        if better is stored:
            raise _Unchanged
        return better

    try:
        with replaying(actual.stages, stages[cut - 1], change):
            return paradigm.run(actual.gold)
    except _Unchanged:
        return actual
