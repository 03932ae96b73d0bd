"""What a request may name: the endpoints, models, Ray clusters and Qdrant locations the
operator allows, each under a name of its own, read from one allow file at start.

A request (the app, its API) never chooses where the server connects or what it reads from
disk. Once the app has `confine`d this process, every option that names such a place
(`reader.endpoint`, a model option's folder or hub id, a Ray address, a Qdrant location) is
one of the operator's names or a word the option understands itself ("minilm", "trained",
"bm25", "local"); anything else is refused by name before any connection is made or any
file read. The command line is the operator: it runs open, so a URL or a folder it types is
used as it is, and the allow file's names work there too.

The allow file (TOML; `--allow FILE` or FUNNEL_ALLOW):

    [endpoints.vllm]
    url = "http://127.0.0.1:8000/v1"
    key_env = "VLLM_API_KEY"          # or key_file = "/run/secrets/vllm"; or neither

    [models]
    e5 = "/srv/models/e5-base-v2"     # a folder, or a hub id in the local cache
    msmarco = "cross-encoder/ms-marco-MiniLM-L-6-v2"

    [ray]
    cluster = "ray://head:10001"

    [qdrant]
    main = "http://127.0.0.1:6333"    # or a folder for Qdrant's local mode

A key is sent to the endpoint it is written under and to no other. An endpoint typed on the
command line (open) gets `$FUNNEL_API_KEY` or `$OPENAI_API_KEY`, as the operator set them.
"""

from __future__ import annotations

import contextlib
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ConfigError

ENV = "FUNNEL_ALLOW"
API_KEY_VARIABLES = ("FUNNEL_API_KEY", "OPENAI_API_KEY")  # an open endpoint's key
KINDS = ("endpoints", "models", "ray", "qdrant")
_ONE = {"endpoints": "endpoint", "models": "model", "ray": "Ray cluster",
        "qdrant": "Qdrant location"}
# words options understand themselves, which an allowed name may not hide
RESERVED = frozenset({"minilm", "smollm2", "trained", "bi-encoder", "bm25", "hybrid", "dense",
                      "none", "cosines", "always-retrieve", "local", "auto"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}")
HOW = ("the operator names it in the allow file (--allow FILE, or FUNNEL_ALLOW) and "
       "restarts the app; docs/serving.md#what-requests-may-name")


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server: its name, base URL and the key sent to it alone."""

    name: str
    url: str
    key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Allowed:
    """The operator's names: endpoints, models (folders, hub ids), Ray addresses and Qdrant
    locations."""

    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)
    ray: Mapping[str, str] = field(default_factory=dict)
    qdrant: Mapping[str, str] = field(default_factory=dict)
    source: str = ""  # the file it was read from
    # the folders a request's file may lie in (the app's uploads, --corpus-root): the app's
    folders: tuple[str, ...] = ()
    uploads: str = ""  # the app's upload folder, whose files are removed once read

    @classmethod
    def read(cls, path: str | Path) -> Allowed:
        """The allow file at `path`; a ConfigError names what is wrong in it (an unknown
        table, a bad name, a name that hides a word, an endpoint without a URL, a key whose
        variable or file is missing)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"Allow file {str(path)!r} cannot be read ({err}).") from None
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"Allow file {str(path)!r} is not TOML: {err}.") from None
        unknown = sorted(set(data) - set(KINDS))
        if unknown:
            raise ConfigError(f"Allow file {str(path)!r}: unknown table(s) "
                              f"{', '.join(unknown)}; it holds {', '.join(KINDS)}.")
        tables = {kind: _table(path, kind, data.get(kind, {})) for kind in KINDS}
        endpoints = {name: _endpoint(path, name, entry)
                     for name, entry in tables["endpoints"].items()}
        plain = {kind: {name: _text(path, kind, name, value)
                        for name, value in tables[kind].items()}
                 for kind in ("models", "ray", "qdrant")}
        return cls(endpoints, plain["models"], plain["ray"], plain["qdrant"], str(path))

    def names(self, kind: str) -> tuple[str, ...]:
        """The names of one kind ("endpoints", "models", "ray", "qdrant"), sorted."""
        return tuple(sorted(getattr(self, kind)))


def _table(path: Path, kind: str, table: object) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"Allow file {str(path)!r}: [{kind}] must be a table of names.")
    for name in table:
        if not _NAME.fullmatch(name):
            raise ConfigError(f"Allow file {str(path)!r}: {kind} name {name!r} is not 1-40 "
                              "letters, digits, '_', '.' or '-'.")
        if name in RESERVED:
            raise ConfigError(f"Allow file {str(path)!r}: {kind} name {name!r} is a word the "
                              f"options understand themselves ({', '.join(sorted(RESERVED))}"
                              "); name it otherwise.")
    return table


def _text(path: Path, kind: str, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"Allow file {str(path)!r}: {kind}.{name} must be a non-empty "
                          f"string, got {value!r}.")
    return value.strip()


def _endpoint(path: Path, name: str, entry: object) -> Endpoint:
    if not isinstance(entry, dict):
        raise ConfigError(f"Allow file {str(path)!r}: [endpoints.{name}] must be a table "
                          "with url (and key_env or key_file).")
    unknown = sorted(set(entry) - {"url", "key_env", "key_file"})
    if unknown:
        raise ConfigError(f"Allow file {str(path)!r}: endpoints.{name} has unknown key(s) "
                          f"{', '.join(unknown)}; it takes url, key_env, key_file (a key is "
                          "never written in the file itself).")
    url = _text(path, "endpoints", f"{name}.url", entry.get("url"))
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"Allow file {str(path)!r}: endpoints.{name}.url {url!r} is not "
                          "an http(s) URL, e.g. http://127.0.0.1:8000/v1.")
    if "key_env" in entry and "key_file" in entry:
        raise ConfigError(f"Allow file {str(path)!r}: endpoints.{name} has both key_env and "
                          "key_file; keep one.")
    key = ""
    if "key_env" in entry:
        variable = _text(path, "endpoints", f"{name}.key_env", entry["key_env"])
        key = os.environ.get(variable, "")
        if not key:
            raise ConfigError(f"Allow file {str(path)!r}: endpoints.{name}.key_env names "
                              f"${variable}, which is not set; set it or drop key_env.")
    if "key_file" in entry:
        where = Path(_text(path, "endpoints", f"{name}.key_file", entry["key_file"]))
        try:
            key = where.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise ConfigError(f"Allow file {str(path)!r}: endpoints.{name}.key_file "
                              f"{str(where)!r} cannot be read ({err}).") from None
    return Endpoint(name, url.rstrip("/"), key)


# --- the process's state: open (the command line) or confined (the app) -------------------

_confined: Allowed | None = None
_read_from_env: tuple[str, Allowed] | None = None


def confine(allowed: Allowed | None) -> None:
    """From now on requests may name only what `allowed` names (and the options' own
    words); None opens the process again (the command line's state)."""
    global _confined
    _confined = allowed


# work the operator set up rather than a request asked for (a retrain from the stored
# recipe of a model trained here): its names resolve as on the command line
_operators: ContextVar[bool] = ContextVar("operator_work", default=False)


def is_confined() -> bool:
    return _confined is not None and not _operators.get()


@contextlib.contextmanager
def operator_work() -> Iterator[None]:
    """Within the block (in this thread), what is resolved is the operator's own set-up,
    not a request's: a stored training recipe's base model folder, say."""
    token = _operators.set(True)
    try:
        yield
    finally:
        _operators.reset(token)


@contextlib.contextmanager
def confined(allowed: Allowed | None = None) -> Iterator[Allowed]:
    """`allowed` (default: nothing allowed) confines the process while the block runs."""
    before = _confined
    confine(allowed or Allowed())
    try:
        yield _confined
    finally:
        confine(before)


def current() -> Allowed:
    """The names in force: the confined process's, else the allow file FUNNEL_ALLOW names
    (read once), else none."""
    global _read_from_env
    if _confined is not None:
        return _confined
    path = os.environ.get(ENV, "")
    if not path:
        return Allowed()
    if _read_from_env is None or _read_from_env[0] != path:
        _read_from_env = (path, Allowed.read(path))
    return _read_from_env[1]


# besides an allowed name, what each kind of option can be given instead
_INSTEAD = {"endpoints": "leave it empty to read with the model in this process",
            "models": "use a word the option reads itself (its help lists them)",
            "ray": "use 'local' for workers on this machine, or leave it empty",
            "qdrant": "leave it empty to serve the index from this process"}


def _refused(option: str, value: str, kind: str) -> ConfigError:
    """The refusal of `value` for `option`: what may be picked instead, and how the operator
    allows another."""
    names = current().names(kind)
    named = (f"pick one the operator allowed by name ({', '.join(names)}), or "
             if names else f"no {_ONE[kind]} is allowed by name here: ")
    return ConfigError(f"{option}={value!r} is refused: a request never chooses where the "
                       f"server connects or what it reads. {named[0].upper()}{named[1:]}"
                       f"{_INSTEAD[kind]}. Another {_ONE[kind]} is allowed once {HOW}.")


def _named(kind: str, value: str, option: str):
    """What the allowed name `value` of `kind` stands for; None in an open process for a
    value no name stands for (it is then taken as it is).

    Raises:
        ConfigError: in a confined process, for a value no allowed name stands for.
    """
    named = getattr(current(), kind).get(value)
    if named is None and is_confined():
        raise _refused(option, value, kind)
    return named


def endpoint(value: str, option: str = "reader.endpoint") -> Endpoint | None:
    """The endpoint `value` names (None for ''): an allowed name's, or, in an open process,
    a URL as it is, with `$FUNNEL_API_KEY`'s key.

    Raises:
        ConfigError: in a confined process, for anything but an allowed name.
    """
    value = (value or "").strip()
    if not value:
        return None
    named = _named("endpoints", value, option)
    if named is not None:
        return named
    key = next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), "")
    return Endpoint("", value, key)


def model(value: str, option: str = "model") -> str:
    """Where model `value` loads from, when it is not a word or alias its option reads
    itself: an allowed name's folder or hub id, or, in an open process, `value` as it is.

    Raises:
        ConfigError: in a confined process, for anything but an allowed name.
    """
    named = _named("models", value, option)
    return value if named is None else named


def check_model(option: str, value: str) -> None:
    """Refuse (ConfigError) model option `value` in a confined process unless it is a word
    options read themselves (RESERVED, a plugin's name) or an allowed model's name: said
    at once, before anything loads."""
    from engine.plugins import registered_names

    words = RESERVED | registered_names()
    if is_confined() and value not in words and value not in current().models:
        raise _refused(option, value, "models")


def place(kind: str, value: str, option: str, words: tuple[str, ...] = ()) -> str:
    """The address or folder that `value` names for `kind` ("ray", "qdrant"): one of the
    option's `words` as it is, an allowed name's, or, in an open process, `value` itself.

    Raises:
        ConfigError: in a confined process, for anything else.
    """
    value = (value or "").strip()
    if not value or value in words:
        return value
    named = _named(kind, value, option)
    return value if named is None else named


def readable(path: str | Path) -> bool:
    """Whether a request may have the server read file `path`: in an open process any; in a
    confined one a file under one of the allowed folders (the app's uploads, the corpus
    root)."""
    if not is_confined():
        return True
    resolved = Path(path).expanduser().resolve()
    return any(resolved.is_relative_to(Path(folder).resolve())
               for folder in current().folders)


def discard_upload(path: str | Path) -> None:
    """Remove file `path` once it has been read, if it lies in the app's upload folder (a
    confined process's; anything else is left as it is)."""
    uploads = current().uploads if is_confined() else ""
    if not uploads:
        return
    path = Path(path).resolve()
    if path.is_file() and path.is_relative_to(Path(uploads).resolve()):
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # Gradio's folder of that one upload, when empty
