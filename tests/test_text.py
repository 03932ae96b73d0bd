"""engine.text: token counting and rule-based sentence splitting on hand-written strings."""

from __future__ import annotations

import pytest

from engine.text import count_tokens, snippet, split_sentences, token_spans


def sentences(text: str) -> list[str]:
    """The sentence strings of `text`, after checking the spans are well formed."""
    spans = split_sentences(text)
    assert_spans_index_text(text, spans)
    return [text[start:end] for start, end in spans]


def assert_spans_index_text(text: str, spans: list[tuple[int, int]]) -> None:
    """Spans are in order, non-empty, trimmed, and only whitespace lies between them."""
    previous_end = 0
    for start, end in spans:
        assert 0 <= previous_end <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip()
        assert not text[previous_end:start].strip()
        previous_end = end
    assert not text[previous_end:].strip()


# --- count_tokens / token_spans -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("hello", 1),
        ("Hello, world!", 4),
        ("It's", 3),  # It ' s
        ("3.14", 3),  # 3 . 14
        ("e-mail", 3),
        ("...", 3),
        ("$100", 2),
        ("naïve café", 2),
        ("snake_case_word", 1),  # \w includes the underscore
        ("(a) [b]", 6),
    ],
)
def test_count_tokens_counts_words_and_single_punctuation_marks(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_token_spans_match_count_and_cover_the_tokens() -> None:
    text = "  Dr. Who's 3.14, (ok)!"
    spans = token_spans(text)
    assert len(spans) == count_tokens(text)
    assert [text[s:e] for s, e in spans] == [
        "Dr", ".", "Who", "'", "s", "3", ".", "14", ",", "(", "ok", ")", "!",
    ]


def test_whitespace_does_not_change_the_token_count() -> None:
    assert count_tokens("one two, three.") == count_tokens("one   two ,\n\nthree .")


# --- split_sentences ----------------------------------------------------------------------


def test_splits_plain_sentences_on_terminal_punctuation() -> None:
    assert sentences("It rained. Was it cold? Yes! We stayed in.") == [
        "It rained.", "Was it cold?", "Yes!", "We stayed in.",
    ]


def test_spans_are_character_offsets_into_the_text() -> None:
    text = "Hello!  World? Yes."
    assert split_sentences(text) == [(0, 6), (8, 14), (15, 19)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith went to Washington. He left.",
         ["Dr. Smith went to Washington.", "He left."]),
        ("Mr. and Mrs. Jones came. They left!", ["Mr. and Mrs. Jones came.", "They left!"]),
        ("The U.S. Army won. Then it lost.", ["The U.S. Army won.", "Then it lost."]),
        ("Bring tools, e.g. Hammers and saws. Fine.",
         ["Bring tools, e.g. Hammers and saws.", "Fine."]),
        ("See (Fig. 3) for details. Done.", ["See (Fig. 3) for details.", "Done."]),
        ("The peak is 12,000 ft. High enough.", ["The peak is 12,000 ft. High enough."]),
    ],
)
def test_does_not_split_after_abbreviations(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_does_not_split_after_initials() -> None:
    assert sentences("J. R. R. Tolkien wrote The Hobbit. He was a professor.") == [
        "J. R. R. Tolkien wrote The Hobbit.", "He was a professor.",
    ]


def test_does_not_split_inside_decimals() -> None:
    assert sentences("Pi is about 3.14 and e is 2.718. Both are irrational.") == [
        "Pi is about 3.14 and e is 2.718.", "Both are irrational.",
    ]


def test_splits_before_a_sentence_starting_with_a_digit() -> None:
    assert sentences("I went home. 3 dogs followed me.") == ["I went home.", "3 dogs followed me."]


def test_closing_quote_after_question_mark_stays_with_its_sentence() -> None:
    assert sentences('He asked, "Why?" Then he left.') == ['He asked, "Why?"', "Then he left."]


def test_closing_curly_quote_and_bracket_stay_with_their_sentence() -> None:
    assert sentences("Is it? “Yes.” He nodded (twice.) Then he went.") == [
        "Is it?", "“Yes.”", "He nodded (twice.)", "Then he went.",
    ]


def test_opening_quote_may_start_the_next_sentence() -> None:
    assert sentences('She stopped. "Who is there?" Nobody answered.') == [
        "She stopped.", '"Who is there?"', "Nobody answered.",
    ]


def test_no_split_when_the_next_word_is_lower_case() -> None:
    assert sentences('"Why?" he asked. It was late.') == ['"Why?" he asked.', "It was late."]


def test_blank_line_is_a_paragraph_break_even_without_punctuation() -> None:
    assert sentences("First paragraph\n\nsecond paragraph") == [
        "First paragraph", "second paragraph",
    ]


def test_blank_line_with_spaces_and_several_newlines_is_one_break() -> None:
    assert sentences("Intro line\n   \n\n\n  next part") == ["Intro line", "next part"]


def test_single_newline_inside_a_sentence_is_not_a_break() -> None:
    assert sentences("a line that\ncontinues here. Next one.") == [
        "a line that\ncontinues here.", "Next one.",
    ]


def test_paragraph_ending_in_period_splits_once() -> None:
    assert sentences("End of one.\n\nStart of two.") == ["End of one.", "Start of two."]


@pytest.mark.parametrize(
    "text",
    ["We sold apples, pears, etc.\n\nThe next section is about tools.",
     "Written by Tolkien, J.\n\nThe next chapter begins."],
)
def test_blank_line_after_abbreviation_is_still_a_paragraph_break(text: str) -> None:
    assert len(split_sentences(text)) == 2


def test_text_without_terminal_punctuation_is_one_sentence() -> None:
    text = "  no terminal punctuation here  "
    assert split_sentences(text) == [(2, 30)]
    assert sentences(text) == ["no terminal punctuation here"]


def test_trailing_text_after_last_period_is_its_own_sentence() -> None:
    assert sentences("A full sentence. And a fragment") == ["A full sentence.", "And a fragment"]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n"])
def test_empty_or_blank_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []


def test_leading_and_trailing_whitespace_is_trimmed_from_spans() -> None:
    text = "\n  One. Two.  \n"
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["One.", "Two."]
    assert spans[0][0] == 3


def test_spans_index_back_into_a_mixed_text() -> None:
    text = (
        "Dr. J. Smith (b. 1950) moved to the U.S. in 1975. He earned $3.5 million!\n\n"
        "Later, e.g. In 1990, he asked: \"Why not?\" Nobody knew.\n"
        "The end"
    )
    spans = split_sentences(text)
    assert_spans_index_text(text, spans)
    assert [text[s:e] for s, e in spans] == [
        "Dr. J. Smith (b. 1950) moved to the U.S. in 1975.",
        "He earned $3.5 million!",
        "Later, e.g. In 1990, he asked: \"Why not?\"",
        "Nobody knew.",
        "The end",
    ]


def test_sentence_tokens_add_up_to_the_text_tokens() -> None:
    text = "One, two. Three four!\n\nfive six (seven) 8.9 nine? Ten"
    assert sum(count_tokens(text[s:e]) for s, e in split_sentences(text)) == count_tokens(text)


LONG = ("Dada was an art movement of the avant-garde. " * 8
        + "A Sunday Afternoon on the Island of La Grande Jatte was painted by Georges Seurat. "
        + "Filler about other things entirely. " * 8)


def test_snippet_shows_where_the_query_words_are_densest():
    out = snippet(LONG, "Who painted A Sunday Afternoon on the Island?", width=120)
    assert "Sunday Afternoon on the Island of La Grande Jatte" in out
    assert out.startswith("… ") and out.endswith(" …") and len(out) <= 120 + 4
    assert not out[2].isspace() and out.split()[1] in LONG.split()  # cut at word boundaries


def test_snippet_without_matches_starts_at_the_beginning_and_short_text_is_whole():
    assert snippet(LONG, "zebra", width=60).startswith("Dada was an art movement")
    assert snippet(LONG, "", width=60).endswith(" …")
    assert snippet("  Two   words ", "words") == "Two words"
    # a gold answer counts as well as the query's own words
    assert "Georges Seurat" in snippet(LONG, "painter", width=80, phrases=("Georges Seurat",))
