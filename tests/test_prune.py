"""The sentence cut (engine.stages.prune): which sentences a budget or a threshold keeps,
the neighbours a dangling sentence brings, the passages it leaves, the option every
paradigm takes, and the sentence-level gold it is measured against.

Selection is logic (tiny fixtures, a scorer that counts words); the paradigms run the real
packaged MiniLM, and the reader the real SmolLM2 where the test is about what it reads.
"""

from __future__ import annotations

import json

import pytest

from engine.data.loaders import read_dataset
from engine.documents import Candidate, Question, Unit
from engine.errors import ConfigError
from engine.metrics import sentences_held
from engine.paradigms.registry import make_config, names, spec
from engine.service.store import make_paradigm
from engine.stages.prune import (
    PruneConfig,
    SentencePruner,
    dangles,
    keep_above,
    keep_within,
    sentences_of,
)
from engine.text import count_tokens
from engine.trace import from_dict
from engine.trace_details import details_from_dict

QUESTION = Question("q1", "Which river flows through Budapest?", answers=("Danube",),
                    supporting_titles=("Budapest",),
                    supporting_sentences=("The Danube flows through it.",))


def _passage(pid: str, title: str, text: str) -> Candidate:
    return Candidate(Unit(pid, title, text, (title,), "passages"), 1.0, 1, (title,))


PASSAGES = (
    _passage("p1", "Budapest", "Budapest is the capital of Hungary. The Danube flows "
                               "through it. It has many baths."),
    _passage("p2", "Paul Signac", "Paul Signac was a French painter."),
    _passage("p3", "Vienna", "Vienna is the capital of Austria. It lies on the Danube."),
)


class WordOverlap:
    """Scores a sentence by the question words it shares: the order is known in advance."""

    def __init__(self) -> None:
        self.seen: list[Candidate] = []

    def scores(self, query, candidates):
        self.seen.extend(candidates)
        words = set(query.lower().replace("?", "").split())
        return [float(len(words & set(c.unit.text.lower().rstrip(".").split())))
                for c in candidates]


def test_dangling_sentences_lean_on_the_one_before_in_their_passage():
    assert dangles("He devised pointillism.") and dangles("Its capital is Vienna.")
    assert not dangles("Heinrich devised it.") and not dangles("The river flows.")
    found = sentences_of(PASSAGES)
    assert [s.text for s in found][:3] == ["Budapest is the capital of Hungary.",
                                           "The Danube flows through it.",
                                           "It has many baths."]
    assert [s.leans_on for s in found] == [None, None, 1, None, None, 4]
    # a passage's first sentence leans on nothing, even opening with a pronoun
    assert sentences_of([_passage("x", "X", "It rains. It pours.")])[0].leans_on is None
    assert all(s.leans_on is None for s in sentences_of(PASSAGES, neighbours=False))


def test_a_budget_keeps_the_best_pieces_that_fit_and_skips_to_shorter_ones():
    found = sentences_of(PASSAGES, neighbours=False)
    sizes = [count_tokens(s.text) for s in found]  # 7, 6, 5, 7, 7, 7
    scores = [0.1, 0.9, 0.8, 0.0, 0.2, 0.7]
    assert keep_within(scores, found, sizes, 13) == {1: "", 2: ""}  # 6 + 5, the 7s no longer fit
    assert keep_within(scores, found, sizes, 1) == {1: ""}  # the best is kept whatever its size
    assert set(keep_within(scores, found, sizes, 1000)) == set(range(6))


def test_a_kept_dangling_sentence_brings_its_neighbour_within_the_budget():
    found = sentences_of(PASSAGES)
    sizes = [count_tokens(s.text) for s in found]
    scores = [0.1, 0.2, 0.9, 0.0, 0.3, 0.8]
    # "It has many baths." (best) needs "The Danube flows through it.": 5 + 6 tokens
    assert keep_within(scores, found, sizes, 11) == {2: "", 1: "neighbour"}
    # "It lies on the Danube." and its neighbour (7 + 7) do not fit beside them: passed
    # over for the neighbour alone, which fits on its own score
    assert keep_within(scores, found, sizes, 20) == {2: "", 1: "neighbour", 4: ""}
    kept = keep_within(scores, found, sizes, 25)
    assert kept == {2: "", 1: "neighbour", 5: "", 4: "neighbour"}


def test_a_threshold_keeps_every_sentence_scaled_above_it_and_their_neighbours():
    found = sentences_of(PASSAGES)
    scores = [0.0, 0.5, 1.0, 0.25, 0.5, 0.75]
    assert keep_above(scores, found, 0.7) == {2: "", 5: "", 1: "neighbour", 4: "neighbour"}
    assert set(keep_above(scores, found, 0.0)) == set(range(6))
    assert keep_above(scores, found, 1.0) == {2: "", 1: "neighbour"}
    assert set(keep_above([3.0] * 6, found, 1.0)) == set(range(6))  # all equal: all kept


def test_the_pruner_keeps_passage_order_titles_and_drops_emptied_passages():
    scorer = WordOverlap()
    config = PruneConfig("budget", tokens=16)
    out = SentencePruner(scorer, config).run("Which river flows through Budapest?",
                                             PASSAGES, 3)
    # the sentences scored are the passages' own, each with its passage's title
    assert [c.unit.title for c in scorer.seen][:3] == ["Budapest"] * 3
    assert [c.unit.id for c in out.candidates] == ["p1"]  # the others kept nothing
    assert out.candidates[0].unit.text == ("Budapest is the capital of Hungary. "
                                           "The Danube flows through it.")
    assert out.candidates[0].unit.title == "Budapest" and out.candidates[0].rank == 1
    details = out.details
    assert details.tokens == 13 and details.tokens_in == sum(
        count_tokens(p.unit.text) for p in PASSAGES)
    assert f"{details.tokens_in - 13} saved" in details.note
    assert [s.kept for s in details.sentences] == [True, True, False, False, False, False]
    assert len(details.sentences) == 6 and details.sentences[0].passage == "p1"
    assert details.sentences[1].score == 2.0 and details.sentences[1].tokens == 6


def test_the_pruner_keeps_the_order_of_the_passages_it_was_given():
    passages = tuple(reversed(PASSAGES))
    out = SentencePruner(WordOverlap(), PruneConfig("threshold", threshold=0.3)).run(
        "Which river flows through the Danube?", passages, 3)
    assert [c.unit.id for c in out.candidates] == ["p3", "p1"]
    assert out.candidates[0].unit.text == "Vienna is the capital of Austria. " \
                                          "It lies on the Danube."
    assert SentencePruner(WordOverlap(), PruneConfig("budget")).run("q", (), 3).candidates == ()


def test_the_option_is_checked_and_read_from_json_in_every_paradigm():
    for name in names():
        options = {o.name for o in spec(name).options()}
        assert {"prune.mode", "prune.scorer", "prune.tokens", "prune.threshold",
                "prune.neighbours"} <= options, name
        config = make_config(name, {"prune": {"mode": "budget", "tokens": 120}})
        assert config.prune.mode == "budget" and config.prune.tokens == 120
    with pytest.raises(ConfigError, match="'trim'"):
        make_config("flat", {"prune": {"mode": "trim"}})
    with pytest.raises(ConfigError, match="threshold"):
        make_config("flat", {"prune": {"mode": "threshold", "threshold": 1.5}})


def test_a_paradigms_own_nested_defaults_hold_in_json_and_in_its_options_form():
    """A partial nested config fills in from the paradigm's defaults, not the class's (the
    options form the app builds shows and sends them), and a refused value is named by its
    dotted name."""
    longrag = make_config("longrag", {"prune": {"tokens": 400}})
    assert (longrag.prune.mode, longrag.prune.tokens) == ("budget", 400)
    assert make_config("longrag").prune.tokens == 500
    assert make_config("funnel", {"reader": {"lr": 2}}).reader.aggregation == "mean_tokens"
    shown = {o.name: o.default for o in spec("longrag").options()}
    assert (shown["prune.mode"], shown["prune.tokens"]) == ("budget", 500)
    assert shown["reader.max_passage_tokens"] == 4096
    assert {o.name: o.default for o in spec("flat").options()}["prune.mode"] == "off"
    with pytest.raises(ConfigError, match=r"prune\.tokens=5 is out of range"):
        make_config("flat", {"prune": {"mode": "budget", "tokens": 5}})
    with pytest.raises(ConfigError, match="prune.scorer 'bm25' reads stored document scores"):
        make_config("flat", {"prune": {"scorer": "bm25"}})


def test_sentence_gold_is_held_whole_whatever_joins_it():
    texts = ["Budapest is the capital of Hungary.  The Danube flows through it!"]
    assert sentences_held(texts, ("The Danube flows through it.", "It has many baths.")) \
        == (True, False)
    assert sentences_held(["The Danube flows"], ("The Danube flows through it.",)) == (False,)


def test_hotpotqa_supporting_facts_become_the_sentence_gold(tmp_path):
    item = {"_id": "h1", "question": "Where does the Danube flow?", "answer": "Budapest",
            "type": "bridge", "supporting_facts": [["Danube", 1], ["Danube", 7], ["X", 0]],
            "context": [["Danube", ["The Danube is a river.", " It flows through Budapest."]],
                        ["X", ["X is a letter."]]]}
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([item]))
    question = read_dataset(path).questions[0]
    # the fact naming sentence 7 of a two-sentence paragraph is skipped
    assert question.supporting_sentences == ("It flows through Budapest.", "X is a letter.")


def test_a_stored_sentence_of_a_summary_reads_back_with_its_cosine_as_score():
    details = details_from_dict({"sentences": [{"passage": "p1", "text": "A.",
                                                "cosine": 0.5, "kept": True}]})
    assert details.sentences[0].score == 0.5 and details.sentences[0].tokens == 0


@pytest.mark.slow
def test_flat_with_the_cut_reads_fewer_tokens_and_measures_the_gold_sentences(
        tiny_corpus, shared_models):
    base = {"M": 6, "k": 3, "reader": {"max_answer_tokens": 8}}
    whole = make_paradigm("flat", tiny_corpus, base).run(QUESTION)
    cut = make_paradigm("flat", tiny_corpus, {**base, "prune": {"mode": "budget",
                                                                "tokens": 16}}).run(QUESTION)
    assert [s.name for s in cut.stages] == ["dense", "reranker", "sentences"]
    sentences = cut.stages[-1]
    assert sentences.details.tokens <= 16 < sentences.details.tokens_in
    assert sentences.settings["sentence_scorer"] == "bi-encoder"
    (answer_whole,), (answer_cut,) = whole.llm_steps, cut.llm_steps
    assert answer_cut.prompt_tokens < answer_whole.prompt_tokens
    # what the reader read is what the cut kept
    kept = [s.text for s in sentences.details.sentences if s.kept]
    assert all(text in answer_cut.prompt for text in kept)
    # the heatmap's rows are then the sentences read, grouped by passage; uncut, passages
    read = answer_cut.attention
    assert sorted(read.sentence_texts) == sorted(kept)
    assert len(read.sentence_cells) == len(kept) and len(read.cells) == len(cut.read)
    assert list(dict.fromkeys(read.sentence_passages)) == list(read.passages)
    assert not whole.llm_steps[0].attention.sentence_cells
    from app.views.heatmap import heatmap_figure

    rows = heatmap_figure(cut).data[0].y
    assert len(rows) == len(kept) and all(" · s" in row for row in rows)
    assert len(heatmap_figure(whole).data[0].y) == len(whole.read)
    # the sentence gold, per stage: the Budapest passage holds it before and after the cut
    assert cut.metrics["gold_sent_recall@reranker"] == 1.0
    assert cut.metrics["gold_sent_recall@sentences"] == \
        float("The Danube flows through it." in kept)
    assert "gold_sent_recall@sentences" not in whole.metrics
    assert from_dict(json.loads(cut.to_json())).gold_flags[-1] == cut.gold_flags[-1]


@pytest.mark.slow
@pytest.mark.parametrize("name, config", [
    ("funnel", {"K": 2, "N": 3, "reader": {"max_answer_tokens": 4}}),
    ("longrag", {"k": 2, "turns": 1, "reader": {"max_answer_tokens": 4}}),
    ("drrag", {"selection": "sm", "k": 3, "k1": 3, "k2": 1,
               "reader": {"max_answer_tokens": 4}}),
    ("best", {"classify": False, "M": 6, "k": 2, "summarise": False,
              "reader": {"max_answer_tokens": 4}}),
])
def test_every_paradigm_ends_with_the_cut_retrieval_only_too(tiny_corpus, shared_models,
                                                              name, config):
    config = {**config, "prune": {"mode": "threshold", "threshold": 0.9}}
    trace = make_paradigm(name, tiny_corpus, config, retrieval_only=True).run(QUESTION)
    last = trace.stages[-1]
    assert last.name == "sentences" and not trace.llm_steps
    assert 0 < sum(s.kept for s in last.details.sentences) < len(last.details.sentences)
    assert "AR@read" in trace.metrics and "gold_sent_recall@sentences" in trace.metrics


@pytest.mark.slow
def test_a_cut_gold_sentence_is_lost_at_the_cut_and_kept_by_its_perfect_ceiling(
        tiny_corpus, shared_models):
    from app.views.gold import SENTENCES, gold_banner, gold_counts
    from engine.eval.ceilings import PERFECT, ceiling, cut_stages
    from engine.eval.outcomes import REACHED, outcome

    question = Question("q2", "Which river flows through Budapest?", answers=("Danube",),
                        supporting_titles=("Budapest",),
                        supporting_sentences=("Budapest is the capital of Hungary.",))
    paradigm = make_paradigm("flat", tiny_corpus, {
        "M": 6, "k": 3, "prune": {"mode": "threshold", "threshold": 1.0}},
        retrieval_only=True)
    trace = paradigm.run(question)
    assert trace.metrics["gold_sent_recall@reranker"] == 1.0
    assert trace.metrics["gold_sent_recall@sentences"] == 0.0
    assert outcome(trace, "sentences") == "lost at sentences"
    assert gold_counts(trace)[SENTENCES] == [1, 1, 0]
    assert "kept 0 of the 1 gold supporting sentence it was given" in gold_banner(trace)

    best = ceiling(paradigm, trace, len(cut_stages(trace)))
    cut = best.stages[-1]
    assert cut.settings[PERFECT] == {"gold_sentences_added": 1}
    assert "Budapest is the capital of Hungary." in " ".join(c.unit.text for c in cut.candidates)
    assert best.metrics["gold_sent_recall@sentences"] == 1.0
    assert outcome(best, "sentences") == REACHED


def test_kept_sentences_read_back_as_the_same_sentences():
    """Issue 67: the heatmap said "the sentence cut kept 5" beside a table of 17: kept
    headings and list lines without a full stop were joined by spaces and split again as
    one. Joined, they split into exactly the sentences kept."""
    from engine.stages.prune import joined
    from engine.text import split_sentences

    kept = ["Installing", "Use pip to install it", "Then run it.", "Done.", "e.g. this one.",
            "3 items remain"]
    text = joined(kept)
    assert [text[a:b] for a, b in split_sentences(text)] == kept
    assert "Then run it. Done." in text  # sentences that split at a space keep the space
