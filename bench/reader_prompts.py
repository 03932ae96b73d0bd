"""Reader EM/F1 per prompt template and passage order, on gold or ranked paragraphs.

The engine's own reader (engine/readers/reader.py `answer`, greedy, the packaged SmolLM2)
answers each question from
- `--context gold`: only its gold supporting paragraphs, in the file's order (packing
  "forward"), with every template of engine/readers/prompts.py: this chooses the template;
- `--context ranked`: the top `--k` of the question's own paragraphs (the dataset's
  distractors included) ranked by the MiniLM bi-encoder, as a retriever would hand them
  over, in each `--packings` order: this chooses the packing.
Choices are made on the training files (HotpotQA train100 + MuSiQue train100, `--split
train`) and *reported* on HotpotQA dev500 (`--split dev`); dev500 never decides anything.

    python -m bench.reader_prompts --split train --context gold
    python -m bench.reader_prompts --split train --context ranked --templates fewshot
    python -m bench.reader_prompts --split dev --context gold --templates fewshot,chat
    python -m bench.reader_prompts --split train --context ranked --templates fewshot \
        --packings reverse --examples 3 4   # the worked examples: the first 3, then all 4

Prints one row per (template, dataset): EM, F1, mean prompt tokens, seconds per question
and prefill speed; saves every answer under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from bench.common import markdown_table, save
from engine.documents import Candidate, Document
from engine.metrics import exact_match, f1_score
from engine.paths import shared_data_dir
from engine.readers import prompts
from engine.readers.prompts import EXAMPLES, TEMPLATES
from engine.readers.reader import ReaderConfig, answer
from engine.units.lazy import document_unit


def train_questions() -> list[dict]:
    """HotpotQA and MuSiQue train100: question, answers (aliases too), gold paragraphs."""
    root = shared_data_dir()
    out = []
    for item in json.loads((root / "hotpotqa" / "train100.json").read_text()):
        gold = {title for title, _ in item["supporting_facts"]}
        paras = [(t, " ".join(s.strip() for s in sents)) for t, sents in item["context"]
                 if t in gold]
        out.append({"dataset": "hotpotqa", "question": item["question"].strip(),
                    "answers": [item["answer"]], "paragraphs": paras,
                    "all": [(t, " ".join(s.strip() for s in sents))
                            for t, sents in item["context"]]})
    for item in json.loads((root / "musique" / "train100.json").read_text()):
        paras = [(p["title"], p["paragraph_text"].strip()) for p in item["paragraphs"]
                 if p["is_supporting"]]
        out.append({"dataset": "musique", "question": item["question"].strip(),
                    "answers": [item["answer"], *(item.get("answer_aliases") or [])],
                    "paragraphs": paras,
                    "all": [(p["title"], p["paragraph_text"].strip())
                            for p in item["paragraphs"]]})
    return out


def dev_questions() -> list[dict]:
    """HotpotQA dev500 (contexts format): the evaluation set, reported, never tuned on."""
    out = []
    path = shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl"
    for line in path.read_text().splitlines():
        item = json.loads(line)
        answers = [span for obj in item["answers_objects"] for span in obj.get("spans", [])]
        paras = [(c["title"], c["paragraph_text"].strip()) for c in item["contexts"]
                 if c.get("is_supporting")]
        out.append({"dataset": "hotpotqa-dev500", "question": item["question_text"].strip(),
                    "answers": answers, "paragraphs": paras,
                    "all": [(c["title"], c["paragraph_text"].strip())
                            for c in item["contexts"]]})
    return out


def ranked(item: dict, k: int) -> list[tuple[str, str]]:
    """The question's own paragraphs, top `k` by MiniLM cosine (best first)."""
    from engine.index.encoding import encode

    texts = [f"{t}\n{x}" for t, x in item["all"]]
    scores = encode(texts) @ encode([item["question"]], queries=True)[0]
    return [item["all"][i] for i in sorted(range(len(texts)), key=lambda i: -scores[i])[:k]]


def read(item: dict, template: str, packing: str, paragraphs: list[tuple[str, str]]) -> dict:
    passages = [Candidate(document_unit(Document(f"p{i}", t, x)), 0.0, i)
                for i, (t, x) in enumerate(paragraphs, start=1)]
    config = ReaderConfig(prompt=template, packing=packing, max_answer_tokens=16)
    step = answer(item["question"], passages, config)
    gold = {t for t, _ in item["paragraphs"]}
    return {"question": item["question"], "dataset": item["dataset"], "template": template,
            "packing": packing, "gold_read": sum(t in gold for t, _ in paragraphs),
            "said": step.output, "answer": step.answer, "gold": item["answers"],
            "EM": exact_match(step.answer, item["answers"]),
            "F1": f1_score(step.answer, item["answers"]),
            "prompt_tokens": step.prompt_tokens, "seconds": step.seconds}


def summary(rows: list[dict]) -> dict:
    return {"questions": len(rows),
            "EM": round(statistics.fmean(r["EM"] for r in rows), 3),
            "F1": round(statistics.fmean(r["F1"] for r in rows), 3),
            "empty": sum(not r["answer"] for r in rows),
            "gold read": round(statistics.fmean(r["gold_read"] for r in rows), 2),
            "prompt_tokens": round(statistics.fmean(r["prompt_tokens"] for r in rows)),
            "s/question": round(statistics.fmean(r["seconds"] for r in rows), 3),
            "prompt tokens/s": round(sum(r["prompt_tokens"] for r in rows)
                                     / sum(r["seconds"] for r in rows))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("train", "dev"), default="train")
    parser.add_argument("--context", choices=("gold", "ranked"), default="gold")
    parser.add_argument("--templates", default=",".join(TEMPLATES))
    parser.add_argument("--packings", default="forward,reverse,sides",
                        help="passage orders tried with --context ranked")
    parser.add_argument("-k", type=int, default=4, help="paragraphs read with --context ranked")
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
    parser.add_argument("--examples", type=int, nargs="+", default=[len(EXAMPLES)],
                        help="worked examples in the few-shot templates: each count given "
                             "runs with the first N of engine/readers/prompts.py's")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (2 threads on 2 busy cores run 10x slower)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    items = (train_questions() if args.split == "train" else dev_questions())
    if args.limit:
        items = items[: args.limit] if args.split == "dev" else \
            [x for ds in ("hotpotqa", "musique")
             for x in [i for i in items if i["dataset"] == ds][: args.limit]]
    contexts = [item["paragraphs"] if args.context == "gold" else ranked(item, args.k)
                for item in items]
    packings = ["forward"] if args.context == "gold" else args.packings.split(",")
    rows, table = [], []
    read(items[0], "plain", "forward", contexts[0])  # warm-up: load the reader once
    for template in args.templates.split(","):
        for packing in packings:
            for examples in args.examples:
                prompts.EXAMPLES = EXAMPLES[:examples]  # what the templates read
                started = time.perf_counter()
                mine = [{**read(item, template, packing, ctx), "examples": examples}
                        for item, ctx in zip(items, contexts, strict=True)]
                rows += mine
                for dataset in [*dict.fromkeys(r["dataset"] for r in mine), "all"]:
                    part = [r for r in mine if dataset in ("all", r["dataset"])]
                    table.append({"template": template, "packing": packing,
                                  "examples": examples, "dataset": dataset, **summary(part)})
                print(f"{template} {packing} {examples} examples: {len(mine)} questions in "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    prompts.EXAMPLES = EXAMPLES
    print(markdown_table(list(table[0]), [list(row.values()) for row in table]))
    save(f"reader_prompts_{args.split}_{args.context}", {"summary": table, "rows": rows})


if __name__ == "__main__":
    main()
