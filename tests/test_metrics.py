from __future__ import annotations

import math
import re

import pytest

from engine.documents import Question
from engine.errors import ConfigError
from engine.metrics import (
    accuracy,
    all_gold_at,
    answer_in,
    answer_recall_at,
    contextual_integrity,
    exact_match,
    f1_score,
    gold_document_recall,
    has_span_answer,
    normalize_answer,
    refined_exact_match,
    support_recall,
)


@pytest.mark.parametrize("raw,expected", [
    ("The Eiffel Tower!", "eiffel tower"),
    ("  an   apple, a pear ", "apple pear"),
    ("Theatre", "theatre"),               # "the" only as a whole word
    ("Anthem", "anthem"),                 # "an" only as a whole word
    ("THE A AN", ""),                     # articles only -> empty
    ("U.S.A.", "usa"),
    ("a.k.a.", "aka"),                    # punctuation goes first, so "a" is no article
    ("The-End", "theend"),                # ... and "the" glued to "end" survives
    ("3,677 seated", "3677 seated"),
    ("Jean-Paul", "jeanpaul"),            # ASCII hyphen removed, words glued (SQuAD)
    ("Jean–Paul", "jean–paul"),           # unicode en dash is NOT punctuation here
    ("Paris's", "pariss"),
    ("Paris’s", "paris’s"),               # curly apostrophe survives
    ("“Paris”", "“paris”"),               # curly quotes survive
    ("Ångström", "ångström"),
])
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


def test_answer_in_matches_whole_normalised_words():
    assert answer_in(["It seats 3,677 people."], ["3,677"])
    assert not answer_in(["It seats 3,677 people."], ["3,67"])
    assert answer_in(["A City-based team."], ["city"])  # a hyphen separates words (DPR)
    assert answer_in(["Jean-Paul Sartre wrote it."], ["Jean Paul Sartre"])


def test_containment_and_exact_match_agree_where_normalisations_differ():
    # SQuAD's EM glues "3,677" into "3677"; containment splits it: accuracy >= EM still
    assert exact_match("3677", ["3,677"]) == accuracy("3677", ["3,677"]) == 1.0
    assert refined_exact_match("3677", ["3,677"]) == 1.0
    # a hyphen next to the gold: contained, and short enough for refined EM
    assert refined_exact_match("The City-based team", ["City"]) == 1.0
    assert accuracy("", ["", "the"]) == 0.0  # no real gold: nothing matches
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


# --- answer metrics -----------------------------------------------------------------------

RAMBLING = (  # 40 normalised tokens, "Paris" among them
    "Well, I think that when you consider everything about European capitals and history, "
    "plus culture, food, art, museums, fashion, and politics, you would probably conclude it "
    "is Paris, although some people might argue otherwise for reasons I cannot recall now."
)


def test_rambling_answer_has_forty_tokens():
    assert len(normalize_answer(RAMBLING).split()) == 40


@pytest.mark.parametrize("prediction,em,f1,refined,acc", [
    ("Paris", 1.0, 1.0, 1.0, 1.0),
    ("paris.", 1.0, 1.0, 1.0, 1.0),
    ("The city of Paris, France", 0.0, 0.4, 1.0, 1.0),  # "city of paris france": P=1/4, R=1
    ("Paris is the capital", 0.0, 0.5, 1.0, 1.0),       # "paris is capital": P=1/3, R=1
    (RAMBLING, 0.0, 2 / 41, 0.0, 1.0),                  # P=1/40, R=1 -> 2/41; too long
    ("Parisian cafes", 0.0, 0.0, 0.0, 0.0),             # not on a word boundary
    ("London", 0.0, 0.0, 0.0, 0.0),
    ("", 0.0, 0.0, 0.0, 0.0),                           # empty prediction
    ("“Paris”", 0.0, 0.0, 0.0, 0.0),                    # curly quotes are kept: no match
])
def test_em_f1_refined_accuracy_on_same_predictions(prediction, em, f1, refined, acc):
    answers = ["Paris"]
    assert exact_match(prediction, answers) == em
    assert f1_score(prediction, answers) == pytest.approx(f1)
    assert refined_exact_match(prediction, answers) == refined
    assert accuracy(prediction, answers) == acc
    assert exact_match(prediction, answers) <= refined <= acc  # refined EM sits between


def test_max_over_gold_aliases():
    aliases = ["Paris", "City of Light"]
    assert exact_match("the City of Light", aliases) == 1.0
    assert exact_match("the City of Light", aliases[::-1]) == 1.0
    # vs "city of light": P=3/4, R=1 -> 6/7; vs "paris": 0
    assert f1_score("City of Light district", aliases) == pytest.approx(6 / 7)
    assert f1_score("Paris, City of Light", aliases) == pytest.approx(6 / 7)  # P=3/4 again
    assert exact_match("Lyon", aliases) == 0.0


def test_f1_counts_repeated_tokens_once_per_occurrence():
    assert f1_score("Paris Paris", ["Paris"]) == pytest.approx(2 / 3)      # P=1/2, R=1
    assert f1_score("New York", ["New York New York"]) == pytest.approx(2 / 3)  # P=1, R=1/2


def test_golds_empty_after_normalisation_follow_squad_v2():
    # No usable gold -> the only correct answer is "" (SQuAD v2.0 unanswerable rule).
    for answers in ([], ["the"], ["", "An"]):
        assert exact_match("", answers) == 1.0
        assert f1_score("", answers) == 1.0
        assert f1_score("Paris", answers) == 0.0
        assert refined_exact_match("", answers) == 1.0   # via EM
        assert accuracy("", answers) == 0.0             # containment ignores empty golds
    assert exact_match("Paris", ["", "Paris"]) == 1.0   # empty alias is dropped, not fatal


@pytest.mark.parametrize("prediction,em,f1,refined,acc", [
    ("Yes.", 1.0, 1.0, 1.0, 1.0),
    ("Yes, they are both American.", 0.0, 1 / 3, 1.0, 1.0),  # 5 tokens: P=1/5, R=1
    ("No", 0.0, 0.0, 0.0, 0.0),
    ("yes and no", 0.0, 0.5, 1.0, 1.0),                      # contains "yes": lenient
])
def test_yes_no_answers(prediction, em, f1, refined, acc):
    assert exact_match(prediction, ["yes"]) == em
    assert f1_score(prediction, ["yes"]) == pytest.approx(f1)
    assert refined_exact_match(prediction, ["yes"]) == refined
    assert accuracy(prediction, ["yes"]) == acc


@pytest.mark.parametrize("gold,limit", [
    ("Paris", 6),                          # n=1: max(2, 6)
    ("United States of America", 9),       # n=4: max(8, 9)
    ("one two three four five six", 12),   # n=6: max(12, 11)
])
def test_refined_em_length_bound(gold, limit):
    filler = ["word"] * 20
    n = len(normalize_answer(gold).split())
    at_limit = " ".join([gold, *filler[: limit - n]])
    over = " ".join([gold, *filler[: limit - n + 1]])
    assert len(normalize_answer(at_limit).split()) == limit
    assert refined_exact_match(at_limit, [gold]) == 1.0
    assert refined_exact_match(over, [gold]) == 0.0
    assert accuracy(over, [gold]) == 1.0


def test_refined_em_uses_the_length_of_the_matching_alias():
    answers = ["Paris", "one two three four five six"]
    pred = "Paris " + "word " * 10  # 11 tokens: contains "paris" (limit 6) only
    assert refined_exact_match(pred, answers) == 0.0
    pred = "one two three four five six " + "word " * 6  # 12 tokens, limit 12
    assert refined_exact_match(pred, answers) == 1.0


# --- retrieval measures -------------------------------------------------------------------

def test_answer_recall_at_k_over_ranks():
    texts = ["Berlin is big.", "Rome, too.", "Paris, France.", "Paris again."]
    assert answer_recall_at(texts, ["paris"], [1, 2, 3, 10]) == {
        1: False, 2: False, 3: True, 10: True}
    assert answer_recall_at(texts, ["Rome", "Paris"], (1, 2)) == {1: False, 2: True}
    # Units are joined before matching, so a gold may span a unit boundary.
    assert answer_recall_at(texts, ["big rome"], [1, 2]) == {1: False, 2: True}
    assert answer_recall_at([], ["paris"], [5]) == {5: False}


def test_k_below_one_is_rejected():
    with pytest.raises(ConfigError, match=re.escape("k must be >= 1, got 0")):
        answer_recall_at(["Paris"], ["paris"], [1, 0])
    with pytest.raises(ConfigError, match=re.escape("k must be >= 1, got -1")):
        gold_document_recall([["A"]], ["A"], -1)
    with pytest.raises(ConfigError, match=re.escape("k must be >= 1, got 0")):
        all_gold_at([["A"]], ["A"], 0)


RANKED_DOCS = [["A"], ["C", "B"], ["D"]]  # unit 2 is a group of two documents


@pytest.mark.parametrize("k,recall,all_gold", [
    (1, 0.5, False),
    (2, 1.0, True),
    (3, 1.0, True),
    (99, 1.0, True),
])
def test_gold_document_recall_and_all_gold_at(k, recall, all_gold):
    assert gold_document_recall(RANKED_DOCS, ["A", "B"], k) == recall
    assert all_gold_at(RANKED_DOCS, ["A", "B"], k) is all_gold


def test_gold_document_recall_edge_cases():
    assert gold_document_recall(RANKED_DOCS, ["A", "A", "B"], 1) == 0.5  # gold deduplicated
    assert gold_document_recall(RANKED_DOCS, ["X", "Y", "Z", "D"], 3) == 0.25
    assert gold_document_recall(RANKED_DOCS, [], 3) == 0.0
    assert all_gold_at(RANKED_DOCS, [], 3) is False
    assert gold_document_recall([], ["A"], 5) == 0.0
    assert all_gold_at([["A"], ["A"]], ["A"], 2) is True


@pytest.mark.parametrize("titles,entropy", [
    (["A", "A", "B", "B"], math.log(2)),
    (["A", "A", "A"], 0.0),
    (["A", "B", "C"], math.log(3)),
    (["B", "A", "C"], math.log(3)),                                  # order-free
    (["A", "A", "A", "B"], 0.75 * math.log(4 / 3) + 0.25 * math.log(4)),
    (["A"], 0.0),
    ([], 0.0),
])
def test_contextual_integrity_entropy(titles, entropy):
    assert contextual_integrity(titles) == pytest.approx(entropy)


def test_contextual_integrity_single_document_is_exactly_zero():
    value = contextual_integrity(["A"] * 5)
    assert value == 0.0 and math.copysign(1.0, value) == 1.0  # not -0.0
    assert isinstance(contextual_integrity([]), float)


def test_answer_in_normalises_texts_one_by_one_as_if_joined():
    """answer_in remembers each text's normalisation; joining the normalised texts must find
    exactly what normalising the joined text finds (articles and punctuation at the joins,
    texts that normalise to nothing)."""
    import random
    import string

    from engine.metrics import answer_words

    rng = random.Random(0)
    alphabet = string.ascii_letters[:6] + " -,.'" + "–" + " the an a "
    for _ in range(5000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
                 for _ in range(rng.randint(0, 4))]
        answers = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))]
        joined = f" {answer_words(' '.join(texts))} "
        expected = any(f" {n} " in joined for a in answers if (n := answer_words(a)))
        assert answer_in(texts, answers) == expected, (texts, answers)


def test_ir_measures_of_each_stage_are_trec_evals():
    """nDCG@10, RR, R@k and P@k from ir_measures, checked by hand on two documents."""
    import math

    from engine.metrics import document_ranking, ir_measures_by_stage

    # a cluster's members count at its rank; a document seen again keeps its first rank
    assert document_ranking([("x",), ("a", "y"), ("x", "b")]) == ["x", "a", "y", "b"]
    found = ir_measures_by_stage({"first": ["x", "a", "y", "b"], "empty": [],
                                  "ordered": ["a", "z"]}, ["a", "b"])
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert found["first"]["nDCG@10"] == pytest.approx(dcg / (1 + 1 / math.log2(3)))
    assert (found["first"]["RR"], found["first"]["R@4"], found["first"]["P@4"]) == (
        0.5, 1.0, 0.5)
    assert set(found["empty"].values()) == {0.0}  # a stage that found nothing scores 0
    # the stage's order holds (trec_eval puts "z" before "a" when their scores are equal)
    assert found["ordered"]["RR"] == 1.0


def test_every_cut_of_a_run_gets_the_ir_measures_of_its_documents():
    from tests.fakes import gold_run, ranked_stage

    gold = Question("q", "Who painted it?", answers=("Georges Seurat",),
                    supporting_titles=("Georges Seurat", "A Sunday Afternoon"))
    run = gold_run(gold, ranked_stage("first", ("Paul Signac", "x"), ("Georges Seurat", "y"),
                                      ("A Sunday Afternoon", "z")),
                   ranked_stage("kept", ("Georges Seurat", "y")))
    assert run.metrics["RR@first"] == 0.5 and run.metrics["R@4@first"] == 1.0
    assert run.metrics["R@4@kept"] == 0.5 and run.metrics["P@4@kept"] == 0.25
    assert run.metrics["nDCG@10@kept"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-4)
    # no supporting documents named: no document measures (SQuAD v2's unanswerable ones)
    bare = gold_run(Question("q", "Who?", answers=("x",)), ranked_stage("first", ("a", "b")))
    assert not any(key.startswith(("RR@", "nDCG")) for key in bare.metrics)


def test_a_stage_that_kept_nothing_keeps_no_gold():
    """(a reranker that keeps nothing for a question: annotate raised 'k must be >= 1')"""
    from engine.trace import StageResult
    from tests.fakes import gold_run, ranked_stage

    gold = Question("q", "Who?", answers=("Georges Seurat",), supporting_titles=("Seurat",))
    run = gold_run(gold, ranked_stage("first", ("Seurat", "Georges Seurat")),
                   StageResult("empty", "documents", 1, (), 0.0))
    assert run.metrics["gold_doc_recall@empty"] == 0.0 and run.metrics["RR@empty"] == 0.0
    assert run.metrics["AR@empty"] == 0.0


@pytest.mark.parametrize(("key", "parsed"), [
    ("nDCG@10@dense", ("nDCG@10", "dense")),
    ("AR@read", ("AR", "read")),
    ("gold_doc_recall@rerank", ("gold_doc_recall", "rerank")),
    ("AR@4", ("AR@4", None)),  # answer recall in the top 4: a rank, not a stage
    ("nDCG@10", ("nDCG@10", None)),
    ("EM", ("EM", None)),
])
def test_measure_keys_are_made_and_read_back_by_one_pair_of_functions(key, parsed):
    from engine.metrics import at_stage, measure_of

    assert measure_of(key) == parsed
    measure, stage = parsed
    if stage is not None:
        assert at_stage(measure, stage) == key
