"""A training stopped mid-way resumes after its last finished epoch (issue 67: DR-RAG's
selection classifier started again from zero after each kill -9): the real pair model,
two epochs over a handful of pairs, stopped in the second and resumed, ends with the
weights an unstopped training ends with."""

from __future__ import annotations

import pytest

from engine.train.checkpoints import CHECKPOINT
from engine.train.fit_selection_classifier import ClassifierConfig, fit_classifier
from engine.train.selection_pairs import PairExample

pytestmark = pytest.mark.slow

PAIRS = [PairExample("Who painted La Grande Jatte?", "Georges Seurat\nA French painter.",
                     "A Sunday Afternoon\nPainted by Seurat.", 1),
         PairExample("Who painted La Grande Jatte?", "Danube\nA river.",
                     "Vienna\nA capital.", 0),
         PairExample("Which river flows through Budapest?", "Danube\nIt flows through it.",
                     "Budapest\nOn the Danube.", 1),
         PairExample("Which river flows through Budapest?", "Pointillism\nDots.",
                     "Paul Signac\nA painter.", 0)]


class Stopped(Exception):
    pass


def test_a_stopped_training_resumes_after_its_last_epoch(tmp_path):
    import torch

    config = ClassifierConfig(epochs=2, batch_size=2, max_length=32)
    epochs = [PAIRS, list(reversed(PAIRS))]
    _, whole = fit_classifier(epochs, config)
    checkpoint, seen = tmp_path / "checkpoint", []

    def stop_in_the_second_epoch(done: int, total: int) -> None:
        seen.append(done)
        if (checkpoint / CHECKPOINT).exists():  # the first epoch ended and was saved
            raise Stopped

    with pytest.raises(Stopped):
        fit_classifier(epochs, config, stop_in_the_second_epoch, checkpoint)
    assert torch.load(checkpoint / CHECKPOINT, weights_only=False)["epoch"] == 1
    resumed_from = []
    _, resumed = fit_classifier(epochs, config, lambda d, t: resumed_from.append(d),
                                checkpoint)
    assert resumed_from[0] > seen[0]  # it went on from where it was, not from nothing
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items(),
                                 strict=True):
        assert torch.allclose(a, b, atol=1e-5), name
