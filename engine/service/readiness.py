"""Whether a paradigm can run over a corpus now.

`check_ready` refuses a run, an evaluation or a map over a corpus that could not be read
(ConfigError, with the fix) or whose paradigm still waits for an index or a model
(`NotReady`, naming what and where its progress shows). Asking without refusing, and the
app's status line, are the catalog's (engine.service.catalog.Catalog).
"""

from __future__ import annotations

from engine.errors import ConfigError, EngineError
from engine.paradigms.registry import spec
from engine.service.corpora import Corpora
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
