"""The API as gradio_client sees it, against a live in-process app over the tiny corpus:
what view_api documents, what each endpoint returns, the one name of a listed dataset, and
how a refused upload is logged."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from engine.service import datasets
from tests.fakes import qa_file, served

pytestmark = pytest.mark.live

API_PAGE = Path(__file__).resolve().parent.parent / "docs" / "gradio-api.md"

# every endpoint docs/gradio-api.md describes, and nothing else
ENDPOINTS = {"run", "add_corpus", "list_corpora", "remove_corpus", "save_run", "reanswer",
             "ablation", "ablation_agreement", "ceilings", "ceiling_table", "coverage",
             "list_runs", "load_run", "status", "annotate_pairs", "annotate_label",
             "list_labels", "retrain", "classifier_status", "activate_classifier", "evaluate",
             "evaluation_status", "list_evaluations", "load_evaluation", "export_evaluation",
             "export_evaluation_files", "import_traces", "attribution", "paired", "regressions",
             "sweep", "resume_evaluation", "remove_evaluation", "add_question_set",
             "add_question_file", "generate_question_set", "pool_evaluation", "list_pools",
             "next_unit", "record_judgment", "undo_judgment", "llm_judge",
             "export_judgments", "import_judgments", "compare_assessors",
             "label_agreement", "audit_log", "list_presets", "save_preset", "tune",
             "tune_status", "list_tunes", "cancel_tune", "resume_tune", "list_nuggets",
             "add_nugget", "edit_nugget", "merge_nuggets", "remove_nugget",
             "add_gold_nuggets", "export_nuggets", "import_nuggets", "next_answer",
             "assign_nugget", "undo_assignment", "nugget_scores", "export_assignments"}
RETURNS_INT = {"save_run", "evaluate", "sweep", "ceilings", "resume_evaluation", "tune",
               "resume_tune"}  # ids; every other result is JSON


@pytest.fixture
def shared_data(tmp_path, monkeypatch):
    """A shared data folder holding HotpotQA dev500 (three tiny questions) only."""
    root = tmp_path / "shared"
    (root / "hotpotqa").mkdir(parents=True)
    qa_file(root / "hotpotqa" / "dev500_contexts.jsonl")
    monkeypatch.setenv("FUNNEL_SHARED_DATA", str(root))
    datasets._listed.cache_clear()
    yield root
    datasets._listed.cache_clear()


@pytest.fixture
def live(echo, tiny_corpus, tmp_path, shared_data):
    """(the app served in this process over the tiny corpus, a gradio_client)."""
    from engine.service.preparation import Preparation
    from engine.service.tasks import Task

    prep = Preparation("tiny", dense=False)
    prep.tasks = {"corpus": Task("corpus", "corpus 'tiny'", lambda progress: tiny_corpus)}
    prep.run()
    with served(prep, tmp_path / "runs.duckdb") as (_, demo, client):
        yield demo, client


def test_view_api_names_and_describes_every_result_of_the_documented_endpoints(live):
    _, client = live
    info = client.view_api(print_info=False, return_format="dict")
    assert info["unnamed_endpoints"] == {}
    named = {name.lstrip("/"): endpoint for name, endpoint in info["named_endpoints"].items()}
    assert set(named) == ENDPOINTS  # no /lambda_N of a UI event
    page = API_PAGE.read_text(encoding="utf-8")
    assert [name for name in sorted(ENDPOINTS) if f"`{name}`" not in page] == []
    for name, endpoint in named.items():
        (result,) = endpoint["returns"]
        kind = result["python_type"]["type"]
        assert result["label"] not in ("1st", "") and kind != "Any", name
        assert len(result["python_type"]["description"]) > 20, name
        assert kind == ("int" if name in RETURNS_INT else "dict(str, Any)" if name == "status"
                        else "str"), name
    shown = client.view_api(print_info=False, return_format="str")
    assert "1st" not in shown and "lambda" not in shown
    assert "-> run_id" in shown and "-> trace_json" in shown and "(JSON text: " in shown


def test_status_is_one_json_object_not_json_text_in_a_string(live):
    _, client = live
    status = client.predict(api_name="/status")
    assert isinstance(status, dict)
    assert status["ready"]["echo"] is True
    assert status["tasks"] == ["corpus 'tiny': ready (0.0 s)"]


def _ended(client, evaluation_id: int) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = json.loads(client.predict(evaluation_id, api_name="/evaluation_status"))
        if status["state"] != "running":
            return status
        time.sleep(0.2)
    raise AssertionError(f"evaluation {evaluation_id} did not end: {status}")


def test_a_listed_dataset_has_one_name_in_the_ui_the_api_and_stored_evaluations(live):
    from gradio_client.exceptions import AppError

    demo, client = live
    pickers = [block for block in demo.blocks.values()
               if getattr(block, "elem_id", None) == "fe-eval-dataset"]
    assert [label for label, _ in pickers[0].choices] == ["HotpotQA dev500"]
    ids = [client.predict(dataset, "echo", '{"echo": {"k": 1}}', 2, api_name="/evaluate")
           for dataset in ("HotpotQA dev500", "hotpotqa/dev500_contexts.jsonl")]
    for evaluation_id in ids:
        assert _ended(client, evaluation_id)["done"] == 2
    stored = json.loads(client.predict(api_name="/list_evaluations"))
    assert [(e["id"], e["dataset"]) for e in stored] == [(i, "HotpotQA dev500")
                                                         for i in reversed(ids)]
    with pytest.raises(AppError, match=r"Unknown dataset 'HotpotQA dev5000'\. Choose one "
                                       r"of: HotpotQA dev500; or give a QA file\."):
        client.predict("HotpotQA dev5000", "echo", api_name="/evaluate")


def test_a_refused_upload_is_logged_as_one_line(live, tmp_path, caplog, capfd):
    from gradio_client import handle_file

    _, client = live
    binary = tmp_path / "notes.jsonl"
    binary.write_bytes(bytes(range(256)) * 8)
    caplog.set_level(logging.INFO)
    capfd.readouterr()
    added = json.loads(client.predict(handle_file(str(binary)), "notes",
                                      api_name="/add_corpus"))
    assert added == {"name": "notes", "status": "preparing"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        (row,) = [r for r in json.loads(client.predict(api_name="/list_corpora"))
                  if r["name"] == "notes"]
        if row["status"] == "failed":
            break
        time.sleep(0.2)
    assert row["status"] == "failed" and "notes.jsonl" in row["error"]
    failed = [r for r in caplog.records if "failed" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in failed] == [("WARNING", None)]
    assert "notes.jsonl" in failed[0].getMessage() and "\n" not in failed[0].getMessage()
    assert "Traceback" not in capfd.readouterr().err


def test_a_trace_file_of_another_shape_is_refused_by_field_not_a_traceback(live, tmp_path,
                                                                          capfd):
    """`import_traces` of JSON of an unexpected type raised an AttributeError in Gradio's
    queue; a non-JSON file named .json was read as a TREC run alone."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    _, client = live
    odd, prose = tmp_path / "odd.json", tmp_path / "prose.json"
    odd.write_text('{"resourceSpans": "x"}')
    prose.write_text("this is not json at all\n")  # six words: a TREC line's count
    capfd.readouterr()
    with pytest.raises(AppError, match=r"odd.json: JSON, so read as OpenInference traces "
                                       r".*, which it is not: line 1: field "
                                       r"'resourceSpans': expected a list of resources, got "
                                       r"a string"):
        client.predict(handle_file(str(odd)), "", "", api_name="/import_traces")
    with pytest.raises(AppError, match=r"prose.json: .*tried as a TREC run file .*: line 1: "
                                       r"field 'rank': 'json' is not an integer; as a TREC "
                                       r"qrels file .*; as OpenInference traces .*: line 1: "
                                       r"not JSON"):
        client.predict(handle_file(str(prose)), "", "", api_name="/import_traces")
    logged = capfd.readouterr().err
    assert "AttributeError" not in logged and "Traceback" not in logged
    assert json.loads(client.predict(api_name="/list_runs")) == []


def test_an_evaluation_is_resumed_or_removed_through_the_api(live):
    from gradio_client.exceptions import AppError

    _, client = live
    evaluation_id = client.predict("HotpotQA dev500", "echo", '{"echo": {"k": 1}}', 2,
                                   api_name="/evaluate")
    status = _ended(client, evaluation_id)
    assert (status["state"], status["partial"]) == ("done", False)
    with pytest.raises(AppError, match=f"Evaluation {evaluation_id} is done: only an "
                                       "interrupted, cancelled or failed evaluation resumes"):
        client.predict(evaluation_id, api_name="/resume_evaluation")
    assert json.loads(client.predict(evaluation_id, api_name="/remove_evaluation")) == {
        "removed": evaluation_id}
    assert json.loads(client.predict(api_name="/list_evaluations")) == []
    with pytest.raises(AppError, match=f"No evaluation with id {evaluation_id}"):
        client.predict(evaluation_id, api_name="/remove_evaluation")


def test_answers_are_judged_by_nuggets_through_the_api(echo, tiny_corpus, tmp_path,
                                                       shared_data):
    """Issue 69: nuggets written and imported for a question set, a stored evaluation's
    answers (an imported pipeline's, say: a question set's own evaluations run retrieval
    only) assigned them one at a time, undone, scored per paradigm and exported in the TREC
    RAG track's files."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    from engine.data.ingest import store
    from engine.documents import Document
    from engine.service.preparation import Preparation
    from engine.service.tasks import Task
    from engine.store.evaluations import EvaluationStore
    from tests.conftest import TINY_DOCS
    from tests.test_nuggets import _answered

    prep = Preparation("tiny", dense=False)
    prep.tasks = {"corpus": Task("corpus", "corpus 'tiny'", lambda progress: tiny_corpus)}
    prep.run()
    with served(prep, tmp_path / "runs.duckdb") as (explorer, _, client):
        store("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")
        asked = ["Who painted La Grande Jatte?", "Which river flows through Budapest?"]
        client.predict("docs", "support", "\n".join(asked), api_name="/add_question_set")
        runs = [(n, _answered("echo", f"q{n + 1}", q, "Seurat")) for n, q in enumerate(asked)]
        evaluation_id = EvaluationStore(explorer.nuggets.store.store).store_whole(
            [(n, t, {"paradigm": "echo", "question_id": t.gold.id}) for n, t in runs], {},
            dataset="docs (support)", paradigms=["echo"], configs={}, corpus="docs",
            corpus_fingerprint="", code_version="test")
        _judged_by_nuggets(client, evaluation_id, tmp_path, handle_file, AppError)


def _judged_by_nuggets(client, evaluation_id, tmp_path, handle_file, AppError):
    first = json.loads(client.predict("docs (support)", "q1", "Georges Seurat painted it",
                                      "vital", "ann", api_name="/add_nugget"))["id"]
    theirs = tmp_path / "bob.jsonl"
    theirs.write_text(json.dumps({"qid": "q2", "query": "", "nuggets": [
        {"text": "The Danube", "importance": "vital"}]}) + "\n")
    assert json.loads(client.predict("docs (support)", handle_file(str(theirs)), "bob",
                                     api_name="/import_nuggets")) == {"imported": 1}
    listed = json.loads(client.predict("docs (support)", "", api_name="/list_nuggets"))
    assert [(n["question_id"], n["author"]) for n in listed] == [("q1", "ann"), ("q2", "bob")]
    shown = json.loads(client.predict(evaluation_id, "ann", api_name="/next_answer"))
    assert (shown["answer"]["question_id"], shown["done"], shown["answers"]) == ("q1", 0, 2)
    assert [n["id"] for n in shown["nuggets"]] == [first]
    assigned = json.loads(client.predict(evaluation_id, "q1", "echo", first, "support",
                                         "ann", 3.0, api_name="/assign_nugget"))
    assert (assigned["done"], assigned["answers"]) == (1, 2)
    second = listed[1]["id"]
    client.predict(evaluation_id, "q2", "echo", second, "partial_support", "ann",
                   api_name="/assign_nugget")
    scores = json.loads(client.predict(evaluation_id, "ann", api_name="/nugget_scores"))
    assert scores["per_paradigm"]["echo"]["vital"] == pytest.approx(0.75)
    assert scores["per_paradigm"]["echo"]["vital_strict"] == pytest.approx(0.5)
    lines = client.predict(evaluation_id, "ann", api_name="/export_assignments").splitlines()
    assert [json.loads(line)["nuggets"][0]["assignment"] for line in lines] == [
        "support", "partial_support"]
    undone = json.loads(client.predict(evaluation_id, "ann", api_name="/undo_assignment"))
    assert undone["assignment"] == "partial_support"
    with pytest.raises(AppError, match="has 41 words"):
        client.predict("docs (support)", "q1", " ".join(["word"] * 41), "vital", "ann",
                       api_name="/add_nugget")
    with pytest.raises(AppError, match=r"nugget_ids='a, b': give nugget ids"):
        client.predict("a, b", "x", "vital", "ann", api_name="/merge_nuggets")
    with pytest.raises(AppError, match="assignment='yes'"):
        client.predict(evaluation_id, "q1", "echo", first, "yes", "ann",
                       api_name="/assign_nugget")


def test_a_judging_round_is_scripted_through_the_api(live, tmp_path):
    """Issue 53: a question set, an evaluation pooled, a unit judged, judgments out and in
    as qrels, two assessors compared, and the evaluation re-measured without a re-run."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    from engine.data.ingest import store
    from engine.documents import Document
    from tests.conftest import TINY_DOCS

    _, client = live
    store("docs", [Document(t, t, x) for t, x in TINY_DOCS], "docs.jsonl")
    made = json.loads(client.predict("docs", "support", "Who painted La Grande Jatte?\n"
                                     "Which river flows through Budapest?",
                                     api_name="/add_question_set"))
    assert made == {"dataset": "docs (support)", "questions": 2}
    evaluation_id = client.predict("docs (support)", "echo", api_name="/evaluate")
    assert _ended(client, evaluation_id)["state"] == "done"
    pooled = json.loads(client.predict(evaluation_id, 2, api_name="/pool_evaluation"))
    assert pooled["estimate"].startswith("4 units")
    (listed,) = json.loads(client.predict("docs (support)", api_name="/list_pools"))
    assert (listed["id"], listed["evaluation_id"]) == (pooled["pool"], evaluation_id)
    shown = json.loads(client.predict(pooled["pool"], "ann", api_name="/next_unit"))
    unit = shown["unit"]
    assert (shown["question"], shown["judged"]) == ("Who painted La Grande Jatte?", 0)
    progress = json.loads(client.predict(pooled["pool"], unit["question_id"],
                                         unit["document_id"], 3, "ann", 4.0,
                                         api_name="/record_judgment"))
    assert progress == {"judged": 1, "units": 4}
    loaded = json.loads(client.predict(evaluation_id, api_name="/load_evaluation"))
    assert loaded["summary"]["echo"]["nDCG@10@overlap"] == 1.0  # measured again, no re-run
    qrels = client.predict("docs (support)", api_name="/export_judgments")
    assert qrels == f"{unit['question_id']}\t0\t{unit['document_id']}\t3\n"
    theirs = tmp_path / "bob.qrels"
    theirs.write_text(qrels.replace("\t3\n", "\t1\n"))
    assert json.loads(client.predict("docs (support)", handle_file(str(theirs)), "bob",
                                     api_name="/import_judgments")) == {"imported": 1}
    compared = json.loads(client.predict(evaluation_id, "ann", "bob",
                                         api_name="/compare_assessors"))
    assert compared["pairs"] == 1 and compared["matrix"][3][1] == 1
    with pytest.raises(AppError, match=r"'carol' judged nothing of docs \(support\)"):
        client.predict(evaluation_id, "ann", "carol", api_name="/compare_assessors")
    with pytest.raises(AppError, match=r"grade=7: use 0 \(irrelevant\), 1 \(related\)"):
        client.predict(pooled["pool"], unit["question_id"], unit["document_id"], 7, "ann",
                       api_name="/record_judgment")
    undone = json.loads(client.predict(pooled["pool"], "ann", api_name="/undo_judgment"))
    assert undone["grade"] == 3
