"""IR measures against Annotate's labels: a question's positive human pairs are its relevant
documents, measured by the same trec_eval code as the supporting documents; negative pairs
and the dataset's own ("gold") labels add nothing."""

from __future__ import annotations

import pytest

from engine.documents import Question
from engine.service.labelled import labelled_relevance, with_label_measures
from engine.store.labels import Label
from tests.fakes import gold_run, ranked_stage

GOLD = Question("q1", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
                supporting_titles=("Georges Seurat", "A Sunday Afternoon"))


def _label(d1: str, d2: str, value: int, source: str = "human", question: str = "") -> Label:
    return Label(question or GOLD.text, d1, d1, "x", d2, d2, "y", value, source=source)


def test_positive_human_pairs_are_the_relevant_documents():
    relevance = labelled_relevance([
        _label("Pointillism", "Paul Signac", 1),
        _label("Danube", "Paul Signac", 0),  # says nothing about either on its own
        _label("Danube", "Pointillism", 1, source="gold"),
        _label("Danube", "Vienna", 1, question="  which river?  ")])
    assert relevance == {"who painted a sunday afternoon?": ("Pointillism", "Paul Signac"),
                         "which river?": ("Danube", "Vienna")}


def test_a_labelled_question_is_measured_against_its_labels_beside_its_gold():
    run = gold_run(GOLD, ranked_stage("first", ("Paul Signac", "a"), ("Georges Seurat", "b"),
                                      ("Pointillism", "c")),
                   ranked_stage("kept", ("Georges Seurat", "b")))
    measured = with_label_measures(run, labelled_relevance(
        [_label("Pointillism", "Paul Signac", 1)]))
    # by the labels Paul Signac (rank 1) is relevant; by the gold, Georges Seurat (rank 2)
    assert measured.metrics["labels:RR@first"] == 1.0 and run.metrics["RR@first"] == 0.5
    assert measured.metrics["labels:R@4@first"] == 1.0
    assert measured.metrics["labels:RR@kept"] == 0.0 and measured.metrics["RR@kept"] == 1.0
    assert measured.metrics["labels:nDCG@10@first"] == pytest.approx(
        (1 + 1 / 2) / (1 + 1 / 1.5849625), abs=1e-4)  # ranks 1 and 3 of two relevant
    unlabelled = with_label_measures(run, labelled_relevance([_label("a", "b", 0)]))
    assert unlabelled is run


def test_runs_of_a_question_with_labels_carry_the_label_measures(explorer):
    """Label a pair in the store as Annotate does; the next run of the question carries
    `labels:` measures, a run of another question none."""
    explorer.annotation.add_label("seurat painting", "Pointillism", "Georges Seurat", 1)
    run = explorer.runs.run("seurat painting", "echo", '{"k": 3}')
    labelled = {k: v for k, v in run.metrics.items() if k.startswith("labels:")}
    assert labelled and all(0.0 <= v <= 1.0 for v in labelled.values())
    assert not any(k.startswith("labels:") for k in
                   explorer.runs.run("river budapest", "echo", '{"k": 3}').metrics)
