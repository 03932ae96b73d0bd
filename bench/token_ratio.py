"""How our token count (words and punctuation, engine/text.py) relates to model tokenizers.

Counts the tokens of the pooled corpus's documents (a fixed sample) both ways: with
engine.text.count_tokens and with the SmolLM2 reader's and the MiniLM encoder's subword
tokenizers, both loaded from the packaged files, and prints the ratios.

    python -m bench.token_ratio [--sample 2000]
"""

from __future__ import annotations

import argparse
import random

from bench.common import markdown_table, save
from engine.data.corpus import load_corpus
from engine.models.packaged import minilm_path, smollm2_gguf_path
from engine.text import count_tokens


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
