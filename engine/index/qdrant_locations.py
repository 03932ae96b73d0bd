"""Where a Qdrant is and how it is reached (engine.index.qdrant serves dense indexes from
it): a location is a server's URL or a folder for Qdrant's local mode (`check_location`), a
collection a checked name (`check_collection`, or one derived from a corpus's units and
encoder: `derived_collection`); each location has one client in this process
(`client_for`: a server's with the API key from QDRANT_API_KEY, a local-mode folder's taking
one request at a time), and the client's errors reach the user naming the location
(`answering`).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError, EngineError, ResourceMissingError

if TYPE_CHECKING:
    from engine.units.build import UnitConfig

API_KEY_ENV = "QDRANT_API_KEY"
INSTALL = "pip install -e '.[qdrant]' (qdrant-client)"
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")


def check_location(where: str) -> str:
    """`where` stripped if it names a Qdrant server (http:// or https:// URL), or as an
    absolute path if it names a folder for local mode (an existing folder, or one to make
    in an existing folder)."""
    where = (where or "").strip()
    if is_server(where):
        return where
    if where and "://" not in where and Path(where).expanduser().parent.is_dir():
        return str(Path(where).expanduser().resolve())  # one client per folder, any spelling
    raise ConfigError(f"Qdrant location {where!r} is neither a server's URL "
                      "(http://host:6333) nor a folder for Qdrant's local mode; give one.")


def check_collection(name: str) -> str:
    """`name` stripped if Qdrant can name a collection so, else a ConfigError naming it."""
    name = (name or "").strip()
    if not _NAME.fullmatch(name):
        raise ConfigError(f"Qdrant collection name {name!r} is not 1-200 letters, digits, "
                          "'_', '.' or '-'; give another.")
    return name


def is_server(where: str) -> bool:
    """Whether `where` names a Qdrant server (an http(s) URL), not a local-mode folder."""
    return where.startswith(("http://", "https://"))


def derived_collection(base: str, config: UnitConfig, model: str) -> str:
    """The collection named after `base` for the dense index over `config` units with
    encoder `model`: `base` plus the units and the encoder ("wiki.passages-200-20.minilm");
    a model given by path or hub id adds a hash of it (two folders named alike differ)."""
    key = config.key()
    units = {"passages": lambda: f"passages-{key.get('max_tokens')}-{key.get('overlap')}",
             "documents": lambda: "documents"}.get(
        key["granularity"],
        lambda: f"clusters-{key['algorithm']}-{key['max_tokens']}-{_digest(key)}")()
    encoder = re.sub(r"[^A-Za-z0-9_.\-]+", "-", Path(model).name or model).strip("-.")[:60]
    if model != encoder:
        encoder += f"-{_digest(model)}"
    return check_collection(f"{base}.{units}.{encoder}"[:200])


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def client_for(where: str) -> Any:
    """One Qdrant client per location in this process (local mode locks its folder)."""
    where = check_location(where)
    with _clients_lock:
        if where not in _clients:
            try:
                from qdrant_client import QdrantClient
            except ImportError:
                raise ResourceMissingError(f"Serving from Qdrant needs its client: {INSTALL}."
                                           ) from None
            if is_server(where):
                _clients[where] = QdrantClient(url=where, api_key=os.environ.get(API_KEY_ENV))
            else:  # local mode: its stores are read from the threads requests arrive on
                try:
                    _clients[where] = _OneAtATime(QdrantClient(
                        path=where, force_disable_check_same_thread=True))
                except RuntimeError as err:  # another process holds the folder
                    raise ConfigError(f"Qdrant's local mode folder {where!r} is open in "
                                      "another Qdrant client, another process's most likely "
                                      "(local mode serves one): stop it, or serve the "
                                      "collection from a Qdrant server (its URL).") from err
        return _clients[where]


class _OneAtATime:
    """A local-mode client taking one request at a time: local mode is one in-process store
    whose collections a concurrent write would change under another request."""

    def __init__(self, client: Any) -> None:
        self._client, self._lock = client, threading.RLock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method):
            return method

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)
        return locked


@contextmanager
def answering(where: str) -> Iterator[None]:
    """Qdrant's client errors (no server at the URL, a refused key, a failed request) as
    an EngineError naming the location."""
    from qdrant_client.http.exceptions import (
        ApiException,
        ResponseHandlingException,
        UnexpectedResponse,
    )

    try:
        yield
    except ResponseHandlingException as err:
        raise EngineError(f"Qdrant at {where} did not answer ({err}): check that its server "
                          "runs at that address.") from err
    except UnexpectedResponse as err:
        key = (" (QDRANT_API_KEY: the key it asks for)" if err.status_code in (401, 403)
               else "")
        raise EngineError(f"Qdrant at {where} refused a request with status "
                          f"{err.status_code}{key}: {err.content.decode(errors='replace')[:300]}"
                          ) from err
    except ApiException as err:
        raise EngineError(f"Qdrant at {where} failed a request: {err}") from err


@atexit.register
def close_clients() -> None:
    """Close every client (local mode frees its folder); run at exit too: a local-mode
    client left to its own `__del__` fails as the interpreter shuts down ("sys.meta_path
    is None")."""
    with _clients_lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
