"""Training DR-RAG's selection classifier C(q, d1, d2) from the packaged MiniLM.

Data, as the paper builds it, from the training files only (never dev500): for each
question, C(q, d*, d*) over ordered pairs of its distinct supporting paragraphs is positive;
negatives C(q, d*, d-) (either order) and C(q, d-, d-), half each, sampled 1:1 with the
positives, seeded; every epoch draws its own negatives. A seeded 20% of the questions is
held out (the same split the pre-ranker uses): their pairs choose the threshold (best
accuracy: the pairs are balanced, and best F1 there means accepting nearly every pair) and
give the reported AUC, accuracy, precision and recall.

The model is engine/models/pair_model.py: MiniLM over `[CLS] q [SEP] d1 [SEP] d2 [SEP]`
with a head over the three segments' mean-vector cosines. Its head is first fitted on the
frozen encoder (a logistic regression), then encoder and head are fine-tuned together.

Retraining adds annotated labels (engine/store/labels.py) to the training pairs. Labels on
held-out or dev500 questions are set aside, so the held-out figures stay comparable
between versions and nothing leaks into evaluation; the report fingerprints the held-out
pairs, so two versions' figures are compared on the same pairs (`figures_on` measures an
older version again when they differ). Every version is its own cache entry (config, data
sha256s, labels fingerprint); `train_classifier` makes it the active one unless told not
to (a retrain from the app decides by held-out AUC: engine.service.annotation), and the
others stay loadable (engine.models.selection_classifier.set_active switches back).
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import groupby
from pathlib import Path

from engine.cache import existing_entry, file_sha256, fingerprint, load_or_build, write_json_atomic
from engine.errors import DataFormatError, TrainingError
from engine.models.kinds import TRAIN_FILES
from engine.models.pair_model import new_pair_model
from engine.models.selection_classifier import KIND, REPORT, load_classifier, set_active
from engine.qa_data import require
from engine.train.checkpoints import (
    checkpoint_folder,
    drop_checkpoint,
    resumed,
    save_checkpoint,
)
from engine.train.loop import optimizer_step, seeded
from engine.train.preranker_pairs import QuestionGroup, load_question_groups, split_questions
from engine.train.selection_pairs import (
    PairExample,
    choose_threshold,
    dataset_pairs,
    pair_metrics,
    roc_auc,
    usable_labels,
)

logger = logging.getLogger(__name__)

CLASSIFIER_VERSION = 2  # 2: the segment-cosine head (1: BERT's [CLS] pooler head)
Progress = Callable[[int, int], None]
FEATURE_BATCH = 32  # pairs per forward pass when the head is fitted on frozen features
FORWARD_COST = 4  # a pair's training step costs about this many frozen forward passes
# (4.3 measured: 888 pairs' feature pass in 110 s, their steps 0.54 s a pair;
# bench/training_estimate.py)


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything that decides a trained classifier (its cache key, with the data)."""

    seed: int = 13
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 3e-5  # the encoder's
    head_learning_rate: float = 1e-3
    max_length: int = 256
    holdout_fraction: float = 0.2
    base_model: str = "minilm"


# --- training -----------------------------------------------------------------------------


def cache_key(config: ClassifierConfig, labels: Sequence[PairExample]) -> dict:
    root = require(TRAIN_FILES, "no training data")
    return {"config": asdict(config), "version": CLASSIFIER_VERSION,
            "data": {name: file_sha256(root / name) for name in TRAIN_FILES},
            "labels": fingerprint([asdict(x) for x in labels]) if labels else ""}


def cached_classifier(config: ClassifierConfig | None = None,
                      labels: Sequence[PairExample] = ()) -> Path | None:
    """The verified cached classifier trained with `config` on the training files plus
    `labels`, or None (never trains; active or not)."""
    try:
        key = cache_key(config or ClassifierConfig(), labels)
    except (DataFormatError, OSError):  # without its training data it cannot be identified
        return None
    return existing_entry(KIND, key)


def held_out_questions(config: ClassifierConfig) -> list[QuestionGroup]:
    """The training questions `config` holds apart (they choose the threshold)."""
    return split_questions(load_question_groups(), config.holdout_fraction, config.seed)[1]


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


def heldout_pairs(config: ClassifierConfig) -> list[PairExample]:
    """The held-out questions' pairs `config` reports its figures on (seeded, so a retrain
    with the same recipe is measured on the very same pairs)."""
    return dataset_pairs(held_out_questions(config), config.seed + 1)


def pairs_fingerprint(pairs: Sequence[PairExample]) -> str:
    """Names a list of pairs: two versions' held-out figures compare only on equal ones."""
    return fingerprint([asdict(x) for x in pairs])


def heldout_figures(classifier, pairs: Sequence[PairExample],
                    threshold: float | None = None) -> dict:
    """`classifier`'s held-out report entries on `pairs`: AUC, metrics at `threshold`
    (None: the best-accuracy one, chosen here) and at 0.5, [probability, label] scores."""
    probs, truth = [], []
    for query, group in groupby(pairs, key=lambda x: x.query):
        group = list(group)
        probs += classifier.probabilities(query, [(x.first, x.second) for x in group])
        truth += [x.label for x in group]
    threshold = choose_threshold(probs, truth) if threshold is None else threshold
    return {"threshold": threshold, "heldout_auc": roc_auc(probs, truth),
            "heldout": pair_metrics(probs, truth, threshold),
            "heldout_at_0.5": pair_metrics(probs, truth, 0.5),
            "heldout_scores": [[round(p, 4), y] for p, y in zip(probs, truth, strict=True)],
            "heldout_pairs": pairs_fingerprint(pairs)}


def _build(folder: Path, config: ClassifierConfig, labels: Sequence[PairExample],
           progress: Progress | None) -> None:
    started = time.perf_counter()
    train_groups, held_out = split_questions(load_question_groups(), config.holdout_fraction,
                                             config.seed)
    extra, set_aside = usable_labels(labels, held_out)
    # fresh negatives every epoch (1:1 within each), the annotated labels in every one
    epoch_pairs = [dataset_pairs(train_groups, config.seed + epoch) + extra
                   for epoch in range(max(1, config.epochs))]
    pairs = epoch_pairs[0]
    heldout = heldout_pairs(config)
    logger.info("training the selection classifier on %d pairs an epoch (%d annotated), "
                "%d held out", len(pairs), len(extra), len(heldout))
    checkpoint = checkpoint_folder(cache_key(config, labels))
    tokenizer, model = fit_classifier(epoch_pairs, config, progress, checkpoint)
    _check_finite(model)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    # not through the process-wide cache: `folder` is a temporary build folder
    classifier = load_classifier.__wrapped__(str(folder), config.max_length)
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "config": asdict(config),
        "version": CLASSIFIER_VERSION, "labels": len(extra), "labels_set_aside": set_aside,
        "train_questions": len(train_groups), "heldout_questions": len(held_out),
        "train_pairs": len(pairs), **heldout_figures(classifier, heldout),
        "seconds": round(time.perf_counter() - started, 1)}
    write_json_atomic(folder / REPORT, report)
    drop_checkpoint(checkpoint)  # trained whole: nothing to resume
    logger.info("held out: %s at threshold %.3f; %.0f s", report["heldout"],
                report["threshold"], report["seconds"])


def figures_on(version: str, pairs: Sequence[PairExample], max_length: int) -> dict:
    """Version `version`'s held-out figures on `pairs`: its stored ones when it was measured
    on these very pairs, else measured now with its own threshold (a version trained
    before held-out pairs were fingerprinted, or with another split). Adds "id" and
    "rescored"."""
    from engine.models.selection_classifier import versions_dir

    folder = versions_dir() / version
    report = training_report(folder)
    keys = ("threshold", "heldout_auc", "heldout", "heldout_scores")
    if report.get("heldout_pairs") == pairs_fingerprint(pairs):
        return {"id": version, "rescored": False, **{k: report.get(k) for k in keys}}
    logger.info("measuring classifier version %s on %d held-out pairs", version, len(pairs))
    classifier = load_classifier(str(folder), max_length)
    figures = heldout_figures(classifier, pairs, classifier.threshold)
    return {"id": version, "rescored": True, **{k: figures[k] for k in keys}}


def fit_classifier(epoch_pairs: Sequence[Sequence[PairExample]], config: ClassifierConfig,
                   progress: Progress | None = None, checkpoint: Path | None = None):
    """(tokenizer, model): the segment-cosine pair classifier (engine/models/pair_model.py)
    from `config.base_model`, seeded. First its three-weight head is fitted on the frozen
    encoder's cosines (logistic regression over the first epoch's pairs), so fine-tuning
    starts from a calibrated bi-encoder view; then `config.epochs` passes fine-tune the
    encoder (word embeddings frozen, as for the pre-ranker) and the head with binary
    cross-entropy, epoch e on `epoch_pairs[e]`. With `checkpoint` (a folder), each epoch's
    end is saved there and a training found there resumes after its last epoch."""
    with seeded(config.seed):  # before the model: the new head's weights are random
        return _fit_classifier(epoch_pairs, config, progress, checkpoint)


def _fit_classifier(epoch_pairs: Sequence[Sequence[PairExample]], config: ClassifierConfig,
                    progress: Progress | None, checkpoint: Path | None = None):
    import torch
    from transformers import get_linear_schedule_with_warmup

    tokenizer, model = new_pair_model(config.base_model)
    # progress in units of work, one a pair trained on: a frozen forward pass costs about
    # a quarter of a training step's (forward and backward), so the pace measured in the
    # feature pass holds for the epochs and the time left is told right from the start
    first = len(epoch_pairs[0])
    per_epoch = math.ceil(first / config.batch_size)
    features = math.ceil(first / FORWARD_COST)
    units = features + sum(len(epoch_pairs[e % len(epoch_pairs)])
                           for e in range(config.epochs))

    def report(done: int) -> None:
        if progress:
            progress(min(done, units), units)

    state = resumed(checkpoint)
    if state is None:
        _fit_head(model, tokenizer, epoch_pairs[0], config.max_length,
                  lambda batches: report(min(first, batches * FEATURE_BATCH) // FORWARD_COST))
    model.bert.get_input_embeddings().weight.requires_grad_(False)
    groups = [{"params": [p for p in model.bert.parameters() if p.requires_grad],
               "lr": config.learning_rate},
              {"params": list(model.head.parameters()), "lr": config.head_learning_rate}]
    params = [p for group in groups for p in group["params"]]
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    tune = max(1, config.epochs * per_epoch)
    schedule = get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * tune), tune)
    rng = random.Random(config.seed)
    done, begin = features, 0
    if state is not None:  # after the last epoch a stopped training finished
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        done, begin = state["done"], state["epoch"]
        logger.info("resuming the selection classifier's training after epoch %d/%d",
                    begin, config.epochs)
        report(done)
    for epoch in range(begin, config.epochs):
        model.train()
        order = list(epoch_pairs[epoch % len(epoch_pairs)])
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            inputs = _batch_inputs(tokenizer, batch, config.max_length)
            loss = model(**inputs, labels=torch.tensor([x.label for x in batch])).loss
            total += optimizer_step(loss, params, optimizer, schedule)
            done += len(batch)
            report(done)
        logger.info("epoch %d/%d: mean loss %.4f", epoch + 1, config.epochs,
                    total / max(1, math.ceil(len(order) / config.batch_size)))
        save_checkpoint(checkpoint, {
            "epoch": epoch + 1, "done": done, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
            "rng": rng.getstate(), "torch_rng": torch.get_rng_state()})
    model.eval()
    return tokenizer, model


def _finite(parameters) -> bool:
    import torch

    return all(bool(torch.isfinite(p).all()) for p in parameters)


def _check_finite(model) -> None:
    """Refuse to save a model whose training diverged (its probabilities would be NaN)."""
    if not _finite(model.parameters()):
        raise TrainingError("Training diverged: the classifier's weights are not finite. "
                            "Nothing was saved; the active version is unchanged. Retry with "
                            "a lower learning_rate.")


def _fit_head(model, tokenizer, pairs: Sequence[PairExample], max_length: int,
              progress: Callable[[int], None]) -> None:
    """The head as a logistic regression over the frozen encoder's segment cosines."""
    import torch

    from engine.models.pair_model import segment_cosines

    model.eval()
    features = []
    with torch.inference_mode():
        for done, start in enumerate(range(0, len(pairs), FEATURE_BATCH), start=1):
            inputs = _batch_inputs(tokenizer, pairs[start:start + FEATURE_BATCH], max_length)
            hidden = model.bert(**inputs).last_hidden_state
            features.append(segment_cosines(hidden, inputs["input_ids"],
                                            inputs["attention_mask"], tokenizer.sep_token_id))
            progress(done)
    x = torch.cat(features)
    y = torch.tensor([float(p.label) for p in pairs])
    # a line search: plain LBFGS steps (lr 1) diverged to NaN on one retrain's pairs
    optimizer = torch.optim.LBFGS(model.head.parameters(), max_iter=200,
                                  line_search_fn="strong_wolfe")

    def head_loss():
        return torch.nn.functional.binary_cross_entropy_with_logits(
            model.head(x).squeeze(-1), y)

    def step():
        optimizer.zero_grad()
        value = head_loss()
        value.backward()
        return value

    optimizer.step(step)
    if not _finite(model.head.parameters()):
        logger.warning("the head's fit did not converge; starting from the cosines instead")
        model.start_from_cosines()
    with torch.no_grad():
        final = head_loss().item()
    logger.info("head fitted on %d pairs: weights %s, bias %.2f, loss %.4f", len(pairs),
                [round(w, 2) for w in model.head.weight[0].tolist()],
                model.head.bias.item(), final)


def _batch_inputs(tokenizer, batch: Sequence[PairExample], max_length: int):
    """One padded batch; pairs of different questions are encoded question by question."""
    import torch

    from engine.models.selection_classifier import encode_pairs

    parts = [encode_pairs(tokenizer, x.query, [(x.first, x.second)], max_length)
             for x in batch]
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


def summary(folder: Path) -> list[str]:
    """What `python -m engine train classifier` says of a trained version (which it makes
    the active one): a line naming it and its folder, then its held-out figures."""
    report = training_report(folder)
    lines = [f"classifier  {folder} (now the active version)",
             f"pairs       {report['train_pairs']:,} from {report['train_questions']} training "
             f"questions; {report['heldout']['pairs']:,} from {report['heldout_questions']} "
             "held out"]
    for name, key in (("held out", "heldout"), ("at 0.5", "heldout_at_0.5")):
        m = report[key]
        lines.append(f"{name:11} accuracy {m['accuracy']:.3f}  precision "
                     f"{m['precision']:.3f}  recall {m['recall']:.3f}  F1 {m['f1']:.3f}")
    lines.append(f"threshold   {report['threshold']:.3f} (best accuracy on the held-out pairs)")
    if report.get("heldout_auc") is not None:
        lines.append(f"AUC         {report['heldout_auc']:.3f} (held out: P(a positive pair "
                     "scores above a negative one))")
    return lines
