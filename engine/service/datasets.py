"""The datasets the app lists: the QA files of the shared data folder and the splits of
every added test collection (engine.data.collection_store); and reading any QA file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from engine.documents import Corpus, Dataset, Document, Question
from engine.errors import ConfigError
from engine.qa_data import DATASETS  # the QA files offered (path -> label)


def listed_datasets() -> dict[str, str]:
    """{path: label} of the listed QA files present in the shared data folder (paths
    relative to it), then of every added collection's splits (their questions files)."""
    from engine.data.collection_store import collection_splits
    from engine.paths import shared_data_dir

    root = shared_data_dir()
    return {**{path: label for path, label in DATASETS.items() if (root / path).exists()},
            **{str(split.path): split.label for split in collection_splits()}}


def missing_note(fetch_state: str = "") -> str:
    """'' when every listed dataset is here; else which are not and how to get them
    (`fetch_state`: the app's background fetch, engine.qa_data.how_to_get)."""
    from engine.qa_data import how_to_get, missing

    absent = missing(DATASETS)
    if not absent:
        return ""
    names = ", ".join(DATASETS[path] for path in absent)
    return f"Not here yet: {names} (the QA data is missing; {how_to_get(fetch_state)})."


def listed_path(dataset: str) -> str | None:
    """The listed QA file that `dataset` names, or None. A listed dataset's name is its
    label ("HotpotQA dev500": what the app shows, the API takes and evaluations store; case
    and spacing aside); its path ("hotpotqa/dev500_contexts.jsonl", also under the shared
    data folder) is still accepted, as it was the API's name before. An added collection's
    split is named "<collection> (<split>)"; its path is its questions file."""
    from engine.data.collection_store import split_of
    from engine.qa_data import listed_dataset

    name = str(dataset or "").strip()
    listed = listed_dataset(name)
    if listed is not None:
        return listed
    split = split_of(name)
    if split is not None:
        return str(split.path)
    if name:
        from engine.paths import shared_data_dir

        try:
            relative = Path(name).resolve().relative_to(shared_data_dir().resolve())
        except (ValueError, OSError):
            return None
        return relative.as_posix() if relative.as_posix() in DATASETS else None
    return None


def listed_questions(dataset: str, limit: int = 300) -> tuple[Question, ...]:
    """The first `limit` questions of a listed dataset (by its name or path)."""
    return _listed(check_listed(dataset)).questions[:limit]


def check_listed(dataset: str) -> str:
    """The path of the listed dataset `dataset` names if it is here; else a ConfigError
    naming the ones that are, or the fix when the QA data is missing."""
    here = listed_datasets()
    path = listed_path(dataset)
    if path in here:
        return path
    if path is not None:
        raise ConfigError(f"Dataset {dataset!r} is not here: {missing_note()}")
    choices = ", ".join(here.values()) or f"none is here yet ({missing_note()})"
    if not (dataset or "").strip():
        raise ConfigError(f"Pick a dataset first. Choose one of: {choices}; or upload a QA "
                          "file.")
    raise ConfigError(f"Unknown dataset {dataset!r}. Choose one of: {choices}; or give a "
                      "QA file.")


def dataset_file(name: str) -> Path:
    """The QA file `name` names for the command line: a listed dataset's name ("HotpotQA
    dev500"), a QA file or folder's path, or a path under the shared data folder. Anything
    else is refused with the listed datasets, which of them are missing and the fix."""
    from engine.paths import shared_data_dir

    given = Path(name)
    if given.exists():
        return given
    listed = listed_path(name)
    if listed is not None:
        return shared_data_dir() / check_listed(name)
    if (shared_data_dir() / name).is_file():
        return shared_data_dir() / name
    here = listed_datasets()
    key = " ".join(str(name).split()).casefold()
    close = [label for label in DATASETS.values() if key and key in label.casefold()]
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    from engine.qa_data import how_to_get

    listed = ", ".join(label + ("" if path in here else " (missing)")
                       for path, label in DATASETS.items())
    if len(here) < len(DATASETS):
        listed += f"; for the missing ones {how_to_get()}"
    raise ConfigError(f"Dataset {name!r}: no such QA file, and no listed dataset is named "
                      f"so.{hint} The listed datasets: {listed}. Or give a QA file's path "
                      "(`funnel-engine formats` lists the layouts read).")


def dataset_questions(dataset: str) -> tuple[Question, ...]:
    """Every question of a listed dataset (by its name or path), or of a QA file at path
    `dataset` (an upload)."""
    return dataset_of(dataset).questions


def dataset_of(dataset: str) -> Dataset:
    """A listed dataset (by its name or path) with its documents, or a QA file at path
    `dataset`."""
    if listed_path(dataset) is not None or not str(dataset or "").strip():
        return _listed(check_listed(dataset))
    from engine import allowed

    if not allowed.readable(dataset):  # said before whether such a file exists
        raise ConfigError(f"dataset={dataset!r} is neither a listed dataset nor a file "
                          "uploaded to this app, and a request never chooses what the "
                          "server reads: name a listed dataset or upload the QA file.")
    if not Path(dataset).is_file():
        return _listed(check_listed(dataset))
    from engine.data.loaders import read_dataset

    return read_dataset(dataset)


def dataset_label(dataset: str) -> str:
    """How a dataset is named in stored evaluations: a listed one by its name (however it
    was given), any other QA file by its path."""
    path = listed_path(dataset)
    return {**DATASETS, **listed_datasets()}.get(path, dataset) if path is not None \
        else dataset


def supporting_documents(question: Question, corpus: Corpus | None) -> tuple[Document, ...]:
    """The question's gold supporting documents: from the corpus, else from the listed
    datasets' own paragraphs (a dev500 question asked over the wiki corpus)."""
    titles = list(dict.fromkeys(question.supporting_titles))
    found = {t: corpus.by_id[t] for t in titles if corpus is not None and t in corpus.by_id}
    for path in listed_datasets():
        if len(found) == len(titles):
            break
        documents = _documents(path)
        found.update({t: documents[t] for t in titles if t not in found and t in documents})
    return tuple(found[t] for t in titles if t in found)


@lru_cache(maxsize=8)
def _documents(path: str) -> dict[str, Document]:
    return {d.id: d for d in _listed(path).documents}


@lru_cache(maxsize=8)
def _listed(path: str) -> Dataset:
    from engine.data.loaders import read_dataset
    from engine.paths import shared_data_dir

    return read_dataset(shared_data_dir() / path)
