"""Corpora users add, choose per request, and remove (engine.service.corpora,
engine.data.ingest): real files, real stored corpora and indexes, the toy paradigm."""

from __future__ import annotations

import json
import threading
import time
import zipfile

import pytest

from engine.errors import ConfigError
from engine.service.explorer import Explorer
from engine.service.preparation import Preparation
from engine.service.tasks import Task
from tests.conftest import TINY_DOCS


def corpus_only(spec, *, dense, load=None, train=False) -> Preparation:
    """A preparation that only loads the corpus (every paradigm waits for nothing else)."""
    prep = Preparation(spec, dense=False, load=load)
    prep.tasks = {"corpus": prep.tasks["corpus"]}
    prep.needs = {name: ("corpus",) for name in prep.needs}
    return prep


@pytest.fixture
def explorer(prepared, tmp_path):
    root = tmp_path / "allowed"
    root.mkdir()
    return Explorer(*prepared, corpus_root=root, preparing=corpus_only)


def write_jsonl(path, rows) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return str(path)


def tiny_rows(**changed) -> list[dict]:
    return [{"id": t, "title": t, "text": changed.get(t, x)} for t, x in TINY_DOCS]


def settled(explorer, name, timeout=30):
    """The corpus's row once its preparation has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = next(r for r in explorer.catalog.corpora() if r.name == name)
        if row.status != "preparing":
            return row
        time.sleep(0.05)
    raise AssertionError(f"{name} still preparing")


def test_an_added_corpus_is_stored_listed_and_searched_per_request(explorer, tmp_path):
    from engine.data.corpus import load_corpus
    from engine.data.ingest import stored_path

    source = write_jsonl(tmp_path / "upload.jsonl", tiny_rows(**{
        "Georges Seurat": "Georges Seurat kept a pet heron named Pointille in his studio."}))
    assert explorer.catalog.add_corpus("mine", source, upload=True,
                                       original="notes.jsonl") == "mine"
    row = settled(explorer, "mine")
    assert (row.status, row.origin, row.documents, row.error) == ("ready", "added", 8, "")
    assert row.disk_bytes == stored_path("mine").stat().st_size > 0
    names = explorer.catalog.corpus_names()
    assert names[0] == "tiny" and {"wiki", "pooled", "mine"} <= set(names)

    # the same corpus for the CLI and a restarted app: by name, with the same fingerprint
    stored = load_corpus("mine")
    assert stored.name == "mine" and len(stored) == 8
    assert row.fingerprint == stored.fingerprint[:12]

    trace = explorer.runs.run("Georges Seurat heron", "echo", corpus="mine")
    assert trace.corpus["name"] == "mine" and trace.corpus["fingerprint"] == stored.fingerprint
    assert any("heron" in c.unit.text for c in trace.stages[0].candidates)
    default = explorer.runs.run("Georges Seurat heron", "echo")  # the start-up corpus
    assert default.corpus["name"] == "tiny"
    assert not any("heron" in c.unit.text for c in default.stages[0].candidates)
    with pytest.raises(ConfigError, match=r"Unknown corpus 'nope'; choose one of tiny, wiki"):
        explorer.runs.run("q", "echo", corpus="nope")


def test_a_zip_of_text_files_and_a_path_under_the_root_are_corpora(explorer, tmp_path):
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("notes/heron.md", "# The heron\nSeurat kept a heron named Pointille.")
        z.writestr("notes/empty.txt", "   ")
        z.writestr("notes/image.png", b"\x89PNG")
    explorer.catalog.add_corpus("zipped", archive, upload=True)
    row = settled(explorer, "zipped")
    assert (row.status, row.documents) == ("ready", 1)
    from engine.data.corpus import load_corpus

    doc = load_corpus("zipped").documents[0]
    assert (doc.id, doc.title) == ("notes/heron", "The heron")

    write_jsonl(tmp_path / "allowed" / "server.jsonl", tiny_rows())
    explorer.catalog.add_corpus("server-side", "server.jsonl", upload=False)  # relative to the root
    assert settled(explorer, "server-side").status == "ready"


def test_bad_corpora_are_refused_by_name_and_nothing_prepared_is_touched(explorer, tmp_path,
                                                                         monkeypatch):
    from engine.data.ingest import corpora_dir

    good = write_jsonl(tmp_path / "good.jsonl", tiny_rows())
    explorer.catalog.add_corpus("kept", good, upload=True)
    kept = settled(explorer, "kept")
    before = sorted(p.name for p in corpora_dir().rglob("*"))

    refusals = {  # refused at once, without reading the file
        ("wiki", good, True): "A corpus named 'wiki' exists already",
        ("Kept", good, True): "A corpus named 'Kept' exists already",
        ("../up", good, True): "Corpus name '../up' is not usable",
        ("x", str(tmp_path / "missing.jsonl"), True): "No such file or folder",
        ("x", good, False): "is outside the folder corpora may be read from",
        ("x", str(tmp_path / "allowed" / ".." / "good.jsonl"), False): "is outside",
        ("x", write_jsonl(tmp_path / "c.rst", []), True): "not '.rst'",
    }
    for (name, source, upload), message in refusals.items():
        with pytest.raises(ConfigError, match=message):
            explorer.catalog.add_corpus(name, source, upload=upload)
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("ok.txt", "fine")
        z.writestr("../../escape.txt", "out")
    with pytest.raises(ConfigError, match="evil.zip: member '../../escape.txt' points "
                                          "outside the archive's folder; nothing was read"):
        explorer.catalog.add_corpus("x", evil, upload=True)
    linked = tmp_path / "allowed" / "linked"
    linked.mkdir()
    (linked / "secret.txt").symlink_to(tmp_path / "good.jsonl")
    with pytest.raises(ConfigError, match="'secret.txt' in .* links outside the folder"):
        explorer.catalog.add_corpus("x", linked, upload=False)
    monkeypatch.setenv("FUNNEL_MAX_UPLOAD_MB", "0.0001")
    with pytest.raises(ConfigError, match=r"over the 0.0 MB limit .*FUNNEL_MAX_UPLOAD_MB"):
        explorer.catalog.add_corpus("x", good, upload=True)
    monkeypatch.delenv("FUNNEL_MAX_UPLOAD_MB")

    failing = {  # refused while it is read, in its status
        "no-text": ([{"id": "a", "title": "A"}], "line 1: field 'text'"),
        "dup-ids": ([{"id": "a", "title": "A", "text": "x"},
                     {"id": "a", "title": "B", "text": "y"}],
                    "line 2: field 'id': 'a' is already the id of line 1, titled 'A'"),
        "blank": ([{"id": "a", "title": "A", "text": "  "}], "field 'text': is empty"),
        "empty": ([], "holds no records"),
    }
    uploads = tmp_path / "gradio" / "3f9a0c1d2e"  # where Gradio keeps an upload
    uploads.mkdir(parents=True)
    for name, (rows, message) in failing.items():
        explorer.catalog.add_corpus(name, write_jsonl(uploads / f"{name}.jsonl", rows), upload=True)
        row = settled(explorer, name)
        assert row.status == "failed" and message in row.error, row.error
        assert row.error.startswith(f"{name}.jsonl") and str(uploads) not in row.error
        with pytest.raises(ConfigError, match=rf"Corpus '{name}' could not be read: .*add it "
                                              r"again under this name \(the name is free"):
            explorer.runs.run("q", "echo", corpus=name)
    twins = uploads / "twins.zip"
    with zipfile.ZipFile(twins, "w") as z:
        z.writestr("a.txt", "one")
        z.writestr("a.md", "two")
    explorer.catalog.add_corpus("twins", twins, upload=True)
    assert settled(explorer, "twins").error == ("twins.zip: members 'a.md' and 'a.txt' would "
                                                "both be document 'a' (rename one of them)")
    assert sorted(p.name for p in corpora_dir().rglob("*")) == before  # nothing written
    assert settled(explorer, "kept") == kept
    # a failed name is free again
    explorer.catalog.add_corpus("empty", good, upload=True)
    assert settled(explorer, "empty").status == "ready"


def test_removing_a_corpus_unloads_and_deletes_it_and_refuses_the_others(explorer, tmp_path):
    from engine.data.ingest import stored_path
    from engine.service.store import process_store
    from engine.units.build import UnitConfig

    explorer.catalog.add_corpus("gone", write_jsonl(tmp_path / "g.jsonl", tiny_rows(
        Vienna="Vienna is the capital of Austria.")), upload=True)
    explorer.catalog.add_corpus("twin", write_jsonl(tmp_path / "t.jsonl", tiny_rows()), upload=True)
    settled(explorer, "gone"), settled(explorer, "twin")
    corpus = explorer.runs.paradigm("echo", corpus="gone").corpus
    index = process_store().bm25(corpus, UnitConfig("documents"))
    tiny = explorer.catalog.corpus
    tiny_index = process_store().bm25(tiny, UnitConfig("documents"))
    assert explorer.runs.paradigm("echo", corpus="twin").corpus.fingerprint == tiny.fingerprint
    for name, message in {"tiny": "the corpus the app started with", "wiki": "packaged",
                          "nope": "No added corpus is named 'nope'; added ones: gone"}.items():
        with pytest.raises(ConfigError, match=message):
            explorer.catalog.remove_corpus(name)
    explorer.catalog.remove_corpus("gone")
    assert not stored_path("gone").exists() and "gone" not in explorer.catalog.corpus_names()
    assert process_store().bm25(corpus, UnitConfig("documents")) is not index  # evicted
    # the start-up corpus, of the same text, keeps its indexes
    explorer.catalog.remove_corpus("twin")
    assert process_store().bm25(tiny, UnitConfig("documents")) is tiny_index
    with pytest.raises(ConfigError, match="Unknown corpus 'twin'"):
        explorer.runs.run("q", "echo", corpus="twin")


def test_an_idle_corpus_is_released_and_loads_again_on_use(prepared, tmp_path):
    from engine.service.store import process_store
    from engine.units.build import UnitConfig
    from tests.fakes import Clock

    clock = Clock()
    explorer = Explorer(*prepared, idle_seconds=0.5, preparing=corpus_only, clock=clock)
    explorer.catalog.add_corpus("idle", write_jsonl(tmp_path / "i.jsonl", tiny_rows(
        Vienna="Vienna is the capital of Austria.")), upload=True)
    settled(explorer, "idle")
    corpus = explorer.runs.paradigm("echo", corpus="idle").corpus
    index = process_store().bm25(corpus, UnitConfig("documents"))
    explorer.runs.run("q", "echo")
    assert next(r for r in explorer.catalog.corpora() if r.name == "idle").status == "ready"
    clock.advance(0.4)
    explorer.runs.run("q", "echo")
    assert next(r for r in explorer.catalog.corpora() if r.name == "idle").status == "ready"
    clock.advance(0.2)
    explorer.runs.run("q", "echo")  # any request releases what has been idle too long
    row = next(r for r in explorer.catalog.corpora() if r.name == "idle")
    assert row.status == "not loaded" and row.fingerprint == corpus.fingerprint[:12]
    assert "bm25" in row.built and row.answering == ()  # still on disk
    assert explorer.runs.run("Seurat", "echo", corpus="idle").corpus["name"] == "idle"
    assert process_store().bm25(corpus, UnitConfig("documents")) is not index
    assert next(r for r in explorer.catalog.corpora() if r.name == "tiny").status == "ready"


def start_behind(a: Preparation, b: Preparation, running: threading.Event) -> None:
    """Start `a`, then, once its long build runs, `b`, whose dense build waits behind it."""
    a.start()
    assert running.wait(10)
    b.start()
    deadline = time.monotonic() + 10
    while not b.tasks["dense"].behind and time.monotonic() < deadline:
        time.sleep(0.01)


def test_long_builds_take_turns_across_corpora(tiny_corpus):
    """A second corpus's long dense build waits, saying where it is in the queue and when it
    should start, while the first one's runs."""
    first_running, release = threading.Event(), threading.Event()
    order = []

    def build(name, wait=False):
        def action(progress):
            order.append(f"{name} starts")
            if wait:
                first_running.set()
                release.wait(10)
            order.append(f"{name} ends")
        return action

    a, b = Preparation("a", dense=False), Preparation("b", dense=False)
    a.tasks = {"corpus": Task("corpus", "corpus", lambda p: tiny_corpus),
               "dense": Task("dense", "dense index", build("a", wait=True), promised=True,
                             estimate=lambda: 900.0)}
    b.tasks = {"corpus": Task("corpus", "corpus", lambda p: tiny_corpus),
               "quick": Task("quick", "BM25", build("b quick")),
               "dense": Task("dense", "dense index", build("b"), promised=True,
                             estimate=lambda: 600.0)}
    start_behind(a, b, first_running)
    assert b.tasks["quick"].state == "ready"  # what is not a long build goes on
    assert b.status_lines()[2] == ("dense index: number 1 in the build queue; starts in "
                                   "about 15 min, then takes about 10 min")
    release.set()
    assert a.wait(10) and b.wait(10)
    assert order == ["a starts", "b quick starts", "b quick ends", "a ends", "b starts",
                     "b ends"]


def test_a_run_over_a_corpus_replaced_under_its_name_is_not_re_answered(explorer, tmp_path):
    before = write_jsonl(tmp_path / "v1.jsonl", tiny_rows(Vienna="Vienna is on the Danube."))
    explorer.catalog.add_corpus("notes", before, upload=True)
    settled(explorer, "notes")
    run = explorer.runs.run("Georges Seurat painting", "echo", corpus="notes")
    assert explorer.runs.reanswer(run, ["A Sunday Afternoon"]).corpus["name"] == "notes"
    explorer.catalog.remove_corpus("notes")
    after = write_jsonl(tmp_path / "v2.jsonl", tiny_rows(Vienna="Vienna has opera houses."))
    explorer.catalog.add_corpus("notes", after, upload=True)
    settled(explorer, "notes")
    with pytest.raises(ConfigError, match=r"This run searched corpus 'notes' as it was "
                                          r"\(fingerprint \w{12}\); it holds other texts now"):
        explorer.runs.reanswer(run, ["A Sunday Afternoon"])
    with pytest.raises(ConfigError, match="holds other texts now"):
        explorer.annotation.judged_pairs(run)


@pytest.mark.server
def test_a_corpus_added_with_a_ray_address_is_encoded_by_ray_workers(explorer, tmp_path,
                                                                     data_dir, monkeypatch):
    pytest.importorskip("ray")
    import numpy as np

    from engine.index import dense
    from engine.service.store import process_store
    from engine.units.build import UnitConfig

    with pytest.raises(ConfigError, match="workers=0 is out of range"):
        explorer._corpora.add("raw", write_jsonl(tmp_path / "a.jsonl", tiny_rows()),
                              upload=True, ray="local", workers=0)
    with pytest.raises(ConfigError, match="No Ray cluster answers at '127.0.0.1:9'"):
        explorer.catalog.add_corpus("raw", write_jsonl(tmp_path / "b.jsonl", tiny_rows()),
                                    upload=True, ray="127.0.0.1:9")
    with pytest.raises(ConfigError, match="Ray shards needs a Ray address"):
        explorer.catalog.add_corpus("raw", write_jsonl(tmp_path / "c.jsonl", tiny_rows()),
                                    upload=True, shards=2)
    with pytest.raises(ConfigError, match="shards=65 is out of range"):
        explorer.catalog.add_corpus("raw", write_jsonl(tmp_path / "d.jsonl", tiny_rows()),
                                    upload=True, ray="local", shards=65)
    assert "raw" not in explorer.catalog.corpus_names()  # refused before anything was read
    source = write_jsonl(tmp_path / "ray.jsonl", tiny_rows())
    explorer.catalog.add_corpus("onray", source, upload=True, ray="local")
    assert settled(explorer, "onray").status == "ready"
    corpus = explorer._corpora.preparation("onray").corpus
    passages = UnitConfig("passages")
    assert process_store().encode_remotely(corpus, passages, "minilm") > 0  # on Ray

    def never(*args, **kwargs):
        raise AssertionError("encoded in this process: Ray's workers should have")

    with monkeypatch.context() as patched:
        patched.setattr(dense, "encode", never)
        index = process_store().dense(corpus, passages)  # finds every vector stored
    # the workers' vectors are the ones this process makes (cosine 1 to float precision)
    here = dense.encode([dense.index_text(u) for u in index.units], "minilm")
    assert float(np.min(np.sum(here * index.vectors, axis=1))) >= 0.9999
    assert index.search("Which river flows through Budapest?", 1)[0].unit.doc_ids[0] in {
        "Danube", "Budapest"}


def test_a_corpus_waiting_for_another_build_can_be_cancelled_not_one_building(tiny_corpus):
    running, release = threading.Event(), threading.Event()

    def slow(progress):
        running.set()
        release.wait(10)

    a, b = Preparation("a", dense=False), Preparation("b", dense=False)
    a.tasks = {"corpus": Task("corpus", "corpus", lambda p: tiny_corpus),
               "dense": Task("dense", "dense index", slow, promised=True)}
    b.tasks = {"corpus": Task("corpus", "corpus", lambda p: tiny_corpus),
               "dense": Task("dense", "dense index", lambda p: None, promised=True),
               "scores": Task("scores", "document scores", lambda p: None)}
    start_behind(a, b, running)
    assert not a.cancel()  # its build runs: not cancelled, nothing touched
    assert a.tasks["dense"].state == "running"
    assert b.cancel() and not b.busy()
    assert [t.state for t in b.tasks.values()] == ["ready", "failed", "failed"]
    assert "cancelled while it waited" in b.status_lines()[1]
    release.set()
    assert a.wait(10) and a.tasks["dense"].state == "ready"


def test_a_corpus_is_ready_when_its_own_tasks_are_while_the_process_still_trains(tiny_corpus):
    from engine.service.corpus_rows import _status
    from tests.fakes import fake_preparation

    prep = fake_preparation(tiny_corpus, {"corpus": lambda p: None, "dense": lambda p: None,
                                          "training": lambda p: None})
    prep.tasks["corpus"].state = prep.tasks["dense"].state = "ready"
    prep.tasks["training"].state, prep.tasks["training"].per_corpus = "running", False
    assert _status(prep) == "ready"  # its progress list shows only its own tasks, all ready
    prep.tasks["dense"].state = "running"
    assert _status(prep) == "preparing"


def test_a_corpus_added_with_a_qdrant_collection_is_served_from_it(explorer, prepared,
                                                                   tmp_path, monkeypatch):
    pytest.importorskip("qdrant_client")
    from engine.index.qdrant import QdrantDenseIndex
    from engine.index.qdrant_locations import close_clients
    from engine.paradigms.flat import FlatConfig
    from engine.service.store import process_store

    where = str(tmp_path / "qdrant")
    rows = tiny_rows(Danube="The Danube flows through four capitals.")  # its own fingerprint
    for settings, named in (({"collection": "x"}, "needs a Qdrant location"),
                            ({"qdrant": where, "shards": 2, "ray": "local"},
                             "Ray shards or from Qdrant, not both"),
                            ({"qdrant": "ftp://x"}, "neither a server's URL"),
                            ({"qdrant": where, "collection": "a b"}, "is not 1-200")):
        with pytest.raises(ConfigError, match=named):
            explorer.catalog.add_corpus("inq", write_jsonl(tmp_path / "q.jsonl", rows), upload=True,
                                        **settings)
    assert "inq" not in explorer.catalog.corpus_names()  # refused before anything was read
    monkeypatch.chdir(tmp_path)  # a relative folder is kept as an absolute one
    explorer.catalog.add_corpus("inq", write_jsonl(tmp_path / "q.jsonl", rows), upload=True,
                                qdrant="qdrant", collection="my.notes")
    row = settled(explorer, "inq")
    corpus = explorer._corpora.preparation("inq").corpus
    try:
        assert row.status == "ready"
        assert row.served_by == f"Qdrant collection 'my.notes' at {where}"
        index = process_store().dense(corpus, FlatConfig().passages())
        assert isinstance(index, QdrantDenseIndex) and index.index.name == "my.notes"
        assert index.search("Which river flows through capitals?", 1)[0].unit.doc_ids == \
            ("Danube",)
        assert all(r.served_by == "" for r in explorer.catalog.corpora() if r.name != "inq")
        # a restart (a new app over the same data directory) serves it from there again
        process_store().serve_here(corpus)
        process_store().evict(corpus.fingerprint)
        close_clients()
        restarted = Explorer(*prepared, preparing=corpus_only)
        restarted._corpora.preparation("inq")  # noqa: SLF001  (as a request naming it does)
        assert settled(restarted, "inq").served_by == f"Qdrant collection 'my.notes' at {where}"
        again = process_store().dense(corpus, FlatConfig().passages())
        assert isinstance(again, QdrantDenseIndex) and again is not index
        # removed, then added again without Qdrant: served here
        restarted.catalog.remove_corpus("inq")
        assert process_store().served_by(corpus.fingerprint, "inq") == ""
        restarted.catalog.add_corpus("inq", write_jsonl(tmp_path / "q.jsonl", rows), upload=True)
        assert settled(restarted, "inq").served_by == ""
        here = process_store().dense(corpus, FlatConfig().passages())
        assert not isinstance(here, QdrantDenseIndex)
    finally:
        process_store()._served.pop(corpus.fingerprint, None)  # noqa: SLF001
        close_clients()


def test_an_evaluation_searches_its_corpus_plus_the_datasets_paragraphs_as_the_cli_does(
        explorer, tmp_path):
    """One corpus rule for the app's Evaluate and the CLI's eval: the chosen corpus plus
    the QA file's paragraphs it lacks, a corpus of its own named "<corpus>+<dataset>" and
    loadable by that name (a restart, Diagnose's ceilings, Ray workers)."""
    from engine.data.corpus import eval_corpus, load_corpus
    from engine.data.loaders import read_dataset

    explorer.catalog.add_corpus("mine", write_jsonl(tmp_path / "c.jsonl", tiny_rows()), upload=True)
    assert settled(explorer, "mine").status == "ready"
    qa = tmp_path / "heron.jsonl"
    qa.write_text(json.dumps({
        "question_id": "q0", "question_text": "What was Seurat's heron called?",
        "answers_objects": [{"spans": ["Pointille"]}],
        "contexts": [{"id": "0", "title": "Seurat's heron", "is_supporting": True,
                      "paragraph_text": "Seurat's heron was called Pointille."}]}))
    evaluation = explorer.evaluations.evaluate(str(qa), ["echo"], corpus="mine")
    explorer.evaluations.wait_for_evaluation(evaluation, 30)
    stored = explorer.evaluations.evaluation(evaluation)
    assert stored.state == "done" and stored.corpus == "mine+heron.jsonl"  # no server path
    run = explorer.evaluations.evaluation_trace(evaluation, 0, "echo")
    assert run.corpus["name"] == stored.corpus
    cli = eval_corpus(read_dataset(qa), "mine", str(qa))  # as `funnel-engine eval` does
    assert (cli.name, cli.fingerprint) == (f"mine+{qa}", stored.corpus_fingerprint)
    assert load_corpus(f"mine+{qa}").fingerprint == stored.corpus_fingerprint  # Ray workers
    assert "Seurat's heron" in cli.by_id and len(cli) == len(load_corpus("mine")) + 1
    assert stored.corpus in explorer.catalog.corpus_names()  # listed while it is loaded
    assert explorer._corpora.preparation(stored.corpus).corpus_spec == f"mine+{qa}"
    # Explore's gold note counts the question's evidence in the corpus chosen
    from engine.documents import Question

    heron = Question("q0", "What was Seurat's heron called?", ("Pointille",),
                     supporting_titles=("Seurat's heron",))
    assert explorer.catalog.supporting_in_corpus(heron, stored.corpus) == (1, 1)
    assert explorer.catalog.supporting_in_corpus(heron, "mine") == (0, 1)
    # by its spec too (a restart's Diagnose or Resume, a corpus typed in a request)
    assert explorer.runs.run("heron", "echo", corpus=f"mine+{qa}").corpus["fingerprint"] == (
        stored.corpus_fingerprint)
    # a corpus that holds the dataset's paragraphs already is searched as it is
    again = explorer.evaluations.evaluate(str(qa), ["echo"], corpus=stored.corpus)
    explorer.evaluations.wait_for_evaluation(again, 30)
    assert explorer.evaluations.evaluation(again).corpus == stored.corpus
    with pytest.raises(ConfigError, match=r"'nowhere.json' is neither a listed dataset"):
        explorer.runs.run("q", "echo", corpus="mine+nowhere.json")



def test_a_test_collection_added_here_is_a_dataset_judged_over_its_own_corpus(explorer,
                                                                            tmp_path):
    """A BEIR folder added as a corpus lists its splits as datasets; an evaluation of one
    searches its corpus (another is refused by name), stops before the reader and measures
    the judgments; a bad qrels line fails the add, naming file, line and field, and stores
    nothing."""
    from engine.data.ingest import stored_corpora
    from tests.test_collection_eval import tiny_beir

    explorer.catalog.add_corpus("tiny-beir", str(tiny_beir(tmp_path)), upload=True)
    row = settled(explorer, "tiny-beir")
    assert row.status == "ready" and row.documents == len(TINY_DOCS)
    assert row.judged == "test (2 judged questions), train (1 judged question)"
    assert {"tiny-beir (test)", "tiny-beir (train)"} <= set(explorer.catalog.datasets().values())
    assert explorer.catalog.dataset_corpus("tiny-beir (test)") == "tiny-beir"
    assert explorer.catalog.dataset_corpus("HotpotQA dev500") is None
    # the pickers' other way: the corpus picked, its own question set follows
    from app.tabs.picker import own_question_set

    test_split = own_question_set(explorer, "tiny-beir", "hotpotqa/dev500_contexts.jsonl")
    assert explorer.catalog.dataset_corpus(test_split) == "tiny-beir"
    assert own_question_set(explorer, "tiny-beir", test_split) is None  # already its own
    assert own_question_set(explorer, "wiki", test_split) is None  # wiki has none
    evaluation = explorer.evaluations.evaluate("tiny-beir (test)", ["echo"])
    explorer.evaluations.wait_for_evaluation(evaluation, 30)
    stored = explorer.evaluations.evaluation(evaluation)
    assert (stored.state, stored.corpus, stored.dataset) == ("done", "tiny-beir",
                                                             "tiny-beir (test)")
    means = stored.summary["echo"]
    assert "EM" not in means and "AR@1" not in means and 0 < means["nDCG@10@overlap"] <= 1
    assert explorer.evaluations.evaluation_trace(evaluation, 0, "echo").llm_steps == ()  # no reader
    with pytest.raises(ConfigError, match="judged over corpus 'tiny-beir', not 'tiny'"):
        explorer.evaluations.evaluate("tiny-beir (test)", ["echo"], corpus="tiny")
    bad = tiny_beir(tmp_path / "bad", dev="query-id\tcorpus-id\tscore\nq1\tNowhere\t1\n")
    explorer.catalog.add_corpus("bad-beir", str(bad), upload=True)
    failed = settled(explorer, "bad-beir")
    assert failed.status == "failed"
    assert "dev.tsv, line 2: field 'corpus-id': names document 'Nowhere'" in failed.error
    assert "bad-beir" not in {c.name for c in stored_corpora()}
    assert not any(label.startswith("bad-beir") for label in explorer.catalog.datasets().values())


def test_a_question_set_s_evaluation_reads_its_latest_grades_in_the_process_that_ran_it(
        explorer, tmp_path):
    """Issue 67, in the browser: the pool's evaluation, run in this process, was shown
    from its job's rows as it ended, before any grade: Evaluate's summary had no nDCG@10
    however much was judged. Once it ended, its status is the stored one, measured again
    by the grades given since."""
    source = write_jsonl(tmp_path / "upload.jsonl", tiny_rows())
    explorer.catalog.add_corpus("mine", source, upload=True, original="notes.jsonl")
    assert settled(explorer, "mine").status == "ready"
    explorer.judging.add_questions("mine", "support", text="Who painted La Grande Jatte?\n")
    evaluation = explorer.evaluations.evaluate("mine (support)", ["echo"])
    explorer.evaluations.wait_for_evaluation(evaluation, 30)
    assert "nDCG@10@overlap" not in explorer.evaluations.evaluation_status(evaluation).means["echo"]
    pool, _ = explorer.judging.pool_evaluation(evaluation, 2)
    unit, _, _ = explorer.judging.to_judge(pool, "ann")
    explorer.judging.judge(pool, unit.question_id, unit.document_id, 3, "ann")
    means = explorer.evaluations.evaluation_status(evaluation).means["echo"]
    assert means["nDCG@10@overlap"] > 0
