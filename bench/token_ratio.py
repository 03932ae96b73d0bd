"""How our token count (words and punctuation, engine/text.py) relates to model tokenizers.

Counts the tokens of the pooled corpus's documents (a fixed sample) both ways: with
engine.text.count_tokens and with the SmolLM2 reader's and the MiniLM encoder's subword
tokenizers, both loaded from the packaged files, and prints the ratios.

    python bench/token_ratio.py [--sample 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import markdown_table, save  # noqa: E402
from engine.data.corpus import load_corpus  # noqa: E402
from engine.models.packaged import minilm_path, smollm2_gguf_path  # noqa: E402
from engine.text import count_tokens  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=2000)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    docs = load_corpus("pooled").documents
    texts = [d.text for d in random.Random(0).sample(docs, args.sample)]
    ours = sum(count_tokens(t) for t in texts)
    words = sum(len(t.split()) for t in texts)
    gguf = smollm2_gguf_path()
    tokenizers = {
        "SmolLM2 (reader)": AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name),
        "MiniLM (encoder)": AutoTokenizer.from_pretrained(minilm_path()),
    }
    rows = [["engine.text tokens", ours, "1.00"],
            ["whitespace words", words, f"{words / ours:.2f}"]]
    report = {"documents": len(texts), "engine_tokens": ours, "words": words}
    for name, tok in tokenizers.items():
        n = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
        rows.append([name, n, f"{n / ours:.2f}"])
        report[name] = n
    save("token_ratio", report)
    print(f"{len(texts)} pooled-corpus documents\n")
    print(markdown_table(["counter", "tokens", "per engine token"], rows))


if __name__ == "__main__":
    main()
