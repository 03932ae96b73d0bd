"""The Evaluate tab's callbacks without a browser: a real Explorer over the tiny corpus, the
toy paradigm 'echo' and a real DuckDB file; the browser test (test_live_app) drives the same
functions through Gradio."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import gradio as gr
import pytest

from app.params import param_panels
from app.tabs import evaluate, explore
from engine.documents import Question
from engine.eval.summary import row, summarise
from engine.store.evaluations import EvaluationStore
from tests.fakes import gold_run, qa_file, ranked_stage


@pytest.fixture
def params(echo):
    with gr.Blocks():
        return param_panels("test")


def start(explorer, params, upload=None, dataset=None, names=("echo",), n=2, presets=()):
    values = [w.value for w in params.inputs()]
    return evaluate.begin(explorer, params, False, dataset, upload, n, 0, 0, list(names),
                          list(presets), "", "", "", *values)


def uploaded(tmp_path, text: str, name: str) -> str:
    """A file where Gradio keeps an upload: a temporary folder named by a hash."""
    folder = tmp_path / "gradio" / "3f9a0c1d2e"
    folder.mkdir(parents=True)
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder / name)


def test_an_upload_refusal_names_the_file_as_the_user_called_it(explorer, params, tmp_path):
    path = uploaded(tmp_path, "{not json\n", "broken.jsonl")
    message, followed, _, confirm, *_ = start(explorer, params, upload=path)
    assert "broken.jsonl" in message and "gradio/3f9a0c1d2e" not in message
    assert confirm.visible is False and explorer.evaluations.list_evaluations() == []


def test_the_dataset_list_says_when_an_upload_replaces_it(tmp_path):
    path = uploaded(tmp_path, "", "mine.jsonl")
    assert "uploaded file mine.jsonl, not this dataset" in evaluate.upload_notice(path)["info"]
    assert evaluate.upload_notice(None)["info"] is None


def test_an_uploaded_evaluation_runs_reopens_compares_exports_and_opens_a_run(
        explorer, params, tmp_path):
    path = uploaded(tmp_path, Path(qa_file(tmp_path / "qa.jsonl")).read_text(), "qa.jsonl")
    progress, evaluation_id, *_ = start(explorer, params, upload=path)
    assert f"Evaluation {evaluation_id}" in progress
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    assert explorer.evaluations.evaluation(evaluation_id).dataset == "qa.jsonl (uploaded)"

    progress, timer, table, _, _, rows, listing = evaluate.follow(explorer, evaluation_id)
    assert "done, 2 of 2 questions over corpus 'tiny'" in progress and timer.active is False
    assert "EM" in table and len(rows) == 2 and listing[0][0] == evaluation_id

    progress, reopened, *_ = evaluate.open_one(explorer, str(evaluation_id))
    assert reopened == evaluation_id and "done" in progress
    refusal, *_ = evaluate.compare_two(explorer, str(evaluation_id))
    assert "Give two evaluation ids" in refusal
    table, *_ = evaluate.compare_two(explorer, f"{evaluation_id}, {evaluation_id}")
    assert "EM" in table
    paired = table.split("Is the difference real?")[1]  # itself: nothing beyond noise
    assert "paired over 2 shared questions" in paired and "within noise" in paired
    assert "higher" not in paired and "slower" not in paired

    exported, message = evaluate.export_one(explorer, str(evaluation_id), "ragas")
    lines = Path(exported.value["path"]).read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["user_input"]
    exported, message = evaluate.export_one(explorer, str(evaluation_id), "trec")
    with zipfile.ZipFile(exported.value["path"]) as archive:  # qrels and a run per stage
        names = archive.namelist()
        assert "qrels.txt" in names and any(n.startswith("echo.") for n in names)
        qrels = [line.split() for line in archive.read("qrels.txt").decode().splitlines()]
        assert qrels and all(len(q) == 4 and q[1] == "0" and q[3] == "1" for q in qrels)
    assert "files, zipped" in message

    shown = explore.open_evaluation_run(explorer, 12, evaluation_id, [1, "q0", "echo"])
    assert len(shown) == 12 and shown[-4:-2] == ("Who painted A Sunday Afternoon?", "echo")
    assert shown[-2] == explorer.evaluations.evaluation(evaluation_id).corpus  # what it searched
    assert shown[-1].selected == "explore"
    refusal, *rest = explore.open_evaluation_run(explorer, 12, evaluation_id, [10, "q9", "echo"])
    assert refusal.startswith("<div class='fe-error'>") and "9" in refusal


def test_a_preset_is_evaluated_beside_the_paradigms_and_listed_by_its_name(explorer, params,
                                                                            tmp_path):
    explorer.presets.save_preset("loud-one", "echo", '{"k": 1, "voice": "loud"}')
    progress, evaluation_id, *_ = start(explorer, params, dataset=qa_file(tmp_path / "q.jsonl"),
                                        presets=("loud-one",))
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    rows = explorer.evaluations.evaluation_rows(evaluation_id)
    assert {r["paradigm"] for r in rows} == {"echo", "loud-one"}
    assert {r["answer"] for r in rows if r["paradigm"] == "loud-one"} == {"GEORGES SEURAT"}
    assert explorer.evaluations.evaluation(evaluation_id).configs["loud-one"]["voice"] == "loud"


def test_cancel_with_nothing_running_says_so(explorer):
    assert "No evaluation is running" in evaluate.stop(explorer, None)
    assert "not running here" in evaluate.stop(explorer, 12345)


def test_the_table_lists_cuts_and_stage_times_in_the_order_the_stages_run(explorer, prepared):
    """A funnel's clusters -> preranker -> postranker, stored and reopened: by name,
    postranker came before preranker."""
    run = gold_run(Question("q0", "Who painted it?", answers=("Georges Seurat",),
                            supporting_titles=("Seurat",)),
                   *(ranked_stage(name, ("Seurat", "Georges Seurat painted it."))
                     for name in ("clusters", "preranker", "postranker")), paradigm="funnel")
    evaluations = EvaluationStore(prepared[1])
    evaluation_id = evaluations.create(dataset="toy", questions=1, paradigms=["funnel"],
                                       configs={}, corpus="tiny", corpus_fingerprint="f",
                                       code_version="t")
    evaluations.add(evaluation_id, 0, [run], [row(run)])
    evaluations.finish(evaluation_id, "done", summarise([row(run)]))

    table = evaluate.open_one(explorer, str(evaluation_id))[2]
    labels = re.findall(r"<tr><td>([^<]*)</td>", table)

    def rows(prefix: str, suffix: str = "") -> list[str]:
        return [label.removeprefix(prefix).removesuffix(suffix) for label in labels
                if label.startswith(prefix) and label.endswith(suffix)]

    order = ["clusters", "preranker", "postranker"]
    assert rows("answer recall at ") == order
    assert rows("gold-document recall at ") == order
    assert [label.removesuffix(" seconds (median)") for label in labels
            if label.endswith(" seconds (median)")] == [*order, "answer"]
    assert labels.index("answer recall at postranker") < labels.index(
        "answer recall of all the reader read") < labels.index("gold-document recall at "
                                                               "clusters")


def test_an_interrupted_evaluation_shows_its_partial_table_and_resumes_or_goes(interrupted):
    """Its stored questions' table marked partial in the warning style (it showed no table,
    both plots "No evaluation yet", in the success style), Resume and Remove offered;
    Resume runs the questions it lacks, Remove deletes it on a second click."""
    explorer, evaluation, asked = interrupted
    progress, followed, table, recall, latency, rows = evaluate.open_one(explorer,
                                                                         str(evaluation))
    assert progress.startswith("<div class='fe-error'>") and "interrupted, 2 of 5" in progress
    assert "class='fe-error fe-partial'>Partial: interrupted after 2 of 5 questions" in table
    assert "Resume runs the 3 it lacks" in table and "<th>echo</th>" in table
    for figure in (recall, latency):
        assert figure.layout.title.subtitle.text == "partial: 2 of 5 questions (interrupted)"
        assert figure.data  # plotted, not "No evaluation yet"
    assert len(rows) == 2
    resume, remove = evaluate.actions(explorer, followed)
    assert resume.visible is True and remove.visible is True

    progress, timer, resume, remove = evaluate.resume_one(explorer, followed)
    assert timer.active is True and resume.visible is False
    explorer.evaluations.wait_for_evaluation(evaluation, 60)
    progress, timer, table, *_ = evaluate.follow(explorer, evaluation)
    assert progress.startswith("<div class='fe-kept'>") and "done, 5 of 5" in progress
    assert "Partial" not in table and asked == ["q0", "q1", "q2", "q3", "q4"]
    resume, remove = evaluate.actions(explorer, evaluation)
    assert resume.visible is False and remove.visible is True  # a done one is not resumed

    said, kept, pending, *_ = evaluate.remove_one(explorer, evaluation, None)
    assert "Press Remove again to delete evaluation" in said and pending == evaluation
    assert explorer.evaluations.list_evaluations()  # nothing deleted yet
    said, followed, pending, resume, remove, *views, listing = evaluate.remove_one(
        explorer, evaluation, pending)
    assert f"Removed evaluation {evaluation}" in said and followed is None
    assert explorer.evaluations.list_evaluations() == [] and listing == []
    assert evaluate.actions(explorer, evaluation)[0].visible is False


def test_a_refused_resume_says_why_in_the_progress_line(interrupted):
    explorer, evaluation, _ = interrupted
    explorer._evaluation_store.store.execute(
        "UPDATE evaluations SET corpus_fingerprint = 'f00d' WHERE id = ?", [evaluation])
    said, *_ = evaluate.resume_one(explorer, evaluation)
    assert said.startswith("<div class='fe-error'>") and "fingerprint f00d" in said


def test_opening_an_evaluation_sets_the_form_to_what_started_it(explorer, echo, tmp_path):
    with gr.Blocks():
        entry = evaluate.form(explorer)
    qa = qa_file(tmp_path / "qa.jsonl", n=3)
    evaluation_id = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1, "voice": "loud"}},
                                                  sample=2, seed=7, name="mine")
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    restored = dict(zip(entry.restored(), evaluate.restore_form(explorer, entry,
                                                                evaluation_id), strict=True))
    # a file that is not a listed dataset is not picked: the dataset picker stays
    assert restored[entry.dataset] == gr.skip()
    assert [restored[w] for w in (entry.limit, entry.sample, entry.seed, entry.paradigms,
                                  entry.name)] == [0, 2, 7, ["echo"], "mine"]
    assert restored[entry.corpus]["value"] == explorer.evaluations.evaluation(evaluation_id).corpus
    widgets = dict(zip(entry.params.keys(), entry.params.inputs(), strict=True))
    assert restored[widgets[("echo", "k")]]["value"] == 1
    assert restored[widgets[("echo", "voice")]]["value"] == "loud"
    # a sweep is not started from the form: it is left as it is
    sweep = explorer.evaluations.sweep(qa, "echo", {"k": [1, 2]})
    explorer.evaluations.wait_for_evaluation(sweep, 30)
    assert all(u == gr.skip() for u in evaluate.restore_form(explorer, entry, sweep))
