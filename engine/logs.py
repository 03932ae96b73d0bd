"""The log as an operator reads it, for the app's server and the command line alike: our
lines at the level asked, libraries' chatter at WARNING, and no progress bars."""

from __future__ import annotations

import logging
import sys

# libraries whose INFO lines are about their own internals, not the app: faiss's loader
# reports every optional instruction-set build it tries (a ModuleNotFoundError for AVX-512
# on most CPUs), sentence-transformers announces each load and, at INFO, draws a tqdm bar
# per encoding call into the log
QUIET_LOGGERS = ("faiss.loader", "sentence_transformers", "bm25s", "httpx")


def configure_logging(level: int = logging.INFO) -> None:
    """The app's and the engine's lines at `level`, libraries' chatter at WARNING, and no
    progress bars (transformers' weight-loading bar follows huggingface_hub's switch when
    transformers is imported, which happens later, where a model is loaded)."""
    from huggingface_hub.utils import disable_progress_bars

    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    disable_progress_bars()
    if "transformers" in sys.modules:  # imported already: it read the switch back then
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
