"""The app as a user meets it: `python app.py` in its own process over a tiny corpus, real
packaged models, driven through the real Gradio client and a real headless Chromium.

The browser test needs Debian's chromium and the playwright package (`.ci/run` installs
both); it is skipped, saying so, where either is missing. Screenshots go to
FUNNEL_ARTIFACTS (default: <repo>/test-artifacts).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.paradigms.registry import PARADIGMS
from tests.conftest import ARTIFACTS
from tests.fakes import upload

pytestmark = [pytest.mark.live, pytest.mark.early]  # minutes as one unit: started first

ROOT = Path(__file__).resolve().parent.parent
CHOICES = ", ".join(sorted(PARADIGMS))
QUESTION = "Who painted A Sunday Afternoon on the Island of La Grande Jatte?"
EVIL = "<img src=x onerror=\"document.title='pwned'\"> Seurat trap"
DOCS = [
    ("Georges Seurat", "Georges Seurat was a French painter who devised pointillism. He "
     "painted A Sunday Afternoon on the Island of La Grande Jatte from 1884 to 1886."),
    ("A Sunday Afternoon", "A Sunday Afternoon on the Island of La Grande Jatte is the best "
     "known painting by Georges Seurat."),
    ("Pointillism", "Pointillism is a technique of painting small dots of colour."),
    ("Danube", "The Danube is a river that flows through Vienna and Budapest."),
    ("Budapest", "Budapest is the capital of Hungary, on the Danube."),
    ("Trap", f"{EVIL}. A Sunday Afternoon painter quiz."),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sessions_file(tmp_path_factory) -> Path:
    """Where the live app keeps saved runs (--sessions, outside its data directory)."""
    return tmp_path_factory.mktemp("elsewhere") / "runs.duckdb"


def _seed_classifiers(data: Path, qa: Path, base: Path) -> None:
    """Trained classifiers in the app's data directory, so drrag and best are ready in
    seconds instead of minutes of MiniLM training, both from a tiny BERT: the selection
    classifier in 1 epoch, and the query classifier in 5 at a rate a random model learns at
    (3e-3: 0.93 held-apart accuracy in 7 s, against MiniLM's one epoch in 29 s), stored
    where the app looks for the default one."""
    from engine.cache import load_or_build
    from engine.models.query_classifier import KIND, QueryClassifierConfig, cache_key
    from engine.train import fit_query_classifier
    from engine.train.fit_selection_classifier import ClassifierConfig, train_classifier

    with pytest.MonkeyPatch.context() as env:  # the app's data and QA folders
        env.setenv("FUNNEL_DATA_DIR", str(data))
        env.setenv("FUNNEL_SHARED_DATA", str(qa))
        train_classifier(ClassifierConfig(base_model=str(base), epochs=1, max_length=64))
        tiny = QueryClassifierConfig(epochs=5, learning_rate=3e-3, base_model=str(base))
        load_or_build(KIND, cache_key(QueryClassifierConfig()),
                      lambda out: fit_query_classifier._build(out, tiny),
                      lambda folder: folder)


def _qa_folder(root: Path, questions: int = 10) -> Path:
    """A QA data folder for the app: every listed file of the real one, HotpotQA train100
    cut to its first `questions` (their 100 paragraphs grow the corpus Evaluate, Sweep and
    Tune pick it for, and the dense index of that grown corpus is built in seconds, not
    the half minute train100's 1,000 paragraphs took)."""
    import shutil

    from engine.paths import shared_data_dir
    from engine.qa_data import BY_PATH

    source, folder = shared_data_dir(), root / "qa"
    for path in BY_PATH:  # copied, not linked: the app reads only inside its QA folder
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        if (source / path).is_file() and path != "hotpotqa/train100.json":
            shutil.copyfile(source / path, folder / path)
    rows = json.loads((source / "hotpotqa/train100.json").read_text())
    (folder / "hotpotqa/train100.json").write_text(json.dumps(rows[:questions]))
    return folder


RECEIVER: dict[str, int] = {}  # the port the live app receives OTLP traces on
RECEIVER_KEY = "a-key-the-pipeline-sends-0123456789"


@pytest.fixture(scope="module")
def live_app(tmp_path_factory, sessions_file, tiny_classifier_base, packaged_caches):
    """(url, client) of a running app whose paradigms are all ready."""
    from tests.fakes import gradio_client

    root = tmp_path_factory.mktemp("live")
    packaged_caches(root / "data")
    qa = _qa_folder(root)
    _seed_classifiers(root / "data", qa, tiny_classifier_base)
    corpus = root / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x}) for t, x in DOCS))
    port = _free_port()
    RECEIVER["port"] = _free_port()
    env = {**os.environ, "FUNNEL_DATA_DIR": str(root / "data"), "FUNNEL_PORT": str(port),
           "FUNNEL_CORPUS": str(corpus), "FUNNEL_SESSIONS": str(sessions_file),
           "FUNNEL_SHARED_DATA": str(qa),
           "FUNNEL_OTLP_RECEIVE": str(RECEIVER["port"]),
           "FUNNEL_OTLP_KEY": f"pipeline:{RECEIVER_KEY}", "OMP_NUM_THREADS": "1",
           # the folder the operator lets requests read QA files from (the tests' own
           # temporary folders): anything else is refused (engine.allowed)
           "FUNNEL_CORPUS_ROOT": str(tmp_path_factory.getbasetemp())}
    log = (root / "app.log").open("w")
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        client = _wait_for(lambda: gradio_client(url), 180, server, root)
        _wait_for(lambda: _ready(client), 900, server, root)
        yield url, client
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def _ready(client) -> bool:
    """Every paradigm ready and every build done: the tests read the dense index itself,
    not the BM25 stand-in that answers while it is built (training may go on)."""
    status = client.predict(api_name="/status")
    built = all(": ready" in line for line in status["tasks"]
                if not line.startswith("training "))
    if not (all(status["ready"].values()) and built):
        raise RuntimeError("; ".join(status["tasks"]))
    return True


def _wait_for(probe, seconds, server, root):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return probe()
        except Exception as err:  # noqa: BLE001 - retried until the deadline
            if server.poll() is not None or time.monotonic() > deadline:
                tail = (root / "app.log").read_text()[-3000:]
                pytest.fail(f"app not ready ({err}); log tail:\n{tail}")
            time.sleep(1)


def test_api_runs_saves_lists_and_reloads_exactly(live_app, sessions_file):
    _, client = live_app
    trace = json.loads(client.predict(QUESTION, "funnel", '{"K": 2, "N": 3, "H": 2}',
                                      api_name="/run"))
    assert [s["name"] for s in trace["stages"]] == ["clusters", "preranker", "postranker"]
    assert trace["answer"] and trace["config"]["N"] == 3
    flat = json.loads(client.predict(QUESTION, "flat", "", api_name="/run"))
    assert [s["name"] for s in flat["stages"]] == ["dense", "reranker"]
    run_id = client.predict(json.dumps(trace), "api run", "<b>notes</b>", api_name="/save_run")
    listed = json.loads(client.predict(api_name="/list_runs"))
    assert listed[0]["id"] == run_id and listed[0]["notes"] == "<b>notes</b>"
    assert json.loads(client.predict(run_id, api_name="/load_run")) == trace
    assert sessions_file.exists()  # saved where --sessions / FUNNEL_SESSIONS said


def test_api_longrag_and_best_run_with_their_options_and_save_like_the_others(live_app):
    _, client = live_app
    longrag = json.loads(client.predict(QUESTION, "longrag", '{"k": 2, "turns": 1}',
                                        api_name="/run"))
    assert [s["name"] for s in longrag["stages"]] == ["units", "context", "sentences"]
    assert longrag["llm_calls"] == 1 and longrag["config"]["k"] == 2
    best = json.loads(client.predict(QUESTION, "best", '{"hyde": true, "summary_tokens": 50}',
                                     api_name="/run"))
    assert [s["name"] for s in best["stages"]] == ["classify", "hybrid", "reranker", "summary"]
    assert [step["purpose"] for step in best["llm_steps"]] == ["hyde", "answer"]
    for trace in (longrag, best):
        run_id = client.predict(json.dumps(trace), trace["paradigm"], "", api_name="/save_run")
        assert json.loads(client.predict(run_id, api_name="/load_run")) == trace


def _qa_file(tmp_path) -> Path:
    """Two questions the tiny corpus can answer, in HotpotQA-contexts form."""
    qa = tmp_path / "qa.jsonl"
    qa.write_text("\n".join(json.dumps({
        "question_id": f"q{i}", "question_text": question,
        "answers_objects": [{"spans": [answer]}],
        "contexts": [{"id": "0", "title": title, "is_supporting": True,
                      "paragraph_text": "A paragraph the corpus does not need."}]})
        for i, (question, answer, title) in enumerate([
            (QUESTION, "Georges Seurat", "Georges Seurat"),
            ("Which river flows through Budapest?", "Danube", "Danube")])))
    return qa


def _evaluated(client, qa: Path, paradigms: str, configs: str = "") -> int:
    """The id of a finished evaluation of `qa` through `paradigms`, started by the API."""
    evaluation_id = client.predict(str(qa), paradigms, configs, 0, 0, 0, "api evaluation",
                                   api_name="/evaluate")
    return _ended(client, evaluation_id)


def _ended(client, evaluation_id: int, seconds: float = 300) -> int:
    """`evaluation_id` once its evaluation (or sweep) is no longer running."""
    deadline = time.monotonic() + seconds
    while json.loads(client.predict(evaluation_id, api_name="/evaluation_status"))[
            "state"] == "running" and time.monotonic() < deadline:
        time.sleep(1)
    return evaluation_id


def test_api_evaluates_a_qa_file_stores_reopens_and_exports_it(live_app, tmp_path):
    from gradio_client.exceptions import AppError

    _, client = live_app
    qa = _qa_file(tmp_path)
    evaluation_id = _evaluated(client, qa, "flat,best", '{"best": {"summary_tokens": 50}}')
    status = json.loads(client.predict(evaluation_id, api_name="/evaluation_status"))
    assert (status["state"], status["done"], status["total"]) == ("done", 2, 2)
    assert set(status["means"]) == {"flat", "best"}
    listed = json.loads(client.predict(api_name="/list_evaluations"))
    assert listed[0]["id"] == evaluation_id and listed[0]["name"] == "api evaluation"
    loaded = json.loads(client.predict(evaluation_id, api_name="/load_evaluation"))
    assert [(r["position"], r["paradigm"]) for r in loaded["rows"]] == [
        (0, "best"), (0, "flat"), (1, "best"), (1, "flat")]
    assert loaded["configs"]["best"]["summary_tokens"] == 50
    results = json.loads(client.predict(evaluation_id, "ragchecker",
                                        api_name="/export_evaluation"))["results"]
    assert {r["query_id"] for r in results} == {"best/q0", "flat/q0", "best/q1", "flat/q1"}
    files = json.loads(client.predict(evaluation_id, "trec",
                                      api_name="/export_evaluation_files"))["files"]
    assert "qrels.txt" in files and any(name.startswith("flat.") for name in files)
    with pytest.raises(AppError, match="No evaluation with id 99999"):
        client.predict(99999, api_name="/load_evaluation")
    with pytest.raises(AppError, match="Unknown paradigm 'sparse'"):
        client.predict(str(qa), "sparse", "", 0, 0, 0, "", api_name="/evaluate")


def test_api_imports_a_pipelines_traces_as_saved_runs(live_app, tmp_path):
    """`import_traces`: an uploaded OpenInference trace file (a LlamaIndex pipeline's, as
    Phoenix exported it) saved as runs that load_run reopens; a file that is not traces
    refused by name and line, nothing saved."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    from tests.test_traces import LLAMAINDEX_PHOENIX

    _, client = live_app
    before = len(json.loads(client.predict(api_name="/list_runs")))
    imported = json.loads(client.predict(handle_file(str(LLAMAINDEX_PHOENIX)), "", "li",
                                         api_name="/import_traces"))
    assert imported["runs"] == 3 and imported["evaluation"] is None
    trace = json.loads(client.predict(imported["sessions"][0], api_name="/load_run"))
    assert [s["name"] for s in trace["stages"]] == ["BM25Retriever",
                                                   "SentenceTransformerRerank"]
    bad = tmp_path / "spans.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n')
    with pytest.raises(AppError, match="spans.jsonl: JSON, so read as OpenInference traces "
                                       r".*, which it is not: line 2: not JSON"):
        client.predict(handle_file(str(bad)), "", "li", api_name="/import_traces")
    assert len(json.loads(client.predict(api_name="/list_runs"))) == before + 3


def test_the_app_saves_runs_a_pipeline_sends_over_otlp(live_app, monkeypatch):
    """--otlp-receive: runs sent by the OpenTelemetry SDK's OTLP/HTTP exporter (protobuf),
    as a pipeline's tracer would, with the receiver's key in the exporter's standard
    header variable, show in the saved runs as the key's user's."""
    from engine.service.otel import Tracing
    from tests.test_traces import _ours

    _, client = live_app
    before = len(json.loads(client.predict(api_name="/list_runs")))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"x-api-key={RECEIVER_KEY}")
    tracing = Tracing(f"http://127.0.0.1:{RECEIVER['port']}")
    for run in _ours():
        tracing.send(run)
    tracing.flush()
    runs = json.loads(client.predict(api_name="/list_runs"))
    assert len(runs) == before + 2
    assert {r["question"] for r in runs[:2]} == {_ours()[0].question}
    assert {r["owner"] for r in runs[:2]} == {"pipeline"}


def test_api_reanswers_a_run_over_other_units_and_the_gold_paragraphs(live_app):
    from gradio_client.exceptions import AppError

    _, client = live_app
    trace = json.loads(client.predict(QUESTION, "flat", '{"M": 6, "k": 3}', api_name="/run"))
    first = [c["unit"]["id"] for c in trace["stages"][0]["candidates"]]
    read = [c["unit"]["id"] for c in trace["stages"][-1]["candidates"]]
    dropped = next(u for u in first if u not in read)  # dense had it, the re-ranker cut it
    again = json.loads(client.predict(json.dumps(trace), json.dumps([read[-1], dropped]),
                                      False, api_name="/reanswer"))
    assert [s["name"] for s in again["stages"]] == ["dense", "reranker", "reanswer"]
    reanswered = again["stages"][-1]
    assert [c["unit"]["id"] for c in reanswered["candidates"]] == [read[-1], dropped]
    assert reanswered["settings"]["added"] == [dropped] and again["llm_calls"] == 1
    assert again["answer"] and again["llm_steps"][0]["prompt_tokens"] > 0
    with pytest.raises(AppError, match="gold supporting paragraphs"):
        client.predict(json.dumps(trace), "[]", True, api_name="/reanswer")
    trace["gold"] = {"id": "q0", "text": QUESTION, "answers": ["Georges Seurat"],
                     "supporting_titles": ["Georges Seurat"]}
    oracle = json.loads(client.predict(json.dumps(trace), "[]", True, api_name="/reanswer"))
    assert [c["unit"]["id"] for c in oracle["stages"][-1]["candidates"]] == [
        "oracle:Georges Seurat"]
    assert {"EM", "F1"} <= set(oracle["metrics"])
    assert client.predict(json.dumps(oracle), "oracle", "", api_name="/save_run") > 0
    for ids, message in [('["nope"]', "'nope' is not a candidate"),
                         ("Danube", "not a JSON list")]:
        with pytest.raises(AppError, match=message):
            client.predict(json.dumps(trace), ids, False, api_name="/reanswer")


@pytest.fixture(scope="module")
def stored_evaluation(live_app, tmp_path_factory) -> int:
    """One stored evaluation of `_qa_file`'s two questions through flat (its reader's
    leave-one-out ablation on), funnel and best, for the tests that only read a stored
    evaluation: ablation, coverage and ceilings, attribution and paired differences, and
    the Diagnose tab (each evaluation of the real reader costs the module seconds)."""
    configs = json.dumps({"flat": {"reader": {"ablation": True}}})
    return _evaluated(live_app[1], _qa_file(tmp_path_factory.mktemp("evaluated")),
                      "flat,funnel,best", configs)


def test_api_ablation_of_a_saved_run_an_evaluations_run_and_across_an_evaluation(
        live_app, stored_evaluation):
    """`ablation`: leave-one-out attribution of a stored run by the real packaged reader;
    `ablation_agreement`: attention against it over an evaluation run with
    reader.ablation."""
    from gradio_client.exceptions import AppError

    _, client = live_app
    trace = json.loads(client.predict(QUESTION, "flat", '{"k": 3}', api_name="/run"))
    run_id = client.predict(json.dumps(trace), "to attribute", "", api_name="/save_run")
    found = json.loads(client.predict(run_id, 0, -1, "", "", api_name="/ablation"))
    ablation, read = found["ablation"], trace["stages"][-1]["candidates"]
    assert sorted(ablation["passages"]) == sorted(c["unit"]["id"] for c in read)
    assert len(ablation["without"]) == len(ablation["effects"]) == len(read) == 3
    assert ablation["effects"][0] == pytest.approx(ablation["logprob"] - ablation["without"][0],
                                                   abs=1e-4)
    assert ablation["answer"] == trace["answer"] and ablation["tokens_read"] > 0
    assert found["agreement"]["most"] == ablation["most"]
    assert found["trace"]["llm_steps"][0]["ablation"]["passages"] == ablation["passages"]
    assert found["trace"]["stages"] == trace["stages"]  # nothing but the reader ran

    evaluation_id = stored_evaluation
    across = json.loads(client.predict(evaluation_id, api_name="/ablation_agreement"))
    assert list(across) == ["flat"]  # funnel's and best's readers were not asked
    assert across["flat"]["runs"] == across["flat"]["compared"] == 2
    assert 0 <= across["flat"]["same_top"] <= 1 and across["flat"]["cost_ratio"] > 0
    # the questions among the corpus's passages, from the dense index's own vectors
    mapped = json.loads(client.predict(evaluation_id, api_name="/coverage"))
    assert [q["position"] for q in mapped["questions"]] == [0, 1]
    assert set(mapped["questions"][0]["outcomes"]) == {"flat", "funnel", "best"}
    assert mapped["fitted_on"]["corpus_passages"] == len(mapped["passages"]) > 0
    assert all(-1 <= q["cover"] <= 1 and q["nearest"] for q in mapped["questions"])
    assert json.loads(client.predict(evaluation_id, api_name="/coverage")) == mapped  # cached
    # each stage's ceiling, stored as an evaluation and paired with this one
    ceilings = _ended(client, client.predict(evaluation_id, "flat", False,
                                             api_name="/ceilings"))
    table = json.loads(client.predict(ceilings, api_name="/ceiling_table"))
    assert table["baseline"] == evaluation_id and table["state"] == "done"
    cuts = table["paradigms"]["flat"]["cuts"]
    assert [c["label"] for c in cuts] == ["flat: perfect cut 1 (dense)",
                                          "flat: perfect cut 2 (reranker)"]
    for cut in cuts:
        recall = next(d for d in cut["differences"] if d["metric"] == "gold_doc_recall")
        assert recall["diff"] >= 0 and cut["means"]["gold_doc_recall"] == 1.0
    with pytest.raises(AppError, match="no ceiling evaluation"):
        client.predict(evaluation_id, api_name="/ceiling_table")
    stored = json.loads(client.predict(0, evaluation_id, 1, "funnel", "",
                                       api_name="/ablation"))
    assert stored["ablation"]["passages"] and stored["trace"]["paradigm"] == "funnel"
    for args, message in [((0, 0, -1, "", ""), "Name one run: none given"),
                          ((run_id, evaluation_id, 0, "flat", ""),
                           "run_id and evaluation_id given"),
                          ((0, evaluation_id, -1, "flat", ""), "question position"),
                          ((0, evaluation_id, 7, "flat", ""), "no run of question 7")]:
        with pytest.raises(AppError, match=message):
            client.predict(*args, api_name="/ablation")


def test_api_attribution_and_paired_differences_of_a_stored_evaluation(
        live_app, stored_evaluation):
    from gradio_client.exceptions import AppError

    _, client = live_app
    evaluation_id = stored_evaluation
    found = json.loads(client.predict(evaluation_id, "answer", api_name="/attribution"))
    assert set(found) == {"flat", "funnel", "best"}
    for paradigm in found.values():  # each question once, and its position named
        assert sum(paradigm["counts"].values()) == paradigm["total"] == 2
        assert sorted(p for ps in paradigm["questions"].values() for p in ps) == [0, 1]
    assert found["flat"]["cuts"] == ["dense", "reranker"]
    paired = json.loads(client.predict(evaluation_id, "flat", "funnel", "",
                                       api_name="/paired"))
    assert paired["shared"] == 2 and paired["resamples"] == 10_000
    em = next(d for d in paired["differences"] if d["metric"] == "EM")
    assert em["ci"][0] <= em["diff"] <= em["ci"][1] and 0 < em["p"] <= 1
    itself = json.loads(client.predict(evaluation_id, "flat", "flat",
                                       str(evaluation_id), api_name="/paired"))
    assert all(d["diff"] == 0 and d["within_noise"] for d in itself["differences"])
    for args, message in [((evaluation_id, "support?"), "track='support\\?'"),
                          ((99999, "answer"), "No evaluation with id 99999")]:
        with pytest.raises(AppError, match=message):
            client.predict(*args, api_name="/attribution")
    with pytest.raises(AppError, match="no paradigm 'sparse'"):
        client.predict(evaluation_id, "flat", "sparse", "", api_name="/paired")
    with pytest.raises(AppError, match="other_evaluation_id='x'"):
        client.predict(evaluation_id, "flat", "funnel", "x", api_name="/paired")


@pytest.mark.parametrize(("args", "message"), [
    (("   ", "funnel", ""), "question is empty"),
    ((QUESTION, "longrag", '{"k": 9}'), "k=9 is out of range"),
    ((QUESTION, "best", '{"search": "splade"}'), "Unknown search 'splade'"),
    ((QUESTION, "sparse", ""), f"Unknown paradigm 'sparse'. Choose from: {CHOICES}"),
    ((QUESTION, "funnel", '{"K": 0}'), "K"),
    ((QUESTION, "funnel", "{oops"), "not valid JSON"),
    (("x" * 10_000, "funnel", ""), "limit is 8,000"),
])
def test_api_bad_input_gets_a_clear_error(live_app, args, message):
    from gradio_client.exceptions import AppError

    _, client = live_app
    with pytest.raises(AppError, match=message):
        client.predict(*args, api_name="/run")
    with pytest.raises(AppError, match="No saved run with id 99999"):
        client.predict(99999, api_name="/load_run")


def test_api_drrag_run_label_list_retrain_and_switch_back(live_app):
    from gradio_client.exceptions import AppError

    _, client = live_app
    trace = json.loads(client.predict(QUESTION, "drrag", '{"selection": "cis", "k": 3}',
                                      api_name="/run"))
    assert [s["name"] for s in trace["stages"]] == ["hybrid", "qdc", "cis"]  # its default
    calls = trace["stages"][-1]["details"]["calls"]
    assert len(calls) == 3 and all({"probability", "threshold", "kept"} <= set(c) for c in calls)
    assert trace["llm_calls"] == 1
    pairs = json.loads(client.predict(json.dumps(trace), api_name="/annotate_pairs"))
    assert {(p["d1_id"], p["d2_id"]) for p in pairs} == {(c["d1"], c["d2"]) for c in calls}
    first = pairs[0]
    stored = json.loads(client.predict(trace["question"], first["d1_id"], first["d2_id"], 1,
                                       "api tester", api_name="/annotate_label"))
    assert stored["label"] == 1 and stored["d1_text"] == first["d1_text"]
    listed = json.loads(client.predict(api_name="/list_labels"))
    assert any(x["id"] == stored["id"] and x["annotator"] == "api tester" for x in listed)
    with pytest.raises(AppError, match="d2_id='Nile' is not a document"):
        client.predict(QUESTION, "Danube", "Nile", 1, api_name="/annotate_label")
    with pytest.raises(AppError, match="label=7"):
        client.predict(QUESTION, "Danube", "Budapest", 7, api_name="/annotate_label")

    before = json.loads(client.predict(api_name="/classifier_status"))
    assert before["active"] and before["labels"] >= 1
    job = _retrained(client)
    status = json.loads(client.predict(api_name="/classifier_status"))
    assert job["state"] == "done" and job["before"] == before["active"] != job["after"]
    old, new = job["compared"]["before"], job["compared"]["after"]
    assert old["id"] == job["before"] and new["id"] == job["after"]
    assert len(old["heldout_scores"]) == len(new["heldout_scores"]) == job["compared"]["pairs"]
    # the rule: the new version is made active only if its held-out AUC is not lower
    assert job["activated"] == (round(new["heldout_auc"], 3) >= round(old["heldout_auc"], 3))
    assert status["active"] == (job["after"] if job["activated"] else job["before"])
    assert {v["id"] for v in status["versions"]} >= {job["before"], job["after"]}
    other = job["before"] if job["activated"] else job["after"]
    switched = json.loads(client.predict(other, api_name="/activate_classifier"))
    assert switched["active"] == other
    back = json.loads(client.predict(job["before"], api_name="/activate_classifier"))
    assert back["active"] == job["before"]
    with pytest.raises(AppError, match="Unknown classifier version 'v0'"):
        client.predict("v0", api_name="/activate_classifier")


def _retrained(client) -> dict:
    """The status of a retrain started now, once it has ended."""
    json.loads(client.predict(api_name="/retrain"))
    return _retrain_ended(client)


def _retrain_ended(client, seconds: float = 300) -> dict:
    """The retrain's status once it has ended (it may wait for its turn first)."""
    deadline = time.monotonic() + seconds
    while True:
        job = json.loads(client.predict(api_name="/classifier_status"))["retrain"]
        if job["state"] not in ("waiting", "running") or time.monotonic() > deadline:
            return job
        time.sleep(1)



def test_browser_explore_save_and_reopen(live_app, browser):
    from playwright.sync_api import expect

    url, _ = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.locator("#fe-question textarea").fill("Which painting is the Seurat trap quiz?")
    page.locator("#fe-run").click()
    tables = page.locator("#fe-tables table.fe-table")
    tables.nth(2).wait_for(timeout=180_000)  # clusters, documents, passages
    page.locator("#fe-heatmap .js-plotly-plot").wait_for(timeout=60_000)
    page.locator("#fe-answer .fe-answer-box").wait_for(timeout=60_000)
    assert page.locator("#fe-tables table.fe-table:not(.fe-llm)").count() == 3
    llm = page.locator("#fe-tables table.fe-llm")  # the reader's call, its prompt collapsed
    assert llm.count() == 1 and "answer" in llm.inner_text()
    # corpus markup is text, not markup: the trap document's tag shows, never runs
    assert page.title() == "Funnel Explorer"  # the onerror handler never ran
    assert "<img src=x" in page.locator("#fe-tables").inner_text()
    # a heatmap row per passage read: plotly drew passages whose shortened labels matched
    # as one row (4 read, 3 shown)
    rows = page.evaluate("() => [document.querySelector('#fe-heatmap .js-plotly-plot')"
                         ".data[0].y, document.querySelectorAll('#fe-heatmap .ytick').length]")
    assert len(rows[0]) == len(set(rows[0])) == rows[1] > 0, rows
    page.screenshot(path=str(ARTIFACTS / "explore.png"), full_page=True)
    # leave-one-out attribution: a bar per passage read beside its heatmap row, and a table
    page.locator("#fe-ablate").click()
    page.locator("#fe-tables table.fe-ablation").wait_for(timeout=120_000)
    expect(page.locator("#fe-ablation")).to_contain_text("Attributed: 4 passages")
    plotted = page.evaluate("() => document.querySelector('#fe-heatmap .js-plotly-plot')"
                            ".data.map(t => [t.type, t.y])")
    assert [t for t, _ in plotted] == ["heatmap", "bar"]
    assert len(plotted[1][1]) == 4 and set(plotted[1][1]) <= set(plotted[0][1])
    assert page.locator("#fe-tables table.fe-ablation tbody tr").count() == 4
    page.screenshot(path=str(ARTIFACTS / "explore_ablation.png"), full_page=True)
    run_id = _save(page, "browser run")  # saved with its ablation
    # the same run is saved once: the twin is a run of its own
    page.locator("#fe-save-name textarea").fill("cleared when the run starts")
    page.locator("#fe-run").click()
    expect(page.locator("#fe-save-name textarea")).to_have_value("", timeout=30_000)
    page.locator("#fe-answer .fe-answer-box").wait_for(state="detached", timeout=60_000)
    page.locator("#fe-answer .fe-answer-box").wait_for(timeout=180_000)
    expect(page.locator("#fe-ablation")).not_to_contain_text("Attributed")  # the last run's
    twin_id = _save(page, "browser twin")
    page.get_by_role("tab", name="Sessions").click()
    ids = page.locator("#fe-session-ids textarea")
    _row(page, "browser run").click()  # a click on the row picks its id
    expect(ids).to_have_value(run_id, timeout=10_000)
    page.locator("#fe-open").click()
    page.locator("#fe-session-tables table.fe-table").nth(2).wait_for(timeout=30_000)
    assert f"Run {run_id}, reopened" in page.locator("#fe-session-message").inner_text()
    page.locator("#fe-session-heatmap .js-plotly-plot").wait_for(timeout=30_000)
    assert page.evaluate("() => document.querySelector('#fe-session-heatmap .js-plotly-plot')"
                         ".data.length") == 2  # the ablation was saved with the run
    page.screenshot(path=str(ARTIFACTS / "sessions.png"), full_page=True)
    _row(page, "browser twin").click()  # a second click makes a pair
    expect(ids).to_have_value(f"{run_id}, {twin_id}", timeout=10_000)
    page.locator("#fe-compare-two").click()
    pair = page.locator("#fe-session-answer table.fe-compare")
    pair.wait_for(timeout=30_000)
    heads = pair.locator("thead th").all_inner_texts()
    assert heads[0] == "" and len(heads) == 3  # each run headed by id, name, question, corpus
    assert heads[1].startswith(f"run {run_id}: browser run") and "funnel · tiny" in heads[1]
    assert heads[2].startswith(f"run {twin_id}: browser twin") and "Seurat" in heads[2]
    assert "cut 3" in pair.inner_text()
    # each box holds what its label says: kept per cut under Funnel, seconds under Timing;
    # the reader attention of one run shows on Open, not beside a pair
    expect(page.locator("#fe-session-funnel")).to_contain_text("Candidates kept per cut",
                                                                timeout=10_000)
    expect(page.locator("#fe-session-timing")).to_contain_text("Seconds per stage")
    expect(page.locator("#fe-session-heatmap")).to_be_hidden()
    page.screenshot(path=str(ARTIFACTS / "sessions_compare.png"), full_page=True)
    # Delete asks once before it deletes
    ids.fill(twin_id)
    page.locator("#fe-delete").click()
    message = page.locator("#fe-session-message")
    expect(message).to_contain_text(f"Press Delete again to delete run {twin_id}",
                                     timeout=10_000)
    _row(page, "browser twin")  # still saved
    page.locator("#fe-delete").click()
    expect(message).to_contain_text(f"Deleted run {twin_id}.", timeout=10_000)
    expect(page.locator("#fe-sessions-table").get_by_text("browser twin", exact=True)
           .filter(visible=True)).to_have_count(0)


def _save(page, name: str) -> str:
    """Save the Explore tab's run as `name`; returns its run id."""
    page.locator("#fe-save-name textarea").fill(name)
    earlier = re.findall(r"Saved as run (\d+)\.", page.locator("#fe-saved").inner_text())
    page.locator("#fe-save").click()
    # wait for a new "Saved as run N." (while saving, Gradio's progress text shows there too)
    saved = page.wait_for_function(
        """old => { const m = document.querySelector('#fe-saved').innerText
                      .match(/Saved as run (\\d+)\\./);
                    return m && m[1] !== old && m[1]; }""", arg=earlier[-1] if earlier else "",
        timeout=30_000)
    return saved.json_value()


def _row(page, name: str):
    """The visible cell holding exactly `name` in the Sessions list."""
    cell = page.locator("#fe-sessions-table").get_by_text(name, exact=True)
    cell.filter(visible=True).first.wait_for(timeout=30_000)
    return cell.filter(visible=True).first


def test_browser_compare_every_paradigm(live_app, browser):
    url, _ = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(url)
    page.get_by_role("tab", name="Compare").click()
    page.locator("#fe-compare-question textarea").fill(QUESTION)
    page.locator("#fe-compare-run").click()
    # each paradigm's column is shown as it finishes, while the next one runs
    page.locator("#fe-compare-notice").get_by_text(re.compile(r"Running \w+ \(\d of")).wait_for(
        timeout=60_000)
    page.wait_for_function(
        "n => document.querySelectorAll('#fe-compare-table table.fe-compare thead th')"
        ".length === n && !document.querySelector('#fe-compare-notice').innerText"
        ".includes('Running')", arg=len(PARADIGMS) + 1, timeout=300_000)
    table = page.locator("#fe-compare-table table.fe-compare")
    headers = table.locator("thead th").all_inner_texts()
    # every paradigm is ticked at first; columns are headed by their labels
    assert headers == ["", *(spec.label for spec in PARADIGMS.values())]
    text = table.inner_text()
    for row in ("reader tokens", "cut 1", "cut 2", "cut 3"):
        assert row in text
    assert "hybrid: " in text and "dense: " in text  # each paradigm's own first cut
    assert page.locator("#fe-compare-finals ol.fe-final").count() == len(PARADIGMS)
    # five columns of final passages fit a 1,400 px window (they ran 260 px off the page)
    assert page.evaluate("() => { const e = document.querySelector('#fe-compare-finals');"
                         " return e.scrollWidth <= e.clientWidth + 1; }")
    page.locator("#fe-compare-timing .js-plotly-plot").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)


def test_browser_drrag_decisions_then_annotate_a_pair_that_survives_a_reload(live_app,
                                                                              browser):
    page = _explore(browser, live_app[0], "DR-RAG", QUESTION)
    decisions = page.locator("#fe-tables table.fe-decisions")
    assert decisions.locator("tbody tr").count() >= 1
    assert re.search(r"kept|dropped", decisions.inner_text())
    assert "sent to the reader" in page.locator("#fe-tables").inner_text()
    page.screenshot(path=str(ARTIFACTS / "drrag-decisions.png"), full_page=True)

    page.get_by_role("tab", name="Annotate").click()
    question = "Which river flows through Budapest and Vienna?"
    page.locator("#fe-annotate-question textarea").fill(question)
    page.locator("#fe-annotator textarea").fill("browser tester")
    page.locator("#fe-annotate-run").click()
    card = page.locator("#fe-annotate-card .fe-card")
    card.wait_for(timeout=180_000)
    assert "Pair 1 of" in card.inner_text()
    page.locator("body").click(position={"x": 5, "y": 5})  # focus off the text boxes
    page.keyboard.press("y")  # the keyboard shortcut labels the pair positive
    page.wait_for_function("document.querySelector('#fe-annotate-card') && "
                           "document.querySelector('#fe-annotate-card').innerText"
                           ".includes('Pair 2 of') || document.querySelector("
                           "'#fe-annotate-card').innerText.includes('Every pair')",
                           timeout=30_000)
    listed = page.locator("#fe-labels-table")
    assert question in listed.inner_text() and "browser tester" in listed.inner_text()
    page.screenshot(path=str(ARTIFACTS / "annotate.png"), full_page=True)

    page.reload()
    page.get_by_role("tab", name="Annotate").click()
    page.wait_for_function(f"document.querySelector('#fe-labels-table') && document."
                           f"querySelector('#fe-labels-table').innerText.includes({question!r})",
                           timeout=30_000)
    row = page.locator("#fe-labels-table tr", has_text=question).first
    assert "positive" in row.inner_text() and "browser tester" in row.inner_text()

    # Retrain: both versions on the same held-out pairs, the one before named, the rule
    # applied and said; a version kept inactive is one press of Make active away
    _, client = live_app
    active = json.loads(client.predict(api_name="/classifier_status"))["active"]
    page.locator("#fe-retrain").click()
    page.locator("#fe-classifier .fe-progress").wait_for(timeout=30_000)  # waits or trains
    job = _retrain_ended(client)
    assert job["state"] == "done" and job["before"] == active != job["after"]
    page.wait_for_function("(document.querySelector('#fe-retrain-done') || {innerText: ''})"
                           f".innerText.includes({job['after']!r})", timeout=30_000)  # polled
    done = page.locator("#fe-retrain-done")
    before_row = page.locator("#fe-retrain-compared tr", has_text="before")
    assert active in before_row.inner_text()
    assert job["after"] in page.locator("#fe-retrain-compared tr", has_text="after").inner_text()
    assert "becomes active only if its held-out AUC" in page.locator("#fe-classifier").inner_text()
    legend = page.locator("#fe-pr .legendtext").all_text_contents()
    assert [t.split(":")[0] for t in legend] == ["before", "after"]
    page.screenshot(path=str(ARTIFACTS / "annotate-retrain.png"), full_page=True)
    if not job["activated"]:
        assert "not made active" in done.inner_text()
        page.locator("#fe-activate").click()  # the new version is preselected
        page.wait_for_function("(document.querySelector('#fe-retrain-done') || {innerText: "
                               "''}).innerText.includes('You have made it active since')",
                               timeout=30_000)
    status = json.loads(client.predict(api_name="/classifier_status"))
    assert status["active"] == job["after"]
    client.predict(active, api_name="/activate_classifier")  # as it was for the next tests


def _explore(browser, url: str, paradigm: str, question: str):
    """A new page that ran `question` through the paradigm whose label matches `paradigm`
    in the Explore tab, its answer shown."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(url)
    page.locator("#fe-paradigm").get_by_label(re.compile(paradigm)).check()
    page.locator("#fe-question textarea").fill(question)
    page.locator("#fe-run").click()
    page.locator("#fe-answer .fe-answer-box").wait_for(timeout=180_000)
    return page


def test_browser_longrag_and_then_best_show_their_own_stages_on_one_page(live_app, browser):
    """LongRAG's units, winning chunks and both reader turns; then, the paradigm switched on
    the same page, best's modules, and a request it answers without retrieval."""
    page = _explore(browser, live_app[0], "LongRAG", QUESTION)
    tables = page.locator("#fe-tables")
    text = tables.inner_text()
    assert re.search(r"units \(clusters\): \d+ in, \d+ kept", text)
    assert "best chunk" in text and "cosine" in text  # the chunk that won each unit's MaxP
    assert re.search(r"context \(documents\).*\n.*of 1,000 context tokens", text)
    calls = tables.locator("table.fe-llm tbody tr")
    assert calls.count() == 2  # the long answer, then the short answer extracted from it
    purposes = tables.locator("table.fe-llm tbody tr td:nth-child(2)").all_inner_texts()
    assert purposes == ["long answer", "answer"]
    page.screenshot(path=str(ARTIFACTS / "longrag.png"), full_page=True)

    page.locator("#fe-paradigm").get_by_label(re.compile("Best practices")).check()
    page.locator("#fe-run").click()
    page.wait_for_function("document.querySelector('#fe-tables').innerText"
                           ".includes('classify (query)') && "
                           "document.querySelector('#fe-answer .fe-answer-box')",
                           timeout=180_000)
    text = tables.inner_text()
    assert re.search(r"classify \(query\).*: retrieve", text)
    assert re.search(r"hybrid \(passages\): \d+ in", text)
    assert re.search(r"summary \(passages\).*\n.*sentences kept", text)
    assert re.search(r"summary: \d+ sentences weighed, \d+ kept", text)  # with cosines
    page.screenshot(path=str(ARTIFACTS / "best.png"), full_page=True)

    page.locator("#fe-question textarea").fill("Translate 'good morning' into French.")
    page.locator("#fe-run").click()
    page.wait_for_function("document.querySelector('#fe-tables').innerText"
                           ".includes('answer without retrieval') && "
                           "document.querySelector('#fe-tables table.fe-llm')",
                           timeout=120_000)  # the stages show first, then the answer
    assert tables.locator("table.fe-table:not(.fe-llm)").count() == 0  # nothing retrieved
    assert tables.locator("table.fe-llm tbody tr").count() == 1  # the generator alone
    page.screenshot(path=str(ARTIFACTS / "best-no-retrieval.png"), full_page=True)


def _confirm_build(page, button: str, progress: str) -> None:
    """Press "Build and start" if the start asked to build an index first (it names the
    index and how long it takes here), once the start has answered either way."""
    page.wait_for_function(
        f"document.querySelector('{progress}').innerText.includes('Evaluation') || "
        f"!!document.querySelector('{button}:not(.hidden)')?.offsetParent",
        timeout=60_000)
    if page.locator(button).is_visible():
        assert "on this machine" in page.locator(progress).inner_text() or \
            "Build and start" in page.locator(button).inner_text()
        page.locator(button).click()


def _pick_dataset(page, dropdown: str, name: str = "HotpotQA train100") -> None:
    """A QA file's paragraphs grow the corpus into one whose dense index is built on first
    use (the app's train100 is its first ten questions: `_qa_folder`)."""
    page.locator(f"{dropdown} input").click()
    page.locator(dropdown).get_by_role("option", name=name).click()


def test_browser_evaluates_five_questions_and_opens_a_run_in_explore(live_app, browser):
    from playwright.sync_api import expect

    url, _ = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.get_by_role("tab", name="Evaluate").click()
    _pick_dataset(page, "#fe-eval-dataset")
    page.locator("#fe-eval-limit input").fill("5")
    page.locator("#fe-eval-paradigms").get_by_label(re.compile("FunnelRAG")).uncheck()
    page.locator("#fe-eval-name textarea").fill("browser evaluation")
    page.locator("#fe-eval-start").click()
    # the corpus plus train100's paragraphs is a corpus of its own: its dense index is
    # asked about first, with how long it takes here
    _confirm_build(page, "#fe-eval-build", "#fe-eval-progress")
    page.wait_for_function("document.querySelector('#fe-eval-progress').innerText"
                           ".includes('done, 5 of 5 questions over corpus')", timeout=300_000)
    table = page.locator("#fe-eval-table table.fe-eval")
    assert "AR@1" in table.inner_text() and "EM" in table.inner_text()
    page.locator("#fe-eval-recall .js-plotly-plot").wait_for(timeout=30_000)
    page.locator("#fe-eval-latency .js-plotly-plot").wait_for(timeout=30_000)
    rows = page.locator("#fe-eval-rows [role=row].virtual-row")  # Gradio 6's virtual grid
    assert rows.count() == 5
    assert "browser evaluation" in page.locator("#fe-eval-list").inner_text()
    page.screenshot(path=str(ARTIFACTS / "evaluate.png"), full_page=True)
    first = int(re.search(r"Evaluation (\d+): done",
                          page.locator("#fe-eval-progress").inner_text()).group(1))

    # a second, sampled evaluation of flat alone; then the two compared (over flat, the
    # paradigm both ran), the first reopened and exported
    page.locator("#fe-eval-paradigms").get_by_label(re.compile("Best practices")).uncheck()
    page.locator("#fe-eval-limit input").fill("0")
    page.locator("#fe-eval-sample input").fill("2")
    page.locator("#fe-eval-seed input").fill("3")
    page.locator("#fe-eval-name textarea").fill("sampled")
    page.locator("#fe-eval-start").click()
    page.wait_for_function("document.querySelector('#fe-eval-progress').innerText"
                           ".includes('done, 2 of 2 questions')", timeout=300_000)
    page.locator("#fe-eval-ids textarea").fill(f"{first}, {first + 1}")
    page.locator("#fe-eval-compare").click()
    diff = page.locator("#fe-eval-table table.fe-eval-diff")
    diff.wait_for(timeout=30_000)
    assert "difference" in diff.inner_text() and "sampled" in diff.inner_text()
    page.wait_for_function(  # the plots show both evaluations' curves
        "document.querySelector('#fe-eval-recall').textContent"
        f".includes('{first}: flat') && document.querySelector('#fe-eval-recall')"
        f".textContent.includes('{first + 1}: flat')", timeout=30_000)
    page.locator("#fe-eval-ids textarea").fill(str(first))
    page.locator("#fe-eval-open").click()
    page.wait_for_function("document.querySelector('#fe-eval-progress').innerText"
                           f".includes('Evaluation {first}: done, 5 of 5')", timeout=30_000)
    # Open sets the form to what started it, then brings the progress line up
    expect(page.locator("#fe-eval-name textarea")).to_have_value("browser evaluation")
    expect(page.locator("#fe-eval-limit input")).to_have_value("5")
    expect(page.locator("#fe-eval-sample input")).to_have_value("0")
    page.wait_for_function("Math.abs(document.querySelector('#fe-eval-progress')"
                           ".getBoundingClientRect().top) < 200", timeout=30_000)
    page.locator("#fe-eval-format input").click()
    page.get_by_role("option", name="flashrag").click()
    page.locator("#fe-eval-export").click()
    page.wait_for_function("document.querySelector('#fe-eval-message').innerText"
                           f".includes('Exported evaluation {first} as flashrag')",
                           timeout=30_000)
    assert page.locator("#fe-eval-file").get_by_text(
        f"evaluation_{first}_flashrag").count() >= 1
    page.locator("#fe-eval-ids textarea").fill("seven")
    page.locator("#fe-eval-open").click()
    page.wait_for_function("document.querySelector('#fe-eval-progress').innerText"
                           ".includes('Evaluation ids are numbers')", timeout=30_000)
    cell = page.locator("#fe-eval-rows [data-testid=cell-1-3]")  # the second question (No. 2)
    question = cell.inner_text().strip()
    cell.click()
    page.wait_for_function("document.querySelector('#fe-notice').innerText"
                           ".includes('question 2, through flat')", timeout=30_000)
    assert page.get_by_role("tab", name="Explore").get_attribute("aria-selected") == "true"
    assert page.locator("#fe-question textarea").input_value() == question
    page.locator("#fe-tables table.fe-table").first.wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "evaluate-run.png"), full_page=True)


def test_browser_diagnoses_an_evaluation_and_opens_a_question_of_an_outcome_in_explore(
        live_app, browser, stored_evaluation):
    from playwright.sync_api import expect

    url, _ = live_app
    evaluation_id = stored_evaluation
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.get_by_role("tab", name="Diagnose").click()
    page.locator("#fe-diag-id input").click()  # stored evaluations by name, newest first
    page.locator("#fe-diag-id").get_by_role(
        "option", name=re.compile(rf"^{evaluation_id}: api evaluation · ")).click()
    page.locator("#fe-diag-go").click()
    # expect() names the text it found when it fails (this wait once timed out in a full
    # run, never alone); the tab's own refresh on opening runs in the same queue
    expect(page.locator("#fe-diag-message")).to_contain_text(
        f"Evaluation {evaluation_id} (2 of 2 questions", timeout=90_000)
    page.wait_for_function(  # one stacked bar per paradigm
        "['flat', 'funnel', 'best'].every(p => document.querySelector('#fe-diag-bars')"
        ".textContent.includes(p))", timeout=30_000)
    page.locator("#fe-diag-tab-flow-button").click()  # the first one's flow, in its view
    page.wait_for_function("document.querySelector('#fe-diag-flow')?.textContent"
                           ".includes('questions (2)')", timeout=30_000)
    page.locator("#fe-diag-flow-of input").click()
    page.locator("#fe-diag-flow-of").get_by_role("option", name="funnel").click()
    page.wait_for_function("document.querySelector('#fe-diag-flow').textContent"
                           ".includes('funnel: every question')", timeout=30_000)
    page.locator("#fe-diag-tab-paired-button").click()
    page.locator("#fe-diag-b input").click()
    page.locator("#fe-diag-b").get_by_role("option", name="best").click()
    page.locator("#fe-diag-pair").click()
    page.wait_for_function("document.querySelector('#fe-diag-paired').innerText"
                           ".includes('paired over 2 shared questions')", timeout=30_000)
    assert "95% interval" in page.locator("#fe-diag-paired").inner_text()
    page.screenshot(path=str(ARTIFACTS / "diagnose.png"), full_page=True)
    page.locator("#fe-diag-other input").click()  # B picked from a stored evaluation
    page.locator("#fe-diag-other").get_by_role(
        "option", name=re.compile(rf"^{evaluation_id}: ")).click()
    expect(page.locator("#fe-diag-other input")).to_have_value(
        re.compile(rf"^{evaluation_id}: api evaluation · "))
    page.locator("#fe-diag-pair").click()
    expect(page.locator("#fe-diag-paired")).to_contain_text(
        f"B = {evaluation_id}: best: paired over 2 shared", timeout=30_000)

    page.locator("#fe-diag-tab-lost-button").click()
    segment = page.locator("#fe-diag-segment input").input_value()  # "flat · <outcome>"
    paradigm = segment.split(" · ")[0]
    assert paradigm in ("flat", "funnel", "best")
    cell = page.locator("#fe-diag-rows [data-testid=cell-0-3]")
    question = cell.inner_text().strip()
    cell.click()
    page.wait_for_function("document.querySelector('#fe-notice').innerText"
                           f".includes('through {paradigm}')", timeout=30_000)
    assert page.get_by_role("tab", name="Explore").get_attribute("aria-selected") == "true"
    assert page.locator("#fe-question textarea").input_value() == question

    # what would the reader say with only the gold paragraphs? (the stored run has gold)
    page.locator("#fe-reanswer").get_by_text("What would the reader say").click()
    keep = page.locator("#fe-reanswer-keep input[type=checkbox]")
    for i in range(keep.count()):
        keep.nth(i).uncheck()
    page.locator("#fe-reanswer-oracle input").check()
    page.locator("#fe-reanswer-go").click()
    page.wait_for_function("document.querySelector('#fe-reanswer-answers').innerText"
                           ".includes('1 oracle')", timeout=120_000)
    answers = page.locator("#fe-reanswer-answers").inner_text()
    assert "As run" in answers and "EM" in answers.split("Re-answered")[1]
    page.locator("#fe-reanswer-after .js-plotly-plot").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "reanswer.png"), full_page=True)
    page.locator("#fe-reanswer-save").click()
    page.wait_for_function("document.querySelector('#fe-reanswer-saved').innerText"
                           ".includes('Saved the re-answered run as run')", timeout=30_000)


def test_api_sweeps_a_grid_as_an_evaluation_and_refuses_a_bad_grid(live_app, tmp_path):
    from gradio_client.exceptions import AppError

    _, client = live_app
    qa = _qa_file(tmp_path)
    sweep_id = _ended(client, client.predict("flat", '{"M": [4, 6], "k": [2, 5]}', str(qa),
                                             0, 0, 0, True, "", "api sweep", False,
                                             api_name="/sweep"))
    loaded = json.loads(client.predict(sweep_id, api_name="/load_evaluation"))
    assert loaded["state"] == "done" and loaded["name"] == "api sweep"
    # M=4 with k=5 is no setting flat can run: three points, largest first
    assert loaded["paradigms"] == ["flat M=6 k=5", "flat M=6 k=2", "flat M=4 k=2"]
    assert all(r["llm_calls"] == 0 and "EM" not in r["metrics"] for r in loaded["rows"])
    assert loaded["summary"]["flat M=4 k=2"]["questions"] == 2
    for grid, message in [
            (json.dumps({"M": list(range(1, 101)), "k": list(range(1, 101))}),
             "The grid has 10,000 points; the limit is 100"),
            ('{"depth": [1, 2]}', "flat has no numeric option 'depth'"),
            ('{"M": [0, 5]}', "M=0 is out of range")]:
        with pytest.raises(AppError, match=message):
            client.predict("flat", grid, str(qa), 0, 0, 0, True, "", "", False,
                           api_name="/sweep")


def test_browser_sweeps_flat_and_plots_its_frontier(live_app, browser):
    url, _ = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.get_by_role("tab", name="Sweep").click()
    _pick_dataset(page, "#fe-sweep-dataset")  # its grown corpus built by the evaluation's
    page.locator("#fe-sweep-limit input").fill("3")
    page.locator("#fe-sweep-paradigm input").click()
    page.get_by_role("option", name=re.compile("Flat")).click()
    values = page.locator("#fe-sweep-v1 textarea")
    page.wait_for_function("document.querySelector('#fe-sweep-v1 textarea').value"
                           " === '10, 20, 50'", timeout=30_000)
    values.fill("4, x")
    page.locator("#fe-sweep-v2 textarea").fill("2, 3")
    page.locator("#fe-sweep-start").click()
    page.wait_for_function("document.querySelector('#fe-sweep-progress').innerText"
                           ".includes(\"M: 'x' is not a number\")", timeout=30_000)
    values.fill("4, 6")
    page.locator("#fe-sweep-start").click()
    _confirm_build(page, "#fe-sweep-build", "#fe-sweep-progress")
    page.wait_for_function("document.querySelector('#fe-sweep-progress').innerText"
                           ".includes('done, 3 of 3 questions')", timeout=300_000)
    page.wait_for_function("document.querySelector('#fe-sweep-message').innerText"
                           ".includes('4 points')", timeout=30_000)
    page.locator("#fe-sweep-frontier .js-plotly-plot").wait_for(timeout=30_000)
    assert "frontier" in page.locator("#fe-sweep-frontier").text_content()
    assert page.locator("#fe-sweep-table [role=row].virtual-row").count() == 4
    page.screenshot(path=str(ARTIFACTS / "sweep.png"), full_page=True)


def _tuned(client, tune_id: int, seconds: float = 300) -> dict:
    """Search `tune_id`'s status once it is no longer running."""
    deadline = time.monotonic() + seconds
    while True:
        status = json.loads(client.predict(tune_id, api_name="/tune_status"))
        if status["state"] != "running" or time.monotonic() > deadline:
            return status
        time.sleep(1)


def test_api_tunes_flat_checks_the_winner_on_held_out_questions_and_refuses_bad_input(
        live_app, tmp_path):
    from gradio_client.exceptions import AppError

    _, client = live_app
    qa = _qa_file(tmp_path)
    tune_id = client.predict(str(qa), "flat", "", "seconds", 0.0, 3, 0.0,
                             '{"flat.k": [1, 4], "flat.M": [4, 8]}', "", 0.5, 0, 0,
                             "api tune", "", "", True, api_name="/tune")
    status = _tuned(client, tune_id)
    assert status["state"] == "done" and status["name"] == "api tune"
    assert status["questions"] == {"search": 1, "held_out": 1}
    assert len([t for t in status["trials"] if t["state"] != "refused"]) == 3
    result = status["result"]
    check = result["winner"]["held_out"]
    assert check["paradigm"] == "flat" and check["n"] == 1 and "verdict" in check
    assert status["preset"] == f"tune-{tune_id}"
    presets = json.loads(client.predict(api_name="/list_presets"))
    assert {"name": f"tune-{tune_id}", "paradigm": "flat",
            "source": f"tune {tune_id}"}.items() <= next(
        p for p in presets if p["name"] == f"tune-{tune_id}").items()
    listed = json.loads(client.predict(api_name="/list_tunes"))
    assert listed[0]["id"] == tune_id and listed[0]["trials"] == "3 of 3"
    for args, message in [
            ((str(qa), "nope"), "nope"),
            ((str(qa), "flat", "", "seconds", 0.0, 0), "trials=0 is out of range"),
            ((str(qa), "flat", "MRR@3"), "Unknown measure 'MRR@3'"),
            ((str(qa), "flat", "", "seconds", 0.0, 3, 0.0, '{"flat.Q": null}'),
             "flat has no option 'Q'")]:
        with pytest.raises(AppError, match=message):
            client.predict(*args, api_name="/tune")
    with pytest.raises(AppError, match="No search 999"):
        client.predict(999, api_name="/cancel_tune")
    with pytest.raises(AppError, match="only one that ended early"):
        client.predict(tune_id, api_name="/resume_tune")


def test_browser_tunes_flat_and_explore_runs_the_winner_by_its_preset(live_app, browser):
    url, _ = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.get_by_role("tab", name="Sweep").click()
    page.get_by_role("tab", name="Tune").click()
    _pick_dataset(page, "#fe-tune-dataset")
    page.locator("#fe-tune-limit input").fill("4")
    for other in ("FunnelRAG", "Best practices"):  # flat alone
        box = page.locator("#fe-tune-paradigms label").filter(has_text=other)
        if box.count():
            box.first.click()
    page.wait_for_function("document.querySelector('#fe-tune-space').innerText"
                           ".includes('flat') && !document.querySelector('#fe-tune-space')"
                           ".innerText.includes('funnel')", timeout=30_000)
    page.locator("#fe-tune-trials input").fill("3")
    page.get_by_text("Options to search, and options held fixed").click()
    options = page.locator("#fe-tune-options textarea")
    options.fill("{flat.k: 2}")
    page.locator("#fe-tune-start").click()
    page.wait_for_function("document.querySelector('#fe-tune-progress').innerText"
                           ".includes('Options to search is not valid JSON')", timeout=30_000)
    options.fill('{"flat.k": [1, 4], "flat.M": [4, 8]}')
    page.locator("#fe-tune-start").click()
    page.wait_for_function(
        "document.querySelector('#fe-tune-progress').innerText.includes('Search ') || "
        "!!document.querySelector('#fe-tune-build:not(.hidden)')?.offsetParent",
        timeout=60_000)
    if page.locator("#fe-tune-build").is_visible():
        page.locator("#fe-tune-build").click()
    page.wait_for_function("document.querySelector('#fe-tune-progress').innerText"
                           ".includes('Saved as preset')", timeout=300_000)
    said = page.locator("#fe-tune-progress").inner_text()
    preset = re.search(r"Saved as preset (tune-\d+)", said).group(1)
    assert "On the held-out questions: " in said
    page.locator("#fe-tune-front .js-plotly-plot").wait_for(timeout=30_000)
    assert page.locator("#fe-tune-held-table [role=row].virtual-row").count() == 1
    page.screenshot(path=str(ARTIFACTS / "tune.png"), full_page=True)
    page.get_by_role("tab", name="Explore").click()
    page.locator("#fe-preset input").click()
    page.locator("#fe-preset").get_by_role("option", name=preset).click()
    page.wait_for_function("document.querySelector('#fe-paradigm input:checked')?.value"
                           " === 'flat'", timeout=30_000)
    page.locator("#fe-question textarea").fill(QUESTION)
    page.locator("#fe-run").click()
    page.wait_for_function("document.querySelector('#fe-banner').innerText"
                           f".includes('Preset {preset}')", timeout=120_000)


# --- corpora added while the app runs -------------------------------------------------------

NEW_FACT = ("Zorvath Lighthouse", "The Zorvath Lighthouse on Kelmar Point was designed by "
            "the engineer Imelda Quarrington and first lit in 1911.")
NEW_QUESTION = "Who designed the Zorvath Lighthouse?"


def _corpus_file(path: Path, fact: tuple[str, str] = NEW_FACT) -> Path:
    """A small corpus holding a fact no packaged corpus holds, among unrelated documents."""
    rows = [{"id": t, "title": t, "text": x} for t, x in (*DOCS[:5], fact)]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def _corpus_row(client, name: str, seconds: float = 300) -> dict:
    """`name`'s list_corpora row once it is no longer preparing."""
    deadline = time.monotonic() + seconds
    while True:
        row = next(r for r in json.loads(client.predict(api_name="/list_corpora"))
                   if r["name"] == name)
        if row["status"] != "preparing" or time.monotonic() > deadline:
            return row
        time.sleep(1)


def test_api_adds_a_corpus_runs_over_it_and_removes_it(live_app, tmp_path):
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    _, client = live_app
    added = json.loads(client.predict(handle_file(str(_corpus_file(tmp_path / "light.jsonl"))),
                                      "lighthouses", api_name="/add_corpus"))
    assert added == {"name": "lighthouses", "status": "preparing"}
    row = _corpus_row(client, "lighthouses")
    assert (row["status"], row["origin"], row["documents"]) == ("ready", "added", 6), row
    for paradigm in ("flat", "funnel"):
        trace = json.loads(client.predict(NEW_QUESTION, paradigm, "", "lighthouses",
                                          api_name="/run"))
        assert trace["corpus"]["name"] == "lighthouses"
        assert trace["stages"][-1]["candidates"][0]["unit"]["doc_ids"] == ["Zorvath Lighthouse"]
        assert "Quarrington" in trace["answer"], (paradigm, trace["answer"])
    default = json.loads(client.predict(NEW_QUESTION, "flat", "", api_name="/run"))
    assert default["corpus"]["name"] == "tiny"  # the start-up corpus is still the default

    refusals = [((handle_file(str(tmp_path / "light.jsonl")), "lighthouses"),
                 "add_corpus", "A corpus named 'lighthouses' exists already"),
                ((NEW_QUESTION, "flat", "", "nowhere"), "run", "Unknown corpus 'nowhere'"),
                (({"path": "/etc/passwd"}, "stolen"), "add_corpus", "was not uploaded"),
                (("tiny",), "remove_corpus", "the corpus the app started with")]
    for args, endpoint, message in refusals:
        with pytest.raises(AppError, match=message):
            client.predict(*args, api_name=f"/{endpoint}")
    assert json.loads(client.predict("lighthouses", api_name="/remove_corpus")) == {
        "removed": "lighthouses"}
    names = [r["name"] for r in json.loads(client.predict(api_name="/list_corpora"))]
    assert "lighthouses" not in names and names[0] == "tiny"


def test_browser_uploads_a_corpus_and_explores_it_while_the_default_still_answers(
        live_app, browser, tmp_path):
    from playwright.sync_api import expect

    url, client = live_app
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(url)
    page.get_by_role("tab", name="Corpora").click()
    table = page.locator("#fe-corpora-table")
    expect(table).to_contain_text("started with")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "title": "A"}\n', encoding="utf-8")
    upload(page, "fe-corpus-file", bad)
    page.locator("#fe-corpus-name textarea").fill("broken")
    page.locator("#fe-corpus-add").click()
    expect(table).to_contain_text("field 'text': missing in a corpus row", timeout=60_000)
    expect(table).not_to_contain_text("/tmp/")  # the file as the user named it

    upload(page, "fe-corpus-file", _corpus_file(tmp_path / "beacons.jsonl"))
    page.locator("#fe-corpus-name textarea").fill("beacons")
    page.locator("#fe-corpus-add").click()
    expect(page.locator("#fe-corpora-message")).to_contain_text("Corpus beacons is being read")
    # while it prepares, the default corpus keeps answering
    default = json.loads(client.predict(QUESTION, "flat", "", api_name="/run"))
    assert default["corpus"]["name"] == "tiny" and default["answer"]
    expect(table.locator("tr[data-corpus=beacons] td").nth(2)).to_have_text("ready",
                                                                         timeout=300_000)
    page.screenshot(path=str(ARTIFACTS / "corpora.png"), full_page=True)

    page.get_by_role("tab", name="Explore").click()
    page.locator("#fe-corpus input").click()
    page.locator("#fe-corpus").get_by_role("option", name="beacons").click()
    page.locator("#fe-question textarea").fill(NEW_QUESTION)
    for paradigm, stage in (("flat", "reranker"), ("funnel", "preranker")):
        page.locator(f"#fe-paradigm input[value={paradigm}]").check()
        page.locator("#fe-run").click()
        page.wait_for_function(  # this paradigm's stages, the new document, its answer
            f"document.querySelector('#fe-tables').innerText.includes('{stage} (')"
            " && document.querySelector('#fe-tables').innerText.includes('Zorvath Lighthouse')"
            " && document.querySelector('#fe-answer').innerText.includes('Quarrington')",
            timeout=120_000)
        page.screenshot(path=str(ARTIFACTS / f"corpus_{paradigm}.png"), full_page=True)
