"""Every corpus the app answers over, each prepared when first asked for.

`Corpora` keeps one `Preparation` per corpus in use: the corpus the app started with (always
kept), the packaged ones (`wiki`, `pooled`) and corpora users add (engine.data.ingest: an
upload or a file under the allowed root). A request names its corpus (empty: the one the
app started with), so two users can search two corpora at once. Everything of a corpus
prepares at once except the long builds, which take turns across corpora
(engine.service.preparation.BUILDS); meanwhile its paradigms answer on their stand-ins.

A corpus nobody asked for in `idle_seconds`, with nothing left to prepare and no
evaluation running over it, is released: its preparation dropped and its indexes evicted
from the process-wide stores. They stay cached on disk, so using it again only loads.

Beside it: each corpus's row as the Corpora tab lists it (engine.service.corpus_rows,
`CorpusRow`), where an added corpus's dense indexes are served (engine.service.serving,
`served_as_added`), and whether a paradigm can answer
over a corpus (engine.service.readiness).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine import allowed
from engine.data.collection_store import add_collection
from engine.data.corpus import NAMED_CORPORA, corpus_name
from engine.data.ingest import (
    check_name,
    check_source,
    ingest,
    remove_stored,
    shown_as,
    stored_corpora,
)
from engine.data.loaders.collections import is_collection
from engine.data.loaders.irds import is_irds
from engine.documents import Corpus, Dataset
from engine.errors import ConfigError, EngineError
from engine.paths import data_dir
from engine.service.corpus_rows import CorpusRow, corpus_rows
from engine.service.preparation import Preparation, Progress
from engine.service.serving import served, served_as_added, serving_of

logger = logging.getLogger(__name__)

IDLE_SECONDS = 30 * 60
# how long a request naming a corpus that is not loaded waits for it to load
LOAD_WAIT_SECONDS = 60.0


class Corpora:
    """The corpora of one app: the start-up one, the packaged and the added ones."""

    def __init__(self, default: Preparation, *, root: Path | None = None,
                 idle_seconds: float = IDLE_SECONDS,
                 in_use: Callable[[], set[str]] = set,
                 preparing: Callable[..., Preparation] = Preparation,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`default` prepares the corpus the app started with; `root` is the folder a
        server-side path may be read from (default: the data directory); `in_use` names
        the corpora an evaluation runs over (never released); `preparing(spec, dense=,
        load=)` makes another corpus's preparation; `clock` (seconds) times their idling."""
        self.default = corpus_name(default.corpus_spec)
        self.startup = default  # the start-up corpus's preparation, always kept
        self.root = root or data_dir()
        self._idle, self._in_use, self._preparing = idle_seconds, in_use, preparing
        self._clock = clock
        self._preparations: dict[str, Preparation] = {self.default: default}
        self._used: dict[str, float] = {self.default: clock()}
        self._fingerprints: dict[str, str] = {}
        # corpora evaluations made here: name -> (base corpus, QA file, label)
        self._derived: dict[str, tuple[str, str, str]] = {}
        self._lock = threading.RLock()

    # --- choosing -------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every corpus a request may name: the start-up one first."""
        names = [self.default, *NAMED_CORPORA, *(c.name for c in stored_corpora()),
                 *self._preparations]
        return list(dict.fromkeys(names))

    def resolve(self, name: str = "") -> str:
        """`name` as a known corpus name (empty: the start-up corpus), else a ConfigError
        listing the names."""
        name = (name or "").strip()
        if not name:
            return self.default
        if name in self._preparations:  # loaded: no need to list the stored ones
            return name
        default_preparation = self._preparations[self.default]
        if name == default_preparation.corpus_spec:
            return self.default
        if name not in self.names() and self._derived_source(name) is not None:
            return name
        if name not in self.names():
            raise ConfigError(f"Unknown corpus {name!r}; choose one of "
                              f"{', '.join(self.names())}, or add it first (Corpora tab, "
                              "or the add_corpus endpoint).")
        return name

    def preparation(self, name: str = "") -> Preparation:
        """The preparation of corpus `name` (empty: the start-up one). One not loaded is
        started now and waited for up to LOAD_WAIT_SECONDS while it loads from its caches
        (its long builds, if any, go on in the background). Releases corpora idle for
        too long."""
        name = self.resolve(name)
        with self._lock:
            preparation = self._preparations.get(name)
            started = preparation is None
            if started:
                self.resolve(name)  # not removed meanwhile
                logger.info("preparing corpus %r on first use", name)
                derived = self._derived_source(name)
                spec, load = (name, served_as_added(name)) if derived is None else \
                    self._derived_load(*derived)
                # a corpus an evaluation made: its slow builds are the evaluation's own
                # (confirmed, queued and shown in its progress), not a second build queued
                preparation = self._preparing(spec, dense=self._dense and derived is None,
                                              train=False, load=load).start()
                self._preparations[name] = preparation
            self._used[name] = self._clock()
        if started:
            preparation.wait_quick(LOAD_WAIT_SECONDS)
        self.release_idle()
        return preparation

    def corpus_if_loaded(self, name: str) -> Corpus | None:
        """Corpus `name` if it is loaded now (never starts loading it)."""
        preparation = self._preparations.get((name or "").strip() or self.default)
        return preparation.corpus if preparation is not None else None

    def for_dataset(self, name: str, dataset: Dataset, label: str, path: str) -> Preparation:
        """The preparation of what an evaluation of `dataset` (read from `path`, shown as
        `label`: a listed dataset's name or a file's, never a server path) over corpus
        `name` searches: the corpus plus the dataset's paragraphs it lacks, a corpus of its
        own named "<corpus>+<label>" (engine.data.corpus.with_paragraphs: the CLI's rule
        too), or the corpus itself when it holds them all. Prepared as any corpus is, its
        long builds taking their turn; while the corpus loads, its own preparation."""
        from engine.data.corpus import grown_name, lacking

        preparation = self.preparation(name)
        loaded = preparation.corpus
        if loaded is None or not lacking(loaded, dataset):
            return preparation  # still loading (the caller says so), or it holds them all
        grown = grown_name(loaded.name, label)  # made (merged) once, by its own load
        with self._lock:
            self._derived[grown] = (self.resolve(name), str(path), label)
        return self.preparation(grown)

    def _derived_source(self, name: str) -> tuple[str, str, str] | None:
        """(base corpus, QA file, label) of a corpus "<base>+<dataset>": one an evaluation
        made here, or a base corpus and a listed dataset's name or a QA file's path (after
        a restart: Diagnose, Resume). None for any other name; a ConfigError for a known
        base with a dataset that is neither."""
        if name in self._derived:
            return self._derived[name]
        base, plus, dataset = name.partition("+")
        if not (plus and base and dataset):
            return None
        base = self.resolve(base)  # an unknown base is named as such
        from engine.qa_data import dataset_path

        path = dataset_path(dataset) or Path(dataset)
        if not path.is_file():
            raise ConfigError(f"Corpus {name!r} adds the paragraphs of {dataset!r} to "
                              f"{base!r}, but {dataset!r} is neither a listed dataset nor a "
                              "QA file here: evaluate it again to make that corpus.")
        return base, str(path), dataset

    def _derived_load(self, base: str, path: str, label: str
                      ) -> tuple[str, Callable[[Progress], Corpus]]:
        """(spec, load) of corpus "<base>+<label>": `load` adds the QA file's paragraphs to
        the base corpus as loaded here (whatever its spec); `spec` loads the same corpus
        anywhere else (a Ray worker: engine.data.corpus.load_corpus)."""
        from engine.data.corpus import with_paragraphs
        from engine.data.loaders import read_dataset

        def load(progress: Progress) -> Corpus:
            return with_paragraphs(_loaded(self.preparation(base), base), read_dataset(path),
                                   label)

        loaded = self._preparations.get(base)  # an added or packaged one: its spec is its name
        return f"{loaded.corpus_spec if loaded is not None else base}+{path}", load

    @property
    def _dense(self) -> bool:
        return self._preparations[self.default].dense

    # --- adding and removing --------------------------------------------------------------

    def add(self, name: str, source: str | Path, *, upload: bool,
            original: str = "", ray: str = "", workers: int = 2, shards: int = 0,
            qdrant: str = "", collection: str = "", drop_unknown: bool = False) -> str:
        """Add corpus `name` read from `source` (an uploaded file, or a server-side path
        under the root) and prepare it in the background; returns its name at once. What
        can be refused without reading it is refused here, the rest in its status. Errors
        name an upload as `original` (default: its file name), not where the server keeps
        it. With `ray` (an address or "local" with `workers`), its dense passages are
        encoded as Ray tasks (engine.index.on_ray), and with `shards` its dense indexes are
        served by that many Ray actors there (engine.index.shards); with `qdrant` (a
        server's URL or a local-mode folder) they are served from Qdrant collections, its
        passages from `collection` (default: its name; engine.index.qdrant). A test
        collection (a BEIR folder or zip, TREC topics with qrels and a corpus) is added as
        its corpus with its judged questions beside it (engine.data.collection_store): its
        splits are datasets from then on; `drop_unknown` leaves out its judgments of
        documents the corpus lacks instead of refusing it."""

        name = (name or "").strip()
        shown = original or Path(source).name
        serving = serving_of(ray, workers, shards, qdrant, collection)
        irds = not upload and is_irds(str(source))  # read from ir_datasets' own cache
        try:
            path = str(source).strip() if irds else \
                check_source(source, root=None if upload else self.root)
        except (EngineError, ValueError) as err:
            raise ConfigError(shown_as(err, Path(source), shown) if upload else str(err)
                              ) from None

        def load(progress: Progress) -> Corpus:
            try:
                corpus = add_collection(name, path, drop_unknown=drop_unknown,
                                        original=path if irds else shown,
                                        serving=serving)[0] if irds or is_collection(path) \
                    else ingest(name, path, original=shown, serving=serving)
            except (EngineError, ValueError, OSError) as err:  # shown in its row
                raise ConfigError(shown_as(err, path, shown) if upload else str(err)
                                  ) from None
            finally:
                if upload:  # read once, stored as the corpus: the upload goes
                    allowed.discard_upload(path)
            return served(corpus, serving)

        with self._lock:
            self._forget_failed(name)
            name = check_name(name, set(self.names()))
            self._preparations[name] = self._preparing(name, dense=self._dense, load=load,
                                                       train=False).start()
            self._used[name] = self._clock()
        logger.info("adding corpus %r from %s", name, original or path)
        return name

    def _forget_failed(self, name: str) -> None:
        """An earlier add of `name` (in any case) that failed to read frees the name."""
        stored = {c.name for c in stored_corpora()}
        for known, preparation in list(self._preparations.items()):
            if (known.lower() == name.lower() and known != self.default
                    and known not in stored
                    and preparation.tasks["corpus"].state == "failed"):
                del self._preparations[known]

    def fix_for_failed(self, name: str) -> str:
        """What to do about corpus `name` failing to load, by where it came from."""
        if self.resolve(name) == self.default:
            return "start the app with a corpus it can read (--corpus)"
        if name in NAMED_CORPORA:
            return "check that the packaged data is installed (see the README)"
        if name in {c.name for c in stored_corpora()}:
            return "remove it in the Corpora tab and add its file again"
        return "fix the file and add it again under this name (the name is free again)"

    def remove(self, name: str) -> None:
        """Remove the added corpus `name`: unloaded, its stored file deleted (caches built
        from it stay on disk until their folder is cleared: fingerprinted, never reused
        by mistake)."""
        name = (name or "").strip()
        if name == self.default:
            raise ConfigError(f"{name!r} is the corpus the app started with; start the app "
                              "with another --corpus to remove it.")
        if name in NAMED_CORPORA:
            raise ConfigError(f"{name!r} is a packaged corpus; only added corpora can be "
                              "removed.")
        stored = {c.name for c in stored_corpora()}
        if name not in stored and name not in self._preparations:
            raise ConfigError(f"No added corpus is named {name!r}; added ones: "
                              f"{', '.join(sorted(stored)) or 'none'}.")
        with self._lock:
            preparation = self._preparations.get(name)
            if preparation is None and name not in {c.name for c in stored_corpora()}:
                raise ConfigError(f"No added corpus is named {name!r} any more.")
            if preparation is not None and preparation.busy() and not preparation.cancel():
                raise ConfigError(f"Corpus {name!r} is still being prepared; remove it when "
                                  "its status says ready or failed (one waiting for another "
                                  "corpus's build can be removed at once).")
            if name in self._in_use():
                raise ConfigError(f"An evaluation is running over corpus {name!r}; cancel "
                                  "it or wait for it before removing the corpus.")
            self._unload(name)
            remove_stored(name)
        logger.info("removed corpus %r", name)

    # --- memory ---------------------------------------------------------------------------

    def release_idle(self) -> list[str]:
        """Unload corpora idle for longer than `idle_seconds`; returns their names."""
        now, released = self._clock(), []
        with self._lock:
            busy = self._in_use()
            for name, preparation in list(self._preparations.items()):
                if (name != self.default and name not in busy and not preparation.busy()
                        and now - self._used.get(name, now) > self._idle):
                    self._unload(name)
                    released.append(name)
        for name in released:
            logger.info("released corpus %r (idle for over %.0f s)", name, self._idle)
        return released

    def _unload(self, name: str) -> None:
        from engine.service.store import process_store

        preparation = self._preparations.pop(name, None)
        self._used.pop(name, None)
        corpus = preparation.corpus if preparation is not None else None
        if corpus is None:
            return
        self._fingerprints[name] = corpus.fingerprint
        twins = [p for p in self._preparations.values()
                 if p.corpus is not None and p.corpus.fingerprint == corpus.fingerprint]
        if not twins:  # a corpus of the same content still searches the same indexes
            process_store().evict(corpus.fingerprint)
            process_store().serve_here(corpus)  # where it is served: set again on load

    def loaded(self) -> list[str]:
        return list(self._preparations)

    def loaded_preparations(self) -> list[Preparation]:
        """The loaded corpora's preparations, without touching when each was last used."""
        with self._lock:
            return list(self._preparations.values())

    # --- listing --------------------------------------------------------------------------

    def named_fingerprints(self) -> dict[str, str]:
        """{fingerprint: name} of every corpus loaded at least once (a corpus's caches are
        keyed by its fingerprint)."""
        return {fingerprint: name for name, fingerprint in self._fingerprints.items()}

    def rows(self) -> list[CorpusRow]:
        """Every corpus with its state, size and what is built for it
        (engine.service.corpus_rows)."""
        return corpus_rows(self.names(), self._preparations, self._fingerprints, self.default)


def check_searched(searched: dict, corpus: Corpus) -> Corpus:
    """`corpus`, if it is the corpus a run searched (its trace's `corpus` record): a corpus
    removed and added again under the same name with other texts is refused, since the
    run's document ids would name other documents now."""
    fingerprint = searched.get("fingerprint", "")
    if fingerprint and fingerprint != corpus.fingerprint:
        raise ConfigError(f"This run searched corpus '{corpus.name}' as it was (fingerprint "
                          f"{fingerprint[:12]}); it holds other texts now "
                          f"({corpus.fingerprint[:12]}). Run the question again over it.")
    return corpus


def _loaded(preparation: Preparation, name: str) -> Corpus:
    """The corpus `preparation` loads, once it has (a ConfigError naming `name` if it
    failed)."""
    task = preparation.tasks["corpus"]
    while task.state in ("waiting", "running"):
        time.sleep(0.05)
    if task.state != "ready":
        raise ConfigError(f"Corpus {name!r} could not be read: {task.error}")
    return task.result
