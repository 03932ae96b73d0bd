"""Each stage's ceiling: a cut made perfect puts the gold first (or adds it), the stages
before it are replayed, the later ones run; a ceiling is never below the run it came from;
a ceiling evaluation is stored, paired with its baseline and refused where it cannot be."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from engine.config import param
from engine.documents import Candidate, Question
from engine.errors import ConfigError
from engine.eval.ceilings import PERFECT, ceiling, cut_stages, label, perfect
from engine.paradigms.base import Paradigm
from engine.results import plain
from engine.stages.base import run_stage
from engine.trace import LLMStep
from engine.units.lazy import document_unit
from tests.fakes import WordOverlapRanker, qa_file


@dataclass(frozen=True)
class TwoCutConfig:
    first: int = param(3, "documents the first cut keeps", low=1, high=8)
    second: int = param(1, "documents the second cut keeps", low=1, high=8)


class TwoCuts(Paradigm):
    """Two word-overlap cuts over every document, then a reader that 'answers' with the
    gold's name when the first document it reads is that document."""

    name = "two-cuts"
    reads = 0  # reader calls, across runs

    def steps(self, question):
        docs = tuple(Candidate(document_unit(d), 0.0, i + 1)
                     for i, d in enumerate(self.corpus.documents))
        first = run_stage(WordOverlapRanker("first"), question, docs, self.config.first)
        yield first
        second = run_stage(WordOverlapRanker("second"), "river " + question, first.candidates,
                           self.config.second)
        yield second
        said = second.candidates[0].unit.title if second.candidates else ""
        TwoCuts.reads += 1
        yield LLMStep("answer", "toy", question, said, 5, 1, 0.0, answer=said)


# the first cut ranks Danube, then Budapest; the second cut too: the toy says "Danube"
GOLD = Question("g", "Which river flows through Budapest?", answers=("Budapest",),
                supporting_titles=("Budapest",))


@pytest.fixture
def toy(tiny_corpus) -> TwoCuts:
    return TwoCuts(tiny_corpus, TwoCutConfig())


def test_a_perfect_cut_puts_the_gold_first_or_adds_it_and_keeps_as_many(toy, tiny_corpus):
    actual = toy.run(GOLD)
    first, second = actual.stages
    given = tuple(Candidate(document_unit(d), 0.0, i + 1)
                  for i, d in enumerate(tiny_corpus.documents))
    made = perfect(first, given, GOLD, tiny_corpus)
    assert [c.unit.id for c in first.candidates][:2] == ["Danube", "Budapest"]
    assert [c.unit.id for c in made.candidates][:2] == ["Budapest", "Danube"]
    assert len(made.candidates) == len(first.candidates)
    assert [c.rank for c in made.candidates] == list(range(1, len(made.candidates) + 1))
    assert made.settings[PERFECT]["gold_first"] == ["Budapest"] and "made perfect" in \
        made.details.note
    # a stage never given the gold document gets it added, a unit of its own granularity
    assert [c.unit.id for c in second.candidates] == ["Danube"]
    lacking = perfect(replace(second, granularity="passages"), (), GOLD, tiny_corpus)
    assert [c.unit.id for c in lacking.candidates] == ["oracle:Budapest"]  # as many as kept
    assert lacking.settings[PERFECT]["added"] == ["oracle:Budapest"]
    # a cut that is perfect already is left as it is
    assert perfect(made, given, GOLD, tiny_corpus) is made


@pytest.mark.parametrize("question", [
    GOLD,
    Question("s", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
             supporting_titles=("Georges Seurat",)),
    # Vienna: neither cut keeps it; made perfect, the second cut gets it added
    Question("v", "Which river flows through Budapest?", answers=("Vienna",),
             supporting_titles=("Vienna",)),
])
def test_a_ceiling_is_never_below_the_run_it_came_from(toy, question):
    actual = toy.run(question)
    for cut in (1, 2):
        better = ceiling(toy, actual, cut)
        for metric in ("AR@1", "EM"):
            assert better.metrics[metric] >= actual.metrics[metric], (cut, metric)
    perfect_second = ceiling(toy, actual, 2)
    assert perfect_second.metrics["EM"] == 1.0  # the gold read first: the toy says it


def test_the_stages_before_the_cut_are_replayed_and_an_unchanged_cut_runs_nothing(toy):
    actual = toy.run(GOLD)
    TwoCuts.reads = 0
    better = ceiling(toy, actual, 2)
    assert TwoCuts.reads == 1
    assert better.stages[0] is actual.stages[0]  # replayed, its seconds and all
    assert PERFECT in better.stages[1].settings
    again = ceiling(toy, better, 2)  # perfect already: no run
    assert again is better and TwoCuts.reads == 1
    assert ceiling(toy, actual, 3) is actual  # no third cut
    assert cut_stages(actual) == [0, 1]


def _ceilings_of_an_evaluation(explorer, tmp_path) -> tuple[str, int, int]:
    """(the QA file, its evaluation through echo, that evaluation's ceilings), both done."""
    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    baseline = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1}})
    explorer.evaluations.wait_for_evaluation(baseline, 30)
    ceilings = explorer.evaluations.ceilings(baseline)
    explorer.evaluations.wait_for_evaluation(ceilings, 30)
    return qa, baseline, ceilings


def test_a_ceiling_evaluation_is_stored_paired_with_its_baseline_and_refused_where_it_cannot_be(
        explorer, tmp_path):
    _, baseline, ceilings = _ceilings_of_an_evaluation(explorer, tmp_path)
    stored = explorer.evaluations.evaluation(ceilings)
    assert stored.state == "done" and stored.baseline == baseline
    assert stored.paradigms == (label("echo", 1, "overlap"),)
    assert stored.configs[label("echo", 1, "overlap")]["k"] == 1
    trace = explorer.evaluations.evaluation_trace(ceilings, 0, label("echo", 1, "overlap"))
    assert trace.stages[0].candidates[0].unit.id == "Georges Seurat"
    table = explorer.diagnoses.ceiling_table(ceilings)
    echo = table.paradigms["echo"]
    assert table.baseline == baseline and echo.actual["runs"] == 2
    (cut,) = echo.cuts
    recall = next(d for d in cut.differences if d.metric == "gold_doc_recall")
    assert recall.diff >= 0 and cut.means["gold_doc_recall"] == 1.0
    # only what gains: the gold documents put first raise their recall and the ranking
    assert echo.pays_most == {"gold_doc_recall": cut.label, "nDCG@10": cut.label}
    sent = plain(table)  # as the API sends it
    assert sent["paradigms"]["echo"]["cuts"][0]["label"] == cut.label
    assert sent["paradigms"]["echo"]["cuts"][0]["differences"] == [
        d.to_dict() for d in cut.differences]
    with pytest.raises(ConfigError, match="holds ceilings already"):
        explorer.evaluations.ceilings(ceilings)
    with pytest.raises(ConfigError, match="no ceiling evaluation"):
        explorer.diagnoses.ceiling_table(baseline)
    with pytest.raises(ConfigError, match="'flat' is not a paradigm evaluation"):
        explorer.evaluations.ceilings(baseline, ["flat"])


def test_diagnose_starts_follows_and_shows_an_evaluations_ceilings(explorer, tmp_path):
    from app.tabs import probes

    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    baseline = explorer.evaluations.evaluate(qa, ["echo"], {"echo": {"k": 1}})
    explorer.evaluations.wait_for_evaluation(baseline, 30)
    refused = probes.show_ceilings(explorer, baseline)
    assert f"No ceilings of evaluation {baseline} yet" in refused[0]
    message, _, started, timer = probes.start_ceilings(explorer, baseline)
    assert f"Ceiling evaluation {started} started" in message
    explorer.evaluations.wait_for_evaluation(started, 30)
    table, plot, followed, timer = probes.follow_ceilings(explorer, started)
    assert followed == started and "<td>perfect cut 1 (overlap)</td>" in table
    assert "<b>1.000 (+1.000 [+1.000, +1.000])</b>" in table  # gold-document recall pays
    assert "<b>1.000 (+0.000" not in table  # no gain, nothing in bold
    assert plot.visible
    assert timer.active is False  # done: the poll stops
    assert probes.show_ceilings(explorer, baseline)[0] == table
    assert probes.show_ceilings(explorer, started)[0] == table  # the ceilings themselves
    assert "No run of this evaluation has a leave-one-out" in probes.ablation_agreement(
        explorer, baseline)


def test_the_ceilings_say_how_many_questions_gold_the_corpus_lacks_and_which_holds_it(
        explorer, tmp_path, tiny_corpus):
    """A perfect cut adds only the gold the corpus holds: where it lacks some, the ceiling
    table says how many questions that leaves low and names the corpora that hold them."""
    from app.views.probes import ceiling_table
    from engine.data.loaders import read_dataset
    from engine.documents import Corpus
    from engine.service.diagnosis import GoldCoverage, gold_coverage

    qa, baseline, ceilings = _ceilings_of_an_evaluation(explorer, tmp_path)
    table = explorer.diagnoses.ceiling_table(ceilings)
    # the corpus holds every gold document
    assert table.gold == GoldCoverage("tiny", questions=2, lacking=0, none=0, holds_it=())
    assert "lacks gold" not in ceiling_table(table)

    without = Corpus("tiny-less", tuple(d for d in tiny_corpus.documents
                                        if d.id != "Georges Seurat"))
    dataset = read_dataset(qa)
    gold = gold_coverage(explorer._evaluation_store, baseline, without, dataset, qa)
    assert gold == GoldCoverage("tiny-less", questions=2, lacking=2, none=2,
                                holds_it=(f"tiny-less+{qa}",))
    shown = ceiling_table(replace(table, gold=gold))
    assert ("The corpus 'tiny-less' lacks gold supporting documents of 2 of the 2 "
            "questions") in shown
    assert f"evaluate over 'tiny-less+{qa}', which holds them" in shown
