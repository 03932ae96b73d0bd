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

FunnelRAG's local-to-global distillation (its Sec. 3.2) lives in engine/distill.py as pure functions
(`document_scores_from_passages`, `l2g_pairs`, `bpr_loss`) for when reader scores exist.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cache import entry_dir, load_or_build, verify, write_json_atomic
from engine.errors import ConfigError, DataFormatError, check_choice
from engine.loaders import read_dataset
from engine.loaders.jsonio import load_json
from engine.metrics import gold_document_recall
from engine.paths import shared_data_dir
from engine.text import split_sentences

if TYPE_CHECKING:
    import torch
    from sentence_transformers import CrossEncoder

    from engine.types import Corpus, Question

logger = logging.getLogger(__name__)

PRERANKER_VERSION = 1
TRAIN_FILES = ("hotpotqa/train100.json", "musique/train100.json")
DEV_SOURCE = "hotpotqa/dev500_contexts.jsonl"  # evaluation data: never trained on
REPORT = "training_report.json"
VALIDATION_K = 4


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the trained pre-ranker (its cache key, with the data)."""

    seed: int = 13
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 1e-4
    max_length: int = 256
    max_negatives: int = 2  # per training question (seeded sample of its distractors)
    use_ict: bool = True  # also try supervised + inverse cloze, keep the better variant
    ict_pairs: int = 100  # ICT queries; each gives one positive and one negative pair
    validation_fraction: float = 0.2
    loss: str = "listwise"  # or "bce" (pointwise binary cross-entropy)
    base_model: str = "minilm"

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, ("listwise", "bce"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown TrainConfig field(s) {unknown}. Known: {sorted(known)}.")
        return cls(**data)


@dataclass(frozen=True)
class Pair:
    """One training example: `text` is "title\\ntext", label 1.0 (relevant) or 0.0."""

    query: str
    text: str
    label: float


@dataclass(frozen=True)
class QuestionGroup:
    """A training question with its own paragraphs, as (title, "title\\ntext", positive)."""

    id: str
    query: str
    paragraphs: tuple[tuple[str, str, bool], ...]
    gold_titles: tuple[str, ...]


# --- data ---------------------------------------------------------------------------------


def load_question_groups(data_root: Path | None = None) -> list[QuestionGroup]:
    """Every question of `TRAIN_FILES` with its own labelled paragraphs, in file order."""
    root = data_root or shared_data_dir()
    groups: list[QuestionGroup] = []
    for name in TRAIN_FILES:
        path = root / name
        questions = {q.id: q for q in read_dataset(path).questions}
        for item in load_json(path):
            qid = str(item.get("_id", item.get("id")))
            question = questions[qid]
            groups.append(QuestionGroup(qid, question.text, _raw_paragraphs(path, item, question),
                                        question.supporting_titles))
    return groups


def _raw_paragraphs(path: Path, item: dict,
                    question: Question) -> tuple[tuple[str, str, bool], ...]:
    if "context" in item:  # HotpotQA: supporting = the title is in supporting_facts
        gold = set(question.supporting_titles)
        raw = [(t.strip(), "".join(s).strip(), t.strip() in gold) for t, s in item["context"]]
    elif "paragraphs" in item:  # MuSiQue: its own is_supporting flag
        raw = [(p["title"].strip(), p["paragraph_text"].strip(), bool(p.get("is_supporting")))
               for p in item["paragraphs"]]
    else:
        raise DataFormatError(path, "expected 'context' or 'paragraphs' in each item")
    return tuple((title, f"{title}\n{text}", label) for title, text, label in raw if text)


def split_questions(groups: Sequence[QuestionGroup], fraction: float,
                    seed: int) -> tuple[list[QuestionGroup], list[QuestionGroup]]:
    """(train, validation): a seeded `fraction` of the questions held out, orders kept."""
    held = set(random.Random(seed).sample(range(len(groups)), round(len(groups) * fraction)))
    return ([g for i, g in enumerate(groups) if i not in held],
            [g for i, g in enumerate(groups) if i in held])


def supervised_pairs(groups: Sequence[QuestionGroup], max_negatives: int,
                     seed: int) -> list[Pair]:
    """All positives of each question plus a seeded sample of `max_negatives` negatives."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for group in groups:
        negatives = [text for _, text, positive in group.paragraphs if not positive]
        pairs += [Pair(group.query, text, 1.0) for _, text, positive in group.paragraphs
                  if positive]
        pairs += [Pair(group.query, text, 0.0)
                  for text in rng.sample(negatives, min(max_negatives, len(negatives)))]
    return pairs


def inverse_cloze_pairs(corpus: Corpus, n: int, seed: int,
                        exclude_source: str = DEV_SOURCE) -> list[Pair]:
    """`n` ICT queries: a sentence vs. the rest of its document (positive) and the best BM25
    hit among the other documents (negative). Documents from `exclude_source` are never used.
    """
    from engine.bm25 import bm25_index
    from engine.units import UnitConfig

    allowed = [d for d in corpus.documents if exclude_source not in d.sources]
    eligible = [d for d in allowed if len(split_sentences(d.text)) >= 3]
    rng = random.Random(seed)
    chosen = rng.sample(eligible, min(n, len(eligible)))
    index = bm25_index(corpus, UnitConfig("documents"))
    banned = {d.id for d in corpus.documents if exclude_source in d.sources}
    pairs: list[Pair] = []
    for doc in chosen:
        spans = split_sentences(doc.text)
        # Not the lead sentence: it names the title, a shortcut rather than a signal.
        start, end = spans[rng.randrange(1, len(spans))]
        query = doc.text[start:end]
        rest = " ".join((doc.text[:start].strip() + " " + doc.text[end:].strip()).split())
        pairs.append(Pair(query, f"{doc.title}\n{rest}", 1.0))
        hit = next((c.unit for c in index.search(query, 10)
                    if c.unit.id != doc.id and c.unit.id not in banned), None)
        if hit is not None:
            pairs.append(Pair(query, f"{hit.title}\n{hit.text}", 0.0))
    return pairs


# --- model fitting and scoring ------------------------------------------------------------


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def new_cross_encoder(base_model: str, max_length: int) -> CrossEncoder:
    """A one-logit cross-encoder on the CPU from `base_model` (alias, path or hub id)."""
    from sentence_transformers import CrossEncoder

    from engine.models import _from_pretrained, resolve

    return _from_pretrained(CrossEncoder, resolve(base_model), num_labels=1,
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


def fit_cross_encoder(pairs: Sequence[Pair], config: TrainConfig,
                      progress: bool = True) -> CrossEncoder:
    """A new cross-encoder from `config.base_model`, trained on `pairs` (seeded)."""
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    seed_everything(config.seed)  # before the model: the new head's weights are random
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
    loss_fn = listwise_loss if config.loss == "listwise" else _bce_loss
    model.train()
    for epoch, epoch_batches in enumerate(plan, start=1):
        total = 0.0
        for batch in tqdm(epoch_batches, desc=f"epoch {epoch}/{config.epochs}",
                          disable=not progress):
            logits = _logits(model, [(p.query, p.text) for p in batch])
            loss = loss_fn(logits, batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            total += loss.item()
        logger.info("epoch %d/%d: mean loss %.4f over %d batches", epoch, config.epochs,
                    total / max(1, len(epoch_batches)), len(epoch_batches))
    model.eval()
    return model


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


def listwise_loss(logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
    """Per query, each positive against that query's negatives: mean over positives of
    -log softmax(positive | {positive} + negatives). Falls back to binary cross-entropy
    when no query in the batch has both a positive and a negative."""
    import torch

    terms = []
    by_query: dict[str, list[int]] = {}
    for i, pair in enumerate(batch):
        by_query.setdefault(pair.query, []).append(i)
    for rows in by_query.values():
        pos = [i for i in rows if batch[i].label > 0.5]
        neg = logits[[i for i in rows if batch[i].label <= 0.5]]
        if pos and len(neg):
            for i in pos:
                terms.append(torch.logsumexp(torch.cat([logits[i:i + 1], neg]), 0) - logits[i])
    return torch.stack(terms).mean() if terms else _bce_loss(logits, batch)


def _bce_loss(logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
    import torch

    labels = torch.tensor([float(p.label) for p in batch])
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)


def _logits(model: CrossEncoder, pairs: list[tuple[str, str]]) -> torch.Tensor:
    features = model.preprocess(pairs)
    return model(features)["scores"].view(-1)


def score_pairs(model: CrossEncoder, pairs: Sequence[tuple[str, str]],
                batch_size: int = 32) -> list[float]:
    """Raw logits (no sigmoid: no ties from saturation) of `model` for (query, text) pairs."""
    import torch

    if not pairs:
        return []
    scores = model.predict(list(pairs), batch_size=batch_size, show_progress_bar=False,
                           activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    return [float(s) for s in scores]


def validation_recall(model: CrossEncoder, groups: Sequence[QuestionGroup],
                      k: int = VALIDATION_K, batch_size: int = 32) -> float:
    """Mean gold-document recall@k of re-ranking each question's own paragraphs."""
    pairs = [(g.query, text) for g in groups for _, text, _ in g.paragraphs]
    scores = iter(score_pairs(model, pairs, batch_size))
    return _mean_recall(groups, [[next(scores) for _ in g.paragraphs] for g in groups], k)


def bi_encoder_validation_recall(groups: Sequence[QuestionGroup], model: str = "minilm",
                                 k: int = VALIDATION_K) -> float:
    """The same measure for the bi-encoder's cosine order (the baseline to beat)."""
    from engine.models import load_bi_encoder

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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_key(config: TrainConfig) -> dict:
    """Config + sha256 of every data file the training reads + format version."""
    from engine.corpus import POOLED_FILES
    from engine.resources import wiki_summaries_path

    root = shared_data_dir()
    names = set(TRAIN_FILES) | (set(POOLED_FILES) if config.use_ict else set())
    data = {name: _sha256(root / name) for name in sorted(names) if (root / name).exists()}
    missing = [name for name in TRAIN_FILES if name not in data]
    if missing:
        raise DataFormatError(root / missing[0], "training file not found",
                              fix="set FUNNEL_SHARED_DATA to the shared data folder")
    if config.use_ict:
        data["wiki"] = _sha256(wiki_summaries_path())
    return {"config": asdict(config), "data": data, "version": PRERANKER_VERSION}


def train_preranker(config: TrainConfig | None = None) -> Path:
    """The cached trained pre-ranker's folder, training it first if it is missing.

    Returns:
        A folder loadable with `CrossEncoder(folder)`, holding `training_report.json`.

    Raises:
        DataFormatError: if a training file is missing or unreadable.
    """
    config = config or TrainConfig()
    return load_or_build("preranker", cache_key(config),
                         lambda folder: _build(folder, config), lambda folder: folder)


def trained_preranker_path(config: TrainConfig | None = None) -> Path:
    """Same as `train_preranker`: the cached folder, trained only if missing."""
    return train_preranker(config)


def cached_preranker_path(config: TrainConfig | None = None) -> Path | None:
    """The verified cached pre-ranker for `config`, or None (never trains)."""
    try:
        key = cache_key(config or TrainConfig())
    except (DataFormatError, OSError):  # without its training data it cannot be identified
        return None
    folder = entry_dir("preranker", key)
    try:
        verify(folder, key)
    except Exception:  # noqa: BLE001 - missing or damaged both mean: not available
        return None
    return folder


def training_report(folder: Path) -> dict:
    """The validation figures and timings saved beside a trained pre-ranker."""
    return json.loads((folder / REPORT).read_text(encoding="utf-8"))


def _build(folder: Path, config: TrainConfig) -> None:
    started = time.perf_counter()
    train, validation = split_questions(load_question_groups(), config.validation_fraction,
                                        config.seed)
    pairs = supervised_pairs(train, config.max_negatives, config.seed)
    variants: dict[str, list[Pair]] = {"supervised": pairs}
    if config.use_ict:
        from engine.corpus import load_corpus

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
