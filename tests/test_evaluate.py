"""The evaluation haystack: a corpus plus a QA file's own paragraphs."""

from __future__ import annotations

import json

from engine.data.loaders import read_dataset
from engine.eval.evaluate import eval_corpus


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
