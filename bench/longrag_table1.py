"""LongRAG's Table 1 shape on HotpotQA dev500: what a reader would get from passages,
documents and long retrieval units, at equal k and at an equal reader-token budget.

Granularities (pooled corpus): 100-token passages (flat's units), whole documents, and
LongRAG units of up to S tokens (S = 1024, the longrag default, and 4096, the paper's).
Each is ranked two ways, side by side:

  dense   passages by their stored MiniLM vector; documents and units by dense MaxP, the
          best passage vector inside them (as the longrag paradigm ranks units)
  BM25    BM25 over the unit's own text

At equal k (k = 1, 2, 4, 8 retrieval units): answer recall (AR: a normalised gold answer
occurs in the units' text; span answers only, as in LongRAG), gold-document recall (share
of the two supporting documents inside) and the tokens read. At an equal budget of B
tokens: the ranked units fill B tokens best first and the first that does not fit is cut,
as the reader's `max_context_tokens` does; a long unit is read as its documents, best
first by their own score (dense MaxP, or BM25 over the whole document), as the longrag
paradigm's context stage reads them (`--unit-order`: in the order they were grouped), and
a document cut to fit counts only if at least 32 of its tokens fit, as there.

    python -m bench.longrag_table1 [--limit 500] [--unit-order]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from bench.common import dev500_questions, markdown_table, opened, save
from engine.data.corpus import load_corpus
from engine.documents import Candidate
from engine.index.document_scores import group_max
from engine.metrics import answer_in, has_span_answer, support_recall
from engine.readers.reader import within_budget
from engine.service.store import process_store
from engine.stages.expand import MIN_CLIPPED_TOKENS
from engine.text import count_tokens
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker
from engine.units.lazy import document_unit

KS = (1, 2, 4, 8)
BUDGETS = (500, 1000, 2000, 4000)
PASSAGES = UnitConfig("passages", chunker=Chunker(100))
DEPTH = 200  # ranked units kept per query: enough to fill the largest budget


class Granularity:
    """One kind of retrieval unit: its units, how to rank them both ways, and what a
    budget-limited reader reads of each (a long unit as its documents)."""

    def __init__(self, name, units, dense_scores, bm25, members=None):
        self.name, self.units, self.bm25 = name, units, bm25
        self.dense_scores, self.members = dense_scores, members
        self.tokens = np.array([count_tokens(u.title) + count_tokens(u.text) for u in units])

    def read_as(self, unit, how: str, query: str, unit_order: bool = False) -> list:
        """What a reader reads of `unit`: itself, or a long unit's documents best first (or
        in unit order)."""
        if self.members is None:
            return [unit]
        corpus, scorers = self.members
        ranked = unit.doc_ids
        if not unit_order:
            scores = scorers[how].scores(query)
            ranked = sorted(ranked, key=lambda d: -scores[corpus.index_of[d]])
        return [document_unit(corpus.by_id[d]) for d in ranked]

    def ranked(self, how: str, query: str) -> np.ndarray:
        scores = self.dense_scores(query) if how == "dense" else self.bm25.scores(query)
        top = np.argpartition(-scores, min(DEPTH, len(scores) - 1))[:DEPTH]
        return top[np.argsort(-scores[top], kind="stable")]


def granularities(corpus, sizes) -> list[Granularity]:
    store = process_store()
    dense = store.dense(corpus, PASSAGES)
    documents = store.documents(corpus, "dense", 1.0, PASSAGES)
    members = (corpus, {"dense": documents,
                        "BM25": store.documents(corpus, "bm25", 1.0, PASSAGES)})
    doc_units = tuple(document_unit(d) for d in corpus.documents)
    out = [
        Granularity("passages (100 tokens)", dense.units,
                    lambda q: dense.vectors @ dense.encode_queries([q])[0],
                    store.bm25(corpus, PASSAGES)),
        Granularity("documents", doc_units, documents.scores,
                    store.bm25(corpus, UnitConfig("documents"))),
    ]
    for size in sizes:
        config = UnitConfig("clusters", cluster_algorithm="longrag", cluster_tokens=size)
        units, assignment = store.clusters(corpus, config)
        n_units = len(units)
        out.append(Granularity(
            f"LongRAG units S={size}", units,
            lambda q, a=assignment, n=n_units: group_max(documents.scores(q), a, n),
            store.bm25(corpus, config), members))
    return out


def measure(g: Granularity, how: str, questions, unit_order: bool = False) -> dict:
    at_k = {k: {"AR": [], "recall": [], "tokens": []} for k in KS}
    at_budget = {b: {"AR": [], "recall": [], "units": []} for b in BUDGETS}
    for q in questions:
        top = g.ranked(how, q.text)
        span = has_span_answer(q)
        for k in KS:
            chosen = [g.units[i] for i in top[:k]]
            if span:
                at_k[k]["AR"].append(answer_in([u.text for u in chosen], q.answers))
            at_k[k]["recall"].append(support_recall(
                [d for u in chosen for d in u.doc_ids], q.supporting_titles))
            at_k[k]["tokens"].append(int(g.tokens[top[:k]].sum()))
        pieces = [Candidate(piece, 0.0, 0) for i in top
                  for piece in g.read_as(g.units[i], how, q.text, unit_order)]
        least = 1 if g.members is None else MIN_CLIPPED_TOKENS  # as the reader / the context
        for budget in BUDGETS:
            read = within_budget(pieces, budget, least)
            if span:
                at_budget[budget]["AR"].append(answer_in([c.unit.text for c in read],
                                                         q.answers))
            at_budget[budget]["recall"].append(support_recall(
                [d for c in read for d in c.unit.doc_ids], q.supporting_titles))
            at_budget[budget]["units"].append(len(read))
    mean = statistics.fmean
    return {"units": len(g.units),
            "at_k": {k: {m: round(mean(v), 3) for m, v in cell.items()}
                     for k, cell in at_k.items()},
            "at_budget": {b: {m: round(mean(v), 3) for m, v in cell.items()}
                          for b, cell in at_budget.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=500, help="first N dev500 questions")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--unit-order", action="store_true",
                        help="read a long unit's documents in unit order, not best first")
    args = opened(parser)
    corpus = load_corpus("pooled")
    questions = dev500_questions(args.limit)
    report = {}
    for g in granularities(corpus, args.sizes):
        for how in ("dense", "BM25"):
            report[f"{g.name}, {how}"] = measure(g, how, questions, args.unit_order)
    spans = sum(has_span_answer(q) for q in questions)
    print(f"pooled ({len(corpus):,} documents), HotpotQA dev500: {len(questions)} questions "
          f"({spans} with span answers)\n")
    print("### equal k: AR / gold-document recall / tokens read\n")
    print(markdown_table(["units, ranking", "#units", *(f"k={k}" for k in KS)], [
        [name, f"{r['units']:,}", *(f"{c['AR']:.3f} / {c['recall']:.3f} / {c['tokens']:,.0f}"
                                    for c in r["at_k"].values())]
        for name, r in report.items()]))
    print("\n### equal reader budget: AR / gold-document recall / pieces read\n")
    print(markdown_table(["units, ranking", *(f"{b:,} tokens" for b in BUDGETS)], [
        [name, *(f"{c['AR']:.3f} / {c['recall']:.3f} / {c['units']:.1f}"
                 for c in r["at_budget"].values())]
        for name, r in report.items()]))
    save("longrag_table1" + ("_unit_order" if args.unit_order else ""),
         {"questions": len(questions), "span_questions": spans, "report": report})


if __name__ == "__main__":
    main()
