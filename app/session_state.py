"""Gradio's state of a new session, made lazy: a queue join answered at once (issue 67).

Gradio 6 builds a `SessionState` on a session's first event, on the server's event loop,
and that state's `config_values` holds the config of every block of the app, made there
and then (`inspect.signature` of each block's class, its props serialised) so a deep link
can later write the page out as the session sees it. This app has over a thousand blocks,
so users starting at once waited seconds for the queue to answer their joins, the whole
server frozen meanwhile, and every page view kept megabytes
(docs/benchmarks/app.md, "The queue's answer to a join").

`lazy_session_configs()` leaves that dict empty at the start and makes a block's config
when it is first needed: Gradio already fills a missing one when a value changes
(`SessionState._update_value_in_config`), and `components` (the deep link's read) makes
the rest in the blocks' order. What a deep link writes is the same; a new session costs
what its events touch. The patch is for the pinned Gradio (requirements.txt) and says so
where that Gradio changed underneath it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import SimpleNamespace

log = logging.getLogger(__name__)


def lazy_session_configs() -> bool:
    """Patch Gradio's SessionState (once, idempotent; Gradio's own methods kept as
    `SessionState._funnel_eager`). False, logged, where this Gradio's SessionState is not
    the one the patch knows; the app then runs as Gradio ships it."""
    from gradio.state_holder import SessionState

    if hasattr(SessionState, "_funnel_eager"):
        return True
    if not _patchable(SessionState):
        log.warning("Gradio's SessionState changed: its eager block configs are kept "
                    "(each new session holds the event loop while they are made)")
        return False
    eager_init = SessionState.__init__

    def __init__(self, blocks) -> None:
        # Gradio's own __init__ over no blocks: its state as shipped, config_values empty
        eager_init(self, SimpleNamespace(default_config=blocks.default_config, blocks={}))
        self._app_block_ids = frozenset(blocks.blocks)

    SessionState._funnel_eager = (eager_init, SessionState.components)
    SessionState.__init__ = __init__
    SessionState.components = property(_components)
    return True


def _components(self) -> Iterator[dict]:
    """Every block's config as this session sees it, in the blocks' order: those its
    events changed as they left them, the others made now."""
    made = self.config_values
    for key, block in self.blocks_config.blocks.items():
        if key not in made and key in self._app_block_ids:
            made[key] = self.blocks_config.config_for_block(key, [], block)
    ordered = {key: made[key] for key in self.blocks_config.blocks if key in made}
    ordered.update(made)  # a changed block no longer among the blocks
    self.config_values = ordered
    for config in ordered.values():
        if config:
            yield config


def _patchable(session_state) -> bool:
    """The SessionState this patch was written against: its __init__ reads nothing of the
    Blocks but `default_config` and `blocks`, its configs kept in `config_values` and read
    through the `components` property."""
    import inspect
    import re

    init = getattr(session_state, "_funnel_eager", (session_state.__init__,))[0]
    try:
        source = inspect.getsource(init)
    except (OSError, TypeError):
        return False
    read = set(re.findall(r"(?<![\w.])blocks\.(\w+)", source))
    return (read == {"default_config", "blocks"} and "self.config_values" in source
            and isinstance(getattr(session_state, "components", None), property))
