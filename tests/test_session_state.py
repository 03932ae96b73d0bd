"""Gradio's state of a new session, made lazy (app.session_state): a first event makes no
block config, and what a deep link reads is what Gradio's eager state would have held."""

from __future__ import annotations

import gradio as gr
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState

from app.session_state import _patchable, lazy_session_configs


def _small_app() -> gr.Blocks:
    with gr.Blocks() as demo:
        name = gr.Textbox(label="Name", value="Seurat")
        shown = gr.Markdown("nothing yet")
        gr.Button("Go").click(lambda n: n, name, shown)
    return demo


def _eager(demo: gr.Blocks, events) -> list[dict]:
    """What Gradio's own, eager state reads after `events(state)`."""
    init, components = SessionState._funnel_eager
    state = SessionState.__new__(SessionState)
    init(state, demo)
    events(state)
    return list(components.fget(state))


def _two_events(demo: gr.Blocks):
    textbox = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    markdown = next(b for b in demo.blocks.values() if isinstance(b, gr.Markdown))

    def events(state) -> None:  # an event's updates, as Gradio stores them
        state[textbox._id] = gr.Textbox(label="Name", value="Signac", render=False)
        state._update_value_in_config(markdown._id, "**Signac**")
    return events


def test_a_new_session_makes_no_block_config(monkeypatch):
    assert lazy_session_configs()
    demo = _small_app()
    eager = _eager(demo, lambda state: None)
    made = []
    real = BlocksConfig.config_for_block
    monkeypatch.setattr(BlocksConfig, "config_for_block",
                        staticmethod(lambda *a, **k: made.append(a[0]) or real(*a, **k)))
    state = SessionState(demo)
    assert made == []
    assert state.config_values == {}
    assert list(state.components) == eager  # made when read
    assert sorted(made) == sorted(c["id"] for c in eager)


def test_a_deep_link_reads_what_the_eager_state_held():
    assert lazy_session_configs()
    demo = _small_app()
    events = _two_events(demo)
    expected = _eager(demo, events)
    assert expected != _eager(demo, lambda state: None)  # the events changed something
    state = SessionState(demo)
    events(state)
    assert list(state.components) == expected
    assert list(state.components) == expected  # read twice, the same


def test_a_changed_session_state_is_left_as_gradio_ships_it():
    class Reads:
        def __init__(self, blocks):
            self.config_values = {k: None for k in blocks.fns}
            self.blocks_config = blocks.default_config

        components = property(lambda self: iter(()))

    class NoComponents:
        def __init__(self, blocks):
            self.config_values = {k: None for k in blocks.blocks}
            self.blocks_config = blocks.default_config

    assert _patchable(SessionState)
    assert not _patchable(Reads)  # reads the Blocks' fns: the patch would hide them
    assert not _patchable(NoComponents)
