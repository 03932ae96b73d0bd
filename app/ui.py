"""The Gradio app: a status line, eight tabs and the named API endpoints, over an Explorer.

Callbacks read widgets, call the engine (engine.service.explorer.Explorer) and turn what it returns
into HTML and plotly figures; no ranking happens here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import gradio as gr

from app import api
from app.errors import log_internal_errors
from app.style import CSS
from app.tabs import annotate, compare, corpora, diagnose, evaluate, explore, sessions, sweep
from app.tabs.base import Tab
from app.views.trace import esc
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer

logger = logging.getLogger(__name__)

STATUS_SECONDS = 2.0
T = TypeVar("T", bound=Tab)


def status_html(explorer: Explorer) -> str:
    """The status line: what failed first (it never reads "Ready" over a failure), then
    the paradigms that answer now and what stands in meanwhile; every task below it."""
    lines = "".join(f"<li>{esc(line)}</li>" for line in explorer.status())
    failures = explorer.failures()
    answering = [p for p in PARADIGMS if explorer.ready(p)]
    head = f"Corpus <b>{esc(explorer.corpus_spec)}</b>. "
    if failures:
        head += (f"<b class='fe-failed'>{len(failures)} task{'s' if len(failures) > 1 else ''}"
                 f" failed</b> (see below). ")
    head += (f"{'Answering' if failures else 'Ready'}: {esc(', '.join(answering))}"
             if answering else "Nothing answers yet (preparing…)")
    standing_in = explorer.standing_in()  # no paradigm waits for these (readiness)
    if standing_in:
        head += ". In the background: " + esc("; ".join(standing_in))
    note = explorer.datasets_note()
    if note:
        head += ". " + esc(note)
    opened = failures or not explorer.ready()
    return (f"<details class='fe-status' {'open' if opened else ''}>"
            f"<summary>{head}</summary><ul>{lines}</ul></details>")


def build_app(explorer: Explorer) -> gr.Blocks:
    """The whole app over `explorer` (launch it with `serve`)."""
    with gr.Blocks(title="Funnel Explorer") as demo:
        gr.Markdown("# Funnel Explorer\nWatch a question pass through a retrieval funnel: "
                    "clusters → documents → passages → answer.")
        # filled on every page load: a value built with the app goes stale (it showed
        # "Nothing answers yet" on a page opened long after everything was ready)
        status = gr.HTML("<div class='fe-status'>Reading the status…</div>",
                         elem_id="fe-status")
        demo.load(lambda: status_html(explorer), None, status, api_visibility="private")
        timer = gr.Timer(STATUS_SECONDS)
        timer.tick(lambda: (status_html(explorer),
                            gr.Timer(active=not explorer.ready())),
                   None, [status, timer], api_visibility="private")
        shown: list[tuple[gr.Tab, Tab]] = []  # every tab, in order, as built

        def page(label: str, build: Callable[[], T]) -> T:
            with gr.Tab(label, id=label.lower()) as tab:
                built = build()
            shown.append((tab, built))
            return built

        with gr.Tabs() as tabs:
            exploring = page("Explore", lambda: explore.build(explorer))
            page("Compare", lambda: compare.build(explorer))
            page("Sessions", lambda: sessions.build(explorer))
            page("Annotate", lambda: annotate.build(explorer))
            page("Evaluate", lambda: evaluate.build(explorer, exploring, tabs))
            page("Diagnose", lambda: diagnose.build(explorer, exploring, tabs))
            page("Sweep", lambda: sweep.build(explorer))
            page("Corpora", lambda: corpora.build(
                explorer, [built.corpus for _, built in shown if built.corpus is not None]))
        # a tab reads again what it shows when it is selected and, for its lists, on every
        # page load (private events: a component's callable value would add a public
        # /lambda_N endpoint for every one of them)
        for tab, built in shown:
            if built.refresh is not None:
                built.refresh.wire(tab.select)
                if built.on_load:
                    built.refresh.wire(demo.load)
        api.register(explorer)
    return log_internal_errors(demo)


def serve(demo: gr.Blocks, **launch_kwargs):
    """Launch with the app's stylesheet and the Annotate keys (Gradio 6 takes both at
    launch)."""
    return demo.queue(default_concurrency_limit=2).launch(css=CSS, js=annotate.KEYS_JS,
                                                          **launch_kwargs)
