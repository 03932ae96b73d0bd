"""Encoding a dense index on Ray against one process: passages per second and the vectors.

The first N passages (100 tokens) of the pooled corpus are encoded by MiniLM twice, each
into its own empty data directory, so neither finds the other's vectors:
  one process  `VectorStore.encode` in one interpreter with two torch threads (what a
               build does without --ray);
  ray          `engine.index.on_ray.encode_on_ray` on a local cluster of two one-CPU workers
               with one torch thread each (`python -m engine build --ray local`); the time
               includes starting and stopping the cluster.
Then every text's two vectors are compared (cosine). Run on an idle machine: both use the
two cores.

    python -m bench.ray_encoding [--passages 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import markdown_table, run_child, save


def texts(limit: int) -> list[str]:
    from engine.data.corpus import load_corpus
    from engine.units.build import UnitConfig, build_units, index_text

    units = build_units(load_corpus("pooled"), UnitConfig("passages"))
    return [index_text(u) for u in units[:limit]]


def child(mode: str, limit: int) -> dict:
    from engine.index.encoding import encode, encoder_identity
    from engine.index.vectors import VectorStore
    from engine.models.loading import resolve_encoder_precision

    todo = texts(limit)
    precision = resolve_encoder_precision("auto")
    start = time.perf_counter()
    if mode == "one":
        import torch

        torch.set_num_threads(2)
        encode(todo[:8], "minilm", precision=precision)  # load the model outside the time
        start = time.perf_counter()
        VectorStore(encoder_identity("minilm", precision)).encode(
            todo, lambda batch: encode(batch, "minilm", precision=precision))
    else:
        from engine.index.on_ray import encode_on_ray

        encode_on_ray(todo, "minilm", precision, "local", workers=2)
    seconds = time.perf_counter() - start
    return {"texts": len(todo), "seconds": round(seconds, 1),
            "passages/s": round(len(todo) / seconds, 1)}


def compare(folders: dict[str, Path], limit: int) -> dict:
    import numpy as np

    from engine.index.encoding import encoder_identity
    from engine.index.vectors import VectorStore
    from engine.models.loading import resolve_encoder_precision

    todo = texts(limit)
    vectors = {}
    for mode, folder in folders.items():
        os.environ["FUNNEL_DATA_DIR"] = str(folder)
        store = VectorStore(encoder_identity("minilm", resolve_encoder_precision("auto")))
        assert not store.missing(todo), f"{mode} left texts unencoded"
        vectors[mode] = store.encode(todo, lambda batch: None)
    cosines = np.sum(vectors["one"] * vectors["ray"], axis=1)
    return {"min cosine": round(float(cosines.min()), 6),
            "mean cosine": round(float(cosines.mean()), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.passages)))
        return
    folders = {mode: Path(tempfile.mkdtemp(prefix=f"ray-encoding-{mode}-"))
               for mode in ("one", "ray")}
    results = {}
    try:
        for mode, folder in folders.items():
            os.environ["FUNNEL_DATA_DIR"] = str(folder)
            results[mode] = run_child(Path(__file__), "--child", mode, "--passages",
                                      str(args.passages))
            print(f"{mode}: {results[mode]}", file=sys.stderr, flush=True)
        results["vectors"] = compare(folders, args.passages)
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    one, ray = results["one"], results["ray"]
    print(markdown_table(
        ["", "one process, 2 threads", "Ray, 2 one-thread workers", "Ray / one"],
        [["passages", one["texts"], ray["texts"], ""],
         ["seconds", one["seconds"], ray["seconds"], f"{ray['seconds'] / one['seconds']:.2f}x"],
         ["passages/s", one["passages/s"], ray["passages/s"],
          f"{ray['passages/s'] / one['passages/s']:.2f}x"],
         ["cosine, min (mean)", "", f"{results['vectors']['min cosine']} "
          f"({results['vectors']['mean cosine']})", ""]]))
    save("ray_encoding", results)


if __name__ == "__main__":
    main()
