"""Shared fixtures: a private data directory per test and a tiny hand-made corpus."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from engine.documents import Corpus, Document

# where browser tests leave their screenshots (docs/shots.py crops the docs' pictures from them)
ARTIFACTS = Path(os.environ.get("FUNNEL_ARTIFACTS",
                                Path(__file__).resolve().parent.parent / "test-artifacts"))
END_TO_END = ("live", "browser", "server", "training", "docs", "repro")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test using the browser is marked `browser`, and every end-to-end test `slow`, so
    `-m "not slow"` (the inner loop) leaves them all out. The tests of a module marked
    `early` go first: under pytest-xdist's `--dist loadfile` a module is one worker's
    unit, and the longest one started last would run on alone after the rest."""
    for item in items:
        if "browser" in item.fixturenames:
            item.add_marker(pytest.mark.browser)
        if any(item.get_closest_marker(name) for name in END_TO_END):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("early") is None)  # stable


@pytest.fixture(autouse=True)
def _pages_closed(request):
    """A browser test's pages closed once it ends. The browser lasts the module; a page
    left open goes on answering its app's timers (a running job's progress every 2 s) and
    drawing while the module's later tests run."""
    browser = request.getfixturevalue("browser") if "browser" in request.fixturenames \
        else None
    yield
    for context in browser.contexts if browser is not None else ():
        context.close()


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, one per test module (no sandbox as root; no background calls
    on a closed net); skipped, saying so, where it or playwright is missing. Module-scoped,
    not session-scoped: Playwright's sync API keeps an event loop in this thread while it
    is open, which other modules' asyncio code must not meet."""
    import shutil
    from pathlib import Path

    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install playwright (browser tests)")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Debian chromium missing: apt-get install -y chromium")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--disable-quic"])
        yield launched
        launched.close()


# cache families that hold conversions of the packaged models (SmolLM2's GGUF as
# safetensors, the reader and MiniLM exported to ONNX), keyed by the model alone
MODEL_KINDS = ("models", "onnx", "onnx-encoder")


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch, models_dir, request):
    """Every test gets its own cache directory, so no test sees another's caches, but for
    the packaged models' conversions: those made by earlier tests are linked in (not for a
    test marked `fresh_data`), and those this test made are kept for the later ones
    (`share_model_caches`)."""
    path = tmp_path / "data"
    monkeypatch.setenv("FUNNEL_DATA_DIR", str(path))
    if not request.node.get_closest_marker("fresh_data"):
        share_model_caches(models_dir, path)
    yield path
    share_model_caches(path, models_dir, verified=True, unless_naming=tmp_path)


def share_model_caches(source: Path, target: Path, verified: bool = False,
                       unless_naming: Path | None = None) -> None:
    """Hard-link into data directory `target` the packaged models' conversions (MODEL_KINDS)
    that `source` holds and `target` lacks: about 45 s each test reading with the packaged
    reader would spend converting and exporting them again. Each entry is linked under a
    temporary name renamed into place; with `verified`, only one that passes its checksums
    (made whole, and not damaged by the test), as a test's entries are kept for the session,
    and none whose key names a folder under `unless_naming` (an export of a model the test
    made in its own folder, of no use to another test). engine.cache never writes into a
    finished entry, and checks each one it loads."""
    import shutil

    from engine.cache import MANIFEST, CacheInvalid, verify_entry

    for kind in MODEL_KINDS:
        for entry in sorted((source / "cache" / kind).glob("*/")):
            final = target / "cache" / kind / entry.name
            if final.exists() or entry.name.startswith("."):
                continue
            if verified:
                try:
                    verify_entry(entry)
                except CacheInvalid:
                    continue  # damaged by the test: not kept
                if unless_naming is not None and str(unless_naming) in (
                        entry / MANIFEST).read_text(encoding="utf-8"):
                    continue
            partial = final.with_name(f".{entry.name}.linking-{os.getpid()}")
            shutil.copytree(entry, partial, copy_function=os.link, dirs_exist_ok=True)
            try:
                partial.rename(final)
            except OSError:  # another worker linked it first: theirs is the same files
                shutil.rmtree(partial, ignore_errors=True)


# what app.main sets for its whole process (engine.allowed's confinement, the umask, Gradio's
# upload folder, the trusted proxies); a test that starts it must not leave them set
PROCESS_ENV = ("GRADIO_TEMP_DIR", "FORWARDED_ALLOW_IPS", "FUNNEL_MAX_UPLOAD_MB")


@pytest.fixture(autouse=True)
def process_state():
    """Put back what app.main sets for its process, after each test."""
    import os

    from engine import allowed

    confined = allowed.current() if allowed.is_confined() else None
    env = {name: os.environ.get(name) for name in PROCESS_ENV}
    mask = os.umask(0o022)
    os.umask(mask)
    yield
    allowed.confine(confined)
    os.umask(mask)
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


TINY_DOCS = (
    ("Georges Seurat", "Georges Seurat was a French painter. He devised pointillism. "
     "His best known painting is A Sunday Afternoon."),
    ("A Sunday Afternoon", "A Sunday Afternoon on the Island of La Grande Jatte was painted "
     "by Georges Seurat from 1884 to 1886."),
    ("Pointillism", "Pointillism is a technique of painting in which small dots of colour "
     "are applied in patterns. Georges Seurat and Paul Signac developed it."),
    ("Paul Signac", "Paul Signac was a French painter who worked with Seurat on Pointillism."),
    ("Danube", "The Danube is a river that flows through Budapest and Vienna."),
    ("Budapest", "Budapest is the capital of Hungary. The Danube flows through it."),
    ("Vienna", "Vienna is the capital of Austria, on the Danube."),
    ("Photosynthesis", "Photosynthesis lets plants turn light into chemical energy."),
)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    """One data directory for model caches, so SmolLM2 is converted once per run: under
    pytest-xdist every worker's (the parent of the workers' base folders; engine.cache's
    entries are renamed into place whole, so two workers building one keep the first)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("models")
    shared = tmp_path_factory.getbasetemp().parent / "models"
    shared.mkdir(exist_ok=True)
    return shared


@contextlib.contextmanager
def exclusive(lock: Path):
    """Held by one process at a time (pytest-xdist's workers): an flock on file `lock`."""
    import fcntl

    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def packaged_caches(models_dir):
    """`seed(data)`: the packaged models' conversions (SmolLM2's GGUF as safetensors, it
    and MiniLM exported to ONNX) linked into data directory `data`, made once per session
    in the session's model cache: a served app started over `data` loads them instead of
    making them again (about 45 s of its start and first answer). Hard links: nothing
    writes into a cache entry once it is made (engine.cache builds a new one beside it)."""
    from engine.models.gguf import smollm2_dir
    from engine.models.onnx_encoder import onnx_bi_encoder
    from engine.models.onnx_export import onnx_model_dir

    # one worker converts while the other waits, then finds them made
    with pytest.MonkeyPatch.context() as patch, exclusive(models_dir / ".converting"):
        patch.setenv("FUNNEL_DATA_DIR", str(models_dir))
        smollm2_dir()
        onnx_model_dir("smollm2", "fp32")
        onnx_bi_encoder("minilm", "fp32")
    return lambda data: share_model_caches(models_dir, data)


@pytest.fixture
def shared_models(models_dir, monkeypatch):
    """The session's model cache as the data directory (seeded torch)."""
    import torch

    monkeypatch.setenv("FUNNEL_DATA_DIR", str(models_dir))
    torch.manual_seed(0)
    return models_dir


@pytest.fixture
def echo():
    """The toy paradigm 'echo' registered for one test (one registry line, as a real one)."""
    from engine.paradigms import registry
    from tests.fakes import ECHO

    registry.register(ECHO)
    yield ECHO
    registry.unregister(ECHO.name)


@pytest.fixture
def tiny_corpus() -> Corpus:
    """Eight short documents: a painting cluster, a river cluster and a loner."""
    return Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                for t, x in TINY_DOCS))


def torch_single_thread():
    """One torch thread for a test: on a shared 2-core machine two threads spin and run
    10-30x slower. Modules opt in with `pytest.fixture(autouse=True)(torch_single_thread)`."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_causal_lm():
    """(tokenizer, model): a randomly initialised 2-layer Llama with a byte-level BPE
    tokenizer trained here on the tiny corpus, ChatML tokens included. Seeded; no files."""
    pytest.importorskip("torch")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([text for _, text in TINY_DOCS] * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    return tokenizer, random_llama(tokenizer)


def random_llama(tokenizer, hidden_size: int = 32):
    """A seeded random 2-layer Llama over `tokenizer` (4 heads, 2 key/value heads), eager
    attention, in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                         intermediate_size=2 * hidden_size, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    model.set_attn_implementation("eager")
    return model.eval()


@pytest.fixture(scope="session")
def tiny_classifier_base(tmp_path_factory):
    """A folder holding a randomly initialised 2-layer BERT sequence classifier (hidden 32)
    with the packaged MiniLM's tokenizer: the classifier's training and loading logic runs
    on it in seconds. Seeded."""
    torch = pytest.importorskip("torch")
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from engine.models.packaged import minilm_path

    folder = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64,
                        num_hidden_layers=2, num_attention_heads=2, num_labels=2,
                        max_position_embeddings=512)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture
def prepared(tiny_corpus, tmp_path, echo):
    """(the tiny corpus's finished preparation, a sessions store)."""
    from engine.store.sessions import SessionStore
    from tests.fakes import fake_preparation

    store = SessionStore(tmp_path / "s.duckdb")
    yield fake_preparation(tiny_corpus, {"corpus": lambda p: tiny_corpus}).run(), store
    store.close()


@pytest.fixture
def explorer(prepared):
    from engine.service.explorer import Explorer

    return Explorer(*prepared)


@pytest.fixture
def interrupted(explorer, tmp_path, monkeypatch):
    """(explorer, evaluation id, the question ids echo answered): an evaluation of five
    questions whose process died after two were stored, as the next start finds it."""
    from engine.store.evaluations import EvaluationStore
    from tests.fakes import EchoParadigm, qa_file

    qa = qa_file(tmp_path / "qa.jsonl", n=5)
    real, asked = EchoParadigm.run, []

    def counting(self, question):
        asked.append(question.id)
        if len(asked) == 2:  # the process dies after this question: stop the job there
            for job in explorer._jobs._jobs.values():
                job.cancel()
        return real(self, question)

    monkeypatch.setattr(EchoParadigm, "run", counting)
    evaluation = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1}}, name="five")
    explorer.evaluations.wait_for_evaluation(evaluation, 60)
    store = explorer._evaluation_store.store
    # a killed process leaves its evaluation running, found so by the next start
    store.execute("UPDATE evaluations SET state = 'running', summary = NULL, finished = "
                  "NULL WHERE id = ?", [evaluation])
    del explorer._jobs._jobs[evaluation]
    assert EvaluationStore(store).mark_interrupted() == 1
    return explorer, evaluation, asked


@pytest.fixture(scope="module")
def users_file(tmp_path_factory) -> Path:
    """A users file with one user per role, each named after the role, and a second
    annotator ("annotator2", the annotator's password)."""
    path = tmp_path_factory.mktemp("users") / "users.json"
    from engine.store.users import ROLES, Users
    from tests.logins import PASSWORDS

    users = Users(path)
    for role in ROLES:
        users.add(role, PASSWORDS[role], role)
    users.add("annotator2", PASSWORDS["annotator"], "annotator")  # a second person's work
    return path


@pytest.fixture(scope="module")
def logged_in_app(users_file, tmp_path_factory):
    """(url, the served gr.Blocks, a trace JSON): the app over the tiny corpus and the toy paradigm
    served in this process with logins on (Gradio's login, the door, the gate)."""
    from app.login import request_user
    from app.ui import build_app, serve
    from engine.documents import Corpus, Document
    from engine.paradigms import registry
    from engine.service.door import Door
    from engine.service.explorer import Explorer
    from engine.service.preparation import Preparation
    from engine.service.tasks import Task
    from engine.store.sessions import SessionStore
    from engine.store.users import Users
    from tests.conftest import TINY_DOCS
    from tests.fakes import ECHO, free_port

    root = tmp_path_factory.mktemp("roles")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FUNNEL_DATA_DIR", str(root / "data"))
        registry.register(ECHO)
        corpus = Corpus("tiny", tuple(Document(t, t, x) for t, x in TINY_DOCS))
        prep = Preparation("tiny", dense=False)
        prep.tasks = {"corpus": Task("corpus", "corpus 'tiny'", lambda progress: corpus)}
        prep.run()
        door = Door(Users(users_file), who=request_user)
        store = SessionStore(root / "sessions.duckdb")
        explorer = Explorer(prep, store, door=door)
        with door.acting_as(Users(users_file).get("admin")):
            trace = explorer.runs.run("Who painted La Grande Jatte?", "echo").to_json()
        demo = build_app(explorer)
        port = free_port()
        serve(demo, door, server_name="127.0.0.1", server_port=port,
              prevent_thread_lock=True, quiet=True)
        try:
            yield f"http://127.0.0.1:{port}", demo, trace
        finally:
            demo.close()
            store.close()
            registry.unregister(ECHO.name)
