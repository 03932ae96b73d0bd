"""FunnelRAG pre-ranking on the pooled corpus: which ranker orders the candidate documents best?

The pre-ranking stage's input is every document inside the top-K BM25 clusters (LongRAG
grouping, S = 2048 tokens). For HotpotQA dev500 questions those candidates are ranked by
  bm25           the document-level BM25 score (bm25s, same analyser as the clusters),
  bi-encoder     cosine of packaged MiniLM embeddings ("title\\ntext"); document vectors are
                 computed once up front, as a dense index would hold them, so the per-question
                 time is the query encoding plus the dot products,
  cross-encoder  the trained pre-ranker (`python -m engine train preranker`), every pair
                 scored at query time,
and the table gives gold-document recall@4 and @8 (share of the supporting documents in the
top 4 / 8), both-gold@8 and seconds per question. "ceiling" is the recall of the whole
candidate pool: no ranker can do better.

    python -m bench.preranker_recall [--limit N] [-K 10] [--rankers bm25 bi-encoder ...]
                                     [--max-length 256] [--out preranker_recall]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.documents import Candidate
from engine.index.bm25 import bm25_index
from engine.metrics import all_gold_at, gold_document_recall
from engine.paths import shared_data_dir
from engine.units.build import UnitConfig
from engine.units.lazy import document_unit

RANKERS = ("bm25", "bi-encoder", "cross-encoder")
KS = (4, 8)


def candidate_pools(corpus, questions, k_clusters: int) -> list[list[str]]:
    """Per question, the ids of the documents inside its top-K BM25 clusters, in order."""
    index = bm25_index(corpus, UnitConfig("clusters", cluster_algorithm="longrag",
                                          cluster_tokens=2048))
    return [list(dict.fromkeys(d for c in index.search(q.text, k_clusters)
                               for d in c.unit.doc_ids)) for q in questions]


def bm25_ranker(corpus):
    index = bm25_index(corpus, UnitConfig("documents"))

    def rank(query: str, doc_ids: list[str]) -> list[float]:
        scores = index.scores(query)
        return [float(scores[corpus.index_of[d]]) for d in doc_ids]

    return rank, {}


def bi_encoder_ranker(corpus, pools):
    from engine.models.loading import load_bi_encoder

    model = load_bi_encoder("minilm")
    ids = sorted({d for pool in pools for d in pool})
    started = time.perf_counter()
    texts = [f"{corpus.by_id[d].title}\n{corpus.by_id[d].text}" for d in ids]
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True,
                           show_progress_bar=True)
    row = {d: i for i, d in enumerate(ids)}
    setup = {"documents_encoded": len(ids),
             "encode_seconds": round(time.perf_counter() - started, 1)}

    def rank(query: str, doc_ids: list[str]) -> list[float]:
        q = model.encode([query], normalize_embeddings=True)[0]
        return [float(vectors[row[d]] @ q) for d in doc_ids]

    return rank, setup


def cross_encoder_ranker(corpus, max_length: int, batch_size: int):
    from engine.models.kinds import PRERANKER
    from engine.models.trained import model_location
    from engine.service.store import process_store
    from engine.stages.rerank import CrossEncoderReranker

    stage = CrossEncoderReranker(process_store().cross_encoder("trained", max_length),
                                 "trained", batch_size=batch_size)
    setup = {"model": model_location("trained", PRERANKER), "max_length": max_length}

    def rank(query: str, doc_ids: list[str]) -> list[float]:
        candidates = [Candidate(unit=document_unit(corpus.by_id[d]), score=0.0, rank=i)
                      for i, d in enumerate(doc_ids, start=1)]
        return stage.scores(query, candidates)

    return rank, setup


def evaluate(rank, questions, pools) -> dict:
    from tqdm.auto import tqdm

    recall = {k: [] for k in KS}
    both, seconds = [], []
    for q, pool in tqdm(list(zip(questions, pools, strict=True)), desc="questions"):
        started = time.perf_counter()
        scores = rank(q.text, pool)
        order = sorted(range(len(pool)), key=lambda i: -scores[i])
        seconds.append(time.perf_counter() - started)
        ranked = [[pool[i]] for i in order]
        for k in KS:
            recall[k].append(gold_document_recall(ranked, q.supporting_titles, k))
        both.append(all_gold_at(ranked, q.supporting_titles, 8))
    mean = statistics.fmean
    return {**{f"recall@{k}": round(mean(v), 3) for k, v in recall.items()},
            "both@8": round(mean(both), 3),
            "seconds_per_question": round(mean(seconds), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=500, help="first N dev500 questions")
    parser.add_argument("-K", type=int, default=10, dest="k_clusters", help="BM25 clusters")
    parser.add_argument("--rankers", nargs="+", choices=RANKERS, default=list(RANKERS))
    parser.add_argument("--max-length", type=int, default=256, help="cross-encoder tokens")
    parser.add_argument("--batch-size", type=int, default=32, help="cross-encoder batch")
    parser.add_argument("--out", default="preranker_recall", help="bench/results/OUT.json")
    args = opened(parser, threads=None)
    dataset = read_dataset(shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl")
    questions = dataset.questions[: args.limit]
    corpus = load_corpus("pooled")
    pools = candidate_pools(corpus, questions, args.k_clusters)
    sizes = [len(p) for p in pools]
    ceiling = statistics.fmean(
        gold_document_recall([[d] for d in p], q.supporting_titles, max(1, len(p)))
        for q, p in zip(questions, pools, strict=True))
    report = {"questions": len(questions), "clusters_K": args.k_clusters,
              "clusters": "longrag S=2048", "candidates_mean": round(statistics.fmean(sizes), 1),
              "candidates_max": max(sizes), "ceiling_recall": round(ceiling, 3), "rankers": {}}
    makers = {"bm25": lambda: bm25_ranker(corpus),
              "bi-encoder": lambda: bi_encoder_ranker(corpus, pools),
              "cross-encoder": lambda: cross_encoder_ranker(corpus, args.max_length,
                                                            args.batch_size)}
    for name in args.rankers:
        rank, setup = makers[name]()
        report["rankers"][name] = {**evaluate(rank, questions, pools), **setup}
        save(args.out, report)  # after each ranker: a partial run still counts
    print(f"pooled corpus: {len(corpus):,} documents; HotpotQA dev500: {len(questions)} "
          f"questions; candidates = documents of the top {args.k_clusters} BM25 clusters "
          f"(longrag, S=2048): {report['candidates_mean']} per question on average (max "
          f"{report['candidates_max']}), ceiling recall {report['ceiling_recall']}\n")
    rows = [[name, r["recall@4"], r["recall@8"], r["both@8"], r["seconds_per_question"]]
            for name, r in report["rankers"].items()]
    rows.append(["(ceiling: all candidates)", report["ceiling_recall"],
                 report["ceiling_recall"], "", ""])
    print(markdown_table(["ranker", "recall@4", "recall@8", "both@8", "s/question"], rows))


if __name__ == "__main__":
    main()
