"""A pipeline's traces in, live: the OpenTelemetry SDK's own OTLP/HTTP exporter (protobuf)
sends runs to the receiver, which saves each finished trace as a run; JSON bodies, traces
split across requests and bad bodies too."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from engine.service.otel import Tracing
from engine.service.receiver import TraceReceiver
from tests.test_traces import _otlp_json, _ours


@pytest.fixture
def receiver():
    saved = []

    def save(run, user):
        saved.append(run)
        return len(saved)

    receiver = TraceReceiver(save)
    url = receiver.serve("127.0.0.1", 0)
    yield receiver, url, saved
    receiver.close()


def _post(url: str, body: bytes, kind: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, body, {"Content-Type": kind}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_runs_sent_by_the_sdks_otlp_exporter_are_saved_as_runs(receiver):
    _, url, saved = receiver
    tracing = Tracing(url.removesuffix("/v1/traces"))  # protobuf over HTTP, in a batch
    for run in _ours():
        tracing.send(run)
    tracing.flush()
    assert [(r.question, r.answer, r.paradigm) for r in saved] == [
        (run.question, run.answer, "funnel-explorer") for run in _ours()]  # service.name
    assert [[c.unit.id for c in s.candidates] for s in saved[0].stages] == [
        [c.unit.id for c in s.candidates] for s in _ours()[0].stages]


def test_a_trace_split_across_requests_becomes_a_run_when_its_root_arrives(receiver):
    _, url, saved = receiver
    request = json.loads(_otlp_json(_ours()[0]))
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = [s for s in spans if not s.get("parentSpanId")]
    children = [s for s in spans if s.get("parentSpanId")]
    for part in (children, root):
        request["resourceSpans"][0]["scopeSpans"][0]["spans"] = part
        assert _post(url, json.dumps(request).encode(), "application/json") == (200, b"{}")
        assert len(saved) == (part is root)
    assert [s.name for s in saved[0].stages] == ["first", "kept"]


@pytest.mark.parametrize(("body", "kind", "status", "says"), [
    (b"{nope", "application/json", 400, "not JSON"),
    (b'{"spans": []}', "application/json", 400, "not an OTLP request"),
    (b"\xff\x00garbage", "application/x-protobuf", 400, "not an ExportTraceServiceRequest"),
    (b"hello", "text/plain", 415, "send application/x-protobuf or application/json"),
])
def test_a_bad_body_is_answered_with_the_reason_and_saves_nothing(receiver, body, kind,
                                                                   status, says):
    _, url, saved = receiver
    code, answer = _post(url, body, kind)
    assert code == status and says in json.loads(answer)["message"]
    assert saved == []


def test_one_request_of_two_pipelines_saves_each_run_under_its_own_service(receiver):
    """A collector batches several pipelines' spans in one request: each trace is named by
    its own resource's service.name (the request's one name, or "received", before)."""
    from tests.test_import_whole import LLAMAINDEX, as_pipeline

    rec, _, saved = receiver
    text = LLAMAINDEX.read_text(encoding="utf-8").splitlines()[0]
    mine = json.loads(text)
    theirs = json.loads(as_pipeline(text, "haystack-rag"))
    both = {"resourceSpans": mine["resourceSpans"] + theirs["resourceSpans"]}
    assert rec.receive(both) == [1, 2]
    assert sorted((r.paradigm, r.config["pipeline"]) for r in saved) == [
        ("haystack-rag", "haystack-rag"), ("llamaindex-rag", "llamaindex-rag")]


def test_with_keys_spans_without_the_right_one_are_refused_401_and_nothing_is_stored():
    """Issue 54: the receiver's door. A key is sent as a bearer token or x-api-key; a
    request without one, or with a wrong one, is answered 401 and nothing of it is saved;
    each run belongs to the user its key names."""
    saved = []

    def save(run, user):
        saved.append((run.question, user))
        return len(saved)

    keys = {"key-of-ann-0123456789": "ann", "key-of-bob-0123456789": "bob"}
    receiver = TraceReceiver(save, keys=keys)
    url = receiver.serve("127.0.0.1", 0)
    body = _otlp_json(_ours()[0]).encode()
    try:
        for headers in ({}, {"x-api-key": "key-of-ann-012345678"},
                        {"Authorization": "Basic key-of-ann-0123456789"},
                        {"Authorization": "Bearer "}):
            request = urllib.request.Request(url, body, {"Content-Type": "application/json",
                                                         **headers}, method="POST")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 401
            assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")
            assert "x-api-key" in json.loads(refused.value.read())["message"]
        assert saved == []
        for headers in ({"Authorization": "Bearer key-of-bob-0123456789"},
                        {"x-api-key": "key-of-ann-0123456789"}):
            request = urllib.request.Request(url, body, {"Content-Type": "application/json",
                                                         **headers}, method="POST")
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert answer.status == 200
    finally:
        receiver.close()
    assert [user for _, user in saved] == ["bob", "ann"]


def test_a_bad_length_a_gzip_bomb_or_a_user_no_longer_allowed_is_answered_not_read():
    """With a key: a request without a numeric Content-Length is answered 411, a gzip body
    that unpacks past the limit 400, and one whose key's user may no longer save runs 403;
    nothing is saved."""
    import gzip
    import socket

    from engine.service import receiver as receiving

    saved, allowed = [], {"ann": True}
    receiver = TraceReceiver(lambda run, user: saved.append(run) or len(saved),
                             keys={"key-of-ann-0123456789": "ann"},
                             refused=lambda user: "" if allowed[user] else "no longer")
    url = receiver.serve("127.0.0.1", 0)
    host, port = url.split("//")[1].split("/")[0].split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            raw.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nx-api-key: "
                        b"key-of-ann-0123456789\r\nContent-Length: -1\r\n\r\n")
            assert raw.recv(200).startswith(b"HTTP/1.0 411")
        bomb = gzip.compress(b"{" + b" " * (receiving.MAX_BODY + 10) + b"}")
        request = urllib.request.Request(url, bomb, {
            "Content-Type": "application/json", "Content-Encoding": "gzip",
            "x-api-key": "key-of-ann-0123456789"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 400 and "unpacks to more than" in refused.value.read(
            ).decode()
        allowed["ann"] = False
        request = urllib.request.Request(url, _otlp_json(_ours()[0]).encode(), {
            "Content-Type": "application/json", "x-api-key": "key-of-ann-0123456789"},
            method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
    finally:
        receiver.close()
    assert saved == []


def test_a_deep_body_a_stalled_sender_and_a_flood_are_bounded(receiver, monkeypatch):
    """Issue 67: JSON nested past MAX_DEPTH is answered 400 (a million levels too, never a
    crashed thread); a request that stops sending its body is answered 408 after
    READ_SECONDS; past MAX_THREADS requests at once, one more is answered 503 at once."""
    import socket

    from engine.service import receiver as receiving

    _, url, saved = receiver
    for depth in (receiving.MAX_DEPTH + 1, 1_000_000):
        status, body = _post(url, b"[" * depth + b"]" * depth, "application/json")
        assert status == 400 and b"nests deeper than 32 levels" in body
    host, port = url.split("//")[1].split("/")[0].split(":")
    monkeypatch.setattr(receiving, "READ_SECONDS", 0.3)  # the class reads it at serve
    stalled_receiver = TraceReceiver(lambda run, user: 0)
    stalled = stalled_receiver.serve("127.0.0.1", 0).split("//")[1].split("/")[0]
    try:
        with socket.create_connection((stalled.split(":")[0], int(stalled.split(":")[1])),
                                      timeout=10) as raw:
            raw.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        b"application/json\r\nContent-Length: 100\r\n\r\n{")
            assert raw.recv(200).split(b"\r\n")[0].endswith(b"408 Request Timeout")
    finally:
        stalled_receiver.close()
    monkeypatch.setattr(receiving, "MAX_THREADS", 2)
    flooded = TraceReceiver(lambda run, user: 0)
    where = flooded.serve("127.0.0.1", 0).split("//")[1].split("/")[0].split(":")
    held = []
    try:
        for _ in range(2):  # two senders that hold their threads (slowly sending)
            raw = socket.create_connection((where[0], int(where[1])), timeout=10)
            raw.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
            held.append(raw)
        with socket.create_connection((where[0], int(where[1])), timeout=10) as third:
            third.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
                          b"{}")
            assert third.recv(200).startswith(b"HTTP/1.1 503")
    finally:
        for raw in held:
            raw.close()
        flooded.close()
    assert saved == []
