"""Does FiD post-ranking beat the pre-ranker's own passage order, and how does `lr` matter?

Input: the funnel traces bench/funnel_vs_flat.py wrote. For each span-answer question, the
documents the pre-ranker kept are chunked again exactly as the funnel did (later chunking),
giving the post-ranker's input passages in pre-ranker order (document rank, then position
in the document). The reader reads them once; its raw first-token attention is then scored
by every aggregation scheme and, for FunnelRAG's Eq. 3, several `lr` (representative-token
counts; FunnelRAG Fig. 5b). Each order is measured by AR@1..4 (a gold answer inside the top
k passages). "pre-ranker order" is what the funnel would pass on without a post-ranker;
"ceiling" is AR over all the passages (no order can exceed it).

    python -m bench.postrank_gain [--limit 100] [--lr 1 2 4 8 16 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench.common import markdown_table, save
from engine.data.corpus import load_corpus
from engine.metrics import answer_recall_at, has_span_answer
from engine.paths import data_dir
from engine.readers import attention
from engine.stages.expand import chunk_documents
from engine.trace import RunTrace
from engine.units.chunking import Chunker

KS = (1, 2, 3, 4)


def funnel_traces(path: Path, limit: int) -> list[RunTrace]:
    traces = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            trace = RunTrace.from_json(line)
            if trace.paradigm == "funnel" and trace.gold and has_span_answer(trace.gold):
                traces.append(trace)
    return traces[:limit]


def orders(token_attention, lrs) -> dict[str, list[float]]:
    """Scores per passage for every scheme (Eq. 3 at every lr)."""
    out = {f"eq3 lr={lr}": [attention.passage_score(a, "eq3", lr) for a in token_attention]
           for lr in lrs}
    for scheme in attention.SCHEMES:
        if scheme != "eq3":
            out[scheme] = [attention.passage_score(a, scheme, 4) for a in token_attention]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="span-answer questions")
    parser.add_argument("--lr", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--traces", type=Path,
                        default=data_dir() / "bench" / "funnel_vs_flat_traces.jsonl")
    parser.add_argument("--out", default="postrank_gain", help="bench/results/OUT.json")
    args = parser.parse_args()
    import torch
    from tqdm.auto import tqdm

    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig

    torch.set_grad_enabled(False)
    corpus = load_corpus("pooled")
    reader = FiDReader()
    hits: dict[str, dict[int, list[bool]]] = {}
    passages_per_question = []
    for trace in tqdm(funnel_traces(args.traces, args.limit), desc="questions"):
        pre = next(s for s in trace.stages if s.name == "preranker")
        chunker = Chunker(trace.config["passage_tokens"])
        passages = chunk_documents(corpus, pre.candidates, chunker)
        passages_per_question.append(len(passages))
        texts = [c.unit.text for c in passages]
        out = reader.read(trace.question, [(c.unit.title, c.unit.text) for c in passages],
                          ReaderConfig(), answer=False)
        ranked = {"pre-ranker order": list(range(len(texts)))}
        for name, scores in orders(out.token_attention, args.lr).items():
            ranked[name] = sorted(range(len(texts)), key=lambda i, s=scores: -s[i])
        ranked["ceiling (all passages)"] = None
        for name, order in ranked.items():
            pool = texts if order is None else [texts[i] for i in order]
            ks = (len(pool),) * len(KS) if order is None else KS
            recall = answer_recall_at(pool, trace.gold.answers, ks)
            for k, key in zip(KS, ks, strict=True):
                hits.setdefault(name, {j: [] for j in KS})[k].append(recall[key])
    table = {name: {f"AR@{k}": round(statistics.fmean(v), 3) for k, v in by_k.items()}
             for name, by_k in hits.items()}
    report = {"questions": len(passages_per_question),
              "passages_mean": round(statistics.fmean(passages_per_question), 1),
              "traces": str(args.traces), "orders": table}
    save(args.out, report)
    print(f"{report['questions']} span-answer dev500 questions, "
          f"{report['passages_mean']} post-ranker input passages per question\n")
    print(markdown_table(["order", *(f"AR@{k}" for k in KS)],
                         [[name, *row.values()] for name, row in table.items()]))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
