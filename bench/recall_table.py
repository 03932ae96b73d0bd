"""LongRAG Table 1/2 analog: BM25 recall by retrieval unit on the pooled corpus.

For HotpotQA dev500 questions, BM25 retrieves the top 80 units at each granularity
(clusters by both algorithms at S = 2048 and 4096, documents, passages) and reports
  AR@k  answer recall: a normalised gold answer occurs in the top-k units' text
        (span answers only, as in LongRAG; yes/no questions are left out),
  SR@k  supporting-document recall: share of the gold supporting documents inside the
        top-k units, and "both@k": both gold documents inside,
  tok@k mean tokens in the top-k units (what a reader would be sent),
for k in 1, 2, 5, 20, 80.

    python -m bench.recall_table [--limit N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from bench.common import markdown_table, save
from engine.data.corpus import load_corpus
from engine.data.loaders import read_dataset
from engine.index.bm25 import bm25_index
from engine.metrics import answer_in, has_span_answer
from engine.paths import shared_data_dir
from engine.text import count_tokens
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker

KS = (1, 2, 5, 20, 80)
CONFIGS = {
    "clusters funnelrag S=4096": UnitConfig("clusters", cluster_algorithm="funnelrag",
                                            cluster_tokens=4096),
    "clusters funnelrag S=2048": UnitConfig("clusters", cluster_algorithm="funnelrag",
                                            cluster_tokens=2048),
    "clusters longrag S=4096": UnitConfig("clusters", cluster_algorithm="longrag",
                                          cluster_tokens=4096),
    "clusters longrag S=2048": UnitConfig("clusters", cluster_algorithm="longrag",
                                          cluster_tokens=2048),
    "documents": UnitConfig("documents"),
    "passages (100 tokens)": UnitConfig("passages", chunker=Chunker(100)),
}


def evaluate(index, questions) -> dict:
    ar = {k: [] for k in KS}
    sr = {k: [] for k in KS}
    both = {k: [] for k in KS}
    tokens = {k: [] for k in KS}
    seconds = []
    for q in questions:
        start = time.perf_counter()
        results = index.search(q.text, max(KS))
        seconds.append(time.perf_counter() - start)
        sizes = [count_tokens(c.unit.text) for c in results]
        for k in KS:
            top = results[:k]
            docs = {d for c in top for d in c.unit.doc_ids}
            found = sum(t in docs for t in q.supporting_titles)
            sr[k].append(found / len(q.supporting_titles))
            both[k].append(found == len(q.supporting_titles))
            tokens[k].append(sum(sizes[:k]))
            if has_span_answer(q):
                ar[k].append(answer_in((c.unit.text for c in top), q.answers))
    mean = statistics.fmean
    return {
        "units": len(index.units),
        "AR": {k: round(mean(v), 3) for k, v in ar.items()},
        "SR": {k: round(mean(v), 3) for k, v in sr.items()},
        "both": {k: round(mean(v), 3) for k, v in both.items()},
        "tokens": {k: round(mean(v)) for k, v in tokens.items()},
        "query_ms_median": round(statistics.median(seconds) * 1000, 2),
        "span_questions": len(ar[KS[0]]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=500)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    dataset = read_dataset(shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl")
    questions = dataset.questions[: args.limit]
    corpus = load_corpus("pooled")
    report = {}
    for name, config in CONFIGS.items():
        report[name] = evaluate(bm25_index(corpus, config), questions)
    save("recall_table", report)
    print(f"pooled corpus: {len(corpus):,} documents; HotpotQA dev500: {len(questions)} "
          f"questions, {report['documents']['span_questions']} with span answers\n")
    for metric, label in (("AR", "answer recall"), ("SR", "supporting-document recall"),
                          ("both", "both supporting documents"), ("tokens", "mean tokens")):
        print(f"### {label}\n")
        rows = [[name, f"{r['units']:,}", *[r[metric][k] for k in KS]]
                for name, r in report.items()]
        print(markdown_table(["units", "#units", *[f"@{k}" for k in KS]], rows) + "\n")


if __name__ == "__main__":
    main()
