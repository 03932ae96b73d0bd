"""Background preparation and the app-facing Explorer, with fake tasks and a fake paradigm."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

from engine.errors import ConfigError
from engine.paradigms.registry import parse_config
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.service.preparation import Preparation
from engine.service.readiness import NotReady
from engine.service.tasks import Task
from engine.trace import RunTrace
from tests.fakes import fake_preparation, qa_file


def test_tasks_run_in_order_report_progress_and_a_failure_stays_local(tiny_corpus):
    seen = []

    def counting(progress):
        for i in range(1, 4):
            progress(i, 3)
        seen.append("clusters")

    def broken(progress):
        raise OSError("disk full")

    prep = fake_preparation(tiny_corpus, {"corpus": lambda p: tiny_corpus,
                                          "clusters": counting, "reader": broken,
                                          "preranker": lambda p: seen.append("preranker")})
    prep.run()
    states = {n: t.state for n, t in prep.tasks.items()}
    assert states == {"corpus": "ready", "clusters": "ready", "reader": "failed",
                      "preranker": "ready"}
    assert seen == ["clusters", "preranker"]
    assert (prep.tasks["clusters"].done, prep.tasks["clusters"].total) == (3, 3)
    assert "FAILED - disk full" in prep.tasks["reader"].describe()
    assert [t.name for t in prep.missing("funnel")] == ["reader"]
    assert not prep.ready() and prep.corpus is tiny_corpus


def test_without_a_corpus_nothing_else_is_attempted(tiny_corpus):
    called = []
    prep = fake_preparation(tiny_corpus, {
        "corpus": lambda p: (_ for _ in ()).throw(ValueError("bad file")),
        "clusters": lambda p: called.append(1)})
    prep.run()
    assert prep.tasks["clusters"].error == "the corpus did not load" and not called


def test_a_running_build_shows_its_rate_and_time_left():
    task = Task("dense", "dense index", lambda progress: None, state="running", done=5,
                total=20, started=time.monotonic() - 40)
    task.paced_from = (time.monotonic() - 25, 0)  # 5 of 20 in the 25 s since its first step
    assert re.fullmatch(r"dense index: building 5/20 \(25%\), 0\.2/s, about 7\d s left, "
                        r"4\d s so far", task.describe())
    task.done, task.total = 1_000, 15_000
    task.paced_from = (time.monotonic() - 20, 0)
    assert "1,000/15,000 (7%), 50/s, about 5 min left" in task.describe()


def test_time_left_is_told_from_the_pace_kept_since_the_first_step():
    """The setup before a build's first step does not count in its pace, and nothing is
    told before it kept a pace for a while (a training's first seconds misled by 2x)."""
    task = Task("train", "training", lambda progress: None, state="running",
                started=time.monotonic() - 300)  # five minutes of setup
    task.report(0, 1_000)
    assert task.seconds_left() is None and "left" not in task.describe()
    task.paced_from = (time.monotonic() - 60, 0)
    task.report(100, 1_000)  # 100 units in the minute since the first step
    assert 530 <= task.seconds_left() <= 545  # 900 left at 100 a minute, not at 100 in 6


def test_background_thread_shows_running_progress_then_ready(tiny_corpus):
    gate = threading.Event()

    def slow(progress):
        progress(5, 20)
        gate.wait(10)

    prep = fake_preparation(tiny_corpus, {"corpus": lambda p: tiny_corpus, "dense": slow})
    prep.start()
    for _ in range(200):
        if prep.tasks["dense"].state == "running" and prep.tasks["dense"].done == 5:
            break
        threading.Event().wait(0.01)
    assert "building 5/20 (25%)" in prep.tasks["dense"].describe()
    assert [t.name for t in prep.missing("flat")] == ["dense"]
    gate.set()
    assert prep.wait(10) and prep.ready()


def test_explorer_runs_streams_and_reuses_paradigms(explorer):
    traces = list(explorer.runs.stream("seurat painting", "echo", '{"k": 1}'))
    assert [len(t.stages) for t in traces] == [1, 1] and traces[-1].answer == "Georges Seurat"
    assert len(traces[-1].stages[0].candidates) == 1
    assert explorer.runs.paradigm("echo", '{"k": 1}').config == \
        explorer.runs.paradigm("echo", ' {"k":1} ').config
    trace = explorer.runs.run("seurat painting", "echo")
    run_id = explorer.runs.save_run(trace)
    assert explorer.runs.load_run(run_id) == trace and isinstance(trace, RunTrace)


def test_explorer_refuses_bad_input_clearly(explorer):
    with pytest.raises(ConfigError, match="Unknown paradigm 'nope'.*echo"):
        explorer.runs.run("q", "nope")
    with pytest.raises(ConfigError, match="question is empty"):
        explorer.runs.run("   ", "echo")
    with pytest.raises(ConfigError, match="Unknown option.*K.*Valid options: k"):
        explorer.runs.run("q", "echo", '{"K": 3}')
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_config("{K: 3")
    with pytest.raises(ConfigError, match="must be a JSON object"):
        parse_config("[1, 2]")
    with pytest.raises(ConfigError, match="Unknown dataset 'x.json'"):
        explorer.catalog.questions("x.json")


def test_a_paradigm_waiting_for_preparation_says_for_what(prepared, explorer):
    prepared[0].tasks["dense"] = Task("dense", "dense index", lambda p: None,
                                       state="running", done=10, total=40)
    with pytest.raises(NotReady, match=r"'flat' is not ready yet; waiting for: .*"
                                       r"dense index \(building\)") as refused:
        explorer.runs.run("q", "flat")
    # no figures that go stale while the notice stays on the page
    assert "10/40" not in str(refused.value) and "lists 'flat' as ready" in str(refused.value)


def test_explorer_counts_a_questions_supporting_documents_in_its_corpus(prepared, explorer):
    from engine.documents import Question

    q = Question("q", "Who painted it?", ("Georges Seurat",),
                 supporting_titles=("Georges Seurat", "Not In This Corpus"))
    assert explorer.catalog.supporting_in_corpus(q) == (1, 2)
    assert explorer.catalog.counted_corpus() == "tiny"
    # a corpus not loaded: counted in the start-up one, and said so
    assert explorer.catalog.supporting_in_corpus(q, "pooled") == (1, 2)
    assert explorer.catalog.counted_corpus("pooled") == "tiny"
    loading = Explorer(Preparation("tiny", dense=False), prepared[1])  # no corpus yet
    assert loading.catalog.supporting_in_corpus(q) == (0, 2)


def test_the_plan_is_what_the_registered_paradigms_need_shared_needs_once(echo):
    from engine.paradigms.registry import PARADIGMS

    prep = Preparation("wiki")
    labels = [t.label for t in prep.tasks.values()]
    assert labels[0] == "corpus 'wiki'"
    # the slow ones last: the dense index (flat's), the document scores reading it, then
    # training, the quicker first
    assert [t.label.split(" (")[0] for t in prep.tasks.values() if t.slow] == [
        "dense index", "document scores", "document scores",
        "training the best-practices query classifier",
        "training DR-RAG's selection classifier C(q, d1, d2)"]
    # loading a classifier is quick: its stand-in until training ends
    assert not prep.tasks["classifier trained"].slow
    assert sum(label.startswith("reader smollm2") for label in labels) == 1  # shared
    assert sum(label.startswith("dense index") for label in labels) == 1
    for name, found in PARADIGMS.items():  # waiting for all but what a stand-in answers for
        assert prep.needs[name] == ("corpus", *(need.key for need in found.needs()
                                                if not need.stand_in))
    dense = next(t for t in prep.tasks.values() if t.label.startswith("dense index"))
    assert dense.stand_in == "BM25 over the same passages"
    assert not any(dense.name in prep.needs[name] for name in PARADIGMS)
    assert prep.needs["echo"] == ("corpus",)
    quick = Preparation("wiki", dense=False)
    assert not any(task.slow for task in quick.tasks.values())
    assert all(key in quick.tasks for key in quick.needs["funnel"])


def test_a_model_trained_here_runs_on_its_stand_in_while_training_goes_on(tiny_corpus,
                                                                          monkeypatch):
    from dataclasses import replace
    from types import SimpleNamespace

    from engine.models.kinds import PRERANKER
    from engine.paradigms.needs import Need
    from engine.service import preparation
    from engine.train import trainers

    calls = []
    toy = replace(trainers.TRAINERS[PRERANKER], kind="toy", trains="a toy model",
                  fit=lambda config, progress: calls.append("train"))
    monkeypatch.setitem(trainers.TRAINERS, "toy", toy)
    monkeypatch.setattr(trainers, "trained_folder", lambda kind: None)  # never trained
    need = Need("toy model", "toy model", lambda corpus, progress, store: calls.append("load"),
                trained_by="toy", train_seconds=60)
    index = Need("toy index", "toy index",
                 lambda corpus, progress, store: calls.append(("build", *prep.standing_in())),
                 slow=True, stand_in="toy BM25",
                 promise=lambda corpus, store: calls.append(f"promise over {corpus.name}") or True)
    monkeypatch.setattr(preparation, "PARADIGMS",
                        {"toy": SimpleNamespace(needs=lambda: (need, index))})
    prep = Preparation("tiny")
    assert list(prep.tasks) == ["corpus", "toy model", "toy index", "train toy"]
    # the paradigm waits for neither the training nor the index a stand-in answers for
    assert prep.needs["toy"] == ("corpus", "toy model")
    training = prep.tasks["train toy"]  # says its stand-in answers only until it ends
    assert "untrained stand-in answers meanwhile" in training.describe()
    assert "untrained stand-in" in training.headline()
    prep.tasks["corpus"].action = lambda progress: tiny_corpus
    for name in ("corpus", "toy model"):
        prep.tasks[name].state = "ready"
    assert prep.missing("toy") == [] and not prep.ready()
    prep.tasks["corpus"].state = prep.tasks["toy model"].state = "waiting"
    prep.run()
    # the index promised once the corpus is loaded; the stand-in model, the index (while
    # it builds, the status says what stands in), the training, then the trained model
    assert calls == ["promise over tiny", "load",
                     ("build", "toy BM25 stands in until the toy index is built",
                      "1 classifier still training; untrained stand-ins decide meanwhile"),
                     "train", "load"]
    assert prep.ready() and prep.standing_in() == []
    assert training.describe().startswith("training a toy model: ready (")
    assert "stand-in" not in training.describe() + training.headline()
    assert "train toy" not in Preparation("tiny", dense=False).tasks


def test_an_evaluation_runs_in_the_background_one_at_a_time(explorer, tmp_path):
    qa = qa_file(tmp_path / "qa.jsonl")
    evaluation_id = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1}}, limit=2)
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    status = explorer.evaluations.evaluation_status(evaluation_id)
    assert (status.state, status.done, status.total) == ("done", 2, 2)
    assert status.means["echo"]["EM"] == 1.0
    stored = explorer.evaluations.evaluation(evaluation_id)
    assert stored.corpus == "tiny" and stored.dataset == qa

    job = explorer._jobs.get(evaluation_id)
    job.state = "running"  # as if still running: a second one is refused, naming the first
    with pytest.raises(ConfigError, match=f"Evaluation {evaluation_id} is still running"):
        explorer.evaluations.evaluate(qa, ["echo"])
    job.state = "done"
    with pytest.raises(ConfigError, match="Unknown dataset 'nowhere.jsonl'"):
        explorer.evaluations.evaluate("nowhere.jsonl", ["echo"])
    with pytest.raises(ConfigError, match="Unknown paradigm 'nope'"):
        explorer.evaluations.evaluate(qa, ["nope"])
    with pytest.raises(ConfigError, match="not running here"):
        explorer.evaluations.cancel_evaluation(evaluation_id)


def test_a_long_build_waits_for_a_confirmation_and_is_prepared_before_the_first_question(
        explorer, tmp_path, monkeypatch):
    from engine.paradigms.needs import Need
    from tests.fakes import EchoParadigm

    built = []

    def needs(cls, config):  # k > 1 needs an index that takes 15 minutes to build
        return (Need(f"echo index {config.k}", f"echo index (k={config.k})",
                     lambda corpus, progress, store: built.append(config.k), slow=True,
                     build_seconds=lambda corpus: 900.0 if config.k > 1 else 5.0),)

    monkeypatch.setattr(EchoParadigm, "needs", classmethod(needs))
    qa = qa_file(tmp_path / "qa.jsonl")
    with pytest.raises(BuildNeeded, match=r"echo index \(k=3\): about 15 min on this machine"):
        explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 3}}, limit=1)
    # nothing built, nothing stored
    assert built == [] and explorer.evaluations.list_evaluations() == []
    quick = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1}},
                                          limit=1)  # 5 s: no question
    explorer.evaluations.wait_for_evaluation(quick, 30)
    assert built == [1]
    confirmed = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 3}}, limit=1, build=True)
    explorer.evaluations.wait_for_evaluation(confirmed, 30)
    assert built == [1, 3] and explorer.evaluations.evaluation_status(confirmed).state == "done"


def test_a_corpus_s_own_progress_leaves_out_the_models_of_the_whole_process():
    """Every corpus's progress list repeated the reader, the classifiers and their training."""
    prep = Preparation("tiny", dense=False)
    every, own = prep.status_lines(), prep.status_lines(own=True)
    assert any(line.startswith("reader ") for line in every)
    assert any("selection classifier" in line for line in every)
    assert not any(line.startswith(("reader ", "encoder ")) or "classifier" in line
                   for line in own)
    assert own[0] == "corpus 'tiny': waiting for its turn" and any("BM25" in x for x in own)


def test_a_task_waiting_for_the_tasks_above_says_when_it_starts(tiny_corpus):
    """Seen: queued tasks said only "waiting for its turn", with no estimate."""
    prep = fake_preparation(tiny_corpus, {"corpus": lambda p: None, "dense": lambda p: None,
                                          "clusters": lambda p: None,
                                          "training": lambda p: None})
    prep.tasks["corpus"].state = "ready"
    dense = prep.tasks["dense"]
    dense.state, dense.done, dense.total = "running", 100, 400
    dense.started, dense.paced_from = time.monotonic() - 70, (time.monotonic() - 60, 0)
    prep.tasks["clusters"].slow = False  # a load: counts as nothing
    training = prep.tasks["training"]
    training.train_seconds = 600.0
    lines = prep.status_lines()
    assert lines[2] == "task clusters: waiting for the tasks above; starts in about 3 min"
    assert lines[3] == ("task training: waiting for the tasks above; starts in about 3 min, "
                        "then takes about 10 min")


def _cache_bytes(root) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_a_run_reads_only_what_is_built_and_a_viewer_builds_nothing(
        prepared, data_dir, users_file):
    """Issue 67: a viewer's passage_tokens 101..106 each built a dense index unasked. Any
    build a run needs is refused with its estimate, nothing is written to the caches, and
    confirming one is an admin's."""
    from engine.service.door import Door, NotAllowed
    from engine.service.explorer import Explorer
    from engine.store.users import Users

    users = Users(users_file)
    door = Door(users)
    explorer = Explorer(*prepared, door=door)
    before = _cache_bytes(data_dir)
    with door.acting_as(users.get("viewer")):
        for tokens in (101, 102):
            with pytest.raises(BuildNeeded, match=rf"BM25 over {tokens}-token passages: about "
                                                  r".* on this machine.*an admin builds it"):
                explorer.runs.run("Who painted it?", "flat",
                                  json.dumps({"retriever": "bm25", "passage_tokens": tokens}))
        with pytest.raises(NotAllowed, match="build_index needs the admin role; you are a "
                                              "viewer"):
            explorer.runs.run("Who painted it?", "flat",
                              json.dumps({"retriever": "bm25", "passage_tokens": 101}), build=True)
    assert _cache_bytes(data_dir) == before  # nothing built, nothing written


def test_the_status_line_names_every_added_corpus_still_building(explorer, tiny_corpus):
    """Issue 67: an added corpus's 27-minute dense build never showed above the tabs."""
    from tests.fakes import fake_preparation

    notes = fake_preparation(tiny_corpus, {"corpus": lambda p: tiny_corpus,
                                           "dense": lambda p: None})
    notes.corpus_spec = "notes"
    notes.tasks["corpus"].state = "ready"
    dense = notes.tasks["dense"]
    dense.state, dense.done, dense.total, dense.started = "running", 100, 400, time.monotonic()
    explorer._corpora._preparations["notes"] = notes
    (line,) = [s for s in explorer.catalog.standing_in() if "notes" in s]
    assert line.startswith("corpus 'notes' still building: task dense: building 100/400 (25%)")
    dense.state = "ready"
    assert not [s for s in explorer.catalog.standing_in() if "notes" in s]
