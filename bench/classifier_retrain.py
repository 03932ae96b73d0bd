"""The selection classifier's held-out figures before and after a retrain with 50 labels.

The labels are made the way the Annotate tab offers pairs: drrag (inverse selection, k=4,
the pooled corpus) runs on training questions that are not held out; each judged pair is
labelled from the dataset's supporting flags (source "gold", as a careful annotator would
label it), disagreements with the classifier first, until 50 labels. They go through the
labels store and `Annotation.retrain`, exactly as the app's Retrain button does. Held-out
pairs (20% of the training questions) are the same before and after. The previous version
is made active again afterwards unless --keep.

    python -m bench.classifier_retrain [--labels 50] [--threads 2] [--keep]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.documents import Question
from engine.service.annotation import Annotation
from engine.service.store import make_paradigm
from engine.store.sessions import SessionStore
from engine.train.fit_selection_classifier import ClassifierConfig, train_classifier
from engine.train.preranker_pairs import load_question_groups, split_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="leave the new version active")
    args = opened(parser)
    from engine.models.selection_classifier import set_active

    config = ClassifierConfig()
    base = train_classifier(config)  # cached: the base version, made active
    corpus = load_corpus("pooled")
    store = SessionStore(Path(tempfile.mkdtemp()) / "labels.duckdb")
    annotation = Annotation(lambda name: corpus, store)
    drrag = make_paradigm("drrag", corpus, {"selection": "cis", "k": 4, "k1": 2})
    train, _ = split_questions(load_question_groups(), config.holdout_fraction, config.seed)
    made = 0
    for group in train:
        if made >= args.labels:
            break
        trace = drrag.run(Question(group.id, group.query, supporting_titles=group.gold_titles))
        for pair in annotation.pairs(trace):
            if made >= args.labels:
                break
            annotation.label(trace.question, pair.d1_id, pair.d2_id, pair.gold,
                             question_id=group.id, source="gold", annotator="bench")
            made += 1
    positives = sum(x.label for x in annotation.labels.list())
    status = annotation.retrain(wait=True)
    job = status.retrain
    by_id = {v["id"]: v for v in status.versions}
    before, after = by_id[base.name], by_id[job["after"]]
    set_active(job["after"] if args.keep else base.name)  # kept active even if worse
    rows = []
    for name, version in (("before", before), ("after", after)):
        m = version["heldout"]
        rows.append([name, version["id"][:12], version["labels"], version["threshold"],
                     version["heldout_auc"], m["accuracy"], m["precision"], m["recall"], m["f1"],
                     m["pairs"]])
    keys = ("id", "threshold", "heldout_auc", "heldout", "labels")
    report = {"labels": made, "positive_labels": positives, "retrain_seconds": job["seconds"],
              "before": {k: before[k] for k in keys}, "after": {k: after[k] for k in keys}}
    save("classifier_retrain", report)
    print(f"{made} labels ({positives} positive) from drrag runs on training questions; "
          f"retrain {job['seconds']:.0f} s\n")
    print(markdown_table(["", "version", "labels", "threshold", "AUC", "accuracy", "precision",
                          "recall", "F1", "held-out pairs"], rows))


if __name__ == "__main__":
    main()
