"""Reader cost: tokens per second of FiD block encoding and of fused decoding.

For 2, 4, 8 and 16 passages (HotpotQA train paragraphs, question of the same item), the
SmolLM2 FiD reader encodes the blocks, scores them with the first-token attention pass and
decodes up to 24 answer tokens over all of them; each setting runs 5 questions and the
medians are printed. FiD's promise is that encoding cost grows linearly with the passages.

    python -m bench.reader_cost [--questions 5]
"""

from __future__ import annotations

import argparse
import json
import statistics

from bench.common import markdown_table, save
from engine.paths import shared_data_dir

SIZES = (2, 4, 8, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    from engine.readers.fid import FiDReader
    from engine.readers.reader import ReaderConfig

    reader, config = FiDReader(), ReaderConfig()
    data = json.loads((shared_data_dir() / "hotpotqa" / "train100.json").read_text())
    pool = [(t, "".join(s).strip()) for item in data for t, s in item["context"]]
    reader.read(data[0]["question"], pool[:2], config)  # warm-up
    report, rows = {}, []
    for n in SIZES:
        runs = []
        for q in range(args.questions):
            item = data[q + 1]
            passages = pool[q * 16: q * 16 + n]
            out = reader.read(item["question"], passages, config)
            runs.append(out)
        enc = statistics.median(o.input_tokens / o.encode_seconds for o in runs)
        dec = statistics.median(max(o.answer_tokens, 1) / o.answer_seconds for o in runs)
        report[n] = {
            "input_tokens": statistics.median(o.input_tokens for o in runs),
            "encode_seconds": statistics.median(o.encode_seconds for o in runs),
            "encode_tokens_per_s": round(enc, 1),
            "score_seconds": statistics.median(o.score_seconds for o in runs),
            "answer_seconds": statistics.median(o.answer_seconds for o in runs),
            "answer_tokens_per_s": round(dec, 2),
        }
        r = report[n]
        rows.append([n, int(r["input_tokens"]), f"{r['encode_seconds']:.2f}",
                     r["encode_tokens_per_s"], f"{r['score_seconds']:.2f}",
                     f"{r['answer_seconds']:.2f}", r["answer_tokens_per_s"]])
    save("reader_cost", report)
    print(markdown_table(["passages", "reader tokens", "encode s", "encode tok/s", "score s",
                          "answer s", "answer tok/s"], rows))


if __name__ == "__main__":
    main()
