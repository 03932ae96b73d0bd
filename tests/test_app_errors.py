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
