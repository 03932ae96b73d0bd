"""The Gradio app: a status line, three tabs and the named API endpoints, over an Explorer.

Callbacks read widgets, call the engine (engine.service.explorer.Explorer) and turn what it returns
into HTML and plotly figures; no ranking happens here.
"""

from __future__ import annotations

import json
import logging

import gradio as gr

from app.errors import refused
from app.formatting import CSS, esc
from app.tabs import compare, explore, sessions
from engine.errors import EngineError
from engine.paradigms.registry import DEFAULT, PARADIGMS
from engine.service.explorer import Explorer
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

STATUS_SECONDS = 2.0


def status_html(explorer: Explorer) -> str:
    prep = explorer.preparation
    lines = "".join(f"<li>{esc(line)}</li>" for line in explorer.status())
    ready = [p for p in PARADIGMS if not prep.missing(p)]
    head = (f"Corpus <b>{esc(prep.corpus_spec)}</b>. Ready: "
            f"{esc(', '.join(ready)) if ready else 'nothing yet (preparing…)'}")
    return (f"<details class='fe-status' {'open' if not prep.ready() else ''}>"
            f"<summary>{head}</summary><ul>{lines}</ul></details>")


def build_app(explorer: Explorer) -> gr.Blocks:
    """The whole app over `explorer` (launch it with `serve`)."""
    with gr.Blocks(title="Funnel Explorer") as demo:
        gr.Markdown("# Funnel Explorer\nWatch a question pass through a retrieval funnel: "
                    "clusters → documents → passages → answer.")
        status = gr.HTML(status_html(explorer), elem_id="fe-status")
        timer = gr.Timer(STATUS_SECONDS)
        timer.tick(lambda: (status_html(explorer),
                            gr.Timer(active=not explorer.preparation.ready())),
                   None, [status, timer], api_visibility="private")
        with gr.Tabs():
            with gr.Tab("Explore", id="explore"):
                explore.build(explorer)
            with gr.Tab("Compare", id="compare"):
                compare.build(explorer)
            with gr.Tab("Sessions", id="sessions") as sessions_tab:
                listing = sessions.build(explorer)
        sessions_tab.select(listing["refresh"], None, listing["table"], api_visibility="private")
        _api(explorer)
    return demo


def _api(explorer: Explorer) -> None:
    """Named endpoints for gradio_client: run, save_run, list_runs, load_run, status."""

    def run(question: str, paradigm: str = DEFAULT, config_json: str = "") -> str:
        """Run `question` through `paradigm` (config as JSON); returns the trace JSON."""
        try:
            return explorer.run(question, paradigm, config_json).to_json()
        except EngineError as err:
            raise refused(err) from None

    def save_run(trace_json: str, name: str = "", notes: str = "") -> int:
        """Save a trace (as returned by `run`); returns the new run id."""
        try:
            trace = RunTrace.from_json(trace_json)
        except (ValueError, TypeError, KeyError) as err:
            raise refused(f"trace_json is not a run trace ({err}); pass what `run` "
                          "returned.") from None
        try:
            return explorer.store.save(trace, name, notes)
        except EngineError as err:
            raise refused(err) from None

    def list_runs() -> str:
        """Saved runs, newest first, as a JSON list of {id, name, paradigm, question, ...}."""
        return json.dumps([vars(r) for r in explorer.store.list()])

    def load_run(run_id: int) -> str:
        """The saved trace JSON of run `run_id`, exactly as saved."""
        try:
            return explorer.store.load(run_id).to_json()
        except EngineError as err:
            raise refused(err) from None

    def status() -> str:
        """Preparation progress: {"ready": {paradigm: bool}, "tasks": [line, ...]}."""
        prep = explorer.preparation
        return json.dumps({"ready": {p: not prep.missing(p) for p in PARADIGMS},
                           "tasks": explorer.status()})

    for fn in (run, save_run, list_runs, load_run, status):
        gr.api(fn, api_name=fn.__name__)


def serve(demo: gr.Blocks, **launch_kwargs):
    """Launch with the app's stylesheet (Gradio 6 takes css at launch)."""
    return demo.queue(default_concurrency_limit=2).launch(css=CSS, **launch_kwargs)
