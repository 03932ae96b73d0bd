"""The Evaluate tab's table, differences, per-question rows and plots, from summaries."""

from __future__ import annotations

from app.views.evaluation import (
    difference_table,
    metric_order,
    paper_table,
    position_of,
    question_rows,
    recall_at_k_figure,
    recall_latency_figure,
    stage_order,
)

SUMMARY = {
    "flat": {"questions": 2, "AR@1": 0.5, "AR@2": 0.5, "AR@3": 1.0, "AR@4": 1.0,
             "AR@dense": 1.0, "gold_doc_recall@dense": 0.75, "nDCG@10@dense": 0.61,
             "RR@dense": 0.75, "EM": 0.5, "F1": 0.6,
             "seconds_dense_median": 0.01, "seconds_dense_p95": 0.02,
             "seconds_total_median": 1.2, "reader_tokens": 700.0, "llm_calls": 1.0},
    "<b>best</b>": {"questions": 2, "AR@1": 0.0, "AR@4": 0.5, "EM": 0.0, "F1": 0.1,
                    "seconds_total_median": 1.1, "reader_tokens": 600.0},
}


def test_the_paper_table_orders_recall_cuts_answers_then_stage_times():
    order = metric_order(SUMMARY)
    assert order[:5] == ["questions", "AR@1", "AR@2", "AR@3", "AR@4"]
    assert order.index("gold_doc_recall@dense") < order.index("nDCG@10@dense") < order.index(
        "RR@dense") < order.index("EM") < order.index("seconds_dense_median")
    html = paper_table(SUMMARY)
    assert "<th>&lt;b&gt;best&lt;/b&gt;</th>" in html  # names are text, never markup
    assert "gold-document recall at dense" in html and "dense seconds (p95)" in html
    # trec_eval's measures in a table of their own: a row per paradigm and cut
    ranking = html[html.index("fe-eval-ranking"):]
    assert "<td>nDCG@10 at dense</td>" not in html
    assert "<th>paradigm</th><th>cut</th>" in ranking and ">MRR</th>" in ranking
    assert "<tr><td>flat</td><td>dense</td><td>0.610</td><td>0.750</td>" in ranking
    assert "&lt;b&gt;best" not in ranking  # measured no cut: no row
    assert "<td>reader tokens</td><td>700</td><td>600</td>" in html  # big numbers whole
    assert "<td>EM</td><td>0.500</td><td>0.000</td>" in html
    assert "<td>LLM calls</td><td>1</td><td></td>" in html  # a count's mean, not "1.000"
    assert "<td>LLM calls</td><td>1.5</td>" in paper_table(
        {"longrag": {"questions": 2, "llm_calls": 1.5}})
    assert paper_table({}) == ""


def test_two_evaluations_differ_metric_by_metric_on_shared_paradigms():
    later = {"flat": {**SUMMARY["flat"], "EM": 0.75}}
    html = difference_table("eval 1", SUMMARY, "eval 2", later)
    assert "<th>eval 1</th><th>eval 2</th><th>difference</th>" in html
    assert "<td>EM</td><td>0.500</td><td>0.750</td><td>+0.250</td>" in html
    assert "best" not in html  # only the shared paradigm
    assert "share no paradigm" in difference_table("a", SUMMARY, "b", {"x": {}})


def test_question_rows_and_plots():
    rows = question_rows([{"position": 3, "question_id": "q3", "paradigm": "flat",
                           "question": "Q?", "answer": "A", "metrics": {"EM": 1.0, "F1": 1.0,
                                                                          "AR@4": 1.0},
                           "seconds": {"dense": 0.25, "answer": 1.0}}])
    # numbered from 1 (stored position 3 is question 4); no ranking measured
    assert rows == [[4, "q3", "flat", "Q?", "A", 1.0, 1.0, 1.0, "", 1.25]]
    assert position_of(rows[0][0]) == 3
    lines = recall_at_k_figure(SUMMARY)
    assert [t.name for t in lines.data] == ["flat", "<b>best</b>"]
    assert list(lines.data[0].y) == [0.5, 0.5, 1.0, 1.0]
    points = recall_latency_figure(SUMMARY)
    assert (points.data[0].x[0], points.data[0].y[0]) == (1.2, 1.0)
    assert "No evaluation yet" in recall_at_k_figure({}).layout.annotations[0].text


def test_cuts_and_stage_times_follow_the_stages_run_order_not_their_names():
    """A summary's metrics come sorted by name, its seconds in the order the stages ran;
    two paradigms' stages follow one another, each in its own order."""
    funnel = {"AR@clusters": 1.0, "AR@postranker": 0.0, "AR@preranker": 1.0, "AR@read": 0.0,
              "gold_doc_recall@clusters": 1.0, "gold_doc_recall@postranker": 0.0,
              "gold_doc_recall@preranker": 0.5,
              **{f"seconds_{s}_{w}": 0.1 for s in ("clusters", "preranker", "postranker",
                                                   "answer") for w in ("median", "p95")},
              "seconds_total_median": 1.0}
    flat = {"AR@dense": 1.0, "AR@reranker": 1.0,
            **{f"seconds_{s}_{w}": 0.1 for s in ("dense", "reranker", "answer")
               for w in ("median", "p95")}}
    summary = {"funnel": funnel, "flat": flat}
    # the reader's answer, which both run, after both paradigms' stages before it
    assert stage_order(summary) == ["clusters", "preranker", "postranker", "dense",
                                    "reranker", "answer"]
    order = metric_order(summary)
    assert [k for k in order if k.startswith("AR@")] == [
        "AR@clusters", "AR@preranker", "AR@postranker", "AR@dense", "AR@reranker", "AR@read"]
    assert [k for k in order if k.startswith("gold_doc")] == [
        "gold_doc_recall@clusters", "gold_doc_recall@preranker", "gold_doc_recall@postranker"]
    assert [k for k in order if k.endswith("_median")][-6:] == [
        "seconds_clusters_median", "seconds_preranker_median", "seconds_postranker_median",
        "seconds_dense_median", "seconds_reranker_median", "seconds_answer_median"]
    assert order.index("seconds_clusters_median") + 1 == order.index("seconds_clusters_p95")
