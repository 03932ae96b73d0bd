"""An export handed to the browser: one file as it is, several (ragas's file per paradigm,
TREC's qrels and run per stage) as one zip."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path


def download(files: dict[str, str], stem: str) -> tuple[Path, str]:
    """(the file to offer, "one file" or "N files, zipped") for `files` ({name: text}),
    named `stem` plus the one file's suffix or ".zip", in a fresh temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="funnel-export-"))
    if len(files) == 1:
        ((name, body),) = files.items()
        path = folder / f"{stem}.{name.rsplit('.', 1)[-1]}"
        path.write_text(body, encoding="utf-8")
        return path, "one file"
    path = folder / f"{stem}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return path, f"{len(files)} files, zipped"
