"""The server log holds the app's and the engine's lines only: a refusal in one line, a bug
with its traceback, long work as progress lines at an interval, and none of the libraries'
chatter (bm25s' DEBUG lines, tqdm bars, transformers' load reports and tensor-parallel
notes)."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap

import pytest

from engine.errors import ConfigError, log_failure
from engine.progress import LoggedProgress
from tests.fakes import Clock


def test_a_refusal_is_one_line_and_a_bug_keeps_its_traceback(caplog):
    log = logging.getLogger("engine.test")
    caplog.set_level(logging.INFO)
    try:
        raise ConfigError("notes.bin: no text column\n(give id, title, text)")
    except ConfigError as err:
        log_failure(log, "preparing corpus 'notes'", err)
    try:
        {}["missing"]
    except KeyError as err:
        log_failure(log, "preparing corpus 'other'", err)
    refusal, bug = caplog.records
    assert refusal.levelname == "WARNING" and refusal.exc_info is None
    assert refusal.getMessage() == ("preparing corpus 'notes' failed: notes.bin: no text "
                                    "column (give id, title, text)")
    assert bug.levelname == "ERROR" and bug.exc_info[0] is KeyError
    assert "Traceback" in caplog.text and "KeyError: 'missing'" in caplog.text


def test_progress_is_logged_at_an_interval_with_its_rate_and_time_left(caplog):
    clock, passed = Clock(), []
    progress = LoggedProgress(logging.getLogger("engine.test"), "Dense: encoding", "passages",
                              then=lambda done, total: passed.append(done), every=30,
                              clock=clock)
    caplog.set_level(logging.INFO)
    for seconds, done in ((10, 1_024), (29, 2_048), (40, 4_096), (50, 5_120), (80, 8_192)):
        clock.now = 100.0 + seconds
        progress(done, 44_000)
    clock.now = 100.0 + 2_580
    progress(44_000, 44_000)
    assert passed == [1_024, 2_048, 4_096, 5_120, 8_192, 44_000]  # the status line's, each
    assert [r.getMessage() for r in caplog.records] == [
        "Dense: encoding: 4,096 of 44,000 passages (9%), 102.4/s, about 6 min left",
        "Dense: encoding: 8,192 of 44,000 passages (19%), 102.4/s, about 6 min left",
        "Dense: encoding: 44,000 of 44,000 passages (100%), 17.1/s, done in 43 min"]


def test_work_shorter_than_the_interval_logs_nothing(caplog):
    clock = Clock()
    progress = LoggedProgress(logging.getLogger("engine.test"), "Clustering", "documents",
                              every=30, clock=clock)
    caplog.set_level(logging.INFO)
    for done in range(1, 9):
        clock.now += 1
        progress(done, 8)
    assert caplog.records == []


def test_time_paused_in_the_wrapped_callback_does_not_count_towards_the_rate(caplog):
    clock = Clock()

    def paused(done: int, total: int) -> None:  # a long build waiting for a short one
        clock.now += 600 if done == 2_000 else 0

    progress = LoggedProgress(logging.getLogger("engine.test"), "Dense: encoding", "passages",
                              then=paused, every=30, clock=clock)
    caplog.set_level(logging.INFO)
    for done in (1_000, 2_000):
        clock.now += 10
        progress(done, 10_000)
    assert [r.getMessage() for r in caplog.records] == [  # not 2,000 in 620 s: 3.2/s
        "Dense: encoding: 2,000 of 10,000 passages (20%), 100.0/s, about 80 s left"]


# Work that used to put library output into the server log: a BM25 index (bm25s logs DEBUG
# lines at any level), clustering (tqdm bars), the pair classifier over a bare encoder
# (transformers' "layers were not sharded"), a sequence classifier whose head is new
# (transformers' LOAD REPORT table in terminal colours) and the reader's conversion from GGUF
# (transformers' bar over the tensors; of the packaged GGUF cut down, `small_gguf`).
NOISY_WORK = textwrap.dedent("""
    import sys
    from pathlib import Path

    from app.main import configure_logging

    configure_logging()
    from engine.index.bm25 import bm25_index
    from engine.models.gguf import convert_gguf
    from engine.models.loading import load_sequence_classifier
    from engine.models.pair_model import new_pair_model
    from engine.documents import Corpus, Document
    from engine.units.build import UnitConfig
    from engine.units.cluster import clustering
    from tests.conftest import TINY_DOCS

    corpus = Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                  for t, x in TINY_DOCS))
    assert bm25_index(corpus, UnitConfig("documents")).search("Seurat", 2)
    clustering(corpus, "funnelrag", 64)
    new_pair_model(sys.argv[1])
    load_sequence_classifier(sys.argv[1], "test")
    convert_gguf(Path(sys.argv[2]), Path(sys.argv[1]) / "smollm2")  # as a first start's
""")


@pytest.fixture
def small_gguf(tmp_path):
    """The packaged SmolLM2 GGUF cut down to its first block and its first 1,024 tokens (with
    the merges among them): the same architecture, tokenizer kind, tensor types and metadata,
    so transformers converts it through the same code, bar and notes included, in seconds
    rather than the 20 s its 49,152-token vocabulary takes it to parse three times."""
    gguf = pytest.importorskip("gguf")
    from engine.models.packaged import smollm2_gguf_path

    tokens = 1024
    reader = gguf.GGUFReader(smollm2_gguf_path())
    fields = reader.fields
    vocab = fields["tokenizer.ggml.tokens"].contents()[:tokens]
    known = set(vocab)
    merges = [m for m in fields["tokenizer.ggml.merges"].contents()
              if m.replace(" ", "") in known and all(part in known for part in m.split(" "))]
    cut = {"llama.block_count": 1, "llama.vocab_size": tokens, "tokenizer.ggml.tokens": vocab,
           "tokenizer.ggml.merges": merges,
           "tokenizer.ggml.token_type": fields["tokenizer.ggml.token_type"].contents()[:tokens]}
    path = tmp_path / "smollm2-cut.gguf"
    writer = gguf.GGUFWriter(path, arch="llama", endianess=reader.endianess)
    for field in fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by the writer itself
        kind = field.types[0]
        writer.add_key_value(field.name, cut.get(field.name, field.contents()), kind,
                             sub_type=field.types[-1] if kind == gguf.GGUFValueType.ARRAY
                             else None)
    tensors = [(t, t.data[:tokens] if t.name == "token_embd.weight" else t.data)
               for t in reader.tensors
               if not t.name.startswith("blk.") or t.name.startswith("blk.0.")]
    for tensor, data in tensors:  # quantised rows as they are: one row a token
        writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes,
                               tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
    return path


@pytest.mark.slow
def test_a_gguf_read_once_converts_to_the_same_tensors_and_leaves_gguf_py_as_it_was(
        small_gguf, tmp_path):
    """engine.models.gguf.read_once memoises gguf-py's reader and tensor-name map for one
    conversion (timed in docs/benchmarks/engineering.md, "The packaged models'
    conversions"); the checkpoint it makes is the one transformers makes alone."""
    import gguf
    import torch
    from safetensors.torch import load_file

    from engine.models.gguf import convert_gguf, read_once

    made = gguf.GGUFReader, gguf.get_tensor_name_map
    with read_once():
        assert gguf.GGUFReader(str(small_gguf)) is gguf.GGUFReader(str(small_gguf))
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == made
    tensors = {}
    for once in (True, False):
        convert_gguf(small_gguf, tmp_path / str(once), once=once)
        tensors[once] = load_file(next((tmp_path / str(once)).glob("*.safetensors")))
    assert tensors[True].keys() == tensors[False].keys() and all(
        torch.equal(tensors[True][k], tensors[False][k]) for k in tensors[True])
    assert ((tmp_path / "True" / "tokenizer.json").read_text()
            == (tmp_path / "False" / "tokenizer.json").read_text())
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == made


@pytest.fixture
def bare_encoder(tmp_path):
    """A folder holding a tiny BERT encoder without a classification head."""
    torch = pytest.importorskip("torch")
    from transformers import AutoTokenizer, BertConfig, BertModel

    from engine.models.packaged import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()), local_files_only=True)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32,
                         intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         max_position_embeddings=512)).save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    return tmp_path / "bert"


@pytest.mark.slow
def test_the_server_log_shows_only_our_lines_while_indexes_and_models_load(bare_encoder,
                                                                           small_gguf):
    done = subprocess.run([sys.executable, "-c", NOISY_WORK, str(bare_encoder),
                           str(small_gguf)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    for noise in ("bm25s", "%|", "LOAD REPORT", "not sharded", "\x1b["):
        assert noise not in log
    lines = log.splitlines()
    assert any(line.startswith("INFO engine.index.bm25: BM25: indexing 8") for line in lines)
    ours = re.compile(r"(DEBUG|INFO|WARNING|ERROR) (app|engine)(\.\w+)*: ")
    assert [line for line in lines if not ours.match(line)] == []


def test_loading_indexes_logs_one_info_line_per_kind_and_corpus(caplog):
    """A session loads an index kind over many settings (unit sizes, grid points): one INFO
    line names the kind and corpus, every load with its settings goes to DEBUG."""
    from engine.service.store import LoadedResources

    store = LoadedResources()
    caplog.set_level(logging.DEBUG, logger="engine.service.store")
    for settings in ('{"units": 100}', '{"units": 200}', '{"units": 300}'):
        store._get(("bm25", "fingerprint-of-wiki", settings), object)
    store._get(("bm25", "fingerprint-of-wiki", '{"units": 100}'), object)  # loaded already
    store._get(("dense", "fingerprint-of-wiki", '{"units": 100}', "minilm"), object)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records
             if r.name == "engine.service.store"]
    info = [m for level, m in lines if level == logging.INFO]
    assert info == ["loading bm25 index of corpus fingerprint-",
                    "loading dense index of corpus fingerprint-"]  # 12 characters of it
    debug = [m for level, m in lines if level == logging.DEBUG]
    assert len(debug) == 4 and '{"units": 300}' in debug[2]
