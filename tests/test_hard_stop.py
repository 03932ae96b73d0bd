"""A hard stop loses nothing: a process killed with SIGKILL in the middle of a cache build, a
dense index's encoding or an evaluation leaves nothing half-written that is ever read, what
it finished stays, and the interrupted work resumes or says it was interrupted. (A save
killed mid-way: tests/test_sessions.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cache import entry_dir, existing_entry, load_or_build, sweep_leftovers

ROOT = Path(__file__).resolve().parent.parent


def start(script: str, data_dir: Path, *args: str) -> subprocess.Popen:
    """`script` in a fresh Python with the test's data directory, its stdout a pipe."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FUNNEL_DATA_DIR": str(data_dir)}
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


BUILDING = """
import time
from engine.cache import load_or_build

def build(folder):
    (folder / "value.txt").write_text("half")
    print("building", flush=True)
    time.sleep(60)

load_or_build("demo", {"k": 1}, build, lambda folder: None)
"""


def test_a_cache_build_killed_midway_is_never_read_and_its_leftovers_are_swept(data_dir):
    writer = start(BUILDING, data_dir)
    assert writer.stdout.readline().strip() == "building"
    kill(writer)
    (leftover,) = entry_dir("demo", {"k": 1}).parent.iterdir()
    assert leftover.name.startswith(".tmp-") and (leftover / "value.txt").exists()
    assert existing_entry("demo", {"k": 1}) is None  # nothing under the real name

    def build(folder):
        (folder / "value.txt").write_text("whole")

    value = load_or_build("demo", {"k": 1}, build, lambda f: (f / "value.txt").read_text())
    assert value == "whole"
    assert sweep_leftovers(data_dir) == [leftover] and not leftover.exists()


def test_only_a_dead_processs_leftovers_are_swept(data_dir):
    from engine.cache import owner_tag

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    host = owner_tag().rsplit("-", 1)[0]
    folder = data_dir / "cache" / "bm25"
    folder.mkdir(parents=True)
    dead = folder / f".tmp-abc-{host}-{gone}-0123abcd"
    alive = folder / f".tmp-def-{owner_tag()}-4567abcd"
    remote = folder / f".tmp-ghi-otherhost-{gone}-89abcdef"
    written = data_dir / f".meta.json.{host}-{gone}-0a1b2c3d.tmp"
    for path in (dead, alive, remote):
        path.mkdir()
    written.write_text("{half")
    assert sorted(sweep_leftovers(data_dir)) == sorted([dead, written])
    assert alive.exists() and remote.exists()


def test_a_build_killed_midway_is_said_after_the_restart(prepared, data_dir):
    """Issue 67: after a kill -9 mid-build the next start swept its half-written files
    and said nothing; the app's failures now name what was stopped."""
    from engine.cache import owner_tag
    from engine.service.explorer import Explorer

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    host = owner_tag().rsplit("-", 1)[0]
    folder = data_dir / "cache" / "dense"
    folder.mkdir(parents=True)
    (folder / f".tmp-abc-{host}-{gone}-0123abcd").mkdir()
    (said,) = Explorer(*prepared).catalog.failures()
    assert said.startswith("a dense build was stopped mid-way when the app last stopped")
    assert Explorer(*prepared).catalog.failures() == []  # said once: swept, it is gone


ENCODING = """
import sys
from engine.data.corpus import load_corpus
from engine.index import vectors
from engine.index.dense import dense_index

vectors.SLICE_TEXTS = vectors.SHARD_TEXTS = 8  # a shard every 8: several before the kill
corpus = load_corpus(sys.argv[1])
dense_index(corpus, precision="fp32")
"""


@pytest.mark.slow
def test_a_dense_build_killed_while_encoding_resumes_where_it_stopped(data_dir, tmp_path):
    pytest.importorskip("sentence_transformers")
    from engine.data.corpus import load_corpus
    from engine.index.dense import dense_index

    rows = [{"id": f"d{i}", "title": f"Doc {i}", "text": f"Document {i} is about topic "
             f"{i % 7} and the number {i * 13}."} for i in range(400)]
    source = tmp_path / "docs.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows))
    writer = start(ENCODING, data_dir, str(source))
    shards = data_dir / "cache" / "vectors"
    wait_for(lambda: len(list(shards.glob("*/*/manifest.json"))) >= 3)
    kill(writer)
    finished = len(list(shards.glob("*/*/manifest.json")))
    assert finished < 50  # killed while encoding, not after
    corpus = load_corpus(str(source))
    calls = []
    index = dense_index(corpus, precision="fp32", progress=lambda d, t: calls.append(t))
    assert len(index.units) == 400
    assert calls and calls[-1] <= 400 - 8 * finished  # only what no finished shard holds
    assert index.search("Document 17 is about topic 3", 1)[0].unit.doc_ids[0] == "d17"
    sweep_leftovers(data_dir)
    assert not list(data_dir.rglob(".tmp-*"))


EVALUATING = """
import sys, time
from engine.paradigms import registry
from engine.service.evaluation_jobs import EvaluationJob, EvaluationRequest
from engine.store.evaluations import EvaluationStore
from engine.store.sessions import SessionStore
from engine.documents import Corpus, Document, Question
from tests.conftest import TINY_DOCS
from tests.fakes import ECHO, EchoParadigm

steps = EchoParadigm.steps

def slow(self, question):  # a question takes a while: the kill lands mid-evaluation
    time.sleep(0.3)
    yield from steps(self, question)

EchoParadigm.steps = slow
registry.register(ECHO)
corpus = Corpus("tiny", tuple(Document(id=t, title=t, text=x) for t, x in TINY_DOCS))
store = EvaluationStore(SessionStore(sys.argv[1]))
questions = tuple(Question(f"q{i}", "Who painted A Sunday Afternoon?",
                           answers=("Georges Seurat",)) for i in range(200))
job = EvaluationJob(store, corpus, EvaluationRequest("toy", questions, ("echo",),
                                                     {"echo": {}})).start()
while True:
    print(job.status().done, flush=True)
    time.sleep(0.1)
"""


def test_an_evaluation_killed_midway_keeps_its_questions_and_says_it_was_interrupted(
        data_dir, tmp_path, tiny_corpus):
    from engine.service.explorer import Explorer
    from engine.store.sessions import SessionStore
    from tests.fakes import fake_preparation

    path = tmp_path / "sessions.duckdb"
    writer = start(EVALUATING, data_dir, str(path))
    wait_for(lambda: int(writer.stdout.readline()) >= 3)
    kill(writer)
    store = SessionStore(path)
    explorer = Explorer(fake_preparation(tiny_corpus, {"corpus": lambda p: tiny_corpus}),
                        store)  # a restart: the app opens the file again
    (stored,) = explorer.evaluations.list_evaluations()
    assert stored.state == "interrupted" and 3 <= stored.done < 200
    # every finished question
    assert len(explorer.evaluations.evaluation_rows(stored.id)) == stored.done
    status = explorer.evaluations.evaluation_status(stored.id)
    assert "interrupted" in status.error
    assert "resume it to run the questions it lacks" in status.error
    assert f"{stored.done} of 200 questions" in status.error
    store.close()


RETRAINING = """
import sys, time
import engine.train.fit_selection_classifier as fit
from engine.service.annotation import Annotation
from engine.store.sessions import SessionStore

def slow(config, examples, progress, activate=True):
    print("training", flush=True)
    time.sleep(60)

fit.train_classifier = slow
Annotation._check_usable_labels = lambda self: (3, 0)  # as if three labels were stored
annotation = Annotation(lambda name: None, SessionStore(sys.argv[1]))
# killed while training; a retrain that ends first says how
annotation.retrain_classifier(wait=True)
print(f"ended {annotation.job.state} before training: {annotation.job.error}", flush=True)
"""


def test_a_retrain_killed_midway_says_after_a_restart_that_it_was_interrupted(data_dir,
                                                                             tmp_path):
    from engine.models.selection_classifier import active_version
    from engine.service.annotation import Annotation
    from engine.store.sessions import SessionStore

    path = tmp_path / "sessions.duckdb"
    writer = start(RETRAINING, data_dir, str(path))
    # else the line saying what ended the retrain before it trained, at once (not 60 s on)
    assert writer.stdout.readline().strip() == "training"
    kill(writer)
    store = SessionStore(path)
    job = Annotation(lambda name: None, store).classifier_status().retrain  # a restart
    assert job["state"] == "interrupted" and job["labels"] == 3
    assert "while this retrain on 3 labels was training" in job["error"]
    assert "Press Retrain to start it again" in job["error"]
    assert active_version() is None  # nothing of it was kept
    again = Annotation(lambda name: None, store).classifier_status().retrain
    assert again["state"] == "interrupted"  # said until another retrain starts
    store.close()
