"""BM25 and the packaged MiniLM over a BEIR collection, measured as BEIR and MTEB measure
them, next to their published nDCG@10 (issue 52).

    python -m bench.beir_reproduce arguana [--mirror DIR] [--no-dense] [--k 1000]
    python -m bench.beir_reproduce FOLDER_OR_ZIP [--split test] [--drop-unknown]

`arguana` is BEIR's ArguAna (8,674 documents, 1,406 test queries), fetched where missing
into the data directory from a public copy pinned to a commit, every file checked against
its sha256 (as the QA data is: engine.qa_data.fetch_files; `--mirror` or
FUNNEL_DATA_MIRROR a local copy laid out as <owner>/<name>/<commit>/<path>). Its qrels judge
5 documents its corpus lacks (as BEIR's own zip does), left out with a warning.

Both retrievers rank whole documents (a document's title and text) through the engine's own
indexes (engine.index.bm25, engine.index.dense); every test query's ranking goes into one
ir_measures call with the graded judgments: nDCG@10, MAP@100, RR@10, R@100 and Judged@10.
Prints each next to the published figure where one is known, and the seconds per 100
questions. Caches go to the data directory (FUNNEL_DATA_DIR) as the app's do.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import time
from pathlib import Path

from bench.common import RESULTS
from engine.qa_data import QAFile

# BEIR's ArguAna as a public repository keeps it (ecazar/ProyectoIB, data/: BEIR's files,
# the corpus and queries gzipped), pinned; each file's sha256 and the gunzipped ones'
ARGUANA_SOURCE = ("ecazar/ProyectoIB", "77758cc865e08f95d66ba67415d74ef6dd6f6bcb")
ARGUANA_FILES = (
    QAFile("corpus.jsonl.gz", "BEIR ArguAna corpus", "as BEIR distributes it",
           *ARGUANA_SOURCE, "data/corpus.jsonl.gz",
           "6572c13e17aa51d42c0498e765c70cfc9f15550a2140213ea267767e3a9f9134", 3_146_106),
    QAFile("queries.jsonl.gz", "BEIR ArguAna queries", "as BEIR distributes it",
           *ARGUANA_SOURCE, "data/queries.jsonl.gz",
           "faae9bb245700b764c29d98a1972d1b10ebb8dfb4e7bb349741e8d4f20d29b13", 617_785),
    QAFile("qrels/test.tsv", "BEIR ArguAna test qrels", "as BEIR distributes it",
           *ARGUANA_SOURCE, "data/test.tsv",
           "0c47b481fa8b47fb9ca5e74bc8a017bdea14518c0e4a5d21345291180b3aca76", 96_296),
)
GUNZIPPED = {"corpus.jsonl": "0627982cec4ee896df6dc98604ef6b499c83fd87a19eaaeb3f23b88bbef6cbce",
             "queries.jsonl": "f8b7c903f95d9a2d291de3915a8fac25085e9db679f19f59fea4145bfd1df618"}

MEASURES = ("nDCG@10", "AP@100", "RR@10", "R@100", "Judged@10")
# nDCG@10 as published, each with the settings it was measured under. BM25: the BEIR
# paper's Table 2 (Thakur et al., 2021; Elasticsearch, the query's own document kept in the
# ranking), Anserini's BEIR regression (Lucene, k1=0.9 b=0.4, --removeQuery) and bm25s'
# benchmark table (xhluca/bm25-benchmarks, Lucene scoring at both k1/b settings). MiniLM:
# MTEB's results (embeddings-benchmark/results, all-MiniLM-L6-v2/8b3219a.../ArguAna.json).
PUBLISHED: dict[str, dict[str, dict[str, float]]] = {
    "arguana": {
        "bm25": {"BEIR paper (Elasticsearch, query kept)": 0.315,
                 "bm25s (k1=1.5, b=0.75)": 0.493},
        "bm25 k1=0.9 b=0.4": {"Anserini flat": 0.397, "bm25s (k1=0.9, b=0.4)": 0.408},
        "minilm": {"MTEB": 0.502},
    },
}
# the engine's BM25 is bm25s' default (k1=1.5, b=0.75); Anserini's setting is measured beside
# it over the same analysed text
ANSERINI = {"k1": 0.9, "b": 0.4}


def rankings(search, questions, k: int) -> tuple[dict[str, dict[str, float]], float]:
    """({query id: {document id: score}}, seconds) of one retriever over every question."""
    run: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    for question in questions:
        # a score from the rank: trec_eval breaks score ties by document id, which would
        # reorder a retriever's equal scores
        run[question.id] = {c.unit.doc_ids[0]: float(k - c.rank)
                            for c in search(question.text, k)}
    return run, time.perf_counter() - start


def without_identical(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The run with each query's own id left out, as BEIR does by default
    (ignore_identical_ids: ArguAna's queries are themselves corpus documents)."""
    return {qid: {doc: s for doc, s in docs.items() if doc != qid} for qid, docs in run.items()}


def anserini_bm25(corpus, config):
    """BM25 at Anserini's k1 and b over the engine's own units and analyser (not cached)."""
    from engine.index.bm25 import BM25Index, _bm25s, tokenize
    from engine.units.build import build_units, index_text

    units = build_units(corpus, config)
    retriever = _bm25s().BM25(**ANSERINI)
    retriever.index(tokenize([index_text(u) for u in units], return_ids=True),
                    show_progress=False)
    return BM25Index(units, retriever)


def arguana_folder() -> Path:
    """Where ArguAna's BEIR files go: the data directory's beir/arguana."""
    from engine.paths import data_dir

    return data_dir() / "beir" / "arguana"


def arguana_present() -> bool:
    """Whether ArguAna's files are all unpacked in `arguana_folder()` (nothing to fetch)."""
    folder = arguana_folder()
    return all((folder / name).is_file() for name in (*GUNZIPPED, "qrels/test.tsv"))


def arguana(mirror: str = "") -> Path:
    """The BEIR folder of ArguAna in the data directory, fetched and unpacked where missing."""
    from engine.qa_data import fetch_files

    folder = arguana_folder()
    if arguana_present():
        return folder
    missing = [f for f in ARGUANA_FILES if not (folder / f.path).is_file()]
    fetch_files(missing, folder, mirror or os.environ.get("FUNNEL_DATA_MIRROR", ""))
    for name, sha256 in GUNZIPPED.items():
        data = gzip.decompress((folder / f"{name}.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{folder / name}.gz unpacks to another file than the pinned one")
        (folder / f".{name}.part").write_bytes(data)
        (folder / f".{name}.part").replace(folder / name)
    return folder


def measure(judgments: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict:
    """The collection's measures over every query, in one ir_measures call."""
    import ir_measures

    measures = [ir_measures.parse_measure(name) for name in MEASURES]
    found = ir_measures.calc_aggregate(measures, judgments, run)
    return {name: round(float(found[m]), 4) for name, m in zip(MEASURES, measures, strict=True)}

RETRIEVERS = ("bm25", "bm25 k1=0.9 b=0.4", "minilm")


def measured(collection, retrievers: tuple[str, ...] = RETRIEVERS, k: int = 1000) -> dict:
    """{retriever: its measures over the collection's queries (the query's own document
    left out, and nDCG@10 with it kept), its index and per-query seconds}: each of
    `retrievers` (of RETRIEVERS) ranking whole documents."""
    from engine.documents import Corpus
    from engine.index.bm25 import bm25_index
    from engine.index.dense import dense_index
    from engine.units.build import UnitConfig

    corpus = Corpus(collection.name, collection.documents)
    documents = UnitConfig("documents")
    builds = {"bm25": lambda: bm25_index(corpus, documents),
              "bm25 k1=0.9 b=0.4": lambda: anserini_bm25(corpus, documents),
              "minilm": lambda: dense_index(corpus, documents, "minilm")}
    results = {}
    for name in retrievers:
        start = time.perf_counter()
        index = builds[name]()
        index.search(collection.questions[0].text, 1)  # the encoder loaded, not timed below
        built = time.perf_counter() - start
        run, seconds = rankings(index.search, collection.questions, k)
        start = time.perf_counter()
        found = measure(collection.judgments, without_identical(run))
        measure_seconds = time.perf_counter() - start
        kept = measure(collection.judgments, run)["nDCG@10"]
        results[name] = {**found, "nDCG@10 query kept": kept,
                         "index_seconds": round(built, 1),
                         "seconds_per_100_questions": round(
                             100 * seconds / len(collection.questions), 2),
                         "measure_seconds": round(measure_seconds, 2)}
    return results


def main() -> None:
    from engine.data.loaders.collections import read_beir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collection", help="arguana (fetched), or a BEIR folder or zip")
    parser.add_argument("--mirror", default="", help="a local copy of arguana's source")
    parser.add_argument("--split", default="test")
    parser.add_argument("--k", type=int, default=1000, help="documents ranked per query")
    parser.add_argument("--no-dense", action="store_true", help="BM25 only")
    parser.add_argument("--drop-unknown", action="store_true",
                        help="leave out judgments of documents the corpus lacks (ArguAna)")
    args = parser.parse_args()

    if args.collection == "arguana":
        collection = read_beir(arguana(args.mirror), split=args.split, drop_unknown=True)
    else:
        collection = read_beir(args.collection, split=args.split,
                               drop_unknown=args.drop_unknown)
    print(f"{collection.name} ({args.split}): {len(collection.documents)} documents, "
          f"{len(collection.questions)} judged questions")
    names = ("bm25", "bm25 k1=0.9 b=0.4") if args.no_dense else tuple(RETRIEVERS)
    results = measured(collection, names, args.k)
    published = PUBLISHED.get(collection.name.lower(), {})
    print(f"\n| retriever | {' | '.join(MEASURES)} | nDCG@10, query kept | published nDCG@10 "
          f"| index and load s | s per 100 questions |")
    print("|---" * (len(MEASURES) + 5) + "|")
    for name, r in results.items():
        known = "; ".join(f"{source} {value:.3f}"
                          for source, value in published.get(name, {}).items()) or "-"
        print(f"| {name} | {' | '.join(f'{r[m]:.3f}' for m in MEASURES)} "
              f"| {r['nDCG@10 query kept']:.3f} | {known} "
              f"| {r['index_seconds']} | {r['seconds_per_100_questions']} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"beir_{collection.name}_{args.split}.json"
    out.write_text(json.dumps({"collection": collection.name, "split": args.split,
                               "documents": len(collection.documents),
                               "questions": len(collection.questions),
                               "published": published, **results}, indent=1))
    print(f"\nsaved {out}")


if __name__ == "__main__":
    main()
