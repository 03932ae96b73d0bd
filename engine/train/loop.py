"""The fit loop for cross-encoders: seeded, a plain torch loop (AdamW, linear warm-up and
decay) rather than `CrossEncoderTrainer`, which needs the `datasets` package and hides the
data order. Word embeddings stay frozen.

Training runs inside the app, beside everything else the process does, so it never seeds
process-wide generators: Python's `random` draws OpenTelemetry's trace and span ids, and
reseeding it made a restart's runs reuse earlier runs' ids (lost or merged in Phoenix).
Data order comes from `random.Random(seed)`; torch's own generator, which a new head's
weights and dropout draw from, is forked for the fit and restored after it (`seeded`)."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from engine.train.losses import bce_loss, listwise_loss
from engine.train.preranker_pairs import Pair

if TYPE_CHECKING:
    import torch
    from sentence_transformers import CrossEncoder

    from engine.models.cross_encoder import TrainConfig

logger = logging.getLogger(__name__)

@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """torch's CPU generator seeded with `seed` inside the block and restored after it, so a
    fit is repeatable and the process's other draws go on as if it never ran. Python's and
    NumPy's global generators are left alone: training draws from its own."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def new_cross_encoder(base_model: str, max_length: int) -> CrossEncoder:
    """A one-logit cross-encoder on the CPU from `base_model` (alias, path or hub id)."""
    from sentence_transformers import CrossEncoder

    from engine.models.locations import resolve
    from engine.models.pretrained import from_pretrained

    return from_pretrained(CrossEncoder, resolve(base_model), num_labels=1,
                            max_length=max_length, device="cpu", local_files_only=True)


def batches(pairs: Sequence[Pair], batch_size: int, seed: int) -> list[list[Pair]]:
    """Seeded shuffle, then length-grouped batches (less padding), in a seeded order."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    window = batch_size * 8
    out: list[list[Pair]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window],
                       key=lambda i: len(pairs[i].query) + len(pairs[i].text))
        out += [[pairs[i] for i in chunk[j:j + batch_size]]
                for j in range(0, len(chunk), batch_size)]
    rng.shuffle(out)
    return out


def query_batches(pairs: Sequence[Pair], batch_size: int, seed: int) -> list[list[Pair]]:
    """Whole query groups (a question's positives and negatives), seeded order, packed
    into batches of about `batch_size` pairs (a large group makes a larger batch)."""
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.query, []).append(pair)
    order = list(groups.values())
    random.Random(seed).shuffle(order)
    out: list[list[Pair]] = [[]]
    for group in order:
        if out[-1] and len(out[-1]) + len(group) > batch_size:
            out.append([])
        out[-1].extend(group)
    return [b for b in out if b]


def fit_cross_encoder(pairs: Sequence[Pair], config: TrainConfig,
                      progress: bool = True) -> CrossEncoder:
    """A new cross-encoder from `config.base_model`, trained on `pairs` (seeded)."""
    with seeded(config.seed):  # before the model: the new head's weights are random
        return _fit_cross_encoder(pairs, config, progress)


def _fit_cross_encoder(pairs: Sequence[Pair], config: TrainConfig,
                       progress: bool) -> CrossEncoder:
    import torch
    from transformers import get_linear_schedule_with_warmup

    from engine.progress import LoggedProgress

    model = new_cross_encoder(config.base_model, config.max_length)
    make = query_batches if config.loss == "listwise" else batches
    plan = [make(pairs, config.batch_size, config.seed + epoch) for epoch in range(config.epochs)]
    steps = sum(len(p) for p in plan)
    # Frozen word embeddings: half the optimizer's work per step, and weight decay does not
    # shrink the rows of the many tokens the small training set never shows.
    model.model.get_input_embeddings().weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * steps), steps)
    loss_fn = listwise_loss if config.loss == "listwise" else bce_loss
    model.train()
    for epoch, epoch_batches in enumerate(plan, start=1):
        total = 0.0
        report = LoggedProgress(logger, f"epoch {epoch}/{config.epochs}", "batches",
                                every=None if progress else float("inf"))
        for done, batch in enumerate(epoch_batches, start=1):
            logits = _logits(model, [(p.query, p.text) for p in batch])
            loss = loss_fn(logits, batch)
            total += optimizer_step(loss, params, optimizer, schedule)
            report(done, len(epoch_batches))
        logger.info("epoch %d/%d: mean loss %.4f over %d batches", epoch, config.epochs,
                    total / max(1, len(epoch_batches)), len(epoch_batches))
    model.eval()
    return model


def optimizer_step(loss: torch.Tensor, params: list, optimizer, schedule) -> float:
    """Backward, clip the gradient norm to 1, step the optimizer and the schedule; the
    loss as a float."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return loss.item()


def _logits(model: CrossEncoder, pairs: list[tuple[str, str]]) -> torch.Tensor:
    features = model.preprocess(pairs)
    return model(features)["scores"].view(-1)
