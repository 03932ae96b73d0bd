"""The packaged SmolLM2 GGUF converted to safetensors with its metadata read once
(engine.models.gguf.read_once) and as transformers reads it alone, side by side.

Each conversion runs in a fresh interpreter (its imports and peak memory its own), the two
ways alternating over `--rounds` rounds. Per way: the median seconds of the conversion
itself (imports not counted), the peak memory, and whether every tensor and the tokenizer
equal the other way's.

    python -m bench.gguf_conversion [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import markdown_table, opened, peak_rss_mb, run_child, save

WAYS = {"read once": "once", "transformers alone": "twice"}


def convert(way: str, folder: Path) -> dict:
    """One conversion into `folder` (the child's work): seconds and peak memory."""
    from engine.models.gguf import convert_gguf
    from engine.models.packaged import smollm2_gguf_path

    start = time.perf_counter()
    convert_gguf(smollm2_gguf_path(), folder, once=way == "once")
    return {"seconds": round(time.perf_counter() - start, 2), "peak_mb": round(peak_rss_mb())}


def same(first: Path, second: Path) -> bool:
    """Whether two converted folders hold equal tensors and the same tokenizer."""
    import torch
    from safetensors.torch import load_file

    tensors = [load_file(next(folder.glob("*.safetensors"))) for folder in (first, second)]
    tokens = [json.loads((folder / "tokenizer.json").read_text()) for folder in (first, second)]
    return (tensors[0].keys() == tensors[1].keys()
            and all(torch.equal(tensors[0][k], tensors[1][k]) for k in tensors[0])
            and tokens[0] == tokens[1])


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(convert(sys.argv[2], Path(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = opened(parser, threads=None)
    measured: dict[str, list[dict]] = {name: [] for name in WAYS}
    with tempfile.TemporaryDirectory() as scratch:
        folders = {}
        for round_ in range(args.rounds):
            order = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
            for name in order:
                folders[name] = Path(scratch) / f"{WAYS[name]}-{round_}"
                measured[name].append(run_child(Path(__file__), "--child", WAYS[name],
                                                str(folders[name])))
        identical = same(*folders.values())
    rows = [[name, round(statistics.median(m["seconds"] for m in runs), 2),
             max(m["peak_mb"] for m in runs), identical] for name, runs in measured.items()]
    ratio = rows[1][1] / rows[0][1]
    print(markdown_table(["conversion", "median s", "peak MiB", "same tensors"], rows))
    print(f"transformers alone / read once: {ratio:.2f}x")
    save("gguf_conversion", {"measured": measured, "identical": identical,
                             "ratio": round(ratio, 2)})


if __name__ == "__main__":
    main()
