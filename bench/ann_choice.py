"""Which approximate dense index: IVF-PQ or HNSW, by recall@100 against the exact scan,
milliseconds per query, build time and bytes held per vector.

The passages of a synthetic corpus of N documents (bench/synthetic.py) get vectors shaped
like real ones (`synthetic_vectors`: mixtures of real MiniLM vectors of the pooled
documents their sentences came from, plus noise). Queries are the HotpotQA and MuSiQue
train100 questions encoded by MiniLM (defaults are chosen on training questions). Each
index answers a query's top 100 on one thread:
  ivfpq   IndexIVFPQ (4 sqrt(n) lists rounded down to a power of two, 48 x 8-bit codes),
          its top R candidates rescored with the exact vectors, for nprobe and R
  hnsw    IndexHNSWSQ (M=32, efConstruction=40, 8-bit scalar-quantised vectors), its top
          efSearch candidates rescored with the exact vectors (as engine.index.dense does)

    python -m bench.ann_choice [--documents 100000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import markdown_table, save, training_questions


def main() -> None:
    import faiss

    from bench.synthetic import synthetic_corpus, synthetic_vectors
    from engine.data.corpus import load_corpus
    from engine.index.dense import dense_index
    from engine.index.encoding import encode
    from engine.index.faiss_index import HNSW_EF_CONSTRUCTION, HNSW_M
    from engine.units.build import passage_units
    from engine.units.chunking import Chunker

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000)
    args = parser.parse_args()
    corpus = synthetic_corpus(args.documents)
    passages = passage_units(corpus.documents, Chunker(100))
    x = np.concatenate(list(synthetic_vectors(corpus, passages,
                                              dense_index(load_corpus("pooled")))))
    q = encode([t.text for t in training_questions()], "minilm", queries=True)
    faiss.omp_set_num_threads(2)
    exact = faiss.IndexFlatIP(x.shape[1])
    exact.add(x)
    _, truth = exact.search(q, 100)

    def measure(search) -> tuple[float, float]:
        faiss.omp_set_num_threads(1)
        start = time.perf_counter()
        found = [search(q[i:i + 1]) for i in range(len(q))]
        ms = (time.perf_counter() - start) / len(q) * 1000
        faiss.omp_set_num_threads(2)
        hits = sum(len(np.intersect1d(f, t)) for f, t in zip(found, truth, strict=True))
        return round(hits / truth.size, 4), round(ms, 2)

    def rescored(candidates: np.ndarray, vector: np.ndarray) -> np.ndarray:
        candidates = np.sort(candidates[candidates >= 0])
        return candidates[np.argsort(-(x[candidates] @ vector[0]), kind="stable")[:100]]

    rows = [["exact (IndexFlatIP)", "-", *measure(lambda v: exact.search(v, 100)[1][0]),
             x.shape[1] * 4]]
    nlist = 1 << int(np.log2(4 * len(x) ** 0.5))
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(x.shape[1]), x.shape[1], nlist, 48, 8,
                           faiss.METRIC_INNER_PRODUCT)
    start = time.perf_counter()
    sample = np.random.default_rng(0).choice(len(x), min(len(x), 50 * nlist), replace=False)
    ivf.train(x[np.sort(sample)])
    ivf.add(x)
    built = round(time.perf_counter() - start, 1)
    for nprobe in (16, 64, 256):
        ivf.nprobe = nprobe
        for depth in (400, 1000):
            rows.append([f"IVF{nlist},PQ48 nprobe {nprobe}, R {depth}", built,
                         *measure(lambda v, d=depth: rescored(ivf.search(v, d)[1][0], v)),
                         48 + 8])
    hnsw = faiss.IndexHNSWSQ(x.shape[1], faiss.ScalarQuantizer.QT_8bit, HNSW_M,
                             faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    start = time.perf_counter()
    hnsw.train(x[np.sort(sample)])
    hnsw.add(x)
    built = round(time.perf_counter() - start, 1)
    for ef in (100, 200, 400, 800):
        params = faiss.SearchParametersHNSW(efSearch=ef)
        rows.append([f"HNSW{HNSW_M},SQ8 efSearch {ef}", built,
                     *measure(lambda v, e=ef, p=params: rescored(
                         hnsw.search(v, max(e, 100), params=p)[1][0], v)),
                     x.shape[1] + HNSW_M * 2 * 4])
    headers = ["index", "build s", "recall@100", "ms/query", "bytes/vector held"]
    print(f"{len(x):,} passages of {args.documents:,} documents, {len(q)} train questions")
    print(markdown_table(headers, rows))
    save("ann_choice", {"passages": len(x), "questions": len(q),
                        "rows": [dict(zip(headers, row, strict=True)) for row in rows]})


if __name__ == "__main__":
    main()
