"""A test collection added: its corpus stored as any added corpus is (engine.data.ingest:
same folder, caches and serving), its judged questions beside it, one JSONL file a split
(`questions-<split>.jsonl`, the "judged" layout `read_dataset` reads: id, text and
[document id, grade] judgments). Each split is then a dataset every picker lists as
"<name> (<split>)", judged over the collection's own corpus.

The whole collection is read and checked (every split's qrels against its queries and
corpus) before anything is written, and then written at once, so a refused file stores
nothing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.data.ingest import StoredCorpus, corpora_dir, store, stored_corpora
from engine.data.loaders.collections import (
    Collection,
    read_beir_splits,
    read_collection,
    trec_files,
)
from engine.documents import Corpus, Question
from engine.errors import ConfigError

QUESTIONS = "questions-{split}.jsonl"
SHIPPED = "shipped-{file}"  # the judgments a split came with, before its first rewrite


@dataclass(frozen=True)
class CollectionSplit:
    """One split of an added collection: a dataset the pickers list."""

    corpus: str  # the added corpus it is judged over (the collection's name)
    split: str
    questions: int

    @property
    def label(self) -> str:
        return f"{self.corpus} ({self.split})"

    @property
    def path(self) -> Path:
        return corpora_dir() / self.corpus / QUESTIONS.format(split=self.split)


def read_splits(source: Path | str, drop_unknown: bool = False) -> list[Collection]:
    """Every judged split of the collection at `source` (a TREC folder has one, test; an
    ir_datasets id, `irds:beir/nfcorpus/test`, the one it names)."""
    from engine.data.loaders.irds import is_irds, read_irds

    if is_irds(str(source)):
        return [read_irds(str(source), drop_unknown)]
    source = Path(source)
    if trec_files(source) is not None:
        return [read_collection(source, drop_unknown=drop_unknown)]
    return read_beir_splits(source, drop_unknown)


def add_collection(name: str, source: Path | str, *, drop_unknown: bool = False,
                   original: str = "", serving: dict | None = None
                   ) -> tuple[Corpus, list[CollectionSplit]]:
    """Read the collection at `source` whole, then store its corpus as corpus `name` and
    each split's judged questions beside it; (the corpus as `load_corpus(name)` gives it,
    its splits as the pickers list them)."""
    splits = read_splits(source, drop_unknown)
    record = {"format": splits[0].format,
              "splits": {c.split: len(c.questions) for c in splits}}
    beside = {QUESTIONS.format(split=c.split): questions_jsonl(c.questions) for c in splits}
    shown = original or (source if isinstance(source, str) else source.name)
    corpus = store(name, list(splits[0].documents), shown, serving=serving,
                   collection=record, beside=beside)
    return corpus, [CollectionSplit(name, c.split, len(c.questions)) for c in splits]


def add_questions(corpus: str, split: str, questions: tuple[Question, ...]) -> CollectionSplit:
    """Questions for added corpus `corpus` as one more of its splits, "<corpus> (<split>)",
    judged as judgments come (engine.store.judgments). Its questions file is written, then
    the corpus's record, each atomically: a refusal or a failure changes nothing."""
    from engine.cache import atomic_path, write_json_atomic

    stored = next((c for c in stored_corpora() if c.name == corpus), None)
    if stored is None:
        added = ", ".join(c.name for c in stored_corpora()) or "none yet"
        raise ConfigError(f"No added corpus {corpus!r} to ask questions of (added: {added}). "
                          "Add it in the Corpora tab first; the packaged corpora are "
                          "judged by their own datasets.")
    split = " ".join(str(split or "").split())
    if not split or len(split) > 40 or any(ch in split for ch in "()/\\"):
        raise ConfigError(f"Question set name {split!r} is not usable: 1-40 characters "
                          "without brackets or slashes, e.g. 'support tickets'.")
    splits = dict(stored.collection.get("splits", {}))
    if split in splits:
        raise ConfigError(f"Corpus {corpus!r} has a question set named {split!r} already: "
                          "choose another name.")
    if not questions:
        raise ConfigError("The question set is empty: give at least one question.")
    path = corpora_dir() / corpus / QUESTIONS.format(split=split)
    with atomic_path(path) as tmp:
        tmp.write_text(questions_jsonl(questions), encoding="utf-8")
    record = {**stored.collection, "format": stored.collection.get("format", "questions"),
              "splits": {**splits, split: len(questions)}}
    write_json_atomic(corpora_dir() / corpus / "meta.json",
                      {**asdict(stored), "collection": record})
    return CollectionSplit(corpus, split, len(questions))


def set_judgments(split: CollectionSplit, grades: dict[str, dict[str, int]]) -> int:
    """Write `grades` ({question id: {document id: grade}}) as the judgments of `split`'s
    questions (engine.judging.measures.published), over those the split came with (a
    test collection's qrels: kept once, beside it, before its first rewrite; where both
    judge a document, `grades` win), atomically; every measure of the split reads them
    from then on. Returns how many questions have a judgment."""
    from engine.cache import atomic_path
    from engine.data.loaders import read_dataset
    from engine.documents import with_judgments

    shipped = split.path.with_name(SHIPPED.format(file=split.path.name))
    if not shipped.exists():  # the judgments it came with, before the first rewrite
        with atomic_path(shipped) as tmp:
            tmp.write_bytes(split.path.read_bytes())
    came_with = {q.id: q.grades for q in read_dataset(shipped).questions}
    questions = tuple(with_judgments(q, {**came_with.get(q.id, {}), **grades.get(q.id, {})})
                      for q in read_dataset(split.path).questions)
    with atomic_path(split.path) as tmp:
        tmp.write_text(questions_jsonl(questions), encoding="utf-8")
    return sum(1 for q in questions if q.judgments)


def questions_jsonl(questions: tuple[Question, ...]) -> str:
    """The judged layout: a row a question, its judgments as [document id, grade]."""
    return "".join(json.dumps({"id": q.id, "text": q.text, "judgments": q.judgments,
                               **({"answers": list(q.answers)} if q.answers else {}),
                               **({"own_document": q.own_document} if q.own_document
                                  else {})},
                              ensure_ascii=False) + "\n" for q in questions)


def collection_splits() -> list[CollectionSplit]:
    """Every split of every added collection, by collection name then split."""
    return [CollectionSplit(c.name, split, n) for c in stored_corpora() if c.collection
            for split, n in c.collection.get("splits", {}).items()
            if (corpora_dir() / c.name / QUESTIONS.format(split=split)).is_file()]


def split_of(dataset: str) -> CollectionSplit | None:
    """The added collection's split that `dataset` names: its label ("arguana (test)",
    case and spacing aside) or its questions file's path; None for any other name."""
    key = " ".join(str(dataset or "").split()).casefold()
    for split in collection_splits():
        if key == split.label.casefold() or _same(dataset, split.path):
            return split
    return None


def judged_corpus(dataset: str) -> str | None:
    """The corpus the added collection's split `dataset` names is judged over; None for
    any other dataset."""
    split = split_of(dataset)
    return split.corpus if split is not None else None


def _same(given: str, path: Path) -> bool:
    try:
        return bool(given) and Path(given).resolve() == path.resolve()
    except OSError:
        return False


def stored_from(source: Path | str) -> StoredCorpus | None:
    """The added collection read from `source` (its resolved path, as the command line
    records it, or the ir_datasets id it was read by), if one was."""
    wanted = source if isinstance(source, str) else str(source.resolve())
    return next((c for c in stored_corpora() if c.collection and c.source == wanted), None)


def check_corpus(dataset: str, corpus: str) -> None:
    """Refuse to evaluate an added collection's split over another corpus than its own:
    its judgments name that corpus's documents, any other would measure nothing."""
    split = split_of(dataset)
    if split is not None and corpus.strip() and corpus.strip() != split.corpus:
        raise ConfigError(f"{split.label!r} is judged over corpus {split.corpus!r}, not "
                          f"{corpus.strip()!r}: its judgments name that corpus's documents. "
                          f"Pick corpus {split.corpus!r}.")

