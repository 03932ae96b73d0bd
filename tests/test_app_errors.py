"""A callback or endpoint refuses in one way (app.errors.refusing, raising_refusals): an
engine refusal becomes the box (and skips) or a gr.Error, logged as one line; a bug is
never swallowed."""

from __future__ import annotations

import inspect
import logging

import gradio as gr
import pytest

from app.errors import raising_refusals, refusing
from engine.errors import ConfigError


def test_a_refusal_is_the_box_then_a_skip_for_each_other_output(caplog):
    @refusing(outputs=4)
    def save(name):
        raise ConfigError(f"run <{name}> is saved\nalready")

    caplog.set_level(logging.INFO, logger="app")
    box, *rest = save("x")
    assert box == "<div class='fe-error'>run &lt;x&gt; is saved\nalready</div>"
    assert rest == [gr.skip()] * 3
    assert [r.getMessage() for r in caplog.records] == ["refused: run <x> is saved already"]


def test_one_output_is_the_box_alone_and_an_answer_passes_through():
    @refusing()
    def pair(ok):
        if not ok:
            raise ConfigError("no such paradigm")
        return "<table></table>"

    assert pair(False) == "<div class='fe-error'>no such paradigm</div>"
    assert pair(True) == "<table></table>"


def test_a_shape_gets_the_box_and_the_callbacks_own_arguments():
    @refusing(shape=lambda box, listing, *_: (listing, box))
    def export(listing, kind):
        raise ConfigError(f"unknown format {kind}")

    assert export(["run 1"], "xml") == (["run 1"],
                                        "<div class='fe-error'>unknown format xml</div>")


def test_anything_but_a_refusal_propagates_unless_named_in_also():
    @refusing(outputs=2)
    def broken():
        {}["missing"]

    with pytest.raises(KeyError):
        broken()

    @refusing(outputs=2, also=(UnicodeDecodeError,))
    def read():
        b"\xff".decode("utf-8")

    box, skipped = read()
    assert "decode byte 0xff" in box and skipped == gr.skip()


def test_an_endpoint_raises_the_refusal_as_a_gr_error_without_its_chain():
    @raising_refusals
    def load_run(run_id: int) -> str:
        """The saved trace JSON of run `run_id`."""
        if run_id < 0:
            raise KeyError("a bug")  # not a ValueError: gr.Error is one
        raise ConfigError(f"No saved run {run_id}.")

    with pytest.raises(gr.Error) as refused:
        load_run(7)
    assert refused.value.message == "No saved run 7." and refused.value.__suppress_context__
    with pytest.raises(KeyError, match="a bug"):
        load_run(-1)
    # gr.api and Gradio's events read the signature and docstring through the wrapper
    assert str(inspect.signature(load_run)) == "(run_id: 'int') -> 'str'"
    assert load_run.__doc__ == "The saved trace JSON of run `run_id`."


def test_an_internal_error_is_logged_with_its_traceback_and_named_a_bug(caplog):
    """What the first question to a half-built corpus met: a bug in a callback reached the
    page as a bare "unhashable type: 'slice'" with no log line (Gradio prints tracebacks
    to stderr, outside the log). Every event of the app logs it with its traceback and the
    client reads that it is a bug; a refusal stays one line, generators too."""
    from app.errors import log_internal_errors
    from tests.fakes import free_port, gradio_client

    def answer(question: str) -> str:
        if question == "refuse":
            raise ConfigError("The question is empty.")
        return {}[slice(0, 1)]  # a bug

    def stream(question: str):
        yield "first"
        raise TypeError("unhashable type: 'slice'")

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(answer, box, out, api_name="answer")
        gr.Button().click(stream, box, out, api_name="stream")
    log_internal_errors(demo)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                        quiet=True)
    try:
        client = gradio_client(f"http://127.0.0.1:{port}/")
        with caplog.at_level(logging.INFO, logger="app"):
            for api_name in ("/answer", "/stream"):
                with pytest.raises(Exception, match=r"Internal error in (answer|stream) "
                                   r"\(TypeError: unhashable type: 'slice'\)\. This is a bug"):
                    client.predict("why", api_name=api_name)
            with pytest.raises(Exception, match="The question is empty.") as refused:
                client.predict("refuse", api_name="/answer")
            assert "Internal error" not in str(refused.value)
    finally:
        demo.close()
    bugs = [r for r in caplog.records if r.getMessage().startswith("internal error in")]
    assert [r.getMessage() for r in bugs] == ["internal error in answer",
                                              "internal error in stream"]
    assert all(r.exc_info and r.exc_info[0] is TypeError for r in bugs)
    assert any(r.getMessage() == "refused: The question is empty." for r in caplog.records)
