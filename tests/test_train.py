from __future__ import annotations

import json
import math
import re

import pytest

from engine.documents import Corpus, Document
from engine.errors import ConfigError
from engine.models.cross_encoder import (
    TrainConfig,
    cached_preranker_path,
    score_pairs,
    training_report,
)
from engine.train.distill import bpr_loss, document_scores_from_passages, l2g_pairs
from engine.train.fit_preranker import train_preranker
from engine.train.loop import fit_cross_encoder, query_batches
from engine.train.losses import listwise_loss
from engine.train.preranker_pairs import (
    Pair,
    inverse_cloze_pairs,
    load_question_groups,
    split_questions,
    supervised_pairs,
)
from tests.conftest import torch_single_thread

# --- tiny training files in the shared-data layout ----------------------------------------

HOTPOT = [
    {"_id": f"h{i}", "question": q, "answer": "x", "type": "bridge", "level": "easy",
     "supporting_facts": [[gold[0], 0], [gold[1], 0]],
     "context": [[t, [f"{t} is about {t.lower()}."]] for t in (*gold, "Noise A", "Noise B")]}
    for i, (q, gold) in enumerate([
        ("Which river flows through Budapest?", ("Danube", "Budapest")),
        ("Who devised pointillism?", ("Georges Seurat", "Pointillism")),
        ("What is the capital of Austria?", ("Vienna", "Austria")),
    ])
]
MUSIQUE = [
    {"id": f"2hop__m{i}", "question": q, "answer": "y", "answer_aliases": [],
     "paragraphs": [{"idx": j, "title": t, "paragraph_text": f"{t} text.", "is_supporting": s}
                    for j, (t, s) in enumerate([(gold, True), ("Other", False),
                                                ("More", False), ("Less", False)])]}
    for i, (q, gold) in enumerate([("Where do plants get energy?", "Photosynthesis"),
                                   ("Who painted with Seurat?", "Paul Signac")])
]

EASY_PAIRS = [
    Pair("Which river flows through Budapest?", "Danube\nThe Danube flows through Budapest.", 1),
    Pair("Which river flows through Budapest?", "Photosynthesis\nPlants use light.", 0),
    Pair("Who devised pointillism?", "Georges Seurat\nSeurat devised pointillism.", 1),
    Pair("Who devised pointillism?", "Vienna\nVienna is the capital of Austria.", 0),
    Pair("What is the capital of Austria?", "Vienna\nVienna is the capital of Austria.", 1),
    Pair("What is the capital of Austria?", "Danube\nThe Danube flows through Budapest.", 0),
]
QUICK = TrainConfig(epochs=3, batch_size=2, learning_rate=1e-4, max_length=64,
                    use_ict=False, max_negatives=1)


one_thread = pytest.fixture(autouse=True)(torch_single_thread)


@pytest.fixture
def shared(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    for name, items in (("hotpotqa/train100.json", HOTPOT), ("musique/train100.json", MUSIQUE)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(items), encoding="utf-8")
    monkeypatch.setenv("FUNNEL_SHARED_DATA", str(root))
    return root


def _minilm():
    pytest.importorskip("sentence_transformers")
    from engine.errors import ResourceMissingError
    from engine.models.packaged import minilm_path

    try:
        minilm_path()
    except ResourceMissingError as err:
        pytest.skip(str(err))


# --- data ---------------------------------------------------------------------------------


def test_question_groups_label_supporting_paragraphs(shared):
    groups = load_question_groups()
    assert [g.id for g in groups] == ["h0", "h1", "h2", "2hop__m0", "2hop__m1"]
    first = groups[0]
    assert first.gold_titles == ("Danube", "Budapest")
    assert [(t, positive) for t, _, positive in first.paragraphs] == [
        ("Danube", True), ("Budapest", True), ("Noise A", False), ("Noise B", False)]
    assert first.paragraphs[0][1] == "Danube\nDanube is about danube."
    assert [p[2] for p in groups[3].paragraphs] == [True, False, False, False]


def test_split_is_seeded_and_disjoint(shared):
    groups = load_question_groups()
    train, held = split_questions(groups, 0.2, seed=13)
    assert len(held) == 1 and len(train) == 4
    assert {g.id for g in train} | {g.id for g in held} == {g.id for g in groups}
    assert split_questions(groups, 0.2, seed=13) == (train, held)


def test_supervised_pairs_keep_positives_and_cap_negatives(shared):
    groups = load_question_groups()
    pairs = supervised_pairs(groups, max_negatives=1, seed=13)
    assert sum(p.label == 1 for p in pairs) == 3 * 2 + 2 * 1
    assert sum(p.label == 0 for p in pairs) == 5
    assert pairs == supervised_pairs(groups, max_negatives=1, seed=13)


def test_inverse_cloze_pairs_never_use_dev_documents():
    dev = "hotpotqa/dev500_contexts.jsonl"
    text = "Rivers flow. The Danube flows east. It reaches the Black Sea. Boats use it."
    docs = [Document(f"doc{i}", f"Doc {i}", text.replace("Danube", f"River{i}"),
                     sources=(dev,) if i % 2 else ("wiki",)) for i in range(8)]
    pairs = inverse_cloze_pairs(Corpus("c", tuple(docs)), n=10, seed=1)
    positives = [p for p in pairs if p.label == 1]
    assert len(positives) == 4  # only the four non-dev documents
    assert not any(p.text.startswith(("Doc 1\n", "Doc 3\n", "Doc 5\n", "Doc 7\n"))
                   for p in pairs)
    for p in positives:
        assert p.query not in p.text and p.query != "Rivers flow."  # never the lead sentence


# --- config and training ------------------------------------------------------------------


def test_train_config_round_trips_json():
    config = TrainConfig(seed=7, epochs=2, use_ict=False, learning_rate=3e-5)
    assert TrainConfig.from_json(config.to_json()) == config
    assert TrainConfig.from_json(TrainConfig().to_json()) == TrainConfig()
    with pytest.raises(ConfigError, match=re.escape("Unknown loss 'hinge'")):
        TrainConfig(loss="hinge")
    with pytest.raises(ConfigError, match=re.escape("Unknown TrainConfig field(s) ['lr']")):
        TrainConfig.from_json('{"lr": 1}')


@pytest.mark.training
def test_training_is_seeded_and_separates_positives():
    _minilm()
    from engine.train.loop import new_cross_encoder, seeded

    pairs = [(p.query, p.text) for p in EASY_PAIRS]
    positive = [p.label == 1 for p in EASY_PAIRS]

    def margin(scores):
        pos = [s for s, y in zip(scores, positive, strict=True) if y]
        neg = [s for s, y in zip(scores, positive, strict=True) if not y]
        return sum(pos) / len(pos) - sum(neg) / len(neg)

    with seeded(QUICK.seed):
        before = score_pairs(new_cross_encoder("minilm", 64), pairs)
    first = score_pairs(fit_cross_encoder(EASY_PAIRS, QUICK, progress=False), pairs)
    second = score_pairs(fit_cross_encoder(EASY_PAIRS, QUICK, progress=False), pairs)
    assert first == second
    assert margin(first) > 0 and margin(first) > margin(before)


@pytest.mark.training
def test_trained_preranker_is_cached_and_reused(shared, monkeypatch):
    _minilm()
    import engine.train.fit_preranker

    assert cached_preranker_path(QUICK) is None
    folder = train_preranker(QUICK)
    assert cached_preranker_path(QUICK) == folder
    report = training_report(folder)
    assert report["kept"] == "supervised" and report["validation_questions"] == 1
    assert (folder / "config.json").is_file()

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(engine.train.fit_preranker, "_build", no_training)
    assert train_preranker(QUICK) == folder
    assert cached_preranker_path(TrainConfig(seed=14, use_ict=False)) is None


def test_query_batches_keep_each_question_whole():
    pairs = [Pair(q, f"{q}{i}", float(i == 0)) for q, n in (("a", 3), ("b", 2), ("c", 4))
             for i in range(n)]
    found = query_batches(pairs, batch_size=5, seed=3)
    assert sorted((p.query, p.text) for b in found for p in b) == [(p.query, p.text)
                                                                    for p in pairs]
    assert all(len(b) <= 5 or len({p.query for p in b}) == 1 for b in found)
    for query in "abc":
        assert sum(any(p.query == query for p in b) for b in found) == 1
    assert found == query_batches(pairs, batch_size=5, seed=3)


def test_listwise_loss_on_hand_worked_numbers():
    torch = pytest.importorskip("torch")
    batch = [Pair("q1", "p", 1), Pair("q1", "n", 0), Pair("q1", "n2", 0),
             Pair("q2", "p", 1), Pair("q2", "p2", 1), Pair("q2", "n", 0)]
    logits = torch.tensor([2.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    # q1: log(e^2 + 2) - 2; q2: log(1 + e) - 0 and log(2e) - 1 = log 2
    expected = (math.log(math.e ** 2 + 2) - 2 + math.log(1 + math.e) + math.log(2)) / 3
    assert math.isclose(listwise_loss(logits, batch).item(), expected, rel_tol=1e-6)
    only_positives = [Pair("q", "p", 1), Pair("q", "p2", 1)]  # no negative: falls back to BCE
    bce = math.log(1 + math.exp(-2.0))
    assert math.isclose(listwise_loss(torch.tensor([2.0, 2.0]), only_positives).item(), bce,
                        rel_tol=1e-6)


# --- local-to-global distillation, on hand-worked numbers ----------------------------------


def test_document_scores_mix_max_and_mean():
    passages = {"a": [1.0, 3.0], "b": [2.0], "c": [0.0, 0.0, 3.0], "empty": []}
    assert document_scores_from_passages(passages) == {"a": 2.5, "b": 2.0, "c": 2.0}
    assert document_scores_from_passages(passages, a=1.0) == {"a": 3.0, "b": 2.0, "c": 3.0}
    assert document_scores_from_passages(passages, a=0.0) == {"a": 2.0, "b": 2.0, "c": 1.0}
    with pytest.raises(ConfigError, match=re.escape("a=1.5 is out of range")):
        document_scores_from_passages(passages, a=1.5)


def test_l2g_pairs_top_k_plus_gold_are_positive():
    scores = {"a": 2.5, "b": 2.0, "c": 2.2, "d": 0.5}
    assert l2g_pairs(scores, top_k=1, gold_doc_ids=["d", "not scored"]) == (["a", "d"],
                                                                            ["c", "b"])
    assert l2g_pairs(scores, top_k=2) == (["a", "c"], ["b", "d"])
    assert l2g_pairs(scores, top_k=0) == ([], ["a", "c", "b", "d"])


def test_bpr_loss_is_mean_negative_log_sigmoid_of_the_gap():
    torch = pytest.importorskip("torch")
    pos = torch.tensor([2.0, 0.0, 0.0], requires_grad=True)
    neg = torch.tensor([0.0, 0.0, 1000.0])
    loss = bpr_loss(pos, neg)
    # log(1 + e^-2) = 0.126928, log 2 = 0.693147, -log(sigmoid(-1000)) = 1000
    assert math.isclose(loss.item(), (0.126928 + 0.693147 + 1000.0) / 3, rel_tol=1e-5)
    loss.backward()
    # d/dpos of softplus(neg - pos) / 3 = -sigmoid(neg - pos) / 3
    expected = [-1 / (1 + math.exp(2)) / 3, -0.5 / 3, -1 / 3]
    assert all(math.isclose(g, e, rel_tol=1e-5) for g, e in zip(pos.grad.tolist(), expected,
                                                               strict=True))


# --- command line -------------------------------------------------------------------------


@pytest.mark.training
def test_cli_trains_then_reports_the_cached_model(shared, capsys):
    _minilm()
    from engine.cli.main import main

    assert main(["train", "preranker", "--no-ict", "--seed", "5"]) == 0
    first = capsys.readouterr().out
    assert "trained now" in first and "supervised" in first and "<- kept" in first
    assert "bi-encoder" in first
    assert main(["train", "preranker", "--no-ict", "--seed", "5"]) == 0
    second = capsys.readouterr().out
    assert "cached (trained earlier)" in second
    assert first.splitlines()[0] == second.splitlines()[0]  # same folder


def test_cli_without_training_data_exits_2(tmp_path, monkeypatch, capsys):
    from engine.cli.main import main

    monkeypatch.setenv("FUNNEL_SHARED_DATA", str(tmp_path / "nowhere"))
    assert main(["train", "preranker", "--no-ict"]) == 2
    err = capsys.readouterr().err
    assert "no training data: hotpotqa/train100.json, musique/train100.json are not in" in err
    assert "funnel-engine data fetch" in err
