"""Train the query classifier: MiniLM fine-tuned to tell requests that need retrieval from
those that do not, on the labelled set of engine/train/query_data.py.

Held-apart examples (unseen templates and a fifth of the knowledge questions) are never
trained on; the report gives their accuracy overall and per kind, and the threshold is
0.5 (the classes are near balance).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from engine.cache import load_or_build, write_json_atomic
from engine.models.query_classifier import (
    KIND,
    REPORT,
    VERSION,
    QueryClassifier,
    QueryClassifierConfig,
    cache_key,
    training_report,
)
from engine.train.loop import seeded
from engine.train.query_data import (
    QueryExample,
    build_examples,
    corpus_sentences,
    knowledge_questions,
)

logger = logging.getLogger(__name__)


def labelled_set(seed: int = 13) -> list[QueryExample]:
    """The labelled set: templates over default-corpus sentences, and the knowledge
    questions of the shared training files."""
    from engine.data.corpus import load_corpus

    texts = [d.text for d in load_corpus("wiki").documents]
    return build_examples(corpus_sentences(texts), knowledge_questions(), seed)


def train_query_classifier(config: QueryClassifierConfig | None = None) -> Path:
    """The cached classifier for `config` (trained first if missing); returns its folder."""
    config = config or QueryClassifierConfig()
    return load_or_build(KIND, cache_key(config), lambda out: _build(out, config),
                         lambda folder: folder)


def _build(folder: Path, config: QueryClassifierConfig) -> None:
    started = time.perf_counter()
    examples = labelled_set(config.seed)
    train = [e for e in examples if not e.held_out]
    held = [e for e in examples if e.held_out]
    logger.info("query classifier: %d training examples, %d held apart", len(train), len(held))
    tokenizer, model = _fit(train, config)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    classifier = QueryClassifier(str(folder), tokenizer, model.eval(),
                                 max_length=config.max_length)
    probs = classifier.probabilities([e.text for e in held])
    right = [(p >= 0.5) == bool(e.label) for p, e in zip(probs, held, strict=True)]
    kinds = {e.kind for e in held}
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "config": asdict(config),
        "version": VERSION, "threshold": 0.5,
        "train_examples": len(train), "heldout_examples": len(held),
        "heldout_accuracy": round(statistics.fmean(right), 4),
        "heldout_accuracy_by_kind": {
            kind: round(statistics.fmean(r for r, e in zip(right, held, strict=True)
                                         if e.kind == kind), 4) for kind in sorted(kinds)},
        "heldout_mistakes": [{"text": e.text, "label": e.label, "p": round(p, 4)}
                             for p, e, r in zip(probs, held, right, strict=True) if not r],
        "seconds": round(time.perf_counter() - started, 1)}
    write_json_atomic(folder / REPORT, report)
    logger.info("query classifier: held-apart accuracy %.3f; %.0f s",
                report["heldout_accuracy"], report["seconds"])


def _fit(examples: Sequence[QueryExample], config: QueryClassifierConfig):
    with seeded(config.seed):  # the new head's weights are random
        return _fit_seeded(examples, config)


def _fit_seeded(examples: Sequence[QueryExample], config: QueryClassifierConfig):
    import random

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from engine.models.locations import resolve
    from engine.models.pretrained import quiet_transformers

    location = resolve(config.base_model)
    quiet_transformers()  # its load report lists the new head, which is about to be trained
    tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(location, num_labels=2,
                                                               local_files_only=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    rng = random.Random(config.seed)
    model.train()
    for epoch in range(config.epochs):
        order = list(examples)
        rng.shuffle(order)
        losses = []
        for at in range(0, len(order), config.batch_size):
            batch = order[at:at + config.batch_size]
            inputs = tokenizer([e.text for e in batch], padding=True, truncation=True,
                               max_length=config.max_length, return_tensors="pt")
            out = model(**inputs, labels=torch.tensor([e.label for e in batch]))
            optimizer.zero_grad()
            out.loss.backward()
            optimizer.step()
            losses.append(float(out.loss.detach()))
        logger.info("query classifier epoch %d/%d: mean loss %.4f", epoch + 1, config.epochs,
                    statistics.fmean(losses))
    model.eval()
    return tokenizer, model


def summary(folder: Path) -> list[str]:
    """What `python -m engine train query-classifier` says of a trained classifier: a line
    naming it and its folder, then its accuracy on the held-apart examples, by kind."""
    report = training_report(folder)
    lines = [f"query classifier  {folder}",
             f"examples    {report['train_examples']} trained on, {report['heldout_examples']} "
             "held apart (unseen templates, a fifth of the knowledge questions)",
             f"held apart  accuracy {report['heldout_accuracy']:.3f}"]
    lines += [f"  {kind:24} {accuracy:.3f}"
              for kind, accuracy in report["heldout_accuracy_by_kind"].items()]
    return lines
