"""What would the reader say with other evidence? Re-answer a run; only the reader runs.

Given a run's trace, the ids of the units to read (any candidate of any of its stages, in
the order given) and, for a dataset question, its gold supporting documents (the
"oracle"), the paradigm's reader answers again over exactly those. The new trace is the
run's stages plus a `reanswer` stage listing what was read, whose settings record what
changed against what the run read (removed, added, oracle documents); its LLM steps are
the run's steps before reading (HyDE) and the reader's new ones. With gold, the metrics are
computed again, so EM and F1 with and without the change sit side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.documents import Candidate, Document, Unit
from engine.errors import ConfigError
from engine.paradigms.base import Paradigm, annotate
from engine.trace import RunTrace, StageResult
from engine.trace_details import StageDetails

REANSWER = "reanswer"
READING = ("answer", "long answer")  # the reader's purposes; other steps stay
ORACLE = "oracle:"  # the id prefix of a gold supporting document added to the reading
MAX_UNITS = 50


def candidates_of(trace: RunTrace) -> dict[str, Candidate]:
    """Every unit the run ranked, by id (as its latest stage ranked it)."""
    return {c.unit.id: c for stage in trace.stages for c in stage.candidates}


def reanswer(paradigm: Paradigm, trace: RunTrace, unit_ids: Sequence[str],
             oracle: Sequence[Document] = (), oracle_first: bool = False) -> RunTrace:
    """`trace` re-answered by `paradigm`'s reader over `unit_ids` then the `oracle`
    documents, or the `oracle` documents first (ranked best: the default reverse packing puts
    them next to the question); see the module docstring."""
    pool = candidates_of(trace)
    unit_ids = list(dict.fromkeys(u for u in unit_ids if u))
    unknown = [u for u in unit_ids if u not in pool]
    if unknown:
        raise ConfigError(f"{_few(unknown)} {'is' if len(unknown) == 1 else 'are'} not a "
                          f"candidate of this run; give ids from its stages, e.g. "
                          f"{_few(list(pool)[:3])}.")
    if not unit_ids and not oracle:
        raise ConfigError("Nothing to read: keep at least one passage or add the gold "
                          "supporting paragraphs.")
    if len(unit_ids) + len(oracle) > MAX_UNITS:
        raise ConfigError(f"{len(unit_ids) + len(oracle)} units to read; the limit is "
                          f"{MAX_UNITS}. Untick some.")
    gold = [Candidate(Unit(f"{ORACLE}{d.id}", d.title, d.text, (d.id,), "documents"), 0.0, 0)
            for d in oracle]
    own = [pool[u] for u in unit_ids]
    chosen = gold + own if oracle_first else own + gold
    ranked = tuple(replace(c, rank=i) for i, c in enumerate(chosen, start=1))
    read_before = [c.unit.id for c in trace.read]
    settings = {"removed": [u for u in read_before if u not in unit_ids],
                "added": [u for u in unit_ids if u not in read_before],
                "oracle": [d.id for d in oracle], "oracle_first": oracle_first,
                "read_before": read_before,
                "answer_before": trace.answer}
    note = ", ".join(f"{len(settings[k])} {k}" for k in ("removed", "added", "oracle")
                     if settings[k]) or "the same units"
    stage = StageResult(REANSWER, "passages", len(pool), ranked, 0.0,
                        StageDetails(note=f"re-read: {note}"), settings)
    steps = tuple(paradigm.reader_steps(trace.question, ranked))
    kept = tuple(s for s in trace.llm_steps if s.purpose not in READING)
    answers = [s.answer for s in steps if s.purpose == "answer"]
    new = replace(trace, stages=(*trace.stages, stage), llm_steps=(*kept, *steps),
                  answer=answers[-1] if answers else "", gold_flags=(), metrics={})
    return annotate(new, trace.gold) if trace.gold else new


def _few(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
