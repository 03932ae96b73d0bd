"""What a request may name (engine.allowed, issue 67): the allow file read and refused where
it is wrong; in a confined process (the app) every option naming an endpoint, a model's
folder or hub id, a Ray cluster, a Qdrant location or a QA file is one of the operator's
names or refused by name, before anything connects; a key goes to its own endpoint alone.
A listener that must receive nothing stands where a request points."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine import allowed
from engine.errors import ConfigError
from engine.paradigms.registry import make_config

ALLOW = """
[endpoints.good]
url = "http://127.0.0.1:{port}/v1"
key_env = "GOOD_KEY"

[endpoints.keyless]
url = "http://127.0.0.1:{port}/v1"

[models]
mine = "{folder}"

[ray]
cluster = "ray://head:10001"

[qdrant]
main = "http://127.0.0.1:6333"
"""


class Listener(BaseHTTPRequestHandler):
    """Counts every request it receives, with its Authorization header; answers a
    completion so an allowed endpoint can be used."""

    received: list[tuple[str, str]] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Listener.received.append((self.path, self.headers.get("Authorization", "")))
        data = json.dumps({"choices": [{"text": " Danube", "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST  # noqa: N815

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def listener():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Listener.received = []
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def allow_file(tmp_path, listener, monkeypatch):
    monkeypatch.setenv("GOOD_KEY", "the-good-key")
    path = tmp_path / "allow.toml"
    path.write_text(ALLOW.format(port=listener, folder=tmp_path / "model"))
    return path


def test_the_allow_file_names_endpoints_models_ray_and_qdrant(allow_file, tmp_path):
    names = allowed.Allowed.read(allow_file)
    assert names.names("endpoints") == ("good", "keyless")
    assert names.endpoints["good"].key == "the-good-key" and names.endpoints["keyless"].key == ""
    assert names.models == {"mine": str(tmp_path / "model")}
    assert names.ray == {"cluster": "ray://head:10001"}
    assert "the-good-key" not in repr(names)  # a key never shows in a log line


@pytest.mark.parametrize("text,message", [
    ("[models]\nminilm = '/x'", "'minilm' is a word the options understand themselves"),
    ("[endpoints.x]\nurl = 'ftp://host'", "'ftp://host' is not an http(s) URL"),
    ("[endpoints.x]\nurl = 'http://h/v1'\nkey = 'inline'", "unknown key(s) key; it takes url"),
    ("[endpoints.x]\nurl = 'http://h/v1'\nkey_env = 'UNSET_KEY_VAR'", "$UNSET_KEY_VAR, which"),
    ("[servers]\na = 'b'", "unknown table(s) servers"),
    ("[models]\n'a b' = '/x'", "name 'a b' is not 1-40 letters"),
    ("[models\n", "is not TOML"),
])
def test_a_wrong_allow_file_is_refused_naming_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "allow.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("$", r"\$")):
        allowed.Allowed.read(path)


@pytest.mark.parametrize("paradigm,options,named", [
    ("flat", {"reader": {"endpoint": "http://127.0.0.1:7899/v1"}}, "reader.endpoint="),
    ("flat", {"reranker": "cross-encoder/ms-marco-MiniLM-L-6-v2"}, "reranker="),
    ("flat", {"bi_encoder": "/etc"}, "bi_encoder="),
    ("flat", {"prune": {"scorer": "/srv/any"}}, "prune.scorer="),
    ("flat", {"reader": {"model": "/srv/any"}}, "reader.model="),
    ("funnel", {"preranker": "org/model"}, "preranker="),
    ("drrag", {"classifier": "/tmp"}, "classifier="),
    ("best", {"classifier": "org/classifier"}, "classifier="),
])
def test_a_confined_process_refuses_every_place_a_request_names(paradigm, options, named):
    make_config(paradigm, options)  # the command line is open: taken as it is
    with allowed.confined(), pytest.raises(ConfigError) as refused:
        make_config(paradigm, options)
    message = str(refused.value)
    assert message.startswith(named) and "never chooses where the server connects" in message
    assert "--allow FILE" in message


def test_a_confined_process_takes_words_and_allowed_names(allow_file):
    with allowed.confined(allowed.Allowed.read(allow_file)):
        config = make_config("flat", {"reranker": "mine", "bi_encoder": "minilm",
                                      "prune": {"scorer": "trained"},
                                      "reader": {"endpoint": "good", "model": "served-name"}})
        assert config.reranker == "mine" and config.reader.endpoint == "good"
        with pytest.raises(ConfigError, match=r"Pick one the operator allowed by name "
                                              r"\(good, keyless\)"):
            make_config("flat", {"reader": {"endpoint": "http://elsewhere/v1"}})


def test_a_models_folder_resolves_only_by_its_allowed_name(allow_file, tmp_path):
    from engine.models.locations import resolve
    from engine.paths import data_dir

    own = str(data_dir() / "cache" / "preranker" / "v1")
    with allowed.confined(allowed.Allowed.read(allow_file)):
        assert resolve("mine") == str(tmp_path / "model")
        assert resolve(own) == own  # a model trained here: the engine's own folder
        with pytest.raises(ConfigError, match="model='/srv/elsewhere' is refused"):
            resolve("/srv/elsewhere")
    assert resolve("/srv/elsewhere") == "/srv/elsewhere"  # open again


def test_a_key_goes_to_its_own_endpoint_alone(allow_file, monkeypatch):
    from engine.readers.backends import shared_generator

    monkeypatch.setenv("FUNNEL_API_KEY", "the-command-lines-key")
    with allowed.confined(allowed.Allowed.read(allow_file)):
        assert shared_generator("m", "good").generate("Q").text == " Danube"
        shared_generator("m", "keyless").generate("Q")
        with pytest.raises(ConfigError, match="endpoint='http://127.0.0.1"):
            shared_generator("m", "http://127.0.0.1:1/v1")
    assert [auth for _, auth in Listener.received] == ["Bearer the-good-key", ""]


def test_ray_qdrant_and_qa_files_by_name_only(allow_file, tmp_path):
    from engine.service.datasets import dataset_of
    from engine.service.serving import serving_of

    secret = tmp_path / "qa.jsonl"
    secret.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    with allowed.confined(allowed.Allowed.read(allow_file)):
        with pytest.raises(ConfigError, match="ray='ray://10.0.0.9:10001' is refused"):
            serving_of("ray://10.0.0.9:10001", 2, 0, "", "")
        with pytest.raises(ConfigError, match="qdrant='http://10.0.0.9:6333' is refused"):
            serving_of("", 2, 0, "http://10.0.0.9:6333", "")
        assert serving_of("", 2, 0, "main", "c")["qdrant"] == "http://127.0.0.1:6333"
        with pytest.raises(ConfigError, match="neither a listed dataset nor a file uploaded"):
            dataset_of(str(secret))
    assert dataset_of(str(secret)).questions[0].text == "q?"  # the command line reads it


@pytest.mark.live
def test_a_viewers_run_naming_a_listener_connects_nowhere(logged_in_app, listener):
    """Issue 67's attack: a viewer's /run whose reader endpoint is a listener here. The
    app refuses it by name and the listener receives nothing, whatever the role."""
    from gradio_client.exceptions import AppError

    from tests.logins import client_of

    url, _, _ = logged_in_app
    target = f"http://127.0.0.1:{listener}/v1"
    with allowed.confined():
        for role in ("viewer", "admin"):
            client = client_of(url, role)
            with pytest.raises(AppError, match="reader.endpoint=.*is refused"):
                client.predict("Who painted it?", "flat",
                               json.dumps({"reader": {"endpoint": target}}), api_name="/run")
            with pytest.raises(AppError, match="reranker=.*is refused"):
                client.predict("Who painted it?", "flat",
                               json.dumps({"reranker": f"{target}/model"}), api_name="/run")
    assert Listener.received == []
