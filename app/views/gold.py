"""The gold as Explore and Compare show it: where the gold answer (or, for a judged
question without answers, the last document judged relevant) was lost, and how many of
each stage's candidates hold the gold, by relevance grade where the question is judged."""

from __future__ import annotations

from html import escape

from engine.eval.outcomes import NO_RELEVANT, SKIPPED, outcome
from engine.stages.prune import SentencePruner
from engine.trace import RunTrace, gold_lost_at, gold_sentences_held

GOLD = "#d4a017"
SUPPORT = "#54a24b"
SENTENCE_COLOUR = "#b279a2"  # not the stages' blue
SENTENCES = "gold supporting sentences held"
GRADES = ("#a1d99b", "#54a24b", "#1b7837", "#00441b")  # relevance grade 1, 2, 3, 4+


def gold_banner(trace: RunTrace) -> str:
    """Where the gold answer was lost, or that it survived (empty without gold); a failed
    run says what failed instead."""
    if trace.error:
        return (f"<div class='fe-error'>This run failed, so it lost nothing and is left out "
                f"of every mean: {escape(trace.error)}</div>")
    if trace.gold is None:
        return ""
    if trace.gold.judged_only:
        return relevant_banner(trace)
    lost = gold_lost_at(trace)
    if lost:
        return (f"<div class='fe-lost'>Gold answer lost at stage <b>{escape(lost)}</b>: an "
                "earlier stage held it, this one dropped it.</div>")
    final = trace.gold_flags[-1] if trace.gold_flags else None
    if final is not None and any(final.answer):
        return ("<div class='fe-kept'>The gold answer survived every stage."
                f"{sentence_note(trace)}</div>")
    return f"<div class='fe-lost'>No stage retrieved the gold answer.{sentence_note(trace)}</div>"


def sentence_note(trace: RunTrace) -> str:
    """" The sentence cut kept 2 of the 3 gold supporting sentences it was given." where the
    question marks its supporting sentences and a sentence cut ran (empty otherwise)."""
    gold = trace.gold.supporting_sentences if trace.gold else ()
    at = next((i for i in reversed(range(len(trace.stages)))  # the last: best's may be 2
               if trace.stages[i].name == SentencePruner.name), None)
    if not gold or not at:
        return ""
    given, kept = (sum(gold_sentences_held(trace.stages[i], trace.gold)) for i in (at - 1, at))
    if not given:
        return " No gold supporting sentence reached the sentence cut."
    return (f" The sentence cut kept {kept} of the {given} gold supporting "
            f"sentence{'s' if given > 1 else ''} it was given ({len(gold)} in all).")


def relevant_banner(trace: RunTrace) -> str:
    """A judged question's (no answers): where the last document judged relevant was lost,
    or that one survived every cut, with how many are judged at each grade."""
    grades = trace.gold.grades
    relevant = sorted((g for g in grades.values() if g >= 1), reverse=True)
    judged = (f"Judged: {len(relevant)} relevant"
              + (f" (grades {', '.join(map(str, dict.fromkeys(relevant)))})"
                 if len(set(relevant)) > 1 else "")
              + f", {len(grades) - len(relevant)} not relevant; no answers to find.")
    found = outcome(trace, "relevant")
    if found is None:
        return f"<div class='fe-lost'>This question has no relevant judgment. {judged}</div>"
    if found.startswith("relevant lost at "):
        return (f"<div class='fe-lost'>Relevant documents lost at stage "
                f"<b>{escape(found.removeprefix('relevant lost at '))}</b>: an earlier stage "
                f"held one, this one kept none. {judged}</div>")
    if found in (NO_RELEVANT, SKIPPED):
        return f"<div class='fe-lost'>No stage retrieved a relevant document. {judged}</div>"
    return f"<div class='fe-kept'>A relevant document survived every stage. {judged}</div>"


def gold_counts(trace: RunTrace) -> dict[str, list[int]]:
    """Per stage: candidates holding the gold answer, and holding a gold supporting
    document (two different things: a candidate can hold either without the other); for a
    judged question without answers, the candidates judged relevant, by grade."""
    if not trace.gold_flags:
        return {}
    gold = trace.gold
    if gold is not None and gold.judged_only:
        return relevant_counts(trace)
    counts = {"kept, holding the answer": [sum(f.answer) for f in trace.gold_flags]}
    if gold and gold.supporting_titles:
        counts["kept, holding a supporting document"] = [sum(f.support)
                                                         for f in trace.gold_flags]
    if gold and gold.supporting_sentences:  # gold sentences, not candidates: a cut's count
        counts[SENTENCES] = [sum(gold_sentences_held(s, gold)) for s in trace.stages]
    return counts


def relevant_counts(trace: RunTrace) -> dict[str, list[int]]:
    """Per stage, how many candidates are judged relevant at each grade (a candidate
    counts at the best grade of its documents), highest grade first."""
    grades = trace.gold.grades
    best = [[max((grades.get(d, 0) for d in c.unit.doc_ids), default=0)
             for c in stage.candidates] for stage in trace.stages]
    return {relevant_label(g): [row.count(g) for row in best]
            for g in sorted({g for g in grades.values() if g >= 1}, reverse=True)}


def relevant_label(grade: int) -> str:
    return f"kept, judged relevant (grade {grade})"


def series_colour(name: str) -> str:
    """A gold series' colour: the answer's, the supporting documents', the supporting
    sentences', or a shade of green per relevance grade (darker: higher)."""
    if name == "kept, holding the answer":
        return GOLD
    if name == "kept, holding a supporting document":
        return SUPPORT
    if name == SENTENCES:
        return SENTENCE_COLOUR
    grade = int(name.rsplit(" ", 1)[1].rstrip(")"))
    return GRADES[min(grade, len(GRADES)) - 1]
