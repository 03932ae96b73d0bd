"""Refused input, as the user and the server log see it.

A refused input (an engine error: bad config, empty question, unknown run id) is the user's
to fix: it is shown to them and logged as one line, without a traceback. Anything else is
an internal error and keeps its traceback in the log (`logger.exception` at the call site).

A callback or an endpoint that refuses as a whole says so once, with a decorator: `refusing`
shows the refusal in the page's box, `raising_refusals` raises it as a gr.Error (an API
client's error, a toast in the page).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import gradio as gr

from app.views.trace import error_box
from engine.errors import EngineError

logger = logging.getLogger("app")

F = TypeVar("F", bound=Callable[..., Any])


def _log(message: str) -> str:
    logger.info("refused: %s", " ".join(message.split()))
    return message


def refused(err: Exception | str) -> gr.Error:
    """A Gradio error for the API or a toast, logged as one line (raise it `from None`)."""
    return gr.Error(_log(str(err)), print_exception=False)


def refused_box(err: Exception | str) -> str:
    """The in-page error box for a refused input, logged as one line."""
    return error_box(_log(str(err)))


def refusing(outputs: int = 1, *, shape: Callable[..., Any] | None = None,
             also: tuple[type[Exception], ...] = ()) -> Callable[[F], F]:
    """A callback whose engine refusal (EngineError, or one of `also`: a file that is not
    text, say) shows in its first output: the box then `outputs - 1` gr.skip()s (the box
    alone for one output), so what the page showed before stays. With `shape`, the refusal
    returns `shape(box, *args, **kwargs)`, given the callback's own arguments for a shape
    that clears views or reads a list again from the explorer it was handed.

    Any other exception propagates: it is a bug, not the user's to fix. A generator's
    refusal is yielded as its last update, what it yielded before kept."""

    def refusal(err: Exception, *args, **kwargs):
        box = refused_box(err)
        if shape is not None:
            return shape(box, *args, **kwargs)
        return box if outputs == 1 else (box, *(gr.skip(),) * (outputs - 1))

    return _on_refusal(refusal, (EngineError, *also))


def raising_refusals(fn: F) -> F:
    """`fn` with an engine refusal raised as `refused(err)`: the gr.Error an API client
    reads, or a toast in the page, naming the bad value without a traceback."""
    return _on_refusal(_raise_refused, (EngineError,))(fn)


def log_internal_errors(demo: gr.Blocks) -> gr.Blocks:
    """Every event and endpoint of `demo` with its internal errors logged: anything but a
    refusal is logged with its traceback (`logger.exception`; Gradio alone prints it to
    stderr, outside the log, and the page shows a bare "Error" or the exception's text as
    if it were the user's) and reaches the page or the API client as one line that says it
    is a bug and where its traceback is. A refusal that no decorator of the callback
    caught is raised as `refused` (one log line, no traceback). Call it once the events
    are wired."""
    for block_fn in demo.fns.values():
        if block_fn.fn is not None:
            block_fn.fn = _logging_internal_errors(block_fn.fn, block_fn.name)
    return demo


def _internal(err: Exception, name: str) -> gr.Error:
    logger.exception("internal error in %s", name)
    return gr.Error(f"Internal error in {name} ({type(err).__name__}: {err}). This is a bug, "
                    "not your input: the server log has its traceback. Try again; if it "
                    "comes back, report it with that traceback.", print_exception=False)


@contextlib.contextmanager
def _reported(name: str) -> Iterator[None]:
    """A refusal raised as `refused` (a gr.Error as it is), anything else as `_internal`."""
    try:
        yield
    except gr.Error:
        raise
    except EngineError as err:
        raise refused(err) from None
    except Exception as err:
        raise _internal(err, name) from err


def _logging_internal_errors(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generating(*args, **kwargs):
            with _reported(name):
                yield from fn(*args, **kwargs)

        return generating

    @functools.wraps(fn)
    def calling(*args, **kwargs):
        with _reported(name):
            return fn(*args, **kwargs)

    return calling


def _raise_refused(err: Exception, *args, **kwargs):
    raise refused(err) from None


def _on_refusal(handle: Callable[..., Any],
                errors: tuple[type[Exception], ...]) -> Callable[[F], F]:
    """The one try/except both decorators are: `errors` go to `handle(err, *args,
    **kwargs)`. functools.wraps keeps the signature and docstring, which Gradio reads
    (gr.api's endpoint description, an event's gr.SelectData argument)."""

    def decorate(fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generating(*args, **kwargs):
                try:
                    yield from fn(*args, **kwargs)
                except errors as err:
                    yield handle(err, *args, **kwargs)

            return generating  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except errors as err:
                return handle(err, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
