"""FunnelRAG's first stage: which way of scoring clusters finds the clusters holding the gold.

The funnel's clusters (its default clustering of the pooled corpus) are ranked for each
question by:

  bm25 k1/b     BM25 over each cluster's whole text (FunnelRAG's first stage), at several
                k1 (term-frequency saturation) and b (length normalisation) values
  members ...   each document scored first, a cluster scoring as its best member (max) or
                its best two (top2); documents scored by BM25 over documents, by the dense
                passage index's stored vectors (a document as its best passage), or by a
                hybrid of the two with the dense weight w

Printed per option: cluster recall at K (every gold supporting document inside the top K
clusters, "both", and at least one, "any"), the gold answer inside their text (AR), the
mean number of documents those K clusters hand the pre-ranker, and milliseconds per
question. Questions: the training files (HotpotQA and MuSiQue train100) by default, where
the default is chosen; `--dataset hotpotqa/dev500_contexts.jsonl --limit 200` reports
dev500.

    python -m bench.first_stage [--dataset F ...] [--limit N] [--K 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.index.document_scores import DocumentScorer, group_max, group_top2
from engine.metrics import has_span_answer, normalize_answer
from engine.paradigms.funnel import FunnelConfig
from engine.paths import shared_data_dir
from engine.service.store import process_store
from engine.units.build import UnitConfig, build_units, index_text
from engine.units.chunking import Chunker
from engine.units.cluster import clustering

TRAIN_FILES = ("hotpotqa/train100.json", "musique/train100.json")
BM25_GRID = ((1.5, 0.75), (1.2, 0.75), (1.5, 0.3), (1.5, 0.5), (1.5, 0.9), (3.0, 0.75),
             (3.0, 0.9))
HYBRID_WEIGHTS = (0.3, 0.5, 0.7, 0.8, 0.9)
FIRST_STAGE = "members hybrid w=0.7 max"


def cluster_bm25_scorers(units, grid):
    """One `query -> cluster scores` function per (k1, b): BM25 over cluster texts."""
    import bm25s

    from engine.index.bm25 import tokenize

    tokens = tokenize([index_text(u) for u in units], return_ids=True)
    scorers = {}
    for k1, b in grid:
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)

        def score(query, retriever=retriever):
            known = [t for t in tokenize([query])[0] if t in retriever.vocab_dict]
            return (retriever.get_scores(known) if known
                    else np.zeros(len(units), dtype=np.float32))

        scorers[f"bm25 k1={k1} b={b}"] = score
    return scorers


def document_scorers(corpus, bm25_docs, dense) -> dict[str, DocumentScorer]:
    """BM25, dense (MaxP over stored passage vectors) and hybrids, by name."""
    documents = {"bm25": DocumentScorer(corpus, bm25=bm25_docs, how="bm25"),
                 "dense": DocumentScorer(corpus, dense=dense, how="dense")}
    for w in HYBRID_WEIGHTS:
        documents[f"hybrid w={w}"] = DocumentScorer(corpus, bm25_docs, dense, "hybrid", w)
    return documents


def member_scorers(corpus, assignment, n_clusters, bm25_docs, dense):
    """`query -> cluster scores` from per-document scores, max or top-2 members."""
    scorers = {}
    for name, scorer in document_scorers(corpus, bm25_docs, dense).items():
        for pool, fn in (("max", group_max), ("top2", group_top2)):
            scorers[f"members {name} {pool}"] = (
                lambda q, s=scorer, f=fn: f(s.scores(q), assignment, n_clusters))
    return scorers


class Judge:
    """Whether ranked units hold a question's gold: supporting documents and answer.

    Units' normalised texts are computed once each (cluster texts are long)."""

    def __init__(self, questions, texts) -> None:
        self.questions, self.texts = questions, texts
        self._normal: dict[int, str] = {}

    def _holds_answer(self, unit: int, answers) -> bool:
        if unit not in self._normal:
            self._normal[unit] = f" {normalize_answer(self.texts[unit])} "
        return any(f" {a} " in self._normal[unit] for a in answers)

    def table(self, ranked_per_question, doc_ids, cuts) -> dict:
        """both / any / answer / documents at each cut, averaged over the questions."""
        out = {}
        for k in cuts:
            both = any_ = found = spans = documents = 0
            for q, ranked in zip(self.questions, ranked_per_question, strict=True):
                gold = set(q.supporting_titles)
                docs = {d for u in ranked[:k] for d in doc_ids[u]}
                both += bool(gold) and gold <= docs
                any_ += bool(gold & docs)
                documents += sum(len(doc_ids[u]) for u in ranked[:k])
                if has_span_answer(q):
                    spans += 1
                    answers = [n for a in q.answers if (n := normalize_answer(a))]
                    found += any(self._holds_answer(u, answers) for u in ranked[:k])
            n = len(self.questions)
            out[k] = {"both": round(both / n, 3), "any": round(any_ / n, 3),
                      "answer": round(found / max(spans, 1), 3),
                      "documents": round(documents / n, 1)}
        return out


def cell(r: dict) -> str:
    return f"{r['both']:.3f} / {r['any']:.3f} / {r['answer']:.3f} ({r['documents']:.0f})"


def ranked_by(score, questions, depth):
    """Each question's top-`depth` unit positions by `score(question)`, and ms/question."""
    started = time.perf_counter()
    ranked = []
    for q in questions:
        s = score(q.text)
        top = np.argpartition(-s, depth)[:depth] if depth < len(s) else np.arange(len(s))
        ranked.append(top[np.argsort(-s[top], kind="stable")])
    return ranked, (time.perf_counter() - started) * 1000 / len(questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", nargs="+", default=list(TRAIN_FILES),
                        help="QA files under the shared data directory")
    parser.add_argument("--limit", type=int, default=0, help="first N questions of each file")
    parser.add_argument("--K", type=int, nargs="+", default=[1, 5, 10, 20])
    parser.add_argument("--N", type=int, nargs="+", default=[4, 8],
                        help="pre-ranker cuts (documents kept)")
    parser.add_argument("--first", default=FIRST_STAGE,
                        help="the first stage the pre-rankers' candidates come from")
    parser.add_argument("--prerank-K", type=int, default=10, help="clusters pre-ranked")
    parser.add_argument("--out", default="first_stage")
    args = opened(parser)
    questions = []
    for name in args.dataset:
        found = read_dataset(shared_data_dir() / name).questions
        questions += found[:args.limit] if args.limit else found
    corpus = load_corpus("pooled")
    config = FunnelConfig()
    units = build_units(corpus, config.clusters())
    assignment = clustering(corpus, config.cluster_algorithm, config.cluster_tokens).assignment
    store = process_store()
    dense = store.dense(corpus, UnitConfig("passages", chunker=Chunker(100)))
    bm25_docs = store.bm25(corpus, UnitConfig())
    scorers = cluster_bm25_scorers(units, BM25_GRID)
    scorers |= member_scorers(corpus, assignment, len(units), bm25_docs, dense)
    dense.vectors  # noqa: B018 - read the stored vectors once, outside the timings
    clusters = Judge(questions, [u.text for u in units])
    cluster_docs = [u.doc_ids for u in units]
    rows, report = [], {}
    for name, score in scorers.items():
        ranked, ms = ranked_by(score, questions, max(args.K))
        report[name] = {"ms_per_question": round(ms, 2),
                        **{f"K={k}": r for k, r in clusters.table(ranked, cluster_docs,
                                                                  args.K).items()}}
        rows.append([name, *(cell(report[name][f"K={k}"]) for k in args.K), f"{ms:.1f}"])
    print(f"{len(questions)} questions ({', '.join(args.dataset)}), pooled corpus, "
          f"{len(units)} clusters ({config.cluster_algorithm}, S={config.cluster_tokens}); "
          "cells: both / any / answer (documents handed on)\n")
    print(markdown_table(["option", *(f"K={k}" for k in args.K), "ms/question"], rows))

    # pre-rankers over the documents of the chosen first stage's top clusters
    first, _ = ranked_by(scorers[args.first], questions, args.prerank_K)
    pools = [np.array(sorted({corpus.index_of[d] for c in top for d in units[c].doc_ids}))
             for top in first]
    documents = Judge(questions, [f"{d.title}\n{d.text}" for d in corpus.documents])
    doc_ids = [(d.id,) for d in corpus.documents]
    prerank, prows = {}, []
    for name, scorer in document_scorers(corpus, bm25_docs, dense).items():
        pool_iter = iter(pools)

        def in_pool(query, scorer=scorer, pools=pool_iter):
            pool, s = next(pools), scorer.scores(query)
            masked = np.full_like(s, -np.inf)
            masked[pool] = s[pool]
            return masked

        ranked, ms = ranked_by(in_pool, questions, max(args.N))
        ranked = [r[:len(p)] for r, p in zip(ranked, pools, strict=True)]
        prerank[name] = {"ms_per_question": round(ms, 2),
                         **{f"N={n}": r for n, r in documents.table(ranked, doc_ids,
                                                                    args.N).items()}}
        prows.append([name, *(cell(prerank[name][f"N={n}"]) for n in args.N), f"{ms:.1f}"])
    ceiling = documents.table(pools, doc_ids, [10**9])[10**9]
    print(f"\npre-rankers over the documents of the top {args.prerank_K} clusters by "
          f"'{args.first}' (all of them: {cell(ceiling)})\n")
    print(markdown_table(["pre-ranker", *(f"N={n}" for n in args.N), "ms/question"], prows))
    save(args.out, {"datasets": args.dataset, "questions": len(questions),
                    "clusters": len(units), "threads": args.threads, "options": report,
                    "prerank": {"first": args.first, "K": args.prerank_K,
                                "candidates": ceiling, "rankers": prerank}})


if __name__ == "__main__":
    main()
