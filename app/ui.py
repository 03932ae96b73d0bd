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
from app.login import LoginGate, gradio_auth, who_line, wire_roles
from app.session_state import lazy_session_configs
from app.style import CSS
from app.tabs import (
    annotate,
    compare,
    corpora,
    diagnose,
    evaluate,
    explore,
    judge,
    sessions,
    sweep,
)
from app.tabs.base import PRIVATE, Tab
from app.views.trace import esc
from engine.paradigms.registry import PARADIGMS
from engine.service.door import BUILDER, Door
from engine.service.explorer import Explorer

logger = logging.getLogger(__name__)

STATUS_SECONDS = 2.0
T = TypeVar("T", bound=Tab)


def status_summary(explorer: Explorer) -> tuple[str, bool]:
    """(the status folded to one line, whether anything failed): the worst news first -
    what failed (it never reads "Ready" over a failure), the paradigms still waiting -
    then those that answer now, what stands in meanwhile, the QA data missing, the
    corpus."""
    failures = explorer.catalog.failures()
    answering = [p for p in PARADIGMS if explorer.catalog.ready(p)]
    waiting = [p for p in PARADIGMS if p not in answering]
    news = []
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        news.append(f"✖ {len(failures)} task{'s' if len(failures) > 1 else ''} failed: "
                    f"{failures[0]}{more}")
    if waiting:
        news.append(f"Waiting: {', '.join(waiting)}")
    news.append(f"{'Answering' if failures or waiting else 'Ready'}: {', '.join(answering)}"
                if answering else "Nothing answers yet (preparing…)")
    standing_in = explorer.catalog.standing_in()  # no paradigm waits for these (readiness)
    if standing_in:
        news.append("In the background: " + "; ".join(standing_in))
    note = explorer.catalog.datasets_note()
    if note:
        news.append(note)
    news.append(f"corpus {explorer.catalog.corpus_spec}")
    return " · ".join(news), bool(failures)


def status_lines(explorer: Explorer) -> str:
    """Every line of the status, unfolded: what failed first, then every task and build
    with how far it has got, what stands in, the QA data missing."""
    failures = explorer.catalog.failures()
    lines = [f"<li class='fe-failed'>{esc(line)}</li>" for line in failures]
    lines += [f"<li>{esc(line)}</li>" for line in explorer.catalog.status() if line not in failures]
    lines += [f"<li>{esc(line)}</li>" for line in explorer.catalog.standing_in()]
    note = explorer.catalog.datasets_note()
    if note:
        lines.append(f"<li>{esc(note)}</li>")
    return f"<ul class='fe-status-lines'>{''.join(lines)}</ul>"


def status_update(explorer: Explorer) -> tuple:
    """(the status box, its lines): folded to one line unless the user opened it (its
    open state is the browser's: an update never sets it), marked when something failed."""
    summary, failed = status_summary(explorer)
    return (gr.update(label=summary, elem_classes=["fe-status"]
                      + (["fe-status-failed"] if failed else [])),
            status_lines(explorer))


def build_app(explorer: Explorer) -> gr.Blocks:
    """The whole app over `explorer` (launch it with `serve`); the lists it reads while it
    builds are read as a viewer (engine.service.door.BUILDER): no request names a user.
    Gradio's state of a new session is made lazy here (app.session_state): with this
    app's thousand blocks a first event would otherwise hold the event loop."""
    lazy_session_configs()
    with explorer.door.acting_as(BUILDER):
        return _built(explorer)


def _built(explorer: Explorer) -> gr.Blocks:
    with gr.Blocks(title="Funnel Explorer") as demo:
        gr.Markdown("# Funnel Explorer\nWatch a question pass through a retrieval funnel: "
                    "clusters → documents → passages → answer.")
        who = gr.HTML(who_line(explorer.door), elem_id="fe-who")
        # filled on every page load: a value built with the app goes stale (it showed
        # "Nothing answers yet" on a page opened long after everything was ready); one
        # line, worst news first, however much builds or fails (opened, it fills
        # two-thirds of a 900-px screen and pushed the tabs below the fold)
        with gr.Accordion("Reading the status…", open=False, elem_id="fe-status",
                          elem_classes=["fe-status"]) as status:
            lines = gr.HTML(elem_id="fe-status-lines")
        demo.load(lambda: status_update(explorer), None, [status, lines],
                  **PRIVATE, show_progress="hidden")
        timer = gr.Timer(STATUS_SECONDS)
        timer.tick(lambda: (*status_update(explorer),
                            gr.Timer(active=not explorer.catalog.ready())),
                   None, [status, lines, timer], **PRIVATE,
                   show_progress="hidden")
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
            page("Judge", lambda: judge.build(explorer))
            page("Corpora", lambda: corpora.build(
                explorer, [corpus for _, built in shown
                           for corpus in (built.corpus, *built.more_corpora)
                           if corpus is not None]))
        # a tab reads again what it shows when it is selected and, for its lists, on every
        # page load (private events: a component's callable value would add a public
        # /lambda_N endpoint for every one of them)
        for tab, built in shown:
            if built.refresh is not None:
                built.refresh.wire(tab.select)
                if built.on_load:
                    built.refresh.wire(demo.load)
        api.register(explorer)
        wire_roles(demo, explorer.door, who)
    return log_internal_errors(demo)


def serve(demo: gr.Blocks, door: Door | None = None, gate: dict | None = None,
          **launch_kwargs):
    """Launch with the app's stylesheet and the Annotate keys (Gradio 6 takes both at
    launch); with `door`'s logins on, behind Gradio's login form (checked by the door) and
    the gate in front of every route (app.login.LoginGate, given `gate`: its session hours,
    login window, upload megabytes a day), without Gradio's run history and monitoring
    routes."""
    if door is not None and door.logins:
        from starlette.middleware import Middleware

        users = door.users
        launch_kwargs.update(
            auth=gradio_auth(door), auth_message="Funnel Explorer: log in with the name and "
            "password an admin gave you (funnel-engine users add).",
            app_kwargs={"middleware": [Middleware(
                LoginGate, stamp=users.stamp, refused=door.refused,
                **(gate or {}))]},
            enable_monitoring=False, run_history=False)
    # Gradio 6's status tracker says "common.complete" (an i18n key its English locale
    # lacks) in the page text when an event ends: the words it means, given
    launch_kwargs.setdefault("i18n", gr.I18n(en={"common.complete": "done",
                                                 "common.error": "error"}))
    return demo.queue(default_concurrency_limit=2).launch(css=CSS, js=annotate.KEYS_JS,
                                                          **launch_kwargs)
