"""The Gradio app. Callbacks read widgets, call the engine, return tables; no ranking here.

This first version offers BM25 search at each granularity over one corpus; the funnel,
comparison and session tabs build on it.
"""

from __future__ import annotations

from functools import lru_cache

import gradio as gr

from engine import EngineError, UnitConfig, bm25_index, load_corpus
from engine.paradigms import check_question
from engine.units import GRANULARITIES

COLUMNS = ["rank", "score", "title", "text"]


@lru_cache(maxsize=8)
def _index(corpus_name: str, granularity: str):
    """Loaded (and verified) once per corpus and granularity, not on every search."""
    return bm25_index(load_corpus(corpus_name), UnitConfig(granularity))


def search(corpus_name: str, query: str, granularity: str, k: int) -> list[list]:
    """Rows (rank, score, title, text) of the BM25 top-k; raises gr.Error on bad input."""
    try:
        query = check_question(query)
        results = _index(corpus_name, granularity).search(query, int(k))
    except EngineError as err:
        raise gr.Error(str(err)) from None
    return [[c.rank, round(c.score, 3), c.unit.title, c.unit.text[:400]] for c in results]


def build_app(corpus_name: str = "wiki") -> gr.Blocks:
    """The app over corpus `corpus_name`."""
    with gr.Blocks(title="Funnel Explorer") as demo:
        gr.Markdown(f"# Funnel Explorer\nBM25 search over the **{corpus_name}** corpus.")
        with gr.Row():
            query = gr.Textbox(label="Question", scale=4,
                               placeholder="Who painted A Sunday Afternoon on the Island of "
                                           "La Grande Jatte?")
            granularity = gr.Dropdown(list(GRANULARITIES), value="documents",
                                      label="Granularity")
            k = gr.Slider(1, 50, value=10, step=1, label="k")
        button = gr.Button("Search", variant="primary")
        table = gr.Dataframe(headers=COLUMNS, label="Results", wrap=True)
        name = gr.State(corpus_name)
        for trigger in (button.click, query.submit):
            trigger(search, [name, query, granularity, k], table, api_name="search")
    return demo
