"""Whether a paradigm can answer now over a corpus, and the app's status line.

`check_ready` refuses a run, an evaluation or a map over a corpus that could not be read
(ConfigError, with the fix) or whose paradigm still waits for an index or a model
(`NotReady`, naming what and where its progress shows); `ready` asks the same without
refusing. `status` and `failures` are the lines above the app's tabs: the start-up corpus's
tasks and the process's other long builds, and what failed; `datasets_note`, the listed QA
files that are not here yet, as the start-up preparation's fetch of them stands. Each
takes the app's corpora (engine.service.corpora.Corpora).
"""

from __future__ import annotations

from engine.documents import Question
from engine.errors import ConfigError, EngineError
from engine.paradigms.registry import spec
from engine.service.corpora import Corpora
from engine.service.datasets import missing_note
from engine.service.preparation import Preparation


class NotReady(EngineError):
    """A paradigm's models or indexes are still being prepared."""


def check_ready(corpora: Corpora, name: str, preparation: Preparation) -> None:
    """Refuse running paradigm `name` over `preparation`'s corpus when that corpus could
    not be read (ConfigError, with the fix) or the paradigm still waits for something
    (NotReady, naming what and where its progress shows)."""
    spec(name)  # an unknown name: the ConfigError listing the registered ones
    loading = preparation.tasks["corpus"]
    if loading.state == "failed":
        raise ConfigError(f"Corpus '{preparation.corpus_spec}' could not be read: "
                          f"{loading.error}. Nothing can run over it; "
                          f"{corpora.fix_for_failed(preparation.corpus_spec)}.")
    waiting = preparation.missing(name)
    if waiting:
        # no progress figures: a notice stays on the page while they move on; the
        # status line above the tabs (and the `status` endpoint) keeps them current
        where = ("The status above the tabs (or the status endpoint) shows"
                 if preparation is corpora.startup else
                 f"The Corpora tab (or list_corpora) shows corpus "
                 f"'{preparation.corpus_spec}' and")
        raise NotReady(f"'{name}' is not ready yet; waiting for: "
                       + "; ".join(t.headline() for t in waiting)
                       + f". {where} how far each has got; run again when it lists "
                       f"'{name}' as ready.")


def ready(corpora: Corpora, name: str | None = None, corpus: str = "") -> bool:
    """Whether paradigm `name` can answer now over `corpus` (None: whether everything
    of the start-up corpus is prepared). Asking about a corpus starts preparing it."""
    preparation = corpora.preparation(corpus) if corpus else corpora.startup
    return preparation.ready() if name is None else not preparation.missing(name)


def supporting_in_corpus(corpora: Corpora, question: Question, corpus: str = ""
                         ) -> tuple[int, int]:
    """(how many of the question's supporting documents corpus `corpus` holds (empty
    or not loaded: the start-up one), how many it has); (0, n) too while the corpus is
    still loading."""
    loaded = corpora.corpus_if_loaded(corpus) if corpus else None
    loaded = loaded if loaded is not None else corpora.startup.corpus
    titles = question.supporting_titles
    held = sum(t in loaded.by_id for t in titles) if loaded is not None else 0
    return held, len(titles)


def titles(corpora: Corpora, doc_ids, corpus: str = "") -> dict[str, str]:
    """{id: title} of those of `doc_ids` that corpus `corpus` (the start-up one when
    empty) holds with a title, if it is loaded now (never starts loading it)."""
    loaded = corpora.corpus_if_loaded(corpus)
    if loaded is None:
        return {}
    return {d: loaded.by_id[d].title for d in doc_ids
            if d in loaded.by_id and loaded.by_id[d].title}


def counted_corpus(corpora: Corpora, corpus: str = "") -> str:
    """The name of the corpus `supporting_in_corpus(q, corpus)` counts in."""
    if corpus and corpora.corpus_if_loaded(corpus) is not None:
        return corpus.strip()
    return corpora.default


def status(corpora: Corpora) -> list[str]:
    """The start-up corpus's tasks, then every other long build in the process's build
    queue (a run's confirmed build, an evaluation's, a retrain), each with how long it
    still needs or its place in the queue; the added corpora's own builds are listed
    in the Corpora tab."""
    from engine.paradigms.registry import failed_plugins
    from engine.service.builds import BUILDS

    left_out = [plugin.left_out() for plugin in failed_plugins()]
    owned = {task.turn for preparation in (corpora.startup, *corpora.loaded_preparations())
             for task in preparation.tasks.values() if task.turn is not None}
    return [*left_out, *corpora.startup.status_lines(), *BUILDS.lines(skip=owned)]


def building(corpora: Corpora) -> list[str]:
    """A line per added corpus still being built, naming it and its build under way (or
    next), with the time it has left at its measured pace: the Corpora tab lists the rest
    of its tasks."""
    lines = []
    for preparation in corpora.loaded_preparations():
        if preparation is corpora.startup or not preparation.busy(own=True):
            continue
        tasks = [t for t in preparation.tasks.values() if t.per_corpus
                 and t.state in ("running", "waiting")]
        running = [t for t in tasks if t.state == "running"]
        shown = (running or tasks)[0]
        lines.append(f"corpus {preparation.corpus_spec!r} still building: "
                     f"{shown.describe()}")
    return lines


def failures(corpora: Corpora) -> list[str]:
    """What failed while preparing the start-up corpus (or fetching the QA data), a
    line each with why."""
    from engine.paradigms.registry import failed_plugins

    return [*(plugin.left_out() for plugin in failed_plugins()),
            *(task.describe() for task in corpora.startup.failed())]


def datasets_note(corpora: Corpora) -> str:
    """'' when every listed dataset is here; else which are missing and the fix, as the
    app's background fetch of them stands (under way, or failed: try again)."""
    fetching = corpora.startup.tasks.get("qa data")
    return missing_note(fetching.state if fetching is not None else "")
