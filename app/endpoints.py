"""What every named API endpoint of the app shares (app.api, app.api_evaluations): its
registration under its function's name with its result described (`endpoint`), and a file
a client uploaded, accepted only from Gradio's upload folder (`uploaded`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import get_type_hints

import gradio as gr
from gradio.context import get_blocks_context
from gradio_client.utils import python_type_to_json_schema

from app.errors import raising_refusals, refused


def endpoint(fn: Callable, returns: str, description: str) -> None:
    """Register `fn` as the endpoint /<its name>, its result named `returns` and described
    in view_api, an engine refusal (EngineError) raised as the gr.Error that names it
    (app.errors.raising_refusals, which keeps fn's signature and docstring for gr.api).
    gr.api names every result "1st" and, under postponed annotations, types it Any; the one
    result's component is labelled and typed here instead."""
    dependency = gr.api(raising_refusals(fn), api_name=fn.__name__)
    (output,) = (get_blocks_context().blocks[i] for i in dependency["outputs"])
    output.label = returns
    output._api_info = {**python_type_to_json_schema(get_type_hints(fn)["return"]),
                        "description": description}


def uploaded(file: dict) -> tuple[Path, str]:
    """(server path, original name) of a file a client uploaded; only Gradio's upload
    folder is accepted, so a request cannot name another file on the server."""
    from gradio.utils import get_upload_folder

    path = file.get("path") if isinstance(file, dict) else None
    if not isinstance(path, str) or not path:
        raise refused("file must be an uploaded file: pass handle_file('corpus.jsonl').")
    resolved = Path(path).resolve()
    if not resolved.is_relative_to(Path(get_upload_folder()).resolve()):
        raise refused(f"file {path!r} was not uploaded to this app; pass "
                      "handle_file('corpus.jsonl') so that the client uploads it.")
    return resolved, str(file.get("orig_name") or resolved.name)
