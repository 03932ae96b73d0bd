"""engine.units.chunking.Chunker: passage invariants, sentence packing, cutting and overlap."""

from __future__ import annotations

import re

import pytest

from engine.data.corpus import read_wiki_summaries
from engine.documents import Document, Passage
from engine.errors import ConfigError
from engine.text import TOKEN_RE, count_tokens, split_sentences, token_spans
from engine.units.chunking import Chunker

# Five tokens each ("w w w w ." ), so packing is easy to predict.
S1 = "One two three four."
S2 = "Five six seven eight."
S3 = "Nine ten eleven twelve."
S4 = "Thirteen fourteen fifteen sixteen."


def doc(text: str, doc_id: str = "Doc") -> Document:
    return Document(id=doc_id, title=doc_id, text=text)


def texts(passages: tuple[Passage, ...]) -> list[str]:
    return [p.text for p in passages]


def assert_invariants(chunker: Chunker, document: Document, passages: tuple[Passage, ...]) -> None:
    """The contract every passage list must meet, whatever the text."""
    assert [p.id for p in passages] == [f"{document.id}#{n}" for n in range(len(passages))]
    for n, p in enumerate(passages):
        assert p.n == n
        assert p.doc_id == document.id
        assert 0 <= p.start < p.end <= len(document.text)
        assert p.text == document.text[p.start:p.end]
        assert p.n_tokens == count_tokens(p.text)
        assert 1 <= p.n_tokens <= chunker.max_tokens
    for before, after in zip(passages, passages[1:], strict=False):
        # Every passage adds new text: never a repeat of (part of) the previous one only.
        assert before.start < after.start
        assert before.end < after.end
        repeated = document.text[after.start:before.end] if after.start < before.end else ""
        assert count_tokens(repeated) <= chunker.overlap


def new_tokens(document: Document, passages: tuple[Passage, ...]) -> list[str]:
    """Tokens of each passage's text past the end of the previous passage, concatenated."""
    tokens: list[str] = []
    previous_end = 0
    for p in passages:
        tokens.extend(TOKEN_RE.findall(document.text[max(p.start, previous_end):p.end]))
        previous_end = p.end
    return tokens


def sentence_cut_points(text: str, max_tokens: int) -> tuple[set[int], set[int]]:
    """Allowed passage starts and ends: sentence edges, or token edges in a long sentence."""
    starts: set[int] = set()
    ends: set[int] = set()
    for s, e in split_sentences(text):
        starts.add(s)
        ends.add(e)
        spans = token_spans(text[s:e])
        if len(spans) > max_tokens:
            starts.update(s + a for a, _ in spans)
            ends.update(s + b for _, b in spans)
    return starts, ends


# --- configuration ------------------------------------------------------------------------


def test_defaults() -> None:
    chunker = Chunker()
    assert (chunker.max_tokens, chunker.overlap) == (100, 0)


@pytest.mark.parametrize("max_tokens", [8, 100_000])
def test_max_tokens_bounds_are_accepted(max_tokens: int) -> None:
    assert Chunker(max_tokens=max_tokens).max_tokens == max_tokens


@pytest.mark.parametrize("max_tokens", [7, 0, -5, 100_001])
def test_out_of_range_max_tokens_raises_config_error(max_tokens: int) -> None:
    message = f"max_tokens={max_tokens} is out of range; allowed: 8 to 100000."
    with pytest.raises(ConfigError, match=re.escape(message)):
        Chunker(max_tokens=max_tokens)


@pytest.mark.parametrize(("max_tokens", "overlap"), [(100, 51), (100, -1), (20, 11), (9, 5)])
def test_out_of_range_overlap_raises_config_error(max_tokens: int, overlap: int) -> None:
    message = f"overlap={overlap} is out of range; allowed: 0 to {max_tokens // 2}."
    with pytest.raises(ConfigError, match=re.escape(message)):
        Chunker(max_tokens=max_tokens, overlap=overlap)


def test_overlap_of_half_max_tokens_is_accepted() -> None:
    assert Chunker(max_tokens=20, overlap=10).overlap == 10


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Chunker(max_tokens=1)


# --- packing whole sentences --------------------------------------------------------------


def test_short_document_is_one_passage() -> None:
    document = doc(f"{S1} {S2}")
    passages = Chunker(max_tokens=100).split(document)
    assert len(passages) == 1
    assert passages[0] == Passage(id="Doc#0", doc_id="Doc", n=0, start=0,
                                  end=len(document.text), text=document.text, n_tokens=10)


def test_sentences_are_packed_greedily_up_to_max_tokens() -> None:
    document = doc(f"{S1} {S2} {S3} {S4}")
    chunker = Chunker(max_tokens=10)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [f"{S1} {S2}", f"{S3} {S4}"]
    assert [p.n_tokens for p in passages] == [10, 10]


def test_sentences_are_not_split_when_they_fit() -> None:
    document = doc(f"{S1} {S2} {S3} {S4}")
    chunker = Chunker(max_tokens=14)  # 3 sentences would be 15 tokens
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [f"{S1} {S2}", f"{S3} {S4}"]


def test_one_sentence_per_passage_when_two_do_not_fit() -> None:
    document = doc(f"{S1} {S2} {S3}")
    passages = Chunker(max_tokens=8).split(document)
    assert texts(passages) == [S1, S2, S3]
    assert [p.id for p in passages] == ["Doc#0", "Doc#1", "Doc#2"]


def test_passage_spans_skip_leading_and_trailing_whitespace() -> None:
    document = doc(f"\n  {S1}\n\n{S2}  \n")
    passages = Chunker(max_tokens=8).split(document)
    assert texts(passages) == [S1, S2]
    assert passages[0].start == 3


def test_passage_may_span_a_paragraph_break() -> None:
    document = doc(f"{S1}\n\n{S2}")
    passages = Chunker(max_tokens=10).split(document)
    assert texts(passages) == [document.text]


def test_blank_document_has_no_passages() -> None:
    assert Chunker().split(doc("   \n ")) == ()


def test_split_is_deterministic() -> None:
    document = doc(" ".join([S1, S2, S3, S4] * 5))
    chunker = Chunker(max_tokens=12, overlap=5)
    assert chunker.split(document) == Chunker(max_tokens=12, overlap=5).split(document)


# --- cutting long sentences ---------------------------------------------------------------


def test_long_sentence_is_cut_at_token_boundaries() -> None:
    long = " ".join(f"w{i}" for i in range(25)) + "."  # 26 tokens
    document = doc(long)
    chunker = Chunker(max_tokens=10)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert [p.n_tokens for p in passages] == [10, 10, 6]
    assert passages[0].text == " ".join(f"w{i}" for i in range(10))
    assert passages[2].text == "w20 w21 w22 w23 w24."
    assert new_tokens(document, passages) == TOKEN_RE.findall(long)


def test_cut_may_fall_between_a_word_and_its_punctuation() -> None:
    document = doc("a b c d e f g h i.")  # 10 tokens, the period is the 10th
    passages = Chunker(max_tokens=9).split(document)
    assert texts(passages) == ["a b c d e f g h i", "."]


def test_rest_of_a_cut_sentence_is_packed_with_the_next_sentence() -> None:
    long = " ".join(f"w{i}" for i in range(13)) + "."  # 14 tokens: cut into 10 + 4
    document = doc(f"{long} {S1}")
    chunker = Chunker(max_tokens=10)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [" ".join(f"w{i}" for i in range(10)), f"w10 w11 w12. {S1}"]


def test_short_sentences_around_a_long_one_are_kept_whole() -> None:
    long = "X0 " + " ".join(f"x{i}" for i in range(1, 20)) + "."  # 21 tokens: 10 + 10 + 1
    document = doc(f"{S1} {long} {S2}")
    chunker = Chunker(max_tokens=10)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [
        S1,
        "X0 " + " ".join(f"x{i}" for i in range(1, 10)),
        " ".join(f"x{i}" for i in range(10, 20)),
        f". {S2}",
    ]


# --- overlap ------------------------------------------------------------------------------


def test_no_overlap_gives_disjoint_contiguous_passages() -> None:
    document = doc(" ".join([S1, S2, S3, S4] * 3))
    chunker = Chunker(max_tokens=12, overlap=0)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    for before, after in zip(passages, passages[1:], strict=False):
        assert before.end < after.start
    assert sum(p.n_tokens for p in passages) == count_tokens(document.text)


def test_overlap_repeats_the_last_sentence_of_the_previous_passage() -> None:
    document = doc(f"{S1} {S2} {S3} {S4}")
    chunker = Chunker(max_tokens=16, overlap=5)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [f"{S1} {S2} {S3}", f"{S3} {S4}"]


def test_overlap_repeats_several_trailing_sentences_that_fit() -> None:
    document = doc(f"{S1} Ok. Go. Five six seven eight nine ten.")  # 5 + 2 + 2 + 7 tokens
    chunker = Chunker(max_tokens=12, overlap=6)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == [f"{S1} Ok. Go.", "Ok. Go. Five six seven eight nine ten."]


def test_overlap_stops_at_the_first_sentence_that_does_not_fit() -> None:
    document = doc(f"{S1} Alpha beta gamma. Go. Five six seven eight nine ten.")  # 5+4+2+7
    chunker = Chunker(max_tokens=12, overlap=5)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    # "Go." (2) fits the overlap of 5; adding "Alpha beta gamma." (4) would not.
    assert passages[1].text == "Go. Five six seven eight nine ten."


def test_sentence_longer_than_overlap_is_not_repeated() -> None:
    document = doc(f"{S1} {S2} {S3} {S4}")
    chunker = Chunker(max_tokens=12, overlap=4)  # sentences are 5 tokens
    passages = chunker.split(document)
    assert texts(passages) == [f"{S1} {S2}", f"{S3} {S4}"]


def test_overlap_never_pushes_a_passage_over_max_tokens() -> None:
    # The next sentence (9 tokens) leaves room for only 3 repeated tokens of 12.
    document = doc(f"{S1} Ok. Go. One two three four five six seven eight.")
    chunker = Chunker(max_tokens=12, overlap=6)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert passages[1].text == "Go. One two three four five six seven eight."
    assert passages[1].n_tokens == 11


def test_overlap_never_repeats_a_whole_passage() -> None:
    document = doc("Ab cd. Ef gh. Ij kl. Mn op.")  # 3 tokens each
    chunker = Chunker(max_tokens=8, overlap=4)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert texts(passages) == ["Ab cd. Ef gh.", "Ef gh. Ij kl.", "Ij kl. Mn op."]


def test_pieces_of_a_cut_sentence_larger_than_overlap_are_not_repeated() -> None:
    long = " ".join(f"w{i}" for i in range(25)) + "."  # pieces of 10, 10 and 6 tokens
    document = doc(long)
    chunker = Chunker(max_tokens=10, overlap=5)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert [p.n_tokens for p in passages] == [10, 10, 6]
    assert new_tokens(document, passages) == TOKEN_RE.findall(long)


def test_overlapping_passages_still_cover_every_token_once_as_new_text() -> None:
    document = doc(" ".join([S1, "Ok.", S2, "Go on.", S3, S4] * 4))
    chunker = Chunker(max_tokens=14, overlap=7)
    passages = chunker.split(document)
    assert_invariants(chunker, document, passages)
    assert any(after.start < before.end for before, after in zip(passages, passages[1:],
                                                                    strict=False))
    assert new_tokens(document, passages) == TOKEN_RE.findall(document.text)


# --- property-style check over real text --------------------------------------------------


@pytest.fixture(scope="module")
def wiki_docs() -> list[Document]:
    return read_wiki_summaries()[:300]


@pytest.mark.parametrize(("max_tokens", "overlap"), [(100, 0), (64, 16), (30, 0), (8, 4)])
def test_invariants_hold_on_wikipedia_summaries(
    wiki_docs: list[Document], max_tokens: int, overlap: int
) -> None:
    assert len(wiki_docs) == 300
    chunker = Chunker(max_tokens=max_tokens, overlap=overlap)
    for document in wiki_docs:
        passages = chunker.split(document)
        assert passages, document.id
        assert_invariants(chunker, document, passages)
        # Concatenating the non-overlapping parts of the passages gives every token.
        assert new_tokens(document, passages) == TOKEN_RE.findall(document.text), document.id
        # Passages start and end at sentence edges unless a sentence had to be cut.
        starts, ends = sentence_cut_points(document.text, max_tokens)
        for p in passages:
            assert p.start in starts, (document.id, p.id)
            assert p.end in ends, (document.id, p.id)
        if overlap == 0:
            assert sum(p.n_tokens for p in passages) == count_tokens(document.text)


def test_a_corpus_passages_are_spans_that_read_as_the_chunker_splits(tiny_corpus, data_dir):
    """The corpus's passage units hold (document, start, end) rows, not texts; every unit read
    from them is the one `Chunker.split` makes, and ids map back to rows without a dict."""
    from engine.units.build import UnitConfig, build_units, units_fingerprint
    from engine.units.lazy import PassageUnits

    chunker = Chunker(max_tokens=10, overlap=3)
    units = build_units(tiny_corpus, UnitConfig("passages", chunker))
    made = tuple(
        (p.id, d.title, p.text, (d.id,), (p.start, p.end))
        for d in tiny_corpus.documents for p in chunker.split(d))
    assert isinstance(units, PassageUnits) and len(units) == len(made) > len(tiny_corpus)
    assert [(u.id, u.title, u.text, u.doc_ids, u.span) for u in units] == list(made)
    assert units[-1] == units[len(units) - 1] and units[1:3] == (units[1], units[2])
    assert units == tuple(units) and units != tuple(units)[:-1]
    with pytest.raises(IndexError):
        units[len(units)]  # noqa: B018
    rows = units.row_of
    assert all(rows[u.id] == n for n, u in enumerate(units))
    last = tiny_corpus.documents[-1].id
    count = sum(1 for u in units if u.doc_ids == (last,))
    for missing in (f"{last}#{count}", f"{last}#x", "nowhere#0", last):
        assert missing not in rows
    # the spans are cached: a second corpus load reads them, and they make the same units
    assert len(list((data_dir / "cache" / "passage-spans").iterdir())) == 1
    again = build_units(tiny_corpus, UnitConfig("passages", chunker))
    assert units_fingerprint(again) == units_fingerprint(tuple(units))


def test_a_corpus_documents_are_units_sharing_the_documents_text(tiny_corpus):
    from engine.units.build import UnitConfig, build_units

    units = build_units(tiny_corpus, UnitConfig("documents"))
    assert [u.id for u in units] == [d.id for d in tiny_corpus.documents]
    assert all(u.text is d.text for u, d in zip(units, tiny_corpus.documents, strict=True))
    assert units.row_of[tiny_corpus.documents[3].id] == 3 and "absent" not in units.row_of
