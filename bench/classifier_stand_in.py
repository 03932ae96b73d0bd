"""DR-RAG's untrained stand-in classifier against the trained one, on the training pairs.

The stand-in ("cosines": the pair model untrained, P = sigmoid(10 (cos(q, d1) + cos(q, d2)
- c)) over MiniLM's segment means, threshold 0.5) answers while the selection classifier
trains on a fresh start. Its c (STAND_IN_COSINE_SUM) is chosen here, best accuracy on the
pairs of the training questions the classifier trains on, and the stand-in as shipped is
reported on the questions training holds apart (the pairs the trained version reports on),
as is the active trained version, if there is one.

    python -m bench.classifier_stand_in [--threads 2]
"""

from __future__ import annotations

import argparse
import math
import time
from itertools import groupby

from bench.common import markdown_table, opened, save
from engine.models.pair_model import INITIAL_SCALE, new_pair_model
from engine.models.selection_classifier import (
    PairClassifier,
    active_version,
    load_classifier,
    stand_in_classifier,
    versions_dir,
)
from engine.train.fit_selection_classifier import ClassifierConfig
from engine.train.preranker_pairs import load_question_groups, split_questions
from engine.train.selection_pairs import choose_threshold, dataset_pairs, pair_metrics, roc_auc


def scores(classifier, pairs) -> tuple[list[float], list[int]]:
    probs, truth = [], []
    for query, group in groupby(pairs, key=lambda x: x.query):
        group = list(group)
        probs += classifier.probabilities(query, [(x.first, x.second) for x in group])
        truth += [x.label for x in group]
    return probs, truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    args = opened(parser)
    config = ClassifierConfig()
    train, held_out = split_questions(load_question_groups(), config.holdout_fraction,
                                      config.seed)
    train_pairs, held_pairs = dataset_pairs(train, config.seed), dataset_pairs(held_out,
                                                                               config.seed + 1)
    start = time.perf_counter()
    plain = PairClassifier("cosines, c = 1", *new_pair_model(cosine_sum=1.0))
    probs, truth = scores(plain, train_pairs)
    # P = sigmoid(10 (s - 1)): back to the cosine sum s, and the best-accuracy cut of it
    sums = [1.0 + math.log(p / (1.0 - p)) / INITIAL_SCALE for p in probs]
    cosine_sum = choose_threshold(sums, truth)
    choose_seconds = time.perf_counter() - start
    rows, report = [], {"train_pairs": len(train_pairs), "heldout_pairs": len(held_pairs),
                        "chosen_cosine_sum": cosine_sum,
                        "train_accuracy": pair_metrics(sums, truth, cosine_sum)["accuracy"],
                        "choose_seconds": round(choose_seconds, 1)}
    found = {"stand-in as shipped (untrained)": (stand_in_classifier(), 0.5)}
    if (version := active_version()) is not None:
        trained = load_classifier(str(versions_dir() / version))
        found[f"trained ({version[:8]})"] = (trained, trained.threshold)
    for name, (classifier, chosen) in found.items():
        probs, truth = scores(classifier, held_pairs)
        metrics = pair_metrics(probs, truth, chosen)
        report[name] = {"threshold": chosen, "auc": roc_auc(probs, truth), **metrics}
        rows.append([name, f"{chosen:.3f}", f"{roc_auc(probs, truth):.3f}",
                     *(f"{metrics[k]:.3f}" for k in ("accuracy", "precision", "recall", "f1"))])
    print(f"{len(train_pairs)} training pairs choose the stand-in's cosine sum: "
          f"{cosine_sum:.4f} ({choose_seconds:.0f} s; STAND_IN_COSINE_SUM ships the value "
          f"rounded); {len(held_pairs)} held-out pairs, {args.threads} threads")
    print(markdown_table(["classifier", "threshold", "held-out AUC", "accuracy", "precision",
                          "recall", "F1"], rows))
    save("classifier_stand_in", report)


if __name__ == "__main__":
    main()
