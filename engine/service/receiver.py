"""A pipeline's traces in, live: an OTLP/HTTP receiver whose finished traces become saved runs.

`--otlp-receive PORT` (FUNNEL_OTLP_RECEIVE) listens on http://HOST:PORT/v1/traces as an
OpenTelemetry collector does (OTLP/HTTP's own port is 4318): point a pipeline's OTLP span
exporter there (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces`) and
every question it answers shows in Sessions as a run, read by engine.eval.traces's rules.
Exporters send spans in batches, and a trace's spans may come in several; they wait by
trace until its root span (the one without a parent, which ends last) arrives, then the
trace becomes a run named by its sender's `service.name` (each trace by its own: a collector
may batch several pipelines' spans), and keeps it as its pipeline. A trace that is no run (a chat
call without a retriever) is logged and dropped; at most MAX_PENDING traces wait, the
oldest dropped first. Bodies in protobuf (the exporters' default) or JSON, gzipped or not,
are read; anything else is answered 400 or 415 with the reason. It is bounded: a body of
at most MAX_BODY bytes (unpacked too) nested at most MAX_DEPTH deep, a request that stops
sending for READ_SECONDS answered 408, at most MAX_THREADS requests at once (503 past it).

Its door is a key: with `keys` ({key: the user its runs belong to}; the app requires one,
`--otlp-key USER:KEY`) a request must carry one as `Authorization: Bearer KEY` or
`x-api-key: KEY`, compared in constant time; without, it is answered 401 and nothing of it
is stored.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from engine.errors import DataFormatError, EngineError
from engine.eval.spans import Span, otlp_spans
from engine.eval.traces import run_of
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

RECEIVE_VARIABLE = "FUNNEL_OTLP_RECEIVE"
PATH = "/v1/traces"
MAX_PENDING = 1_000
MAX_BODY = 64 * 1024 * 1024  # bytes of one request
MAX_DEPTH = 32  # nesting of an OTLP/JSON body (its attribute values nest a few levels)
MAX_THREADS = 16  # requests served at once; more are answered 503 at once
READ_SECONDS = 30.0  # a request that sends nothing for this long is answered 408


class TraceReceiver:
    """Spans in, runs out: each finished trace handed to `save(run, user)` (it returns the
    run's id; `user` is the one the request's key names, "" without keys)."""

    def __init__(self, save: Callable[[RunTrace, str], int], label: str = "received",
                 keys: Mapping[str, str] | None = None,
                 refused: Callable[[str], str] = lambda user: "") -> None:
        """`refused(user)`: why the key's user may no longer save runs ("" if they may;
        asked at every request, so a user removed or made a viewer since is answered
        403)."""
        self.save = save
        self.label = label
        self.keys = dict(keys or {})
        self.refused = refused
        self._pending: OrderedDict[str, list[Span]] = OrderedDict()
        self._lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def sender(self, headers: Mapping[str, str]) -> str | None:
        """The user a request's key names ("" when no key is needed), None when its key is
        missing or wrong. Every key is compared, in constant time."""
        if not self.keys:
            return ""
        sent = headers.get("x-api-key") or ""
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer":
            sent = sent or token.strip()
        found = None
        for key, user in self.keys.items():
            if hmac.compare_digest(sent.encode(), key.encode()):
                found = user
        return found

    def receive(self, request: dict, sender: str = "request", user: str = "") -> list[int]:
        """Take one OTLP/JSON request sent by `user`; returns the ids of the runs it
        finished (each saved as the user's whose request held its root span)."""
        spans = list(otlp_spans(request, sender))  # a bad request is refused whole
        finished = []
        with self._lock:
            for span in spans:
                self._pending.setdefault(span.trace_id, []).append(span)
                if not span.parent_id:
                    finished.append(self._pending.pop(span.trace_id))
            while len(self._pending) > MAX_PENDING:
                dropped, _ = self._pending.popitem(last=False)
                logger.warning("dropped trace %s: its root span never came", dropped)
        saved = []
        for spans in finished:
            # each trace named by its own sender's service.name (a collector may batch
            # several pipelines' spans in one request)
            label = next((s.pipeline for s in spans if s.pipeline), self.label)
            try:
                run = run_of(spans, sender, label)
            except DataFormatError as err:
                logger.info("a received trace is no run, dropped: %s", err)
                continue
            try:
                saved.append(self.save(run, user))
            except EngineError as err:  # sent twice (an exporter's retry): saved already
                logger.info("a received run was not saved: %s", err)
                continue
            logger.info("received a run of %s: %r", label, run.question[:60])
        return saved

    def serve(self, host: str, port: int) -> str:
        """Listen on host:port in a background thread; returns the endpoint's URL."""
        self.server = _BoundedServer((host, port), _SpanHandler)
        self.server.receiver = self
        threading.Thread(target=self.server.serve_forever, name="otlp-receiver",
                         daemon=True).start()
        url = f"http://{host}:{self.server.server_address[1]}{PATH}"
        logger.info("Receiving OpenInference traces at %s", url)
        return url

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


class _Refused(Exception):
    """A request answered `status` with `message` before its spans are read."""

    def __init__(self, status: int, message: str, close: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.close = status, message, close


class _SpanHandler(BaseHTTPRequestHandler):
    """One POST of OTLP spans: its path, its sender's key and role, its body's length,
    arrival and encoding checked in turn (the first that fails answers), then its spans
    handed to the server's TraceReceiver."""

    def setup(self) -> None:
        self.timeout = READ_SECONDS  # the socket's: a read that waits longer fails
        super().setup()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        receiver: TraceReceiver = self.server.receiver
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        try:
            user = self._sender(receiver)
            request = _decoded(self._body(), kind)
            receiver.receive(request, f"{self.client_address[0]}{PATH}", user)
        except _Refused as refused:
            self.close_connection = self.close_connection or refused.close
            return self._answer(refused.status, refused.message)
        except DataFormatError as err:
            return self._answer(400, str(err))
        except ValueError as err:
            return self._answer(415 if "Content-Type" in str(err) else 400, str(err))
        self._answer(200, "", kind)

    def _sender(self, receiver: TraceReceiver) -> str:
        """The user whose key the request carries, allowed to send spans."""
        if self.path.rstrip("/") != PATH:
            raise _Refused(404, f"POST spans to {PATH}")
        user = receiver.sender(self.headers)
        if user is None:
            logger.info("refused spans from %s: no key or a wrong one",
                        self.client_address[0])
            raise _Refused(401, "send the receiver's key as 'Authorization: Bearer KEY' "
                           "or 'x-api-key: KEY' (--otlp-key)")
        refused = receiver.refused(user)
        if refused:
            raise _Refused(403, refused)
        return user

    def _body(self) -> bytes:
        """The body as sent (gzip undone), at most MAX_BODY bytes, within READ_SECONDS."""
        given = self.headers.get("Content-Length") or ""
        if not given.isdigit():
            raise _Refused(411, "send the body's length as Content-Length")
        if int(given) > MAX_BODY:
            raise _Refused(413, f"a request holds at most {MAX_BODY} bytes")
        try:
            body = self.rfile.read(int(given))
        except TimeoutError:
            raise _Refused(408, f"the body did not arrive within {READ_SECONDS:g} s",
                           close=True) from None
        if self.headers.get("Content-Encoding", "").lower() != "gzip":
            return body
        try:
            return _gunzipped(body)
        except (OSError, EOFError, zlib.error, ValueError) as err:
            raise _Refused(400, f"the body is not gzip within {MAX_BODY} bytes: "
                           f"{err}") from None

    def _answer(self, status: int, message: str, kind: str = "") -> None:
        # an empty ExportTraceServiceResponse: no bytes in protobuf, {} in JSON
        body = (b"{}" if kind == "application/json" else b"") if status == 200 else \
            json.dumps({"message": message}).encode()
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="otlp"')
        self.send_header("Content-Type", kind if status == 200 and kind else
                         "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        logger.debug("otlp receiver: " + format, *args)


class _BoundedServer(ThreadingHTTPServer):
    """A thread per request, at most MAX_THREADS at once: one more is answered 503 from
    the listening thread and closed, so a flood cannot start threads without end."""

    daemon_threads = True
    receiver: TraceReceiver  # whose spans its handlers receive (set by TraceReceiver.serve)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(MAX_THREADS)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                                b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _depth(value: object) -> int:
    """How deep JSON `value` nests (a walk without recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                todo.extend((child, depth + 1) for child in
                            (node.values() if isinstance(node, dict) else node))
    return deepest


def _gunzipped(body: bytes) -> bytes:
    """A gzip body unpacked, refused (ValueError) past MAX_BODY bytes (a gzip bomb)."""
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = unpacker.decompress(body, MAX_BODY)
    if unpacker.unconsumed_tail:
        raise ValueError(f"it unpacks to more than {MAX_BODY} bytes")
    return out + unpacker.flush()


def _decoded(body: bytes, kind: str) -> dict:
    """An OTLP request body as OTLP/JSON."""
    if kind == "application/json":
        deep = ValueError(f"the body nests deeper than {MAX_DEPTH} levels; an OTLP request "
                          "nests a few")
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"the body is not JSON: {err}") from None
        except RecursionError:
            raise deep from None
        if _depth(request) > MAX_DEPTH:
            raise deep
        return request
    if kind == "application/x-protobuf":
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        try:
            return MessageToDict(ExportTraceServiceRequest.FromString(body))
        except DecodeError as err:
            raise ValueError(f"the body is not an ExportTraceServiceRequest: {err}") from None
    raise ValueError(f"Content-Type {kind!r}: send application/x-protobuf or "
                     "application/json")
