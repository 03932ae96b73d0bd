"""Training FunnelRAG's pre-ranker: a cross-encoder fine-tuned from the packaged MiniLM.

No cross-encoder ships offline, so we train one. Data:
- supervised pairs from the training QA files only (`TRAIN_FILES`, never dev500): each
  question against its own paragraphs, supporting paragraphs positive, the others negative
  (they are the datasets' distractors, i.e. hard negatives already);
- optionally, self-supervised inverse-cloze (ICT) pairs from the pooled corpus: one sentence
  as query, the rest of its paragraph as positive, a BM25-retrieved other document as
  negative; every document that dev500 ships is left out, so nothing leaks into evaluation.

20% of the training questions (seeded) are held out. The variants (supervised only,
supervised + ICT) are compared by gold-document recall@4 of re-ranking each held-out
question's own paragraphs; the better one is kept (a tie keeps the simpler). The result is
a cache entry keyed by the config, the data files' sha256s and `PRERANKER_VERSION`.

Shortcuts taken on purpose, to stay within ~15 minutes on 2 CPU cores:
- a plain torch loop (AdamW, linear warm-up and decay) rather than `CrossEncoderTrainer`,
  which needs the `datasets` package and hides the data order. The loss is listwise by
  default: each positive against its own question's negatives (softmax cross-entropy);
  "bce" (pointwise) is the alternative;
- at most `max_negatives` negatives per question (seeded sample), one negative per ICT query;
- word embeddings stay frozen (the rest of the network and the new head are trained);
- the kept model is the one trained on 80% of the questions (no refit on all of them).

Measured with the defaults (one epoch, ~50 steps per variant; 591 s wall on the shared 2-core
machine, `--threads 1`): validation recall@4 supervised 0.335, supervised + ICT 0.398 (kept),
MiniLM bi-encoder 0.752. Two further designs (bench/preranker_variants.py) did not beat the
bi-encoder either: a joint-encoding cosine scorer starts at 0.627 and reaches 0.638 after two
epochs (320 steps, 14 min); a cross-encoder correction on top of the bi-encoder score stays at
0.752 (the correction never changes the order). With 160 training questions there is too
little supervision to beat a bi-encoder trained on a billion pairs, so the paradigms
default to bi-encoder re-ranking and this model stays available as `"trained"`.

FunnelRAG's local-to-global distillation (its Sec. 3.2) lives in engine/train/distill.py as
pure functions (`document_scores_from_passages`, `l2g_pairs`, `bpr_loss`)
for when reader scores exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cache import load_or_build, write_json_atomic
from engine.metrics import gold_document_recall
from engine.models.cross_encoder import (
    REPORT,
    TrainConfig,
    cache_key,
    score_pairs,
    training_report,
)
from engine.models.kinds import PRERANKER
from engine.train.loop import fit_cross_encoder
from engine.train.preranker_pairs import (
    Pair,
    QuestionGroup,
    inverse_cloze_pairs,
    load_question_groups,
    split_questions,
    supervised_pairs,
)

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

logger = logging.getLogger(__name__)

VALIDATION_K = 4


def validation_recall(model: CrossEncoder, groups: Sequence[QuestionGroup],
                      k: int = VALIDATION_K, batch_size: int = 32) -> float:
    """Mean gold-document recall@k of re-ranking each question's own paragraphs."""
    pairs = [(g.query, text) for g in groups for _, text, _ in g.paragraphs]
    scores = iter(score_pairs(model, pairs, batch_size))
    return _mean_recall(groups, [[next(scores) for _ in g.paragraphs] for g in groups], k)


def bi_encoder_validation_recall(groups: Sequence[QuestionGroup], model: str = "minilm",
                                 k: int = VALIDATION_K) -> float:
    """The same measure for the bi-encoder's cosine order (the baseline to beat)."""
    from engine.models.loading import load_bi_encoder

    encoder = load_bi_encoder(model)
    queries = encoder.encode([g.query for g in groups], normalize_embeddings=True)
    texts = [text for g in groups for _, text, _ in g.paragraphs]
    vectors = iter(encoder.encode(texts, batch_size=32, normalize_embeddings=True))
    scores = [[float(q @ next(vectors)) for _ in g.paragraphs] for g, q in zip(groups, queries,
                                                                               strict=True)]
    return _mean_recall(groups, scores, k)


def _mean_recall(groups: Sequence[QuestionGroup], scores: list[list[float]], k: int) -> float:
    recalls = []
    for group, row in zip(groups, scores, strict=True):
        order = sorted(range(len(row)), key=lambda i: -row[i])
        ranked = [[group.paragraphs[i][0]] for i in order]
        recalls.append(gold_document_recall(ranked, group.gold_titles, k))
    return round(sum(recalls) / max(1, len(recalls)), 4)


# --- the cached pre-ranker ----------------------------------------------------------------


def train_preranker(config: TrainConfig | None = None) -> Path:
    """The cached trained pre-ranker's folder, training it first if it is missing.

    Returns:
        A folder loadable with `CrossEncoder(folder)`, holding `training_report.json`.

    Raises:
        DataFormatError: if a training file is missing or unreadable.
    """
    config = config or TrainConfig()
    return load_or_build(PRERANKER, cache_key(config),
                         lambda folder: _build(folder, config), lambda folder: folder)


def trained_preranker_path(config: TrainConfig | None = None) -> Path:
    """Same as `train_preranker`: the cached folder, trained only if missing."""
    return train_preranker(config)


def _build(folder: Path, config: TrainConfig) -> None:
    started = time.perf_counter()
    train, validation = split_questions(load_question_groups(), config.validation_fraction,
                                        config.seed)
    pairs = supervised_pairs(train, config.max_negatives, config.seed)
    variants: dict[str, list[Pair]] = {"supervised": pairs}
    if config.use_ict:
        from engine.data.corpus import load_corpus

        ict = inverse_cloze_pairs(load_corpus("pooled"), config.ict_pairs, config.seed)
        variants["supervised+ict"] = pairs + ict
    report: dict[str, Any] = {"config": asdict(config), "train_questions": len(train),
                              "validation_questions": len(validation), "variants": {}}
    best: tuple[float, str, CrossEncoder] | None = None
    for name, variant_pairs in variants.items():
        t0 = time.perf_counter()
        logger.info("training %s on %d pairs", name, len(variant_pairs))
        model = fit_cross_encoder(variant_pairs, config)
        recall = validation_recall(model, validation)
        report["variants"][name] = {"pairs": len(variant_pairs), f"recall@{VALIDATION_K}": recall,
                                    "seconds": round(time.perf_counter() - t0, 1)}
        logger.info("%s: validation gold-document recall@%d %.4f", name, VALIDATION_K, recall)
        if best is None or recall > best[0]:  # strict: a tie keeps the simpler variant
            best = (recall, name, model)
    report["bi_encoder_recall@4"] = bi_encoder_validation_recall(validation)
    report["kept"] = best[1]
    report["seconds"] = round(time.perf_counter() - started, 1)
    best[2].save(str(folder))
    write_json_atomic(folder / REPORT, report)
    logger.info("kept %s; trained in %.0f s", best[1], report["seconds"])


def summary(folder: Path) -> list[str]:
    """What `python -m engine train preranker` says of a trained pre-ranker: a line naming
    it and its folder, then its held-out figures against the bi-encoder's."""
    report = training_report(folder)
    lines = [f"pre-ranker  {folder}",
             f"questions   {report['train_questions']} train, "
             f"{report['validation_questions']} held out (validation)",
             f"validation  gold-document recall@{VALIDATION_K}, re-ranking each held-out "
             "question's paragraphs:"]
    for name, variant in report["variants"].items():
        mark = "  <- kept" if name == report["kept"] else ""
        lines.append(f"  {name:16} {variant[f'recall@{VALIDATION_K}']:.3f}  "
                     f"({variant['pairs']:,} pairs, {variant['seconds']:.0f} s){mark}")
    lines.append(f"  {'bi-encoder':16} {report[f'bi_encoder_recall@{VALIDATION_K}']:.3f}  "
                 "(MiniLM cosine, baseline)")
    return lines
