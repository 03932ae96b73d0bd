"""Questions generated from a corpus's own passages, kept only where retrieval finds their
source again (the round trip of InPars and Promptagator, the filter of synthetic test sets).

A sample of passages is drawn over the whole corpus (`stratified`: the passages in corpus
order cut into equal strata, one drawn from each), and a reader backend (engine.readers: the
packaged model, or an OpenAI-compatible endpoint for a strong model) writes one question
per passage. A question is kept only if its source passage is in the top `depth` of at
least one first stage (`round_trip`: BM25's and the bi-encoder's, each as flat retrieves);
the share kept is the pass rate. Each kept question keeps its source as a judgment of grade
3 (perfectly relevant) of the source's document, by assessor "generated:<backend>".
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from engine.documents import Question, Unit
from engine.errors import ConfigError, EngineError, check_range
from engine.stages.classify import QUERY

logger = logging.getLogger(__name__)

MAX_GENERATED = 1_000
ROUND_TRIP_DEPTH = 20
MIN_PASSAGE_WORDS = 30  # shorter passages (a heading, a code line) ask no real question
MAX_QUESTION_TOKENS = 48
MAX_PASSAGE_CHARS = 2_000

QUESTION_PROMPT = """\
Write one question that a user of these documents might search for and that the passage
below answers. The question must make sense on its own, without the passage: name what it
is about. Write the question only, on one line.

Passage: {passage}

Question:"""

_LEAD = re.compile(r"^\s*(?:question\s*\d*\s*[:.-]\s*|q\s*[:.]\s*|\d+[.)]\s*)", re.I)


def stratified(units: Sequence[Unit], count: int, seed: int = 0) -> list[Unit]:
    """`count` passages spread over the corpus: its passages in order cut into `count`
    equal strata, one drawn (seeded) from each, among a stratum's passages of at least
    MIN_PASSAGE_WORDS words where it has any."""
    check_range("questions", count, 1, MAX_GENERATED)
    if not units:
        raise ConfigError("The corpus has no passages to ask questions of.")
    rng = random.Random(seed)
    count = min(count, len(units))
    chosen = []
    for stratum in range(count):
        low, high = len(units) * stratum // count, len(units) * (stratum + 1) // count
        members = [units[i] for i in range(low, max(high, low + 1))]
        long_enough = [u for u in members if len(u.text.split()) >= MIN_PASSAGE_WORDS]
        chosen.append(rng.choice(long_enough or members))
    return chosen


def question_of(output: str) -> str | None:
    """The question in a backend's output: its first non-empty line without a "Question:"
    lead or quotes; None when it is no question (under 4 words, or no question mark)."""
    line = next((x for x in output.splitlines() if x.strip()), "")
    line = _LEAD.sub("", line).strip().strip("\"'*").strip()
    if "?" in line:
        line = line[:line.index("?") + 1]
    return line if line.endswith("?") and len(line.split()) >= 4 else None


def round_trip(question: str, source: Unit, first_stages: Sequence[tuple[str, object]]
               ) -> tuple[str, ...]:
    """The first stages ((name, a paradigm run retrieval only)) whose first ranking cut
    holds the source passage (or, ranking documents, its document) in its top
    ROUND_TRIP_DEPTH."""
    found = []
    for name, paradigm in first_stages:
        trace = paradigm.run(question)
        cut = next((s for s in trace.stages if s.granularity != QUERY), None)
        top = cut.candidates[:ROUND_TRIP_DEPTH] if cut is not None else ()
        if any(c.unit.id == source.id or (cut.granularity == "documents"
                                           and set(c.unit.doc_ids) & set(source.doc_ids))
               for c in top):
            found.append(name)
    return tuple(found)


@dataclass(frozen=True)
class Generated:
    """How a generating round stands: passages asked, questions written, kept."""

    asked: int
    written: int  # outputs that were a question
    kept: list[tuple[Question, Unit, tuple[str, ...]]]  # (question, source, found by)
    total: int

    @property
    def pass_rate(self) -> float | None:
        return len(self.kept) / self.written if self.written else None


def generate(passages: Sequence[Unit], generator,
             first_stages: Sequence[tuple[str, object]], source: str,
             cancelled: Callable[[], bool] = lambda: False) -> Iterator[Generated]:
    """A question per passage through `generator`, kept where `round_trip` finds its
    source; yields the round after every passage. A backend error stops the round, naming
    the passage."""
    written, kept = 0, []
    for asked, unit in enumerate(passages, start=1):
        if cancelled():
            break
        text = " ".join(unit.text[:MAX_PASSAGE_CHARS].split())
        prompt = QUESTION_PROMPT.format(passage=f"{unit.title}: {text}" if unit.title
                                        else text)
        try:
            out = generator.generate(prompt, max_new_tokens=MAX_QUESTION_TOKENS)
        except EngineError as err:
            raise EngineError(f"Generating stopped at passage {unit.id!r}: {err}. Nothing "
                              "of this round was kept; generate again.") from err
        question = question_of(out.text)
        if question is None:
            logger.info("no question from passage %s: %r", unit.id, out.text[:200])
        else:
            written += 1
            found = round_trip(question, unit, first_stages)
            if found:
                kept.append((Question(f"g{len(kept) + 1}", question, source=source), unit,
                             found))
        yield Generated(asked, written, kept, len(passages))
