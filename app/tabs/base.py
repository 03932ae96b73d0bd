"""What every tab's `build` returns, so that app.ui composes the tabs one way.

A tab hands back its corpus choice (the Corpora tab keeps every one current) and what it
reads again when it is shown; nothing else of a tab is wired from outside it (Explore adds
the views a stored run opens into: app.tabs.explore.ExploreTab).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

# a tab's own events: the API has its named endpoints (app.api), so these stay off it
PRIVATE = {"api_visibility": "private"}


@dataclass(frozen=True)
class Refresh:
    """`fn(*inputs)` into `outputs`, followed by `then` once it is done (Diagnose reads its
    pickers, then diagnoses the evaluation picked)."""

    fn: Callable
    outputs: list[gr.Component]
    inputs: list[gr.Component] | None = None
    then: Refresh | None = None

    def wire(self, trigger: Callable) -> None:
        """Bind to `trigger` (a gr.Tab's select, the page's load) as a private event: a
        public one would add a /lambda_N endpoint beside the named API (app.api)."""
        event = trigger(self.fn, self.inputs, self.outputs, **PRIVATE)
        if self.then is not None:
            self.then.wire(event.then)


@dataclass(frozen=True, kw_only=True)
class Tab:
    """A built tab: `corpus`, its corpus choice (None: it searches none); `refresh`, what
    is read again when the tab is selected (None: nothing goes stale), and also on every
    page load with `on_load` (lists a page opened later must show as they are then, not as
    they were when the app was built)."""

    corpus: gr.Dropdown | None = None
    more_corpora: tuple[gr.Dropdown, ...] = ()  # a tab of two views (Sweep: Grid, Tune)
    refresh: Refresh | None = None
    on_load: bool = False


def place_choice(kind: str, label: str, elem_id: str, empty: str,
                 words: tuple[tuple[str, str], ...] = (), **kwargs) -> gr.Dropdown:
    """A choice of the `kind` of place ("endpoints", "ray", "qdrant") the operator allowed
    by name (engine.allowed: the --allow file), with `empty` (what '' means) and `words`
    ((label, value) the option reads itself) first: a request names nothing else."""
    from engine import allowed

    names = allowed.current().names(kind)
    return gr.Dropdown([(empty, ""), *words, *names], value="", label=label,
                       elem_id=elem_id, info=kwargs.pop("info", "") + (
                           "" if names else " (the operator allows more by name with "
                           "--allow FILE)"), **kwargs)
