"""Start Funnel Explorer: `python app.py` or `funnel-explorer` with [--host H] [--port P]
[--data-dir DIR] [--corpus NAME] [--corpus-root DIR] [--max-upload-mb MB] [--share]
[--users FILE] [--no-auth] [--session-hours H]
[--sessions FILE] [--otlp-endpoint URL] [--otlp-receive PORT] [--otlp-key-file FILE]
[--trusted-proxy ADDRESS] [--allow FILE] [--ray ADDRESS]
[--shards N] [--qdrant WHERE]; each flag also reads an environment variable (see
--help)."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from textwrap import shorten

from app.login import SESSION_HOURS, UPLOAD_MB_PER_DAY, request_user
from app.ui import build_app, serve
from engine import allowed
from engine.allowed import ENV as ALLOW_ENV
from engine.errors import ConfigError
from engine.index.shards import DEFAULT_SHARDS
from engine.logs import configure_logging
from engine.models.loading import resolve_encoder_precision
from engine.paths import DATA_DIR_HELP, use_data_dir
from engine.service.door import ANNOTATOR, Door
from engine.service.explorer import Explorer
from engine.service.limits import JOBS_PER_USER, RUNS_PER_USER, Limits
from engine.service.otel import tracing_from
from engine.service.preparation import Preparation
from engine.service.receiver import TraceReceiver
from engine.service.serving import served_as_added
from engine.service.store import process_store
from engine.store.sessions import SessionStore
from engine.store.users import ENV as USERS_ENV
from engine.store.users import User, Users

logger = logging.getLogger("app")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
MIN_KEY_CHARS = 16


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    root = _settle(parser, args)
    door = _door(parser, args)
    keys = _receiver_keys(parser, args, door) if args.otlp_receive else {}
    _serve_dense(parser, args)
    configure_logging()
    names = allowed.current()
    logger.info("Requests may name %s", "; ".join(
        f"{kind}: {', '.join(names.names(kind))}" for kind in allowed.KINDS
        if names.names(kind)) or "no endpoint, model, Ray cluster or Qdrant by name "
        "(--allow FILE names some)")
    # a first start fetches the QA data that is missing before anything else
    # an added corpus is served where it was added to be (Ray shards, Qdrant)
    preparation = Preparation(args.corpus, fetch_data=True,
                              load=served_as_added(args.corpus)).start()
    explorer = Explorer(preparation, SessionStore(args.sessions), corpus_root=root,
                        tracing=tracing_from(args.otlp_endpoint), door=door)
    if args.auth:
        logger.warning("--auth is deprecated: it serves one admin, %s. Give each person "
                       "their own login with `funnel-engine users add NAME --role ROLE` and "
                       "start with --users FILE.", door.users.list()[0].name)
    if args.otlp_receive:
        _receive(parser, args, explorer, keys)
    serve(build_app(explorer), door, {"session_hours": args.session_hours,
                                      "upload_mb_per_day": args.max_upload_mb_per_day},
          server_name=args.host, server_port=args.port, share=args.share,
          max_file_size=int(args.max_upload_mb * 1024**2))


def _parser() -> argparse.ArgumentParser:
    """The app's flags, each with the environment variable it reads by default."""
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__)
    # Gradio's own variables are read too: a Gradio user sets those first
    parser.add_argument("--host", default=env("FUNNEL_HOST") or env("GRADIO_SERVER_NAME")
                        or "127.0.0.1", help="FUNNEL_HOST or GRADIO_SERVER_NAME")
    parser.add_argument("--port", type=int, default=int(env("FUNNEL_PORT")
                                                        or env("GRADIO_SERVER_PORT") or 7860),
                        help="FUNNEL_PORT or GRADIO_SERVER_PORT")
    parser.add_argument("--data-dir", metavar="DIR", default=env("FUNNEL_DATA_DIR") or None,
                        help=DATA_DIR_HELP)
    parser.add_argument("--corpus", default=env("FUNNEL_CORPUS", "wiki"),
                        help="wiki, pooled, an added corpus's name or a corpus file/folder "
                             "(FUNNEL_CORPUS)")
    parser.add_argument("--corpus-root", default=env("FUNNEL_CORPUS_ROOT") or None,
                        help="the folder a corpus may be added from by its path on the "
                             "server (FUNNEL_CORPUS_ROOT; default the data directory); "
                             "nothing outside it is read")
    parser.add_argument("--max-upload-mb", type=float,
                        default=env("FUNNEL_MAX_UPLOAD_MB") or "2048",  # parsed by type
                        help="the largest corpus that may be added, in MB "
                             "(FUNNEL_MAX_UPLOAD_MB; default 2048)")
    parser.add_argument("--share", action="store_true", default=env("FUNNEL_SHARE") == "1",
                        help="a public Gradio link (FUNNEL_SHARE=1); needs internet")
    parser.add_argument("--users", metavar="FILE", default=env(USERS_ENV) or None,
                        help="turn logins on: the users file `funnel-engine users add` "
                             f"writes ({USERS_ENV}); every page, API route, download and "
                             "upload then needs a login, and each role its actions")
    parser.add_argument("--no-auth", action="store_true",
                        default=env("FUNNEL_NO_AUTH") == "1",
                        help="serve another address than this machine's (--host, --share) "
                             "without logins, on purpose (FUNNEL_NO_AUTH=1)")
    parser.add_argument("--session-hours", type=float,
                        default=env("FUNNEL_SESSION_HOURS") or str(SESSION_HOURS),
                        help="a login's session ends this many hours after it "
                             f"(FUNNEL_SESSION_HOURS; default {SESSION_HOURS:g})")
    parser.add_argument("--max-runs-per-user", type=int, metavar="N",
                        default=int(env("FUNNEL_MAX_RUNS_PER_USER") or RUNS_PER_USER),
                        help="with logins: the runs one user may have going at once "
                             f"(FUNNEL_MAX_RUNS_PER_USER; default {RUNS_PER_USER})")
    parser.add_argument("--max-jobs-per-user", type=int, metavar="N",
                        default=int(env("FUNNEL_MAX_JOBS_PER_USER") or JOBS_PER_USER),
                        help="with logins: the long jobs (evaluations, sweeps, ceilings, "
                             "corpus builds, a retrain) one user may have going "
                             f"(FUNNEL_MAX_JOBS_PER_USER; default {JOBS_PER_USER})")
    parser.add_argument("--max-upload-mb-per-day", type=float, metavar="MB",
                        default=env("FUNNEL_MAX_UPLOAD_MB_PER_DAY") or str(UPLOAD_MB_PER_DAY),
                        help="with logins: what one user may upload in a day, in MB "
                             "(FUNNEL_MAX_UPLOAD_MB_PER_DAY; default "
                             f"{UPLOAD_MB_PER_DAY:g})")
    parser.add_argument("--auth", default=env("FUNNEL_AUTH", ""),
                        help="deprecated: one admin as USER:PASSWORD (FUNNEL_AUTH); use "
                             "--users")
    parser.add_argument("--sessions", default=env("FUNNEL_SESSIONS") or None,
                        help="the DuckDB file of saved runs (FUNNEL_SESSIONS; default "
                             "sessions.duckdb in the data directory)")
    parser.add_argument("--otlp-endpoint", default=env("FUNNEL_OTLP_ENDPOINT", ""),
                        help="send every run as OpenInference traces to this OTLP/HTTP "
                             "collector, e.g. Phoenix at http://127.0.0.1:6006 "
                             "(FUNNEL_OTLP_ENDPOINT; off by default)")
    parser.add_argument("--otlp-receive", type=int, metavar="PORT",
                        default=int(env("FUNNEL_OTLP_RECEIVE") or 0),
                        help="receive a pipeline's OpenInference traces over OTLP/HTTP at "
                             "http://HOST:PORT/v1/traces (4318 is OTLP's port); each "
                             "finished trace is saved as a run (FUNNEL_OTLP_RECEIVE; off "
                             "by default); needs --otlp-key")
    parser.add_argument("--otlp-key", action="append", metavar="USER:KEY", default=None,
                        help="a key the receiver requires (as 'Authorization: Bearer KEY' or "
                             "'x-api-key: KEY') and the user whose runs its spans become; "
                             "give it again for more (FUNNEL_OTLP_KEY, comma-separated, "
                             "read when no --otlp-key is given). "
                             "Make one: python -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))'")
    parser.add_argument("--otlp-key-file", metavar="FILE",
                        default=env("FUNNEL_OTLP_KEY_FILE") or None,
                        help="the receiver's keys from a file, a USER:KEY line each "
                             "(FUNNEL_OTLP_KEY_FILE): the way to give keys that `ps` does "
                             "not show (--otlp-key on the command line does)")
    parser.add_argument("--allow", metavar="FILE", default=env(ALLOW_ENV) or None,
                        help="the endpoints, models, Ray clusters and Qdrant locations a "
                             "request may pick, each by a name of its own (a TOML file; "
                             f"{ALLOW_ENV}); a request names nothing else: no URL, folder or "
                             "hub id. docs/serving.md#what-requests-may-name")
    parser.add_argument("--trusted-proxy", action="append", metavar="ADDRESS", default=None,
                        help="a reverse proxy whose X-Forwarded-For names the client (an IP "
                             "or a network; give it again for more; FUNNEL_TRUSTED_PROXIES, "
                             "comma-separated); by default none is trusted, so the login "
                             "throttle and the audit log see the address that connected")
    parser.add_argument("--ray", default=env("FUNNEL_RAY", ""), metavar="ADDRESS",
                        help="serve every corpus's dense index from Ray actors, one index "
                             "shard each, at this cluster (host:port, ray://host:port, or "
                             "'local' for workers on this machine); its workers must see "
                             "the data directory (FUNNEL_RAY; off by default)")
    parser.add_argument("--shards", type=int, default=int(env("FUNNEL_RAY_SHARDS") or
                                                          DEFAULT_SHARDS),
                        help=f"index shards with --ray (FUNNEL_RAY_SHARDS; default "
                             f"{DEFAULT_SHARDS}); with 'local', as many workers start")
    parser.add_argument("--qdrant", default=env("FUNNEL_QDRANT", ""), metavar="WHERE",
                        help="serve every corpus's dense indexes from Qdrant: a server's "
                             "URL (http://host:6333; API key from QDRANT_API_KEY) or a "
                             "folder for Qdrant's local mode; a corpus's passages live in "
                             "the collection named after it, written from this app's index "
                             "if missing (FUNNEL_QDRANT; off by default)")
    return parser


def _settle(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path | None:
    """What the flags set before anything else starts: owner-only files, the proxies
    trusted, the data directory, what requests may name and read, the upload cap, the
    encoder's precision; each bad value refused by its flag. Returns the corpus root."""
    # what the app writes (the sessions database, corpora, caches, uploads) is its owner's
    os.umask(0o077)
    _trust_proxies(args.trusted_proxy if args.trusted_proxy is not None else
                   [a for a in os.environ.get("FUNNEL_TRUSTED_PROXIES", "").split(",")
                    if a.strip()])
    if args.data_dir:  # before anything reads it (engine.paths.data_dir)
        try:
            use_data_dir(args.data_dir)
        except ConfigError as err:
            parser.error(str(err))
    root = Path(args.corpus_root) if args.corpus_root else None
    if root is not None and not root.is_dir():
        parser.error(f"--corpus-root {args.corpus_root!r} is not a folder")
    _confine(parser, args, root)
    if args.max_upload_mb <= 0:
        parser.error(f"--max-upload-mb {args.max_upload_mb:g} must be a positive number of MB")
    os.environ["FUNNEL_MAX_UPLOAD_MB"] = f"{args.max_upload_mb:g}"  # engine.data.ingest
    try:  # a typo in the environment is named now, not at the first question
        resolve_encoder_precision()
    except ConfigError as err:
        parser.error(str(err))
    return root


def _serve_dense(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every corpus's dense indexes served from Qdrant or Ray shards, where asked."""
    if args.shards != DEFAULT_SHARDS and not args.ray:
        parser.error(f"--shards {args.shards} sets how many Ray shards serve the dense "
                     "indexes: give --ray ADDRESS too (or 'local' for workers here)")
    if args.ray and args.qdrant:
        parser.error(f"--ray {args.ray!r} and --qdrant {args.qdrant!r} both serve the dense "
                     "indexes: choose one")
    if args.qdrant:
        try:
            process_store().serve_from_qdrant(None, args.qdrant)
        except ConfigError as err:
            parser.error(f"--qdrant {args.qdrant!r}: {err}")
    if args.ray:
        try:
            process_store().serve_on_ray(None, args.ray, args.shards, workers=args.shards)
        except ConfigError as err:
            parser.error(f"--ray {args.ray!r} --shards {args.shards}: {err}")


def _receive(parser: argparse.ArgumentParser, args: argparse.Namespace, explorer: Explorer,
             keys: dict[str, str]) -> None:
    """The OTLP receiver at --otlp-receive: each key's spans saved as that user's runs,
    while that user may still save them."""
    door = explorer.door

    def save(run, name: str) -> int:
        user = door.users.get(name) if door.logins else User(name, ANNOTATOR, "")
        with door.acting_as(user):  # a run saved as the key's user, their role checked
            return explorer.runs.save_run(run, f"{run.paradigm}: {shorten(run.question, 60)}")

    def refused(name: str) -> str:
        if not door.logins or (door.users.known(name)
                               and door.users.get(name).may(ANNOTATOR)):
            return ""
        return (f"the key's user {name!r} may no longer save runs (removed, or not an "
                "annotator or admin); ask an admin for a key of your own")

    receiver = TraceReceiver(save, keys=keys, refused=refused)
    try:
        receiver.serve(args.host, args.otlp_receive)
    except (OSError, OverflowError) as err:
        parser.error(f"--otlp-receive {args.otlp_receive}: cannot listen there ({err}); "
                     "pick a free port, e.g. 4318")


def _confine(parser: argparse.ArgumentParser, args: argparse.Namespace,
             root: Path | None) -> None:
    """From here on a request names only what the allow file allows (engine.allowed), and
    reads files only from the app's own upload folder (made owner-only under the data
    directory, never Gradio's shared temporary one) and the corpus root."""
    from engine.paths import data_dir

    try:
        names = allowed.Allowed.read(args.allow) if args.allow else allowed.Allowed()
    except ConfigError as err:
        parser.error(f"--allow: {err}")
    uploads = data_dir() / "uploads"
    uploads.mkdir(mode=0o700, exist_ok=True)
    os.environ["GRADIO_TEMP_DIR"] = str(uploads)  # gradio.utils.get_upload_folder
    folders = (str(uploads), str(root or data_dir()))  # the corpus root's default
    allowed.confine(replace(names, folders=folders, uploads=str(uploads)))


def _trust_proxies(addresses: list[str]) -> None:
    """X-Forwarded-For is read only from `addresses` (uvicorn's FORWARDED_ALLOW_IPS, which
    otherwise trusts this machine's own: any local process could then name any client);
    none by default."""
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(a.strip() for a in addresses)


def _receiver_keys(parser: argparse.ArgumentParser, args: argparse.Namespace,
                   door: Door) -> dict[str, str]:
    """{key: user} of --otlp-key-file's lines, --otlp-key USER:KEY (said to show in
    `ps`) or FUNNEL_OTLP_KEY, each user one who may save runs."""
    if args.otlp_key is not None:
        logger.warning("--otlp-key puts a key on the command line, where `ps` and the "
                       "shell's history show it: give keys in a file (--otlp-key-file) or "
                       "in FUNNEL_OTLP_KEY instead")
    if args.otlp_key_file:
        try:
            lines = Path(args.otlp_key_file).read_text(encoding="utf-8").splitlines()
        except OSError as err:
            parser.error(f"--otlp-key-file {args.otlp_key_file!r} cannot be read ({err})")
        args.otlp_key = [*(args.otlp_key or []), *(ln.strip() for ln in lines if ln.strip())]
    if args.otlp_key is None:
        args.otlp_key = [k for k in os.environ.get("FUNNEL_OTLP_KEY", "").split(",") if k]
    if not args.otlp_key:
        parser.error(f"--otlp-receive {args.otlp_receive} needs a key: --otlp-key USER:KEY "
                     "(FUNNEL_OTLP_KEY), so that no stranger's spans are stored; make a key "
                     "with python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    keys = {}
    for given in args.otlp_key:
        name, colon, key = given.partition(":")
        if not colon or not name or len(key) < MIN_KEY_CHARS:
            parser.error(f"--otlp-key {name or '?'}:…: give USER:KEY, the key at least "
                         f"{MIN_KEY_CHARS} characters")
        if door.logins:
            try:
                user = door.users.get(name)
            except ConfigError as err:
                parser.error(f"--otlp-key {name}:…: {err}")
            if not user.may(ANNOTATOR):
                parser.error(f"--otlp-key {name}:…: {name} is a viewer, who may not save "
                             "runs; give the key to an annotator or an admin")
        keys[key] = name
    return keys


def _door(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Door:
    """The door the app's logins go through: the users file's (--users), one admin
    (--auth, deprecated), or none, which only this machine may reach unless --no-auth
    says otherwise."""
    for flag, value in (("--session-hours", args.session_hours),
                        ("--max-runs-per-user", args.max_runs_per_user),
                        ("--max-jobs-per-user", args.max_jobs_per_user),
                        ("--max-upload-mb-per-day", args.max_upload_mb_per_day)):
        if value <= 0:
            parser.error(f"{flag} {value:g} must be a positive number")
    limits = Limits(args.max_runs_per_user, args.max_jobs_per_user)
    if args.users and args.auth:
        parser.error("--users and --auth both turn logins on: give --users alone (--auth "
                     "is deprecated)")
    if args.auth:
        name, colon, password = args.auth.partition(":")
        if not colon or not name or not password:
            parser.error(f"--auth {args.auth!r} must look like USER:PASSWORD")
        folder = Path(tempfile.mkdtemp(prefix="funnel-auth-"))  # owner-only, this run's
        try:
            users = Users(folder / "users.json")
            users.add(name, password, "admin", checked=False)
        except ConfigError as err:
            parser.error(f"--auth: {err}")
        return Door(users, who=request_user, limits=limits)
    if args.users:
        users = Users(args.users)
        try:
            if not users.list():
                parser.error(f"--users {args.users}: no users in it yet; add one with "
                             f"`funnel-engine users --file {args.users} add NAME --role "
                             "admin`")
        except ConfigError as err:
            parser.error(f"--users {args.users}: {err}")
        return Door(users, who=request_user, limits=limits)
    if (args.host not in LOCAL_HOSTS or args.share) and not args.no_auth:
        where = "--share" if args.share else f"--host {args.host}"
        parser.error(f"{where} lets other machines reach the app, and nobody logs in: give "
                     "--users FILE (`funnel-engine users add NAME --role admin` makes it), "
                     "or --no-auth to serve it without logins on purpose")
    return Door()

