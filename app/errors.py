"""Refused input, as the user and the server log see it.

A refused input (an engine error: bad config, empty question, unknown run id) is the user's
to fix: it is shown to them and logged as one line, without a traceback. Anything else is
an internal error and keeps its traceback in the log (`logger.exception` at the call site).
"""

from __future__ import annotations

import logging

import gradio as gr

from app.views.formatting import error_box

logger = logging.getLogger("app")


def _log(message: str) -> str:
    logger.info("refused: %s", " ".join(message.split()))
    return message


def refused(err: Exception | str) -> gr.Error:
    """A Gradio error for the API or a toast, logged as one line (raise it `from None`)."""
    return gr.Error(_log(str(err)), print_exception=False)


def refused_box(err: Exception | str) -> str:
    """The in-page error box for a refused input, logged as one line."""
    return error_box(_log(str(err)))
