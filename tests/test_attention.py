"""Aggregation schemes on a hand-made attention tensor.

attn[layer, head, token] for 2 layers x 2 heads x 3 tokens; per-token means over layers
and heads are [0.25, 0.05, 0.15] (worked out in the comments).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.readers.attention import (
    content_tokens,
    passage_score,
    representative_tokens,
    summary,
)

ATTN = np.array([
    [[0.4, 0.0, 0.2],    # layer 0, head 0
     [0.2, 0.1, 0.0]],   # layer 0, head 1   -> layer 0 means [0.30, 0.05, 0.10]
    [[0.1, 0.1, 0.4],    # layer 1, head 0
     [0.3, 0.0, 0.0]],   # layer 1, head 1   -> layer 1 means [0.20, 0.05, 0.20]
])                       # overall means        [0.25, 0.05, 0.15]


def test_representative_tokens_are_the_most_attended():
    assert representative_tokens(ATTN, 2).tolist() == [0, 2]
    assert representative_tokens(ATTN, 10).tolist() == [0, 2, 1]  # lr capped at length


def test_shown_tokens_skip_stop_words_punctuation_and_space():
    words = [" the", " Danube", ",", " flows", "\n", " Budapest", " of"]
    attn = np.array([[[0.30, 0.10, 0.25, 0.02, 0.20, 0.05, 0.08]]])  # most attended: "the"
    assert content_tokens(words.__getitem__, attn, 2) == ["Danube", "Budapest"]
    assert content_tokens(words.__getitem__, attn, 9) == ["Danube", "Budapest", "flows"]
    assert content_tokens(words.__getitem__, attn[:, :, :0], 2) == []


@pytest.mark.parametrize("scheme,lr,expected", [
    ("eq3", 1, 0.25),
    ("eq3", 2, (0.25 + 0.15) / 2),
    ("eq3", 3, (0.25 + 0.05 + 0.15) / 3),
    ("mean_tokens", 4, 0.15),
    ("max_tokens", 4, 0.25),
    # per layer, top-2 tokens: layer 0 -> (0.30 + 0.10)/2 = 0.20; layer 1 -> (0.20+0.20)/2
    ("max_layers", 2, 0.20),
    # max over heads per layer: L0 [0.4, 0.1, 0.2], L1 [0.3, 0.1, 0.4]; mean [0.35, 0.1, 0.3]
    ("max_heads", 2, (0.35 + 0.30) / 2),
    ("last6", 1, 0.25),  # only two layers: the last six are all of them
])
def test_schemes_by_hand(scheme, lr, expected):
    assert passage_score(ATTN, scheme, lr) == pytest.approx(expected)


def test_last6_ignores_early_layers():
    early = np.zeros((8, 2, 3))
    early[0] = 1.0  # only layer 0 attends; it is not among the last six
    assert passage_score(early, "last6", 2) == 0.0
    assert passage_score(early, "eq3", 2) == pytest.approx(1 / 8)


def test_summary_is_layer_by_head_over_representative_tokens():
    cells = summary(ATTN, lr=1)  # token 0 only
    assert np.allclose(cells, [[0.4, 0.2], [0.1, 0.3]])


def test_empty_passages_and_bad_names():
    assert passage_score(np.zeros((2, 2, 0))) == 0.0
    assert summary(np.zeros((2, 2, 0))).shape == (2, 2)
    with pytest.raises(ConfigError, match="Unknown aggregation scheme 'sum'. Choose from: "):
        passage_score(ATTN, "sum")
    with pytest.raises(ConfigError, match="lr=0 is out of range"):
        passage_score(ATTN, "eq3", 0)


@pytest.mark.parametrize(("said", "answer"), [
    ("The answer is: Terry Richardson.\n\nThe answer is: Terry Richardson.", "Terry Richardson."),
    ("The answer is:\nAladin", "Aladin"),
    ("Answer: 1986", "1986"),
    ("A:\nAnimorphs", "Animorphs"),  # the Q:/A: habit
    ("The answer is:\nA: Animorphs", "Animorphs"),
    ("The answer is:\nA:", ""),
    ("a: 1986", "1986"),
    ("A Sunday Afternoon", "A Sunday Afternoon"),
    ("the final answer is 3,677 seated", "3,677 seated"),
    ("Answers to the Sphinx", "Answers to the Sphinx"),  # a title, not a preamble
    ("Washington, D.C.", "Washington, D.C."),
    ("The answer is:", ""),
    ("  \n Danube \n more", "Danube"),
])
def test_short_answer_strips_preamble_and_keeps_the_first_line(said, answer):
    from engine.readers.answers import short_answer

    assert short_answer(said) == answer


@pytest.mark.parametrize(("tokens", "loops"), [
    ([7, 1, 2, 1, 2, 1, 2], False),  # the tail overlaps its only earlier copy
    ([7, 1, 2, 1, 2, 1, 2, 1], True),  # 2 1 2 ... 1 2 1: "S/S/S/S" keeps going
    ([5, 6, 7, 8, 5, 6, 7], True),
    ([5, 6, 7, 8, 9, 6, 7], False),
    ([1, 1, 1, 1, 1], False),  # too short to tell
    ([1, 1, 1, 1, 1, 1], True),
])
def test_a_looping_answer_is_detected(tokens, loops):
    from engine.readers.answers import repeats_tail

    assert repeats_tail(tokens) is loops
