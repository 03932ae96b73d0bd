"""The Gradio app: a status line, eight tabs and the named API endpoints, over an Explorer.

Callbacks read widgets, call the engine (engine.service.explorer.Explorer) and turn what it returns
into HTML and plotly figures; no ranking happens here.
"""

from __future__ import annotations

import logging

import gradio as gr

from app import api
from app.style import CSS
from app.tabs import annotate, compare, corpora, diagnose, evaluate, explore, sessions, sweep
from app.views.formatting import esc
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer

logger = logging.getLogger(__name__)

STATUS_SECONDS = 2.0


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
        with gr.Tabs() as tabs:
            with gr.Tab("Explore", id="explore"):
                exploring = explore.build(explorer)
            with gr.Tab("Compare", id="compare"):
                comparing = compare.build(explorer)
            with gr.Tab("Sessions", id="sessions") as sessions_tab:
                listing = sessions.build(explorer)
            with gr.Tab("Annotate", id="annotate") as annotate_tab:
                labelling = annotate.build(explorer)
            with gr.Tab("Evaluate", id="evaluate") as evaluate_tab:
                evaluations = evaluate.build(explorer, exploring, tabs)
            with gr.Tab("Diagnose", id="diagnose") as diagnose_tab:
                diagnosis = diagnose.build(explorer, exploring, tabs)
            with gr.Tab("Sweep", id="sweep"):
                sweeping = sweep.build(explorer)
            with gr.Tab("Corpora", id="corpora") as corpora_tab:
                listing_corpora = corpora.build(explorer, [
                    exploring["corpus"], comparing["corpus"], labelling["corpus"],
                    evaluations["corpus"], sweeping["corpus"]])
        sessions_tab.select(listing["refresh"], None, listing["table"], api_visibility="private")
        annotate_tab.select(labelling["refresh"], None, labelling["outputs"],
                            api_visibility="private")
        evaluate_tab.select(evaluations["refresh"], None, evaluations["table"],
                            api_visibility="private")
        diagnose_tab.select(*diagnosis["refresh"], api_visibility="private").then(
            *diagnosis["then"], api_visibility="private")
        refresh_corpora, corpora_outputs = listing_corpora["refresh"]
        corpora_tab.select(refresh_corpora, None, corpora_outputs, api_visibility="private")
        # lists filled on page load by private events: a component's callable value would
        # add a public /lambda_N endpoint for every one of them
        demo.load(refresh_corpora, None, corpora_outputs, api_visibility="private")
        demo.load(listing["refresh"], None, listing["table"], api_visibility="private")
        demo.load(evaluations["refresh"], None, evaluations["table"],
                  api_visibility="private")
        api.register(explorer)
    return demo


def serve(demo: gr.Blocks, **launch_kwargs):
    """Launch with the app's stylesheet and the Annotate keys (Gradio 6 takes both at
    launch)."""
    return demo.queue(default_concurrency_limit=2).launch(css=CSS, js=annotate.KEYS_JS,
                                                          **launch_kwargs)
