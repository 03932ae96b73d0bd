"""Training pairs for the pre-ranker, from the training QA files only (never dev500).

- supervised pairs: each training question against its own paragraphs, supporting ones
  positive, the others (the datasets' distractors, hard negatives already) negative;
- inverse-cloze (ICT) pairs from the pooled corpus: one sentence as query, the rest of its
  paragraph positive, a BM25-retrieved other document negative; every document dev500 ships
  is left out, so nothing leaks into evaluation.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.data.loaders import read_dataset
from engine.data.loaders.jsonio import load_json
from engine.errors import DataFormatError
from engine.models.kinds import TRAIN_FILES
from engine.paths import shared_data_dir
from engine.text import split_sentences

if TYPE_CHECKING:
    from engine.documents import Corpus, Question

logger = logging.getLogger(__name__)

DEV_SOURCE = "hotpotqa/dev500_contexts.jsonl"  # evaluation data: never trained on


@dataclass(frozen=True)
class Pair:
    """One training example: `text` is "title\\ntext", label 1.0 (relevant) or 0.0."""

    query: str
    text: str
    label: float


@dataclass(frozen=True)
class QuestionGroup:
    """A training question with its own paragraphs, as (title, "title\\ntext", positive)."""

    id: str
    query: str
    paragraphs: tuple[tuple[str, str, bool], ...]
    gold_titles: tuple[str, ...]


def load_question_groups(data_root: Path | None = None) -> list[QuestionGroup]:
    """Every question of `TRAIN_FILES` with its own labelled paragraphs, in file order."""
    root = data_root or shared_data_dir()
    groups: list[QuestionGroup] = []
    for name in TRAIN_FILES:
        path = root / name
        questions = {q.id: q for q in read_dataset(path).questions}
        for item in load_json(path):
            qid = str(item.get("_id", item.get("id")))
            question = questions[qid]
            groups.append(QuestionGroup(qid, question.text, _raw_paragraphs(path, item, question),
                                        question.supporting_titles))
    return groups


def _raw_paragraphs(path: Path, item: dict,
                    question: Question) -> tuple[tuple[str, str, bool], ...]:
    if "context" in item:  # HotpotQA: supporting = the title is in supporting_facts
        gold = set(question.supporting_titles)
        raw = [(t.strip(), "".join(s).strip(), t.strip() in gold) for t, s in item["context"]]
    elif "paragraphs" in item:  # MuSiQue: its own is_supporting flag
        raw = [(p["title"].strip(), p["paragraph_text"].strip(), bool(p.get("is_supporting")))
               for p in item["paragraphs"]]
    else:
        raise DataFormatError(path, "expected 'context' or 'paragraphs' in each item")
    return tuple((title, f"{title}\n{text}", label) for title, text, label in raw if text)


def split_questions(groups: Sequence[QuestionGroup], fraction: float,
                    seed: int) -> tuple[list[QuestionGroup], list[QuestionGroup]]:
    """(train, validation): a seeded `fraction` of the questions held out, orders kept."""
    held = set(random.Random(seed).sample(range(len(groups)), round(len(groups) * fraction)))
    return ([g for i, g in enumerate(groups) if i not in held],
            [g for i, g in enumerate(groups) if i in held])


def supervised_pairs(groups: Sequence[QuestionGroup], max_negatives: int,
                     seed: int) -> list[Pair]:
    """All positives of each question plus a seeded sample of `max_negatives` negatives."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for group in groups:
        negatives = [text for _, text, positive in group.paragraphs if not positive]
        pairs += [Pair(group.query, text, 1.0) for _, text, positive in group.paragraphs
                  if positive]
        pairs += [Pair(group.query, text, 0.0)
                  for text in rng.sample(negatives, min(max_negatives, len(negatives)))]
    return pairs


def inverse_cloze_pairs(corpus: Corpus, n: int, seed: int,
                        exclude_source: str = DEV_SOURCE) -> list[Pair]:
    """`n` ICT queries: a sentence vs. the rest of its document (positive) and the best BM25
    hit among the other documents (negative). Documents from `exclude_source` are never used.
    """
    from engine.index.bm25 import bm25_index
    from engine.units.build import UnitConfig

    allowed = [d for d in corpus.documents if exclude_source not in d.sources]
    eligible = [d for d in allowed if len(split_sentences(d.text)) >= 3]
    rng = random.Random(seed)
    chosen = rng.sample(eligible, min(n, len(eligible)))
    index = bm25_index(corpus, UnitConfig("documents"))
    banned = {d.id for d in corpus.documents if exclude_source in d.sources}
    pairs: list[Pair] = []
    for doc in chosen:
        spans = split_sentences(doc.text)
        # Not the lead sentence: it names the title, a shortcut rather than a signal.
        start, end = spans[rng.randrange(1, len(spans))]
        query = doc.text[start:end]
        rest = " ".join((doc.text[:start].strip() + " " + doc.text[end:].strip()).split())
        pairs.append(Pair(query, f"{doc.title}\n{rest}", 1.0))
        hit = next((c.unit for c in index.search(query, 10)
                    if c.unit.id != doc.id and c.unit.id not in banned), None)
        if hit is not None:
            pairs.append(Pair(query, f"{hit.title}\n{hit.text}", 0.0))
    return pairs
