"""Logins for the app: who the request being served is, the login Gradio asks about, and the
gate in front of every route.

Gradio's own login (launch(auth=...)) guards the page's configuration, its queue and its
API routes, but not all of its routes (its run history, cancel and heartbeat routes answer
anyone), and its sessions never end. `LoginGate`, an ASGI middleware in front of the whole
app, answers 401 to every request without a live session but those the login page itself
needs (`OPEN`: the page, its scripts, styles and fonts, and the login form's POST); it ends
a session `session_hours` after its login, and for good one whose user has been removed
from the users file or whose record has changed since it began (engine.store.users: a new
role or password, or the name removed and added again, draws a new session stamp). It
also throttles the login form per client address: after `ip_failures` wrong logins within
`ip_window` seconds the address gets 429 until the window has passed (the door,
engine.service.door, throttles each name as well; behind a proxy every user shares its
address), and counts what each user sends in a day (the body of every POST: uploads above
all): past `upload_mb_per_day` a request is answered 413, naming the limit and its
setting, and the refusal is audited. The count is the process's: a restart begins it again.
Cookies are read as Gradio reads them (Starlette's parser), so the gate and Gradio always
see the same session.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.cookies import SimpleCookie

from app.tabs.base import PRIVATE
from engine.errors import EngineError
from engine.service.door import BUILDER, CLIENT_ADDRESS, Door

logger = logging.getLogger("app")

OPEN_PATHS = frozenset({"/", "/login", "/login/", "/logout", "/favicon.ico", "/theme.css",
                        "/manifest.json", "/robots.txt",
                        # Gradio's probe at launch, which starts its queue once
                        "/gradio_api/startup-events"})
OPEN_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon")
SESSION_HOURS = 12.0
UPLOAD_MB_PER_DAY = 4096.0
IP_FAILURES = 20
IP_WINDOW_SECONDS = 300.0


def request_user() -> str | None:
    """The logged-in user of the Gradio event being served in this thread (None outside
    one, or without logins): Gradio sets it before each call of an event's function."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return getattr(request, "username", None) if request is not None else None


def gradio_auth(door: Door) -> Callable:
    """The login check Gradio's login form calls: the door's (argon2 verification, off the
    event loop), a name locked out after wrong passwords answered 429 with the wait."""
    import anyio
    from fastapi import HTTPException

    async def auth(name: str, password: str) -> bool:
        try:
            user = await anyio.to_thread.run_sync(door.login, name, password)
        except EngineError as err:
            raise HTTPException(status_code=429, detail=str(err)) from None
        return user is not None

    return auth


class LoginGate:
    """ASGI middleware: 401 to a request without a live session (but the login page's own),
    sessions ended after `session_hours` or when their user is no longer `known`, the login
    form throttled per client address; both timed by `clock`."""

    def __init__(self, app, *, stamp: Callable[[str], str | None],
                 session_hours: float = SESSION_HOURS, ip_failures: int = IP_FAILURES,
                 ip_window: float = IP_WINDOW_SECONDS,
                 upload_mb_per_day: float = UPLOAD_MB_PER_DAY,
                 refused: Callable[[str, str, str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.clock = clock  # seconds: a session's hours, an address's window
        self.stamp = stamp  # a user's session stamp, None for one who cannot log in
        self.refused = refused  # (user, action, why): the door's audit of a refusal
        self.session_seconds = session_hours * 3600
        self.ip_failures, self.ip_window = ip_failures, ip_window
        self.upload_bytes = int(upload_mb_per_day * 1024**2)
        self._uploaded: dict[tuple[str, str], int] = {}  # (user, UTC day) -> bytes
        # session token -> (when its login succeeded, its user's stamp then)
        self._issued: dict[str, tuple[float, str | None]] = {}
        self._failed: dict[str, deque[float]] = {}  # client address -> wrong logins' times
        self._swept = float("-inf")
        self._lock = threading.Lock()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path in ("/login", "/login/") and scope.get("method") == "POST":
            return await self._login(scope, receive, send)
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            # an ended session is ended here too ("/" knows it)
            live = bool(self._token(scope)[0]) and not self._session(scope)[1]
            if path == "/" and not live:  # the login page: no endpoint signatures on it
                return await self.app(scope, receive, _without_api_info(send))
            return await self.app(scope, receive, send)
        name, problem = self._session(scope)
        if problem:
            return await _refuse(scope, send, 401, problem)
        if scope.get("method") == "POST":
            return await self._counted(name, scope, receive, send)
        return await self.app(scope, receive, send)

    # --- sessions ---------------------------------------------------------------------

    @staticmethod
    def _token(scope) -> tuple[str, dict | None]:
        """(the request's session token, read as Gradio reads it, or "", Gradio's tokens)."""
        from starlette.requests import HTTPConnection

        gradio_app = scope.get("app")
        cookie_id = getattr(gradio_app, "cookie_id", None)
        tokens = getattr(gradio_app, "tokens", None)
        if cookie_id is None or tokens is None:
            return "", None
        cookies = HTTPConnection(scope).cookies
        return (cookies.get(f"access-token-{cookie_id}")
                or cookies.get(f"access-token-unsecure-{cookie_id}") or ""), tokens

    def _session(self, scope) -> tuple[str, str]:
        """(the session's user, ""), or ("", why this request has no live session). A
        session past its hours is ended (Gradio forgets its token)."""
        token, tokens = self._token(scope)
        if tokens is None:
            return "", "the server is starting; try again"
        self._sweep(tokens)
        name = tokens.get(token) if token else None
        if name is None:
            return "", "log in first: open the app's page, or pass auth=(name, password)"
        with self._lock:
            issued, stamp = self._issued.setdefault(token, (self.clock(), self.stamp(name)))
        if self.clock() - issued > self.session_seconds:
            tokens.pop(token, None)
            with self._lock:
                self._issued.pop(token, None)
            return "", (f"the session ended {self.session_seconds / 3600:g} h after its "
                        "login; log in again")
        now = self.stamp(name)
        if now is None:
            self._end(token, tokens)
            return "", f"user {name!r} can no longer log in; ask an admin"
        if stamp is None:  # a login whose user the gate could not read when it succeeded
            with self._lock:
                self._issued[token] = (issued, now)
        elif now != stamp:  # removed and added again, or a new role or password since
            self._end(token, tokens)
            return "", (f"user {name!r}'s login changed since this session began (a new "
                        "role or password); log in again")
        return name, ""

    def _end(self, token: str, tokens: dict) -> None:
        """End session `token` for good: Gradio forgets it, and so does the gate."""
        tokens.pop(token, None)
        with self._lock:
            self._issued.pop(token, None)

    def _sweep(self, tokens: dict) -> None:
        """At most once a minute: end every session past its hours, and forget the tokens
        Gradio has forgotten (a logout)."""
        now = self.clock()
        with self._lock:
            if now - self._swept < 60:
                return
            self._swept = now
            for token, (issued, _) in list(self._issued.items()):
                if token not in tokens or now - issued > self.session_seconds:
                    tokens.pop(token, None)
                    del self._issued[token]

    # --- what a user sends ----------------------------------------------------------

    async def _counted(self, name: str, scope, receive, send) -> None:
        """A POST whose body counts against `name`'s bytes of the day (uploads above all):
        refused (413) when its declared length, or what it has sent so far, passes the
        limit; the count is kept as the body arrives, so requests sent at once add up."""
        key = (name, time.strftime("%Y-%m-%d", time.gmtime()))
        declared = next((int(v) for k, v in scope.get("headers", [])
                         if k == b"content-length" and v.isdigit()), 0)
        with self._lock:
            before = self._uploaded.get(key, 0)
        if before + declared > self.upload_bytes:
            return await self._too_much(name, before, scope, send)

        async def receiving():
            message = await receive()
            with self._lock:
                total = self._uploaded.get(key, 0) + len(message.get("body", b""))
                self._uploaded[key] = total
            if total > self.upload_bytes:
                raise _Oversized(total)
            return message

        started = []

        async def sending(message) -> None:
            started.append(True)
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        except _Oversized:
            if not started:
                await self._too_much(name, before, scope, send)

    async def _too_much(self, name: str, before: int, scope, send) -> None:
        limit = self.upload_bytes / 1024**2
        said = (f"{name} has sent {before / 1024**2:,.1f} MB today; this upload would pass "
                f"the limit of {limit:,.0f} MB a day (--max-upload-mb-per-day, "
                "FUNNEL_MAX_UPLOAD_MB_PER_DAY)")
        if self.refused is not None:
            self.refused(name, "upload", said)
        else:
            logger.info("refused: %s", said)
        await _refuse(scope, send, 413, said)

    # --- the login form ---------------------------------------------------------------

    async def _login(self, scope, receive, send) -> None:
        """The login form's POST, throttled per address: each attempt counts before its
        check (attempts sent at once count too) and a successful one is taken back."""
        address = (scope.get("client") or ("?", 0))[0]
        now = self.clock()
        with self._lock:
            failed = self._failed.setdefault(address, deque())
            while failed and now - failed[0] > self.ip_window:
                failed.popleft()
            throttled = len(failed) >= self.ip_failures
            if throttled:
                wait = self.ip_window - (now - failed[0])
            else:
                failed.append(now)
        if throttled:
            logger.info("refused: login from %s throttled", address)
            return await _refuse(scope, send, 429, f"{self.ip_failures} wrong logins from "
                                 f"{address}: wait {wait:.0f} s before trying again")
        status: list[int] = []
        cookies: list[bytes] = []

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                cookies.extend(v for k, v in message.get("headers", [])
                               if k.lower() == b"set-cookie")
            await send(message)

        said = CLIENT_ADDRESS.set(address)  # the door's audit of a failure names it
        try:
            await self.app(scope, receive, sending)
        finally:
            CLIENT_ADDRESS.reset(said)
            with self._lock:
                if status and status[0] in (200, 429):  # logged in, or the name's lockout
                    with contextlib.suppress(ValueError):
                        self._failed[address].remove(now)
                if status and status[0] == 200:
                    tokens = self._token(scope)[1] or {}
                    for raw in cookies:
                        for morsel in SimpleCookie(raw.decode("latin-1")).values():
                            if morsel.key.startswith("access-token-"):
                                name = tokens.get(morsel.value)
                                self._issued[morsel.value] = (
                                    self.clock(), self.stamp(name) if name else None)


API_INFO = re.compile(rb"window\.gradio_api_info = .*?;</script>", re.DOTALL)
NO_API_INFO = b'window.gradio_api_info = {"named_endpoints": {}, "unnamed_endpoints": {}};</script>'


def _without_api_info(send):
    """`send` for the page served before a login: Gradio writes every named endpoint's
    signature into it (`window.gradio_api_info`), which only a logged-in user may read; the
    body is held (a few KB), the signatures taken out and its length set again."""
    start: dict = {}
    body = bytearray()

    async def sending(message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return None
        if message["type"] != "http.response.body":
            return await send(message)
        body.extend(message.get("body", b""))
        if message.get("more_body"):
            return None
        page = API_INFO.sub(NO_API_INFO, bytes(body))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
        return await send({"type": "http.response.body", "body": page})

    return sending


class _Oversized(Exception):
    """A request that passed its user's bytes of the day while it was sent."""


async def _refuse(scope, send, status: int, detail: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# --- the page as a role sees it ---------------------------------------------------------

# each control that does an action a role may lack, by its elem_id, and the action (its
# role: engine.service.door.ACTIONS); a control missing from the page fails a test
CONTROLS: dict[str, str] = {
    "fe-save": "save_run", "fe-reanswer-save": "save_run", "fe-delete": "delete_run",
    "fe-build-run": "build_index",
    "fe-import": "import_pipeline", "fe-audit-show": "audit_log",
    "fe-label-yes": "add_label", "fe-label-no": "add_label", "fe-label-skip": "add_label",
    "fe-labels-import": "import_labels", "fe-retrain": "retrain_classifier",
    "fe-activate": "activate_classifier",
    "fe-corpus-add": "add_corpus", "fe-corpus-add-path": "add_corpus",
    "fe-corpus-remove": "remove_corpus",
    "fe-eval-start": "evaluate", "fe-eval-build": "evaluate",
    "fe-eval-cancel": "cancel_evaluation", "fe-eval-resume": "resume_evaluation",
    "fe-eval-remove": "remove_evaluation",
    "fe-sweep-start": "sweep", "fe-sweep-build": "sweep",
    "fe-tune-start": "tune", "fe-tune-build": "tune", "fe-tune-cancel": "cancel_tune",
    "fe-tune-resume": "resume_tune",
    "fe-diag-ceilings-go": "ceilings",
    "fe-judge-add": "add_questions", "fe-judge-from-runs": "add_run_questions",
    "fe-judge-generate": "generate_questions", "fe-judge-pool": "pool_evaluation",
    "fe-judge-start": "to_judge", "fe-judge-0": "judge", "fe-judge-1": "judge",
    "fe-judge-2": "judge", "fe-judge-3": "judge", "fe-judge-skip": "judge",
    "fe-judge-undo": "undo", "fe-judge-llm": "llm_judge",
    "fe-judge-import": "import_judgments",
}
# the name boxes a login fills in (work carries its login's name)
NAME_BOXES = ("fe-annotator", "fe-judge-assessor")


def who_line(door: Door) -> str:
    """The line above the tabs: who is signed in with which role and what their greyed
    controls need, or that anyone on this machine may use the app."""
    from html import escape

    if not door.logins:
        return ("<p class='fe-who'>No logins: anyone who can reach this machine's port can "
                "use this app. Start it with <code>--users FILE</code> to require them.</p>")
    user = door.user()
    if user is BUILDER:  # the page being built: each load says who signed in
        return "<p class='fe-who'></p>"
    if user is None:
        return "<p class='fe-who'>Not signed in. <a href='/logout'>Log in</a></p>"
    needs = {"viewer": " Greyed controls need another role: saving runs, labelling and "
                       "judging need annotator; corpora, evaluations, sweeps, ceilings, "
                       "retraining and imports need admin.",
             "annotator": " Greyed controls need the admin role: corpora, evaluations, "
                          "sweeps, ceilings, retraining, imports.",
             "admin": ""}[user.role]
    return (f"<p class='fe-who'>Signed in as <b>{escape(user.name)}</b> ({user.role}).{needs}"
            " <a href='/logout'>Log out</a></p>")


def wire_roles(demo, door: Door, line) -> None:
    """On every page load, with logins on: the who-line (`line`, a gr.HTML), each control
    in CONTROLS enabled only for a role that may do its action, the name boxes filled with
    the login's name."""
    import gradio as gr

    found = {block.elem_id: block for block in demo.blocks.values()
             if getattr(block, "elem_id", None) in {*CONTROLS, *NAME_BOXES}}
    controls = [(found[e], action) for e, action in CONTROLS.items() if e in found]
    boxes = [found[e] for e in NAME_BOXES if e in found]
    if not door.logins:
        return

    def as_role():
        user = door.user()
        name = user.name if user is not None else ""
        return (who_line(door),
                *(gr.update(interactive=door.may(action)) for _, action in controls),
                *(gr.update(value=name, interactive=False) for _ in boxes))

    demo.load(as_role, None, [line, *(c for c, _ in controls), *boxes],
              **PRIVATE, show_progress="hidden")
