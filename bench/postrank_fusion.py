"""FunnelRAG's post-ranker: the reader's attention fused with the pre-ranker's order.

For each question the funnel (its defaults, pooled corpus) runs its first stage and its
pre-ranker; the N kept documents are chunked as the funnel does, and the FiD reader reads
those passages once. Their first-token attention is scored by several schemes, and every
scheme is fused with the pre-ranker's order at several attention weights w
(engine/stages/postrank.py `fused_scores`: w = 0 is the prior alone, w = 1 pure attention),
with three priors: the pre-ranker's order as the passages arrive ("input"), each passage's
stored dense cosine to the question ("cosine"), and those two fused equally. Each order is
measured by AR@1..6 over span-answer questions (a gold answer in the top k passages) and by
the gold supporting documents among the top H passages.

Training questions choose (`--split train`: HotpotQA + MuSiQue train100); `--split dev`
reports the first `--limit` dev500 questions.

    python -m bench.postrank_fusion [--split train] [--limit N] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.metrics import answer_recall_at, has_span_answer, support_recall
from engine.models.loading import resolve_precision
from engine.paths import shared_data_dir
from engine.readers import attention
from engine.readers.fid import shared_fid_reader
from engine.service.store import make_paradigm, process_store
from engine.stages.expand import chunk_documents
from engine.stages.postrank import fused_scores
from engine.units.chunking import Chunker

FILES = {"train": ("hotpotqa/train100.json", "musique/train100.json"),
         "dev": ("hotpotqa/dev500_contexts.jsonl",)}
SCHEMES = (("mean_tokens", 4), ("eq3", 4), ("eq3", 16), ("max_layers", 4))
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
# the order attention is fused with: the pre-ranker's (documents by rank, passages in
# document order), each passage's own stored dense cosine, or those two fused equally
PRIORS = ("input", "cosine", "input+cosine")
KS = (1, 2, 3, 4, 5, 6)


def questions(split: str, limit: int | None) -> list:
    found = []
    for path in FILES[split]:
        part = read_dataset(shared_data_dir() / path).questions
        found += part[:limit] if limit else part
    return found


def post_ranker_input(funnel, corpus, question: str):
    """The passages the funnel's post-ranker receives, in pre-ranker order."""
    steps = funnel.steps(question)
    next(steps)  # clusters
    pre = next(steps)
    steps.close()
    return chunk_documents(corpus, pre.candidates, Chunker(funnel.config.passage_tokens))


def prior_scores(row: dict, prior: str) -> list[float] | None:
    if prior == "input":
        return None
    if prior == "cosine":
        return row["cosine"]
    return fused_scores(row["cosine"], 0.5)


def cosines(dense, question: str, passages) -> list[float]:
    """Each passage's stored dense vector against the question (later chunking cuts the
    passages exactly as the index's early chunking did, so every passage has a row)."""
    q = dense.encode_queries([question])[0]
    return [float(dense.vectors[dense.row_of[c.unit.id]] @ q) for c in passages]


def measure(rows: list[dict], H: int) -> list[dict]:
    """AR@k and gold-document recall at H for every (prior, scheme, weight) order."""
    table = []
    span = [r for r in rows if r["span"]]
    for prior in PRIORS:
        for scheme, lr in SCHEMES:
            for weight in WEIGHTS:
                if weight == 0 and (scheme, lr) != SCHEMES[0]:
                    continue  # the prior alone: the same for every scheme
                if weight == 1 and prior != PRIORS[0]:
                    continue  # attention alone: the same for every prior
                table.append(_measure_order(rows, span, H, prior, scheme, lr, weight))
    ceiling = statistics.fmean(answer_recall_at(r["texts"], r["answers"], (10**6,))[10**6]
                               for r in span)
    table.append({"prior": "", "order": "ceiling (all input passages)", "w": "",
                  **{f"AR@{k}": round(ceiling, 3) for k in KS}, f"gold docs@{H}": ""})
    return table


def _measure_order(rows, span, H, prior, scheme, lr, weight) -> dict:
    ar = {k: [] for k in KS}
    gold = []
    for r in rows:
        scores = fused_scores(r["scores"][f"{scheme} lr={lr}"], weight, prior_scores(r, prior))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        gold.append(support_recall({r["docs"][i] for i in order[:H]}, r["supporting"]))
        if r["span"]:
            found = answer_recall_at([r["texts"][i] for i in order], r["answers"], KS)
            for k in KS:
                ar[k].append(found[k])
    return {"prior": prior if weight < 1 else "", "order": "prior alone" if weight == 0
            else f"{scheme} lr={lr}", "w": weight,
            **{f"AR@{k}": round(statistics.fmean(ar[k]), 3) for k in KS},
            f"gold docs@{H}": round(statistics.fmean(gold), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=tuple(FILES), default="train")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per file")
    args = opened(parser)
    from tqdm.auto import tqdm

    corpus = load_corpus("pooled")
    funnel = make_paradigm("funnel", corpus, {})
    config = funnel.config.reader
    reader = shared_fid_reader(config.model, config.precision)
    dense = process_store().dense(corpus, funnel.config.indexed_passages(), "minilm")
    rows, seconds = [], []
    for q in tqdm(questions(args.split, args.limit), desc="questions"):
        passages = post_ranker_input(funnel, corpus, q.text)
        if not passages:
            continue
        start = time.perf_counter()
        out = reader.read(q.text, [(c.unit.title, c.unit.text) for c in passages], config,
                          answer=False)
        seconds.append(time.perf_counter() - start)
        rows.append({"question": q.text, "span": has_span_answer(q), "answers": q.answers,
                     "supporting": q.supporting_titles,
                     "docs": [c.unit.doc_ids[0] for c in passages],
                     "texts": [c.unit.text for c in passages],
                     "cosine": cosines(dense, q.text, passages),
                     "scores": {f"{s} lr={lr}": [attention.passage_score(a, s, lr)
                                                 for a in out.token_attention]
                                for s, lr in SCHEMES}})
    H = funnel.config.H
    table = measure(rows, H)
    span = sum(r["span"] for r in rows)
    print(f"{len(rows)} {args.split} questions ({span} with span answers), "
          f"{statistics.fmean(len(r['texts']) for r in rows):.1f} passages each, reader "
          f"{statistics.fmean(seconds):.2f} s per question "
          f"({resolve_precision(config.precision)} weights)\n")
    print(markdown_table(list(table[0]), [list(r.values()) for r in table]))
    save(f"postrank_fusion_{args.split}", {"table": table, "rows": rows, "seconds": seconds})


if __name__ == "__main__":
    main()
