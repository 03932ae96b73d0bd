"""Where the engine keeps its caches and finds the QA data.

Both locations come from environment variables so tests and benchmarks can redirect them.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# QA files of the shared data whose paragraphs join the pooled corpus (NQ-open has none).
POOLED_FILES = (
    "hotpotqa/dev500_contexts.jsonl",
    "hotpotqa/train100.json",
    "musique/train100.json",
    "musique/corpus.json",
    "2wikimultihopqa/corpus.json",
    "squad/small_v2.json",
)


def data_dir() -> Path:
    """The cache directory: `$FUNNEL_DATA_DIR`, default `<project>/data`."""
    path = Path(os.environ.get("FUNNEL_DATA_DIR") or PROJECT_ROOT / "data")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # made owner-only: it holds runs
    return path


# the --data-dir option of both entry points (app/main.py, engine/cli/main.py)
DATA_DIR_HELP = ("the folder of caches, indexes, trained models, added corpora and the "
                 "sessions database (sets FUNNEL_DATA_DIR; default <project>/data); the QA "
                 "data folder is FUNNEL_SHARED_DATA's, else DIR/qa once fetched")


def use_data_dir(folder: str) -> Path:
    """Make `folder` the data directory of this process and of what it starts (Ray
    workers read FUNNEL_DATA_DIR too): made if missing; a file there is refused."""
    from engine.errors import ConfigError

    path = Path(folder).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--data-dir {folder!r} is a file; give a folder (it is made if "
                          "missing).")
    os.environ["FUNNEL_DATA_DIR"] = str(path)
    return data_dir()


def shared_data_dir() -> Path:
    """The QA data folder (engine.qa_data lists its files): `$FUNNEL_SHARED_DATA` when set;
    else the data directory's `qa/` once something was fetched there; else a `shared/data`
    folder beside the project (a checkout that sits next to one); else `qa/` again, where
    `funnel-engine data fetch` puts the files."""
    named = os.environ.get("FUNNEL_SHARED_DATA")
    if named:
        return Path(named)
    fetched, beside = fetched_data_dir(), PROJECT_ROOT.parent / "shared" / "data"
    return beside if not fetched.is_dir() and beside.is_dir() else fetched


def fetched_data_dir() -> Path:
    """Where fetched QA files go: `<data dir>/qa`."""
    return data_dir() / "qa"


def worker_environment() -> dict[str, str]:
    """What another process (a Ray worker, a remote cluster's too) needs to find the
    engine, its caches and the QA data as this one does."""
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT_ROOT), path) if p),
            "FUNNEL_DATA_DIR": str(data_dir()), "FUNNEL_SHARED_DATA": str(shared_data_dir())}
