"""The Sessions tab's callbacks without a browser: a real Explorer over the tiny corpus, the
toy paradigm 'echo' and a real DuckDB file."""

from __future__ import annotations

import zipfile
from pathlib import Path

from app.tabs import sessions
from app.views import heatmap


def saved(explorer, *names: str) -> list[int]:
    return [explorer.runs.save_run(explorer.runs.run("seurat painting", "echo", '{"k": 1}'), name)
            for name in names]


def test_open_fills_every_box_and_compare_puts_each_figure_under_its_label(explorer):
    first, second = saved(explorer, "a", "b")
    message, _, answer, funnel, timing, heatmap, tables = sessions.open_run(explorer,
                                                                            str(first))
    assert f"Run {first}, reopened" in message and "Georges Seurat" in answer
    assert funnel is not None and timing is not None and heatmap.visible is True
    assert "fe-table" in tables

    message, _, table, funnel, timing, heatmap, tables = sessions.compare_runs(
        explorer, f"{first}, {second}")
    assert message == "" and f"run {first}: a" in table and f"run {second}: b" in table
    assert funnel.layout.title.text == "Candidates kept per cut"
    assert timing.layout.title.text == "Seconds per stage"
    assert heatmap.visible is False and tables == ""

    refusal, *_ = sessions.compare_runs(explorer, str(first))
    assert "Give two run ids" in refusal


def test_delete_asks_once_then_deletes_and_a_wrong_id_deletes_nothing(explorer):
    first, second = saved(explorer, "a", "b")
    message, _, pending = sessions.delete_runs(explorer, str(second), None)
    assert f"Press Delete again to delete run {second}" in message and pending == [second]
    assert len(explorer.runs.saved_runs()) == 2  # nothing deleted yet
    message, listing, pending = sessions.delete_runs(explorer, str(second), pending)
    assert f"Deleted run {second}." in message and pending is None
    assert [row[0] for row in listing] == [first]

    message, _, pending = sessions.delete_runs(explorer, f"{first}, 99", None)
    assert "No saved run 99" in message and pending is None
    assert [r.id for r in explorer.runs.saved_runs()] == [first]


def test_export_names_what_it_exported(explorer):
    saved(explorer, "a")
    path, message = sessions.export_runs(explorer, "csv", "")
    assert "every saved run" in message and Path(path).read_text().startswith("id,")
    path, message = sessions.export_runs(explorer, "csv", "x")
    assert path is None and "fe-error" in message
    # TREC's qrels and a run file per stage come as one zip
    path, message = sessions.export_runs(explorer, "trec", "")
    assert path.endswith("funnel_runs_trec.zip") and "files, zipped" in message
    with zipfile.ZipFile(path) as archive:
        assert "qrels.txt" in archive.namelist() and any(
            name.endswith(".run") for name in archive.namelist())


def test_import_saves_a_pipelines_traces_as_runs_that_open_as_funnels(explorer, tmp_path):
    """Trace files uploaded without a dataset become saved runs; each opens like ours.
    Files that are not traces are refused by name and line, nothing saved."""
    from tests.test_traces import LLAMAINDEX

    message, listed, box = sessions.import_pipeline(explorer, [str(LLAMAINDEX)], "", "li")
    assert "Saved 3 runs of li as runs 1–3" in message and len(listed) == 3 and box is None
    assert [r.paradigm for r in explorer.runs.saved_runs()] == ["li"] * 3
    _, _, answer, funnel, _, _, tables = sessions.open_run(explorer, "1")
    assert "BM25Retriever" in tables and "SentenceTransformerRerank" in tables
    assert list(funnel.data[0].y) == ["BM25Retriever (passages)",
                                      "SentenceTransformerRerank (passages)"]
    # in, kept: how many BM25 searched is not in the trace (no bar, not "10 of 10")
    assert [list(bar.x) for bar in funnel.data[:2]] == [[None, 10], [10, 4]]
    assert list(funnel.data[0].text)[0] == "? (not in the trace)"
    assert "BM25Retriever</b> (passages), by llamaindex-rag: <span" in tables
    assert "? (not in the trace)</span> in, 10 kept" in tables
    assert "10 <small>(its input documents)</small> in, 4 kept" in tables
    (said,) = heatmap.heatmap_figure(explorer.runs.load_run(1)).layout.annotations
    assert "imported from li&#x27;s traces, which carry no reader attention" in said.text

    message, *_ = sessions.import_pipeline(explorer, [str(LLAMAINDEX)], "", "li")
    assert "Nothing new: every traced run was saved before" in message  # imported again

    bad = tmp_path / "spans.jsonl"
    bad.write_text('{"resourceSpans": []}\n{"oops"\n')
    message, *_ = sessions.import_pipeline(explorer, [str(bad)], "", "li")
    assert "spans.jsonl: JSON, so read as OpenInference traces (OTLP/JSON or " \
           "Phoenix&#x27;s spans), which it is not: line 2: not JSON" in message
    notes = tmp_path / "notes.txt"
    notes.write_text("Shopping list\n")
    message, *_ = sessions.import_pipeline(explorer, [str(notes)], "", "li")
    assert "notes.txt: no format an import reads fits it; tried as a TREC run file (qid Q0 " \
           "docid rank score tag): line 1: a line has 6 fields" in message  # not "pick the dataset"
    # JSON of another shape: refused by the field's path and what was expected (it raised
    # an AttributeError in Gradio's queue: red "Error" badges and a traceback in the log)
    odd = tmp_path / "odd.json"
    odd.write_text('{"resourceSpans": "x"}')
    message, *_ = sessions.import_pipeline(explorer, [str(odd)], "", "li")
    assert ("odd.json: JSON, so read as OpenInference traces (OTLP/JSON or Phoenix&#x27;s "
            "spans), which it is not: line 1: field &#x27;resourceSpans&#x27;: expected a "
            "list of resources, got a string" in message)
    assert "TREC" not in message.split("(give")[0]  # no TREC reading of a JSON object
    # named .json but no JSON: every format tried, each with why it refused (it was read
    # as a TREC run alone: "field 'rank': 'json' is not an integer")
    prose = tmp_path / "export.json"
    prose.write_text("this is not json at all\n")
    message, *_ = sessions.import_pipeline(explorer, [str(prose)], "", "li")
    assert "export.json: no format an import reads fits it; tried as a TREC run file" in message
    assert "file (qid Q0 docid rank score tag): line 1: field &#x27;rank&#x27;: &#x27;json&#x27; " \
           "is not an integer; as a TREC qrels file (qid 0 docid relevance): line 1: a line " \
           "has 4 fields" in message
    assert "as OpenInference traces (OTLP/JSON or Phoenix&#x27;s spans): line 1: not JSON" \
        in message
    message, *_ = sessions.import_pipeline(explorer, None, "", "")
    assert "Upload trace files" in message
    assert len(explorer.runs.saved_runs()) == 3


def test_import_stores_trec_run_files_with_a_dataset_as_an_evaluation(explorer, tmp_path):
    """TREC run files (one per stage, named by it) and a qrels file, uploaded with a QA
    file: one evaluation over the searched corpus's documents; without a dataset they are
    refused, since their qids name its questions."""
    from tests.fakes import qa_file

    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    dense, rerank, qrels = tmp_path / "dense.run", tmp_path / "rerank.run", tmp_path / "qrels.txt"
    dense.write_text("q0 Q0 Pointillism 1 0.9 t\nq0 Q0 Georges_Seurat 2 0.8 t\n"
                     "q1 Q0 Danube 1 0.7 t\n")
    rerank.write_text("q0 Q0 Georges_Seurat 1 0.99 t\n")
    qrels.write_text("q0 0 Georges_Seurat 1\nq1 0 Georges_Seurat 1\n")
    files = [str(dense), str(rerank), str(qrels)]
    message, *_ = sessions.import_pipeline(explorer, files, qa, "mine")
    assert "Stored 2 runs of" in message and "as evaluation 1" in message
    (stored,) = explorer.evaluations.list_evaluations()
    assert tuple(stored.paradigms) == ("mine",) and stored.done == 2
    trace = explorer.evaluations.evaluation_trace(stored.id, 0, "mine")  # the first question
    assert [s.name for s in trace.stages] == ["dense", "rerank"]
    assert trace.metrics["RR@dense"] == 0.5 and trace.metrics["RR@rerank"] == 1.0

    message, *_ = sessions.import_pipeline(explorer, files, "", "mine")
    assert "TREC run files name questions by id: pick the dataset" in message
    assert len(explorer.evaluations.list_evaluations()) == 1
