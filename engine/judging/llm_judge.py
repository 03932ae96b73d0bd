"""An LLM relevance judge in the manner of UMBRELA (Upadhyay et al., 2024: the open
reproduction of Bing's relevance assessor, used in the TREC 2024 RAG track).

The judge reads the question and one pooled unit and grades it on the TREC DL scale the
people grade on (0 irrelevant, 1 related, 2 highly relevant, 3 perfectly relevant), after
weighing, as UMBRELA's prompt asks, how well the passage matches the question's intent (M)
and how trustworthy it is (T). Its grade is read from the last "Final score: N" line; its
words before it are kept as the judgment's reasoning. A judge that reasons without a score
(small models do) is asked for the score alone: its words, then "Final score:". It runs
through any reader backend
(engine.readers: the packaged model in process, or an OpenAI-compatible endpoint), one unit
at a time, each judgment stored as soon as it is made: a backend that fails mid-pool loses
nothing judged, and judging the pool again resumes with what is left.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine.errors import EngineError
from engine.store.judgments import Judgment, JudgmentStore, PoolUnit

logger = logging.getLogger(__name__)

MAX_PASSAGE_CHARS = 4_000  # a pooled unit is a passage; a whole document is cut here
MAX_JUDGE_TOKENS = 200  # room for a few lines of reasoning, then the score

JUDGE_PROMPT = """\
You grade how relevant a passage is to a search query, on a scale of 0 to 3:
3 = the passage is dedicated to the query and contains the exact answer;
2 = the passage answers the query, but the answer is unclear or hidden among other things;
1 = the passage is related to the query's topic but does not answer it;
0 = the passage has nothing to do with the query.

Think about what the searcher wants. Consider how well the passage matches that intent
(M, 0-2) and how trustworthy it is (T, 0-1), then decide the score. Give one or two short
lines of reasoning, then the score alone on the last line as "Final score: N".

Query: {question}
Passage: {passage}

Reasoning:"""

_FINAL = re.compile(r"final score\s*[:=]?\s*\**\s*([0-3])\b", re.I)
_BARE = re.compile(r"\s*\**\s*([0-3])\b")


def judge_prompt(question: str, unit: PoolUnit) -> str:
    """The judge's prompt for one pooled unit (its title, then its text, cut)."""
    text = unit.text[:MAX_PASSAGE_CHARS]
    passage = f"{unit.title}: {text}" if unit.title and unit.title not in text[:200] else text
    return JUDGE_PROMPT.format(question=" ".join(question.split()),
                               passage=" ".join(passage.split()))


def read_grade(output: str) -> tuple[int | None, str]:
    """(grade, reasoning) of the judge's output: the grade of its last "Final score" line,
    or the output's own if it is a bare score ("2", the answer when asked for the score
    alone); None when it gave none (a digit in its reasoning, "M 1", is no score). The
    reasoning is what came before the score."""
    found = list(_FINAL.finditer(output))
    if found:
        return int(found[-1].group(1)), _reasoning(output[:found[-1].start()])
    bare = _BARE.match(output)
    return (int(bare.group(1)), "") if bare else (None, _reasoning(output))


def _reasoning(text: str) -> str:
    """The judge's words, without the markdown it put around the score's line."""
    return text.strip().strip("*#").strip()


@dataclass(frozen=True)
class Judged:
    """How a judging round went."""

    judged: int
    unreadable: int  # outputs with no grade in them: left unjudged, named in the log
    left: int  # units of the pool the judge has not judged yet


def judge_pool(store: JudgmentStore, pool_id: int, questions: dict[str, str], generator,
               assessor: str, limit: int | None = None,
               cancelled: Callable[[], bool] = lambda: False) -> Iterator[Judged]:
    """Judge pool `pool_id`'s units the judge (`assessor`: "llm:<backend>:<model>") has not
    judged, through `generator` (engine.readers: .generate(prompt, max_new_tokens, stop)),
    at most `limit` of them; `questions` {question id: text}. Yields the round's count after
    every unit; a backend error stops the round with the judgments made kept."""
    pool = store.pool(pool_id)
    judged = unreadable = 0
    skipped: list[int] = []
    while limit is None or judged + unreadable < limit:
        if cancelled():
            break
        unit = store.to_judge(pool_id, assessor, tuple(skipped))
        if unit is None:
            break
        start = time.perf_counter()
        prompt = judge_prompt(questions[unit.question_id], unit)
        try:
            out = generator.generate(prompt, max_new_tokens=MAX_JUDGE_TOKENS)
            grade, reasoning = read_grade(out.text)
            if grade is None:  # reasoned without a score (small models): asked for it alone
                said = out.text.rstrip()
                forced = generator.generate(f"{prompt} {said}\nFinal score:", max_new_tokens=3)
                grade, _ = read_grade(forced.text)
                reasoning = _reasoning(said)
        except EngineError as err:
            said = str(err).rstrip()
            said += "" if said.endswith((".", "?", "!")) else "."
            kept = "The 1 judgment made is" if judged == 1 else \
                f"The {judged} judgments made are"
            raise EngineError(f"The judge stopped at question {unit.question_id!r}, document "
                              f"{unit.document_id!r}: {said} {kept} kept; judge the pool "
                              "again to go on.") from err
        if grade is None:
            unreadable += 1
            skipped.append(unit.position)  # not asked again this round
            logger.warning("judge %s gave no grade for %s/%s: %r", assessor,
                           unit.question_id, unit.document_id, out.text[:200])
        else:
            store.add(Judgment(pool.collection, unit.question_id, unit.document_id, grade,
                               assessor, pool_id, time.perf_counter() - start,
                               reasoning[:2_000]))
            judged += 1
        done, total = store.progress(pool_id, assessor)
        yield Judged(judged, unreadable, total - done)
