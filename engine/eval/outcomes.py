"""Where a run lost the gold: one outcome per (question, paradigm), read from its trace.

A run's cuts are its ranking stages in order, then the reader's token cap when it read
fewer units than it was sent. Following the gold through them gives one of these mutually
exclusive outcomes:

- `not retrieved`: no cut ever held the gold;
- `lost at <cut>`: a cut held it and the gold stayed lost from `<cut>` on (DR-RAG's dynamic
  retrieval can bring the gold in after the first stage; it counts as retrieved);
- `read, answered wrong` / `answered right` (EM): what the reader read held it;
- `kept to the last cut`: the last cut held it and no reader ran (a retrieval-only run);
- `no span answer` (answer track only): a yes/no question, whose answer no passage spells.

and `retrieval skipped` when a query classifier decided not to retrieve. Four tracks: the
gold answer (`answer`: does a unit hold a gold answer; only where the question has answers),
the supporting documents (`support`: are all of them among the units' documents), the
relevant ones (`relevant`: is any document judged relevant among them, grade 1 or more),
the latter two only where the dataset names them, and the supporting sentences
(`sentences`: do the units' texts hold every one of them whole; only where the dataset
marks them, as HotpotQA does: the sentence cut loses them where it cuts one). A test
collection's questions, judged and not answered, are followed on `relevant`, whose outcomes
say so: `no relevant retrieved`,
`relevant lost at <cut>`, `relevant read` (or `relevant kept to the last cut` when no reader
ran).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from engine.documents import Question, Unit
from engine.errors import ConfigError
from engine.metrics import has_span_answer, sentences_held
from engine.stages.classify import QUERY
from engine.trace import RunTrace

NOT_RETRIEVED = "not retrieved"
READ_WRONG = "read, answered wrong"
RIGHT = "answered right"
REACHED = "kept to the last cut"
NO_SPAN = "no span answer"
SKIPPED = "retrieval skipped"
TOKEN_CAP = "token cap"
NO_RELEVANT = "no relevant retrieved"
RELEVANT_READ = "relevant read"
RELEVANT_REACHED = "relevant kept to the last cut"
TRACKS = ("answer", "support", "relevant", "sentences")
# outcomes stored under an earlier name: what they are called now
RENAMED = {"reached the reader": REACHED, "relevant reached the reader": RELEVANT_REACHED}


def lost_at(cut: str, track: str = "answer") -> str:
    return f"relevant lost at {cut}" if track == "relevant" else f"lost at {cut}"


def held_after(trace: RunTrace, track: str) -> list[tuple[str, bool]]:
    """(cut, whether the gold is held after it) for every cut of the run, in order."""
    if trace.gold is None:
        return []
    titles, sentences = set(trace.gold.supporting_titles), trace.gold.supporting_sentences

    def holds(units: list[Unit]) -> bool:
        if track == "sentences":  # every one of them
            return all(sentences_held([u.text for u in units], sentences))
        docs = {d for u in units for d in u.doc_ids}
        return bool(titles & docs) if track == "relevant" else titles <= docs

    held: list[tuple[str, bool]] = []
    for stage, flags in zip(trace.stages, trace.gold_flags, strict=False):
        if stage.granularity == QUERY:
            continue
        held.append((stage.name, any(flags.answer) if track == "answer"
                     else holds([c.unit for c in stage.candidates])))
    read = trace.read
    if trace.stages and len(read) < len(trace.stages[-1].candidates):
        held.append((TOKEN_CAP, any(trace.gold_flags[-1].answer[:len(read)])
                     if track == "answer" else holds([c.unit for c in read])))
    return held


def outcome(trace: RunTrace, track: str = "answer") -> str | None:
    """The run's outcome on `track` (None: no gold, no answers or no supporting documents
    to follow, or the run failed: a failure is no loss of the gold)."""
    gold = trace.gold
    if gold is None or trace.error or not _followed(gold, track):
        return None
    if track == "answer" and not has_span_answer(gold):
        return NO_SPAN
    held = held_after(trace, track)
    if not any(h for _, h in held):
        return SKIPPED if _skipped(trace) else \
            NO_RELEVANT if track == "relevant" else NOT_RETRIEVED
    if not held[-1][1]:
        last_held = max(i for i, (_, h) in enumerate(held) if h)
        return lost_at(held[last_held + 1][0], track)
    if track == "relevant":
        return RELEVANT_READ if trace.answered else RELEVANT_REACHED
    if "EM" not in trace.metrics:
        return REACHED
    return RIGHT if trace.metrics["EM"] else READ_WRONG


def _followed(gold: Question, track: str) -> bool:
    """Whether `gold` has what `track` follows."""
    return bool(gold.answers if track == "answer" else
                gold.supporting_sentences if track == "sentences" else gold.supporting_titles)


def renamed(row: dict) -> dict:
    """An eval row whose outcomes carry their current names (`RENAMED`)."""
    stored = row.get("outcome", {})
    if not any(o in RENAMED for o in stored.values()):
        return row
    return {**row, "outcome": {t: RENAMED.get(o, o) for t, o in stored.items()}}


def cuts(trace: RunTrace) -> list[str]:
    """The run's cuts in order (its ranking stages, then the token cap if it cut); the
    first is where the gold is retrieved or not."""
    return [cut for cut, _ in held_after(trace, "answer")]


def _skipped(trace: RunTrace) -> bool:
    """Whether a query classifier decided the run needs no retrieval."""
    return any(s.granularity == QUERY and s.details.decision is not None
               and not s.details.decision.retrieve for s in trace.stages)


def row_outcomes(trace: RunTrace) -> dict:
    """What an eval row keeps of the trace for attribution: each track's outcome and the
    run's cuts."""
    return {"outcome": {track: outcome(trace, track) for track in TRACKS},
            "cuts": cuts(trace)}


def in_funnel_order(outcomes: Iterable[str]) -> list[str]:
    """Outcomes (of one paradigm or several) from the earliest loss to right: skipped, not
    retrieved, each loss in the order met, then reached, read wrong, right, no span."""
    seen = list(dict.fromkeys(outcomes))
    head = [o for o in (SKIPPED, NOT_RETRIEVED, NO_RELEVANT) if o in seen]
    lost = [o for o in seen if o.startswith(("lost at ", "relevant lost at "))]
    tail = [o for o in (REACHED, READ_WRONG, RIGHT, NO_SPAN, RELEVANT_REACHED, RELEVANT_READ)
            if o in seen]
    return [*head, *lost, *tail, *(o for o in seen if o not in (*head, *lost, *tail))]


def offered(rows: Iterable[dict]) -> list[str]:
    """The tracks `rows` (eval rows with `row_outcomes`) can be followed on, in TRACKS'
    order: those on which some question has an outcome. A test collection's questions,
    judged and not answered, have none on `answer`."""
    rows = list(rows)
    return [t for t in TRACKS if any(r["outcome"].get(t) for r in rows)]


def followed(tracks: Iterable[str], track: str = "answer") -> str:
    """The track to follow when `track` is asked for and `tracks` (`offered`) can be:
    `track` itself if it is among them, else the gold answer, a relevant document or all
    supporting documents, the first offered (`track` when none is)."""
    tracks = list(tracks)
    if track in tracks:
        return track
    return next((t for t in ("answer", "relevant", "support") if t in tracks), track)


@dataclass(frozen=True)
class Attribution:
    """One paradigm's questions by outcome on a track: its cuts in order, {outcome: count}
    in funnel order, {outcome: [question positions]}, how many runs have an outcome
    (`traced`) of how many (`total`: a failed run, or a question without gold, has
    none)."""

    cuts: tuple[str, ...]
    counts: dict[str, int]
    questions: dict[str, list]
    traced: int
    total: int


def attribution(rows: Iterable[dict], track: str = "answer") -> dict[str, Attribution]:
    """Per paradigm: where each question's gold was lost (every question of the paradigm
    counted once)."""
    if track not in TRACKS:
        raise ConfigError(f"track={track!r} is not a track; choose one of "
                          f"{', '.join(TRACKS)}.")
    by_paradigm: dict[str, list[dict]] = {}
    for r in rows:
        by_paradigm.setdefault(r["paradigm"], []).append(r)
    out: dict[str, Attribution] = {}
    for paradigm, mine in by_paradigm.items():
        chain = list(dict.fromkeys(c for r in mine for c in r.get("cuts", ())))
        outcomes = [r["outcome"][track] for r in mine]
        counts = Counter(o for o in outcomes if o is not None)
        chained = [lost_at(cut, track) for cut in chain]
        order = [o for o in in_funnel_order([*chained, *counts]) if counts[o]]
        questions: dict[str, list] = {o: [] for o in order}
        for r, o in zip(mine, outcomes, strict=True):
            if o is not None:
                questions[o].append(r.get("position", r.get("question_id")))
        out[paradigm] = Attribution(tuple(chain), {o: counts[o] for o in order}, questions,
                                    sum(counts.values()), len(mine))
    return out
