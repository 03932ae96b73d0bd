"""Loading a pretrained model: transformers' chatter kept out of the log, and a model that
cannot be found refused with an error naming it and the aliases that load offline
(`ALIASES`, which engine.models.locations resolves). Every loader of the engine goes through
`from_pretrained`; engine.models.loading, above this, loads the models once per process.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.errors import ResourceMissingError

logger = logging.getLogger(__name__)

ALIASES = ("minilm", "smollm2")


def quiet_transformers() -> None:
    """Keep transformers' and sentence-transformers' chatter out of the log before a model
    loads: transformers writes a "LOAD REPORT" table in terminal colours for every head a
    classifier is about to train (and notes about tensor-parallel plans, meaningless on one
    CPU) through a handler of its own, and draws a bar while it reads weights;
    sentence-transformers announces each load. Their errors still show; set
    TRANSFORMERS_VERBOSITY=warning to see transformers' warnings again."""
    import os

    from transformers.utils import logging as transformers_logging

    if not os.environ.get("TRANSFORMERS_VERBOSITY"):
        transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)


def from_pretrained(loader: Any, location: str, *, aliases: tuple[str, ...] = ALIASES,
                    **kwargs: Any) -> Any:
    """`loader(location, **kwargs)`; a model that cannot be found gets an error naming it
    and the `aliases` that load offline (the library's own message, about hub
    connections, is logged)."""
    quiet_transformers()
    try:
        return loader(location, **kwargs)
    except OSError as err:
        logger.debug("loading %r failed: %s", location, err)
        if Path(location).exists():
            reason = f"the folder cannot be read as this kind of model ({err})"
        else:
            reason = "it is neither an alias nor a local folder, and no model hub is reachable"
        from engine import allowed

        fix = (f"Use an alias ({', '.join(aliases)}) or a model the operator allowed by "
               "name; if that is the one failing, its entry in the allow file names no "
               "model (tell the operator)" if allowed.is_confined() else
               f"Use an alias ({', '.join(aliases)}) or a local model folder")
        raise ResourceMissingError(f"Cannot load model {location!r}: {reason}. {fix}."
                                   ) from None


def onnx_installed() -> bool:
    """Whether ONNX Runtime can be imported here (without importing it)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None
