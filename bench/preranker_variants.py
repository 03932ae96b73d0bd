"""Two more ways to train a pre-ranker from MiniLM, measured on the held-out training questions.

Same data and split as `python -m engine train preranker` (HotpotQA + MuSiQue train100,
seed 13, 40 questions held out; dev500 is never touched). Measure: gold-document recall@4
of re-ranking each held-out question's own paragraphs (the bi-encoder scores 0.752).

  joint     one MiniLM pass over "[CLS] query [SEP] document [SEP]" (full cross-attention),
            score = cosine of the mean of the query's tokens and the mean of the document's
            tokens. Unlike a fresh classification head, it starts from the bi-encoder's
            geometry, so it ranks sensibly before any training.
  residual  score = scale * bi-encoder cosine + a cross-encoder head's logit (a correction
            learnt on top of the bi-encoder's order; the head starts near zero, so the
            starting point is exactly the bi-encoder).

Both train with the listwise loss (each positive against its question's sampled negatives),
AdamW, linear warm-up/decay, word embeddings frozen, one thread.

    python -m bench.preranker_variants joint [--epochs 2 --lr 3e-5 --negatives 8]
    python -m bench.preranker_variants residual [--lr 5e-5 --head-lr 3e-3 --scale 20]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time

from bench.common import save
from engine.models.loading import load_bi_encoder
from engine.models.locations import resolve
from engine.train.fit_preranker import _mean_recall
from engine.train.preranker_pairs import load_question_groups, split_questions


def joint_scorer(path: str):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)

    def score(query: str, texts: list[str], max_length: int):
        enc = tok([query] * len(texts), texts, truncation="only_second", padding=True,
                  max_length=max_length, return_tensors="pt")
        hidden = model(**enc).last_hidden_state
        ids, types, mask = enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]
        plain = (mask == 1) & (ids != tok.cls_token_id) & (ids != tok.sep_token_id)
        q = ((types == 0) & plain).float().unsqueeze(-1)
        d = ((types == 1) & plain).float().unsqueeze(-1)
        qv = (hidden * q).sum(1) / q.sum(1)
        dv = (hidden * d).sum(1) / d.sum(1).clamp(min=1)
        return torch.nn.functional.cosine_similarity(qv, dv) * 20

    return model, score, [], []


def residual_scorer(path: str, groups, scale: float):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    bi = load_bi_encoder("minilm")
    prior = {}
    for g in groups:
        q = bi.encode([g.query], normalize_embeddings=True)[0]
        d = bi.encode([t for _, t, _ in g.paragraphs], normalize_embeddings=True)
        prior[g.query] = torch.tensor(d @ q)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    torch.nn.init.normal_(model.classifier.weight, std=0.02)
    torch.nn.init.zeros_(model.classifier.bias)

    def score(query: str, texts: list[str], max_length: int, rows=None):
        enc = tok([query] * len(texts), texts, truncation="only_second", padding=True,
                  max_length=max_length, return_tensors="pt")
        base = prior[query] if rows is None else prior[query][rows]
        return scale * base + model(**enc).logits.view(-1)

    return model, score, [model.classifier.weight, model.classifier.bias], prior


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=["joint", "residual"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--head-lr", type=float, default=3e-3, help="residual head")
    parser.add_argument("--negatives", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=192)
    parser.add_argument("--scale", type=float, default=20.0, help="residual: bi-encoder weight")
    args = parser.parse_args()
    import torch
    from transformers import get_linear_schedule_with_warmup

    torch.set_num_threads(1)
    torch.manual_seed(13)
    rng = random.Random(13)
    groups = load_question_groups()
    train, validation = split_questions(groups, 0.2, 13)
    if args.variant == "joint":
        model, score, head, _ = joint_scorer(resolve("minilm"))
    else:
        model, score, head, _ = residual_scorer(resolve("minilm"), groups, args.scale)

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            scores = [score(g.query, [t for _, t, _ in g.paragraphs], 256).tolist()
                      for g in validation]
        model.train()
        return _mean_recall(validation, scores, 4)

    report = {"variant": args.variant, "args": vars(args), "recall@4": {"start": evaluate()}}
    model.get_input_embeddings().weight.requires_grad_(False)
    head_ids = {id(p) for p in head}
    body = [p for p in model.parameters() if p.requires_grad and id(p) not in head_ids]
    groups_ = [{"params": body}] + ([{"params": head, "lr": args.head_lr}] if head else [])
    optimizer = torch.optim.AdamW(groups_, lr=args.lr, weight_decay=0.01)
    steps = args.epochs * len(train)
    schedule = get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * steps), steps)
    started = time.perf_counter()
    for epoch in range(args.epochs):
        order, total = list(train), 0.0
        rng.shuffle(order)
        for g in order:
            pos = [i for i, (_, _, p) in enumerate(g.paragraphs) if p]
            neg = [i for i, (_, _, p) in enumerate(g.paragraphs) if not p]
            rows = pos + rng.sample(neg, min(args.negatives, len(neg)))
            texts = [g.paragraphs[i][1] for i in rows]
            s = score(g.query, texts, args.max_length, rows) if head else \
                score(g.query, texts, args.max_length)
            negatives = s[len(pos):]
            loss = torch.stack([torch.logsumexp(torch.cat([s[i:i + 1], negatives]), 0) - s[i]
                                for i in range(len(pos))]).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            total += loss.item()
        report["recall@4"][f"epoch {epoch + 1}"] = evaluate()
        report.setdefault("loss", []).append(round(total / len(train), 3))
    report["train_seconds"] = round(time.perf_counter() - started, 1)
    save(f"preranker_variant_{args.variant}", report)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
