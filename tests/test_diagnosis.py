"""Where the answer is lost (engine.eval.outcomes) and whether a difference is real
(engine.eval.paired), on hand-built traces whose outcome is known."""

from __future__ import annotations

from dataclasses import replace

import pytest
from scipy.stats import binomtest

from engine.documents import Question
from engine.errors import ConfigError
from engine.eval import outcomes as oc
from engine.eval.paired import bootstrap_interval, mcnemar, paired
from engine.eval.summary import row
from engine.stages.classify import QUERY
from engine.trace import RunTrace, StageResult
from engine.trace_details import QueryDecision, StageDetails
from tests.fakes import gold_run, ranked_stage

GOLD = Question("q1", "Who painted it?", answers=("Georges Seurat",),
                supporting_titles=("Seurat", "Painting"))
HIT, MISS = ("Seurat", "Georges Seurat painted it."), ("River", "The Danube flows east.")
PAINTING = ("Painting", "A Sunday Afternoon is a painting.")


def stage(name: str, *units: tuple[str, str]) -> StageResult:
    return ranked_stage(name, *units)


def run(*stages: StageResult, said: str | None = "Georges Seurat", gold: Question = GOLD,
        read: int | None = None) -> RunTrace:
    return gold_run(gold, *stages, said=said, read=read)


@pytest.mark.parametrize(("trace", "expected"), [
    (run(stage("first", HIT, MISS), stage("rerank", HIT)), oc.RIGHT),
    (run(stage("first", HIT, MISS), stage("rerank", HIT), said="Vincent"), oc.READ_WRONG),
    (run(stage("first", MISS, MISS), stage("rerank", MISS)), oc.NOT_RETRIEVED),
    (run(stage("first", HIT, MISS), stage("rerank", MISS)), "lost at rerank"),
    # DR-RAG: the static stage misses, query-document concatenation brings the gold in
    (run(stage("static", MISS), stage("qdc", MISS, HIT), stage("cfs", HIT)), oc.RIGHT),
    (run(stage("static", MISS), stage("qdc", MISS, HIT), stage("cfs", MISS)), "lost at cfs"),
    (run(stage("first", HIT, MISS), stage("post", MISS, HIT), read=1), "lost at token cap"),
    (run(stage("first", HIT), said=None), oc.REACHED),
])
def test_each_run_gets_the_outcome_of_the_cut_after_which_the_gold_stayed_lost(trace,
                                                                              expected):
    assert oc.outcome(trace, "answer") == expected


def test_the_support_track_needs_every_supporting_document():
    one = run(stage("first", HIT, PAINTING), stage("rerank", HIT))
    assert oc.outcome(one, "answer") == oc.RIGHT
    assert oc.outcome(one, "support") == "lost at rerank"
    both = run(stage("first", HIT, PAINTING), stage("rerank", PAINTING, HIT))
    assert oc.outcome(both, "support") == oc.RIGHT
    unnamed = replace(GOLD, supporting_titles=())
    assert oc.outcome(run(stage("first", HIT), gold=unnamed), "support") is None


def test_yes_no_questions_and_a_skipped_retrieval_have_their_own_outcomes():
    yes = replace(GOLD, answers=("yes",))
    assert oc.outcome(run(stage("first", HIT), gold=yes), "answer") == oc.NO_SPAN
    skipped = StageResult("classify", QUERY, 0, (), 0.01, StageDetails(
        decision=QueryDecision(retrieve=False, probability=0.2, threshold=0.5)))
    assert oc.outcome(run(skipped), "answer") == oc.SKIPPED
    routed = replace(skipped, details=StageDetails(decision=QueryDecision(True, 0.9, 0.5)))
    assert oc.outcome(run(routed, stage("first", HIT)), "answer") == oc.RIGHT


def test_attribution_counts_every_question_once_in_funnel_order_with_its_positions():
    traces = [run(stage("first", HIT), stage("rerank", MISS)),
              run(stage("first", MISS), stage("rerank", MISS)),
              run(stage("first", HIT), stage("rerank", HIT)),
              run(stage("first", HIT), stage("rerank", HIT), said="Vincent")]
    rows = [{**row(t), "position": i} for i, t in enumerate(traces)]
    found = oc.attribution(rows)["fake"]
    assert found.cuts == ("first", "rerank")
    assert list(found.counts) == [oc.NOT_RETRIEVED, "lost at rerank", oc.READ_WRONG,
                                     oc.RIGHT]
    assert sum(found.counts.values()) == found.total == found.traced == 4
    assert found.questions["lost at rerank"] == [0]
    assert found.questions[oc.RIGHT] == [2]
    with pytest.raises(ConfigError, match="track='gold'"):
        oc.attribution(rows, "gold")


# --- paired differences ----------------------------------------------------------------------


@pytest.mark.parametrize(("only_a", "only_b"), [(10, 2), (3, 3), (0, 7), (25, 12)])
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_questions(only_a, only_b):
    a = [1] * only_a + [0] * only_b + [1] * 5 + [0] * 4
    b = [0] * only_a + [1] * only_b + [1] * 5 + [0] * 4
    expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert mcnemar(a, b) == pytest.approx(expected)
    assert mcnemar([1, 0], [1, 0]) == 1.0


def test_the_bootstrap_interval_is_seeded_and_covers_the_true_difference():
    a = [1.0] * 60 + [0.0] * 40
    b = [1.0] * 40 + [0.0] * 60
    low, high = bootstrap_interval(a, b, resamples=2000, seed=3)
    assert (low, high) == bootstrap_interval(a, b, resamples=2000, seed=3)
    assert 0.0 < low < 0.2 < high < 0.4
    assert bootstrap_interval(a, a, resamples=500) == (0.0, 0.0)


def _rows(ems: list[int], seconds: float, prefix: str = "q") -> list[dict]:
    return [{"question_id": f"{prefix}{i}", "span_answer": True, "gold_doc_recall": None,
             "metrics": {"EM": em, "F1": em, "AR@1": em}, "seconds": {"answer": seconds}}
            for i, em in enumerate(ems)]


def test_paired_differences_mark_what_is_within_noise_and_pair_only_shared_questions():
    a, b = _rows([1] * 30 + [0] * 70, 1.0), _rows([1] * 28 + [0] * 72, 3.0)
    by_metric = {d.metric: d for d in paired(a, b, resamples=2000)}
    assert by_metric["EM"].diff == pytest.approx(0.02)
    assert by_metric["EM"].within_noise and by_metric["EM"].p == pytest.approx(0.5)
    assert by_metric["seconds"].diff == -2.0 and not by_metric["seconds"].within_noise
    assert by_metric["seconds"].p is None
    assert "gold_doc_recall" not in by_metric
    shifted = _rows([0] * 100, 1.0)[50:]  # ids q50..q99 only
    assert paired(a, shifted, resamples=200)[0].n == 50
    with pytest.raises(ConfigError, match="share no question"):
        paired(a, _rows([1], 1.0, prefix="other"))


def test_outcomes_of_several_paradigms_line_up_from_the_earliest_loss_to_right():
    mixed = [oc.RIGHT, "lost at reranker", oc.READ_WRONG, oc.NOT_RETRIEVED, "lost at cfs",
             oc.NO_SPAN, oc.SKIPPED]
    assert oc.in_funnel_order(mixed) == [oc.SKIPPED, oc.NOT_RETRIEVED, "lost at reranker",
                                         "lost at cfs", oc.READ_WRONG, oc.RIGHT, oc.NO_SPAN]


def test_more_than_two_paradigms_get_holm_corrected_p_values():
    """Holm by hand: the smallest p times the number of tests, the next times one fewer,
    never below the one before; two paradigms are one comparison and stay uncorrected."""
    from engine.eval.paired import every_pair, holm

    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([1.5e-30, 0.5]) == [3e-30, 0.5]  # a tiny p is never rounded to 0

    def rows(paradigm: str, right: int) -> list[dict]:  # 20 questions, the first `right` EM 1
        return [{"question_id": f"q{i}", "paradigm": paradigm, "span_answer": False,
                 "metrics": {"EM": float(i < right)}, "seconds": {"answer": 1.0}}
                for i in range(20)]

    three = every_pair([*rows("a", 18), *rows("b", 6), *rows("c", 12)], resamples=200)
    raw = [three[pair]["EM"]["p"] for pair in ("a-b", "a-c", "b-c")]
    assert [three[pair]["EM"]["p_holm"] for pair in ("a-b", "a-c", "b-c")] == holm(raw)
    assert three["a-b"]["EM"]["p_holm"] == pytest.approx(min(1.0, 3 * min(raw)), abs=1e-6)
    two = every_pair([*rows("a", 18), *rows("b", 6)], resamples=200)
    assert "p_holm" not in two["a-b"]["EM"]


def test_tables_of_several_comparisons_show_holm_corrected_p():
    from app.views.diagnosis import paired_table
    from engine.eval.paired import PairedDifference, holm
    from engine.service.diagnosis import PairedComparison, corrected_across

    def result(p: float) -> PairedComparison:
        em = PairedDifference("EM", 20, 0.5, 0.3, 0.2, (0.05, 0.35), p)
        seconds = PairedDifference("seconds", 20, 1.0, 1.2, -0.2, (-0.3, -0.1), None)
        return PairedComparison("1: flat", "2: flat", "tiny", "tiny", 20, 20, 20, 200, 0,
                                (em, seconds))

    [alone] = corrected_across([result(0.02)])  # one comparison: nothing to correct
    assert alone == result(0.02) and "Holm" not in paired_table(alone)
    several = corrected_across([result(0.02), result(0.04)])
    assert [r.differences[0].p_holm for r in several] == holm([0.02, 0.04]) == [0.04, 0.04]
    assert [r.differences[1].p_holm for r in several] == [None, None]  # no McNemar p
    assert "p_holm" in several[0].differences[0].to_dict()
    assert "p_holm" not in several[0].differences[1].to_dict()
    shown = paired_table(several[0])
    assert "<th>Holm p</th>" in shown and "<td>0.04</td>" in shown and "corrects" in shown


def test_paired_differences_include_the_sent_cuts_ndcg_and_mrr():
    from engine.eval.paired import question_values

    gold = Question("q", "Who?", answers=("Georges Seurat",), supporting_titles=("Seurat",))
    hit = gold_run(gold, ranked_stage("dense", ("x", "a"), ("Seurat", "b")),
                   ranked_stage("reranker", ("Seurat", "b"), ("x", "a")))
    values = question_values(row(hit))
    assert values["MRR"] == 1.0 and values["nDCG@10"] == pytest.approx(1.0)
    assert values["MRR"] == hit.metrics["RR@reranker"] != hit.metrics["RR@dense"]
    bare = gold_run(Question("q", "Who?", answers=("x",)), ranked_stage("dense", ("a", "b")))
    assert "MRR" not in question_values(row(bare))  # no supporting documents named
