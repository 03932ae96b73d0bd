"""The options paradigms share, each declared once: the dense encoder, the passage size, the
hybrid score's dense weight, the sentence cut, the reader, and the check that a stage keeps
no more than the one before it found.

A paradigm's config calls these where it would call `engine.config.param`, giving only what
differs (what the encoder or the passages are used for, the reader's own defaults), so a
shared option has one default and one range in every options form the app builds from the
configs (`engine.config.describe`). A plugin's config can use them too, and its options
then read like the built-in paradigms':

    from engine.paradigms import options

    @dataclass(frozen=True)
    class OverlapConfig:
        M: int = param(20, "M: passages BM25 retrieves", low=1, high=200)
        k: int = param(4, "k: passages kept and read", low=1, high=20)
        reader: ReaderConfig = options.reader()

        def __post_init__(self) -> None:
            check_config(self)
            options.check_kept(self, "k", "M", "the re-ranker cannot keep more passages "
                               "than BM25 found")

Import the module, not its functions: in the class body a field named `reader` or
`passage_tokens` would hide the function of that name from the fields after it.
"""

from __future__ import annotations

from typing import Any

from engine.config import param
from engine.errors import ConfigError
from engine.readers.reader import ReaderConfig
from engine.stages.prune import PruneConfig
from engine.stages.rerank import HYBRID_WEIGHT

PASSAGE_TOKENS = 100  # the dense index's passages: paradigms that share it share its vectors


def bi_encoder(of: str) -> Any:
    """The dense encoder option; `of` says what it encodes ("the units' MaxP scores")."""
    return param("minilm", f"dense encoder of {of}: an alias, a folder or a hub id",
                 names="models")


def passage_tokens(help: str) -> Any:
    """A passage size in tokens; `help` says which passages (early or later chunking, the
    dense index's)."""
    return param(PASSAGE_TOKENS, help, low=16, high=1000)


def hybrid_weight() -> Any:
    """The dense weight of the hybrid document score (BM25 + dense)."""
    return param(HYBRID_WEIGHT, "dense weight of the hybrid document score", low=0.0,
                 high=1.0)


def reader(help: str = "the reader", **defaults: Any) -> Any:
    """The nested reader options, with this paradigm's own `defaults` (ReaderConfig fields)."""
    return param(ReaderConfig(**defaults), help)


def prune(**defaults: Any) -> Any:
    """The nested options of the sentence cut after the last passage cut (engine.stages
    .prune.PruneConfig), with this paradigm's own `defaults`."""
    return param(PruneConfig(**defaults), "the sentence cut: only the sentences of what is "
                 "read that best answer the question")


def check_kept(config: Any, kept: str, found: str, why: str) -> None:
    """Refuse a config whose count option `kept` is more than the count `found` it is taken
    from (k re-ranked out of M retrieved): say both values, `why` it cannot be, and the fix.

    Raises:
        ConfigError: when `config.<kept>` > `config.<found>`.
    """
    low, high = getattr(config, kept), getattr(config, found)
    if low > high:
        raise ConfigError(f"{kept}={low} is more than {found}={high}: {why}. "
                          f"Lower {kept} or raise {found}.")
