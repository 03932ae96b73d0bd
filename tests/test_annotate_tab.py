"""The Annotate tab's labelling callbacks without a browser: a real Explorer over the tiny
corpus and a real DuckDB file. Finding pairs runs drrag's real classifier and is covered by
the browser test."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from app.tabs import annotate
from engine.service.annotation import JudgedPair


def judged(corpus, first: int, second: int) -> dict:
    d1, d2 = corpus.documents[first], corpus.documents[second]
    return asdict(JudgedPair(d1.id, d1.title, d1.text, d2.id, d2.title, d2.text,
                             probability=0.7, threshold=0.5, kept=True, gold=0))


def test_labelling_moves_on_stores_and_exports_and_a_reimport_adds_nothing(
        explorer, tiny_corpus):
    question = ["Who painted A Sunday Afternoon?", "q1"]
    pairs = [judged(tiny_corpus, 0, 1), judged(tiny_corpus, 1, 2)]
    notice, pairs, at, card, table, stored = annotate.label(explorer, 1, pairs, 0, question,
                                                            "ann")
    assert notice == "" and at == 1 and pairs[0]["label"] == 1 and "Pair 2 of 2" in card
    assert "<b>1</b> stored labels" in stored and "⚠" in table  # gold 0, kept: disagrees
    *_, at, card, _, stored = annotate.label(explorer, None, pairs, at, question, "ann")
    assert at == 2 and "Every pair of this question is labelled or skipped" in card
    assert "<b>1</b> stored labels" in stored  # a skip stores nothing

    (label,) = explorer.labels()
    assert (label.d1_id, label.label, label.annotator, label.question_id) == \
        (tiny_corpus.documents[0].id, 1, "ann", "q1")
    exported = Path(annotate.export_labels(explorer))
    message, _ = annotate.import_labels(explorer, str(exported))
    assert "Imported 0 labels from labels.jsonl; 1 were already stored" in message


def test_labelling_before_finding_pairs_or_a_bad_import_is_refused(explorer, tmp_path):
    notice, *_ = annotate.label(explorer, 1, [], 0, ["", ""], "")
    assert "Find pairs first" in notice
    bad = tmp_path / "mine.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    message, _ = annotate.import_labels(explorer, str(bad))
    assert message.startswith("<div class='fe-error'>") and "mine.jsonl" in message
    assert explorer.labels() == []
