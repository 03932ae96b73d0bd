"""Which int8 keeps the reader's answers: ONNX Runtime variants of the packaged SmolLM2 on
the training questions (the default is chosen here, never on dev500).

The first N questions of HotpotQA and of MuSiQue train100 (default 30 each), each read over
four paragraphs (its supporting ones first, then others of its own context, about the size
of what flat retrieval hands the reader), through the real reader (`answer`: few-shot
prompt, prefix cache, banned first words), once per variant, the order alternating:
- fp32: the export as it is (its answers are torch fp32's: bench/reader_runtimes.py);
- int8 dynamic, every MatMul (one activation scale per tensor);
- the same without the vocabulary projection (lm_head), without the MLP's down projection
  (its inputs carry SwiGLU's outliers), or without both;
- int8 block-wise (onnxruntime-genai's builder `-p int8`: MatMulNBits, 8-bit weights in
  blocks of 32, activations quantised per block of each row).
Per variant: answers identical to fp32's, EM/F1, the answer step's median seconds.

    python -m bench.reader_int8 [--limit 30] [--threads 2]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench.common import markdown_table, save
from bench.reader_prompts import train_questions
from engine.documents import Candidate, Document
from engine.metrics import exact_match, f1_score
from engine.models.gguf import smollm2_dir
from engine.models.onnx_export import last_position_logits, onnx_model_dir, quantise
from engine.paths import data_dir
from engine.readers.onnx_runtime import ORTGenerator
from engine.readers.reader import ReaderConfig, ReaderModels, answer
from engine.units.lazy import document_unit

LAYERS = 30
DOWN = tuple(f"/model/layers.{i}/mlp/down_proj/MatMul" for i in range(LAYERS))
HEAD = ("/lm_head/MatMul",)
DYNAMIC = {"int8 dynamic, all": (), "int8 dynamic, not lm_head": HEAD,
           "int8 dynamic, not down_proj": DOWN, "int8 dynamic, neither": DOWN + HEAD}


def variants(fp32: Path, root: Path) -> dict[str, Path]:
    """Each variant's folder under `root`, made from the fp32 export where missing."""
    found = {"fp32": fp32}
    for name, exclude in DYNAMIC.items():
        folder = root / name.replace(" ", "_").replace(",", "")
        if not (folder / "model.onnx").exists():
            folder.mkdir(parents=True, exist_ok=True)
            quantise(fp32 / "model.onnx", folder / "model.onnx", exclude)
            shutil.copy(fp32 / "genai_config.json", folder)
        found[name] = folder
    block = root / "int8_blockwise"
    if not (block / "model.onnx").exists():
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                        str(smollm2_dir()), "-o", str(block), "-p", "int8", "-e", "cpu",
                        "-c", str(root / "builder-cache"), "--extra_options",
                        "int4_accuracy_level=4"], check=True, capture_output=True)
        last_position_logits(block / "model.onnx")
    found["int8 block-wise (MatMulNBits)"] = block
    return found


def items(limit: int) -> list[dict]:
    found, per = [], {}
    for item in train_questions():
        if per.get(item["dataset"], 0) < limit:
            per[item["dataset"]] = per.get(item["dataset"], 0) + 1
            rest = [p for p in item["all"] if p not in item["paragraphs"]]
            item["read"] = (item["paragraphs"] + rest)[:4]
            found.append(item)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    folders = variants(onnx_model_dir("smollm2", "fp32"), data_dir() / "bench" / "onnx")
    generators = {name: ORTGenerator(folder=folder, threads=args.threads)
                  for name, folder in folders.items()}
    config = ReaderConfig(attention=False)
    questions = items(args.limit)
    rows = {name: [] for name in generators}
    names = list(generators)
    for n, item in enumerate(questions):
        read = [Candidate(document_unit(Document(f"p{i}", t, x)), 0.0, i)
                for i, (t, x) in enumerate(item["read"], start=1)]
        for name in names if n % 2 == 0 else names[::-1]:
            step = answer(item["question"], read, config, ReaderModels(generators[name]))
            rows[name].append((step.answer, step.seconds,
                               exact_match(step.answer, item["answers"]),
                               f1_score(step.answer, item["answers"])))
    base = [r[0] for r in rows["fp32"]]
    table, payload = [], {"questions": len(questions), "threads": args.threads}
    for name, found in rows.items():
        same = sum(a == b for (a, *_), b in zip(found, base, strict=True))
        payload[name] = {"same_as_fp32": same,
                         "EM": round(statistics.fmean(r[2] for r in found), 3),
                         "F1": round(statistics.fmean(r[3] for r in found), 3),
                         "answer_median_s": round(statistics.median(r[1] for r in found), 3)}
        p = payload[name]
        table.append([name, f"{same} / {len(found)}", f"{p['EM']:.3f} / {p['F1']:.3f}",
                      f"{p['answer_median_s']:.3f}"])
    print(markdown_table(["variant", "answers identical to fp32", "EM / F1",
                          "answer step median s"], table))
    save("reader_int8", payload)


if __name__ == "__main__":
    main()
