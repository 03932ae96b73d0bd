"""Named corpora: the packaged Wikipedia summaries, the pooled corpus, or a path.

- `wiki`: 10,033 English Wikipedia lead summaries (default; works on a fresh machine).
- `pooled`: `wiki` plus every paragraph of the QA files in the shared data directory, so
  dataset questions are answered from a real haystack rather than their own paragraphs.
  Documents are keyed by title; paragraphs sharing a title are merged.
- a corpus added by name (engine.data.ingest: uploaded or read from a server-side path and
  stored under the data directory).
- any path `read_dataset` understands: that file's or folder's documents.
- `BASE+DATASET`: corpus BASE plus the paragraphs of QA file DATASET (a listed dataset's
  name or a path) that BASE lacks: what every evaluation searches (`with_paragraphs`), so
  the app, the CLI and Ray workers load "wiki+HotpotQA dev500" alike.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.data.loaders import read_dataset
from engine.data.loaders.jsonio import load_json
from engine.data.merge import merge_documents
from engine.documents import Corpus, Dataset, Document
from engine.errors import ConfigError, DataFormatError
from engine.models.packaged import wiki_summaries_path
from engine.paths import POOLED_FILES

logger = logging.getLogger(__name__)

NAMED_CORPORA = ("wiki", "pooled")


def load_corpus(spec: str = "wiki") -> Corpus:
    """The corpus named by `spec`: "wiki", "pooled", an added corpus's name, or a path to a
    dataset/corpus file or folder."""
    from engine.data.ingest import NAME_RE, stored_corpora, stored_path

    if spec == "wiki":
        return Corpus("wiki", tuple(read_wiki_summaries()))
    if spec == "pooled":
        return pooled_corpus()
    base, plus, dataset = spec.partition("+")
    if plus and base and dataset and not Path(spec).exists():
        return with_paragraphs(load_corpus(base), _qa_file(dataset), dataset)
    if NAME_RE.fullmatch(spec) and stored_path(spec).exists():
        return Corpus(corpus_name(spec), tuple(read_dataset(stored_path(spec)).documents))
    path = Path(spec)
    if not path.exists():
        names = [*NAMED_CORPORA, *(c.name for c in stored_corpora())]
        raise ConfigError(f"Unknown corpus {spec!r}: not one of {', '.join(names)} and no "
                          "such file or folder. Give a corpus's name or an existing path.")
    dataset = read_dataset(path)
    return Corpus(corpus_name(spec), tuple(merge_documents(dataset.documents)))


def with_paragraphs(base: Corpus, dataset: Dataset, label: str = "") -> Corpus:
    """`base` plus `dataset`'s own documents that it does not hold (merged by id), named
    "<base>+<label>" (label: how the dataset is named, by default its file's stem). This is
    the one corpus rule of evaluations, in the app and the CLI alike: the gold paragraphs
    of a QA file are always in the haystack, among the corpus's own documents. When `base`
    holds every one of them already (dev500 inside the pooled corpus) it is returned
    unchanged, so its cached indexes are reused instead of rebuilt."""
    extra = lacking(base, dataset)
    if not extra:
        return base
    return Corpus(grown_name(base.name, label or dataset.name),
                  tuple(merge_documents([*base.documents, *extra])))


def eval_corpus(dataset: Dataset, spec: str | Corpus = "wiki", label: str = "") -> Corpus:
    """Corpus `spec` (a name or path, or a loaded corpus) plus the dataset's own documents
    it lacks, named "<corpus>+<label>" (`with_paragraphs`: the one rule of every
    evaluation)."""
    base = spec if isinstance(spec, Corpus) else load_corpus(spec)
    return with_paragraphs(base, dataset, label)


def lacking(base: Corpus, dataset: Dataset) -> list[Document]:
    """`dataset`'s own documents that `base` does not hold (a document of the same id
    holds one whose text it contains, whitespace aside)."""
    return [d for d in dataset.documents if not _holds(base, d)]


def grown_name(base: str, label: str) -> str:
    """The name of corpus `base` with the paragraphs of the dataset named `label`."""
    return f"{base}+{label}"


def _holds(corpus: Corpus, doc: Document) -> bool:
    kept = corpus.by_id.get(doc.id)
    return kept is not None and " ".join(doc.text.split()) in " ".join(kept.text.split())


def _qa_file(name: str) -> Dataset:
    from engine.qa_data import dataset_path

    path = dataset_path(name) or Path(name)
    if not path.exists():
        raise ConfigError(f"Unknown corpus part {name!r}: 'BASE+DATASET' adds a QA file's "
                          "paragraphs to corpus BASE, and this is neither a listed dataset "
                          "nor a QA file. Give a dataset's name (HotpotQA dev500) or a path.")
    return read_dataset(path)


def corpus_name(spec: str) -> str:
    """The name `load_corpus(spec)` gives its corpus: a named or added corpus's name, a
    path's stem."""
    return spec if spec in NAMED_CORPORA else Path(spec).stem


def read_wiki_summaries(path: Path | None = None) -> list[Document]:
    """Documents from the packaged summaries file: id = title, text = the lead extract."""
    path = path or wiki_summaries_path()
    data = load_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, "expected a JSON object keyed by title")
    documents = []
    for key, item in data.items():
        if not isinstance(item, dict) or not isinstance(item.get("extract"), str):
            raise DataFormatError(path, "missing or not a string", field=f"{key}.extract")
        title = str(item.get("title") or key).strip()
        if item["extract"].strip():
            documents.append(Document(id=title, title=title, text=item["extract"].strip(),
                                      sources=("wiki",)))
    return documents


def pooled_corpus(data_root: Path | None = None) -> Corpus:
    """Wikipedia summaries plus every paragraph of the shared QA files, merged by title."""
    from engine.qa_data import require

    data_root = data_root or require(POOLED_FILES, "the pooled corpus needs the QA "
                                     "paragraphs")
    documents = read_wiki_summaries()
    for name in POOLED_FILES:
        documents.extend(read_dataset(data_root / name).documents)
    return Corpus("pooled", tuple(merge_documents(documents)))
