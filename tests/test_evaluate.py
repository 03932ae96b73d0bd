"""The evaluation haystack: a corpus plus a QA file's own paragraphs."""

from __future__ import annotations

import json

from engine.data.corpus import eval_corpus
from engine.data.loaders import read_dataset


def _qa(path, paragraphs):
    rows = [{"question_id": "q1", "question_text": "Which river flows through Budapest?",
             "answers_objects": [{"spans": ["Danube"]}],
             "contexts": [{"id": str(i), "title": t, "is_supporting": True,
                           "paragraph_text": x} for i, (t, x) in enumerate(paragraphs)]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return read_dataset(path)


def test_a_corpus_already_holding_the_paragraphs_is_reused_unchanged(tmp_path):
    corpus_file = tmp_path / "c.jsonl"
    corpus_file.write_text("\n".join(json.dumps(d) for d in [
        {"id": "Budapest", "title": "Budapest", "text": "  Budapest is the capital of Hungary."},
        {"id": "Danube", "title": "Danube", "text": "The Danube flows through Budapest."}]))
    base = eval_corpus(_qa(tmp_path / "none.jsonl", []), str(corpus_file))
    same = eval_corpus(_qa(tmp_path / "qa.jsonl", [("Budapest", "Budapest is the capital "
                                                                "of  Hungary.")]),
                       str(corpus_file))
    assert same.fingerprint == base.fingerprint  # whitespace differences do not count
    grown = eval_corpus(_qa(tmp_path / "qa2.jsonl", [("Vienna", "Vienna is in Austria.")]),
                        str(corpus_file))
    assert len(grown) == 3 and grown.by_id["Vienna"].text == "Vienna is in Austria."
    assert grown.fingerprint != base.fingerprint


def test_summary_gives_each_stage_mean_median_and_p95_and_skips_missing_stages():
    from engine.eval.summary import percentile, summarise

    rows = [{"paradigm": "best", "span_answer": True, "metrics": {"EM": 1.0},
             "seconds": {"hybrid": s, "answer": 1.0}, "reader_tokens": 10}
            for s in (0.1, 0.2, 0.3, 0.4)]
    rows.append({"paradigm": "best", "span_answer": True, "metrics": {"EM": 0.0},
                 "seconds": {"answer": 2.0}, "reader_tokens": 5})  # routed past retrieval
    summary = summarise(rows)["best"]
    assert summary["seconds_hybrid"] == 0.25 and summary["seconds_hybrid_median"] == 0.25
    assert summary["seconds_hybrid_p95"] == 0.4 and summary["seconds_answer_p95"] == 2.0
    assert summary["questions"] == 5 and summary["EM"] == 0.8
    assert percentile([3, 1, 2], 0.5) == 2 and percentile([5], 0.95) == 5


def test_a_run_that_skipped_retrieval_counts_0_in_the_ranking_measures_of_its_gold():
    """best's query classifier skipping retrieval for most questions must not leave its
    nDCG measured on the few it retrieved for (answer recall already counts them 0)."""
    from engine.eval.summary import summarise

    def run(metrics, outcome):
        return {"paradigm": "best", "span_answer": False, "metrics": metrics,
                "seconds": {}, "reader_tokens": 0,
                "outcome": {"answer": None, "support": None, "relevant": outcome}}

    rows = [run({"nDCG@10@hybrid": 1.0, "Judged@10@hybrid": 0.5}, "relevant kept"),
            run({}, "retrieval skipped"), run({}, "retrieval skipped"),
            run({}, None)]  # skipped too, but its question names no relevant document
    summary = summarise(rows)["best"]
    assert round(summary["nDCG@10@hybrid"], 4) == 0.3333
    assert summary["Judged@10@hybrid"] == 0.5  # nothing ranked: nothing judged or not
