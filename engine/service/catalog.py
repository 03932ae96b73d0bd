"""What a request may name, and whether it is ready: the corpora with their states, the
listed QA files and their questions, the models each role can use, and the app's status
line. The app and the API call it as `explorer.catalog`, checked by the Explorer's door.

Its corpora are the app's (engine.service.corpora.Corpora): asking whether a paradigm is
ready over a corpus starts preparing it; the other questions about a corpus read it only if
it is loaded. A run, an evaluation or a map refuses a corpus that is not ready with
engine.service.readiness.check_ready.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engine.data.collection_store import judged_corpus
from engine.documents import Corpus, Question
from engine.service.corpora import Corpora
from engine.service.corpus_rows import CorpusRow
from engine.service.datasets import listed_datasets, listed_questions, missing_note
from engine.service.door import Door, guarded
from engine.service.models import ModelRow, model_rows


@guarded
class Catalog:
    """The corpora, datasets and models of one app, and what is ready over them."""

    def __init__(self, corpora: Corpora, door: Door | None = None,
                 interrupted: Iterable[str] = ()) -> None:
        """`corpora` are the app's; `door` checks each call's role; `interrupted` says
        what a process that died was writing (engine.cache.interrupted), shown among the
        failures."""
        self._corpora, self.door = corpora, door or Door()
        self._interrupted = list(interrupted)

    # --- corpora ------------------------------------------------------------------------

    @property
    def corpus(self) -> Corpus | None:
        """The corpus the app started with; None while it is still loading."""
        return self._corpora.startup.corpus

    @property
    def corpus_spec(self) -> str:
        return self._corpora.startup.corpus_spec

    def corpus_names(self) -> list[str]:
        """Every corpus a request may name, the start-up one first."""
        return self._corpora.names()

    def corpora(self) -> list[CorpusRow]:
        """Every corpus with its state, size and what is built for it."""
        return self._corpora.rows()

    def add_corpus(self, name: str, source: str | Path, *, upload: bool,
                   original: str = "", ray: str = "", shards: int = 0, qdrant: str = "",
                   collection: str = "", drop_unknown: bool = False) -> str:
        """Add corpus `name` from an upload or a path under the corpus root, prepared in
        the background (where its dense indexes are served: Ray, shards or Qdrant); a test
        collection with its judged questions, its splits datasets from then on."""
        return self._corpora.add(name, source, upload=upload, original=original, ray=ray,
                                 shards=shards, qdrant=qdrant, collection=collection,
                                 drop_unknown=drop_unknown)

    def remove_corpus(self, name: str) -> None:
        self._corpora.remove(name)

    def models(self) -> list[ModelRow]:
        """The models each role can use here and what each has built."""
        return model_rows(self._corpora.named_fingerprints())

    # --- what is ready ------------------------------------------------------------------

    def ready(self, name: str | None = None, corpus: str = "") -> bool:
        """Whether paradigm `name` can answer now over `corpus` (None: whether everything
        of the start-up corpus is prepared). Asking about a corpus starts preparing it."""
        corpora = self._corpora
        preparation = corpora.preparation(corpus) if corpus else corpora.startup
        return preparation.ready() if name is None else not preparation.missing(name)

    def supporting_in_corpus(self, question: Question, corpus: str = ""
                             ) -> tuple[int, int]:
        """(how many of the question's supporting documents corpus `corpus` holds (empty
        or not loaded: the start-up one), how many it has); (0, n) too while the corpus is
        still loading."""
        loaded = self._corpora.corpus_if_loaded(corpus) if corpus else None
        loaded = loaded if loaded is not None else self._corpora.startup.corpus
        titles = question.supporting_titles
        held = sum(t in loaded.by_id for t in titles) if loaded is not None else 0
        return held, len(titles)

    def titles(self, doc_ids, corpus: str = "") -> dict[str, str]:
        """{id: title} of those of `doc_ids` that corpus `corpus` (the start-up one when
        empty) holds with a title, if it is loaded now (never starts loading it)."""
        loaded = self._corpora.corpus_if_loaded(corpus)
        if loaded is None:
            return {}
        return {d: loaded.by_id[d].title for d in doc_ids
                if d in loaded.by_id and loaded.by_id[d].title}

    def counted_corpus(self, corpus: str = "") -> str:
        """The name of the corpus `supporting_in_corpus(q, corpus)` counts in."""
        if corpus and self._corpora.corpus_if_loaded(corpus) is not None:
            return corpus.strip()
        return self._corpora.default

    # --- the status line ----------------------------------------------------------------

    def status(self) -> list[str]:
        """The start-up corpus's tasks, then every other long build in the process's build
        queue (a run's confirmed build, an evaluation's, a retrain), each with how long it
        still needs or its place in the queue; the added corpora's own builds are listed
        in the Corpora tab."""
        from engine.paradigms.registry import failed_plugins
        from engine.service.builds import BUILDS

        startup = self._corpora.startup
        left_out = [plugin.left_out() for plugin in failed_plugins()]
        owned = {task.turn
                 for preparation in (startup, *self._corpora.loaded_preparations())
                 for task in preparation.tasks.values() if task.turn is not None}
        return [*left_out, *startup.status_lines(), *BUILDS.lines(skip=owned)]

    def failures(self) -> list[str]:
        """What failed while preparing the start-up corpus (or fetching the QA data), or
        was stopped mid-way by a process that died, a line each with why."""
        from engine.paradigms.registry import failed_plugins

        return [*self._interrupted, *(plugin.left_out() for plugin in failed_plugins()),
                *(task.describe() for task in self._corpora.startup.failed())]

    def standing_in(self) -> list[str]:
        """What answers meanwhile for the start-up corpus's builds and training under way,
        then a line per added corpus still being built, naming its build under way (or
        next) with the time it has left at its measured pace (the Corpora tab lists the
        rest of its tasks)."""
        lines = list(self._corpora.startup.standing_in())
        for preparation in self._corpora.loaded_preparations():
            if preparation is self._corpora.startup or not preparation.busy(own=True):
                continue
            tasks = [t for t in preparation.tasks.values() if t.per_corpus
                     and t.state in ("running", "waiting")]
            running = [t for t in tasks if t.state == "running"]
            lines.append(f"corpus {preparation.corpus_spec!r} still building: "
                         f"{(running or tasks)[0].describe()}")
        return lines

    # --- datasets: engine.service.datasets ----------------------------------------------

    def datasets(self) -> dict[str, str]:
        """{path: label} of the QA files present, then of added collections' splits."""
        return listed_datasets()

    def dataset_corpus(self, dataset: str) -> str | None:
        """The corpus an added collection's split is judged over (None: another dataset)."""
        return judged_corpus(dataset)

    def datasets_note(self) -> str:
        """'' when every listed dataset is here; else which are missing and the fix, as
        the app's background fetch of them stands (under way, or failed: try again)."""
        fetching = self._corpora.startup.tasks.get("qa data")
        return missing_note(fetching.state if fetching is not None else "")

    def questions(self, dataset: str, limit: int = 300) -> tuple[Question, ...]:
        """The first `limit` questions of a listed dataset."""
        return listed_questions(dataset, limit)
