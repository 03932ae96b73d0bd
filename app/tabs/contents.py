"""A long tab's contents: one line of links to its views, which stays at the top of the
screen as the page scrolls, so every view is one click away wherever the reader is.

A tab whose views fill over two screens (Explore after a run, Compare, Sessions with a run
open, Annotate, Evaluate with an evaluation open, Corpora) starts with one; Diagnose,
whose views are read in turn, has sub-tabs instead (app.tabs.diagnose). Each link is an
anchor to a view's element id (app.style gives those ids room under the line).
"""

from __future__ import annotations

import gradio as gr

from app.views.trace import esc


def contents_html(views: list[tuple[str, str]]) -> str:
    """The links, (label, element id) each, in the order the views come on the page."""
    links = " · ".join(f"<a href='#{esc(anchor)}'>{esc(label)}</a>" for label, anchor in views)
    return (f"<nav class='fe-contents-links' aria-label='On this page'>On this page: {links}"
            "</nav>")


def scroll_to(anchor: str) -> str:
    """The browser-side function an event's `.then(None, js=...)` runs to bring a view to
    the top of the screen (under the contents line): what a button far below it showed."""
    return (f"() => {{ document.getElementById({anchor!r})?.scrollIntoView("
            "{block: 'start'}); }")


def contents(views: list[tuple[str, str]], elem_id: str) -> gr.HTML:
    """The contents line of a tab, first in it (sticky within the tab's column)."""
    return gr.HTML(contents_html(views), elem_id=elem_id, elem_classes=["fe-contents"],
                   padding=False)
