"""Training DR-RAG's selection classifier C(q, d1, d2) from the packaged MiniLM.

Data, as the paper builds it, from the training files only (never dev500): for each
question, C(q, d*, d*) over ordered pairs of its distinct supporting paragraphs is positive;
negatives C(q, d*, d-) (either order) and C(q, d-, d-), half each, sampled 1:1 with the
positives, seeded. A seeded 20% of the questions is held out (the same split the
pre-ranker uses): their pairs choose the threshold (best F1) and give the reported
accuracy, precision and recall.

Retraining adds annotated labels (engine/store/labels.py) to the training pairs. Labels on
held-out or dev500 questions are set aside, so the held-out figures stay comparable
between versions and nothing leaks into evaluation. Every version is its own cache entry
(config, data sha256s, labels fingerprint); the newest trained becomes the active one, and
the previous stays loadable (engine.models.selection.set_active switches back).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import groupby, permutations
from pathlib import Path

from engine.cache import fingerprint, load_or_build, write_json_atomic
from engine.models.selection import KIND, REPORT, load_classifier, set_active
from engine.models.trained import TRAIN_FILES
from engine.paths import shared_data_dir
from engine.train.data import QuestionGroup, load_question_groups, split_questions
from engine.train.loop import optimizer_step, seed_everything

logger = logging.getLogger(__name__)

CLASSIFIER_VERSION = 1
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything that decides a trained classifier (its cache key, with the data)."""

    seed: int = 13
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 5e-5
    max_length: int = 256
    holdout_fraction: float = 0.2
    base_model: str = "minilm"


@dataclass(frozen=True)
class PairExample:
    """C(query, first, second) = label; texts are "title\\ntext"."""

    query: str
    first: str
    second: str
    label: int
    source: str = "gold"  # "gold" (from a dataset's supporting flags) or "human"


def question_pairs(group: QuestionGroup, rng: random.Random) -> list[PairExample]:
    """One question's positives and as many negatives, half with one supporting paragraph."""
    gold = [text for _, text, positive in group.paragraphs if positive]
    other = [text for _, text, positive in group.paragraphs if not positive]
    positives = [PairExample(group.query, a, b, 1) for a, b in permutations(gold, 2)]
    mixed = [(a, b) for a in gold for b in other] + [(b, a) for a in gold for b in other]
    plain = list(permutations(other, 2))
    n_mixed = min(len(mixed), math.ceil(len(positives) / 2))
    n_plain = min(len(plain), len(positives) - n_mixed)
    negatives = rng.sample(mixed, n_mixed) + rng.sample(plain, n_plain)
    return positives + [PairExample(group.query, a, b, 0) for a, b in negatives]


def dataset_pairs(groups: Sequence[QuestionGroup], seed: int) -> list[PairExample]:
    rng = random.Random(seed)
    return [pair for group in groups for pair in question_pairs(group, rng)]


# --- metrics and the threshold ------------------------------------------------------------


def pair_metrics(probs: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    """Accuracy, precision, recall and F1 of "P >= threshold" against `labels`."""
    tp = sum(p >= threshold and y == 1 for p, y in zip(probs, labels, strict=True))
    fp = sum(p >= threshold and y == 0 for p, y in zip(probs, labels, strict=True))
    fn = sum(p < threshold and y == 1 for p, y in zip(probs, labels, strict=True))
    correct = sum((p >= threshold) == (y == 1) for p, y in zip(probs, labels, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": round(correct / max(1, len(labels)), 4),
            "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "pairs": len(labels)}


def choose_threshold(probs: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold with the best F1 on these pairs (ties: the one nearest 0.5)."""
    candidates = sorted({round(p, 4) for p in probs} | {0.5})
    return max(candidates, key=lambda t: (pair_metrics(probs, labels, t)["f1"], -abs(t - 0.5)))


# --- training -----------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_key(config: ClassifierConfig, labels: Sequence[PairExample]) -> dict:
    root = shared_data_dir()
    return {"config": asdict(config), "version": CLASSIFIER_VERSION,
            "data": {name: _sha256(root / name) for name in TRAIN_FILES},
            "labels": fingerprint([asdict(x) for x in labels]) if labels else ""}


def _key(question: str) -> str:
    return " ".join(question.lower().split())


def usable_labels(labels: Sequence[PairExample], held_out: Sequence[QuestionGroup],
                  ) -> tuple[list[PairExample], int]:
    """(labels to train on, how many were set aside): none on a held-out or dev500
    question, so held-out figures stay comparable and evaluation stays clean."""
    from engine.data.loaders import read_dataset
    from engine.train.data import DEV_SOURCE

    banned = {_key(g.query) for g in held_out}
    dev = shared_data_dir() / DEV_SOURCE
    if dev.exists():
        banned |= {_key(q.text) for q in read_dataset(dev).questions}
    kept = [x for x in labels if _key(x.query) not in banned]
    return kept, len(labels) - len(kept)


def train_classifier(config: ClassifierConfig | None = None,
                     labels: Sequence[PairExample] = (), progress: Progress | None = None,
                     activate: bool = True) -> Path:
    """The cached classifier trained on the training files plus `labels` (trained first if
    missing), made the active version unless `activate` is False. Returns its folder."""
    config = config or ClassifierConfig()
    folder = load_or_build(KIND, cache_key(config, labels),
                           lambda out: _build(out, config, labels, progress), lambda f: f)
    if activate:
        set_active(folder.name)
    return folder


def _build(folder: Path, config: ClassifierConfig, labels: Sequence[PairExample],
           progress: Progress | None) -> None:
    started = time.perf_counter()
    train_groups, held_out = split_questions(load_question_groups(), config.holdout_fraction,
                                             config.seed)
    extra, set_aside = usable_labels(labels, held_out)
    pairs = dataset_pairs(train_groups, config.seed) + extra
    heldout_pairs = dataset_pairs(held_out, config.seed + 1)
    logger.info("training the selection classifier on %d pairs (%d annotated), %d held out",
                len(pairs), len(extra), len(heldout_pairs))
    tokenizer, model = fit_classifier(pairs, config, progress)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    # not through the process-wide cache: `folder` is a temporary build folder
    classifier = load_classifier.__wrapped__(str(folder), config.max_length)
    probs, truth = [], []
    for query, group in groupby(heldout_pairs, key=lambda x: x.query):
        group = list(group)
        probs += classifier.probabilities(query, [(x.first, x.second) for x in group])
        truth += [x.label for x in group]
    threshold = choose_threshold(probs, truth)
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "config": asdict(config),
        "threshold": threshold, "labels": len(extra), "labels_set_aside": set_aside,
        "train_questions": len(train_groups), "heldout_questions": len(held_out),
        "train_pairs": len(pairs), "heldout": pair_metrics(probs, truth, threshold),
        "heldout_at_0.5": pair_metrics(probs, truth, 0.5),
        "heldout_scores": [[round(p, 4), y] for p, y in zip(probs, truth, strict=True)],
        "seconds": round(time.perf_counter() - started, 1)}
    write_json_atomic(folder / REPORT, report)
    logger.info("held out: %s at threshold %.3f; %.0f s", report["heldout"], threshold,
                report["seconds"])


def fit_classifier(pairs: Sequence[PairExample], config: ClassifierConfig,
                   progress: Progress | None = None):
    """(tokenizer, model): a two-label sequence classifier from `config.base_model`, trained
    with cross-entropy on `pairs` (seeded; word embeddings frozen, as for the pre-ranker)."""
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    from engine.models.loading import from_pretrained, resolve
    from engine.models.selection import encode_pairs

    seed_everything(config.seed)  # before the model: the new head's weights are random
    location = resolve(config.base_model)
    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, location, local_files_only=True)
    model = from_pretrained(AutoModelForSequenceClassification.from_pretrained, location,
                            num_labels=2, local_files_only=True)
    model.get_input_embeddings().weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.01)
    rng = random.Random(config.seed)
    per_epoch = math.ceil(len(pairs) / config.batch_size)
    steps = per_epoch * config.epochs
    schedule = get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * steps), steps)
    model.train()
    done = 0
    for epoch in range(1, config.epochs + 1):
        order = list(pairs)
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            inputs = _batch_inputs(tokenizer, batch, config.max_length, encode_pairs)
            loss = model(**inputs, labels=torch.tensor([x.label for x in batch])).loss
            total += optimizer_step(loss, params, optimizer, schedule)
            done += 1
            if progress:
                progress(done, steps)
        logger.info("epoch %d/%d: mean loss %.4f", epoch, config.epochs, total / per_epoch)
    model.eval()
    return tokenizer, model


def _batch_inputs(tokenizer, batch: Sequence[PairExample], max_length: int, encode):
    """One padded batch; pairs of different questions are encoded question by question."""
    import torch

    parts = [encode(tokenizer, x.query, [(x.first, x.second)], max_length) for x in batch]
    width = max(p["input_ids"].shape[1] for p in parts)
    pad = tokenizer.pad_token_id or 0
    out = {}
    for key in parts[0]:
        fill = pad if key == "input_ids" else 0
        out[key] = torch.cat([torch.nn.functional.pad(p[key], (0, width - p[key].shape[1]),
                                                      value=fill) for p in parts])
    return out


def training_report(folder: Path) -> dict:
    return json.loads((folder / REPORT).read_text(encoding="utf-8"))
