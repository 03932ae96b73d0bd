from __future__ import annotations

import pytest

from engine.metrics import answer_in, has_span_answer, normalize_answer, support_recall
from engine.types import Question


@pytest.mark.parametrize("raw,expected", [
    ("The Eiffel Tower!", "eiffel tower"),
    ("  an   apple, a pear ", "apple pear"),
    ("Theatre", "theatre"),               # "the" only as a whole word
    ("U.S.A.", "usa"),
    ("3,677 seated", "3677 seated"),
])
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


def test_answer_in_matches_whole_normalised_words():
    assert answer_in(["It seats 3,677 people."], ["3,677"])
    assert answer_in(["Painted by", "Georges Seurat."], ["georges seurat"])  # across units
    assert not answer_in(["In 19990 it rained."], ["1999"])
    assert not answer_in(["Anything"], ["", "the"])  # empty after normalisation


def test_span_answers_exclude_yes_no():
    assert has_span_answer(Question("1", "q", answers=("Paris",)))
    assert not has_span_answer(Question("2", "q", answers=("yes",)))
    assert not has_span_answer(Question("3", "q", answers=()))


def test_support_recall():
    assert support_recall(["A", "C"], ["A", "B"]) == 0.5
    assert support_recall(["A", "B"], ["A", "B"]) == 1.0
    assert support_recall(["A"], []) == 0.0
