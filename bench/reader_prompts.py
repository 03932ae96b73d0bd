"""Reader EM/F1 per prompt template, given only each question's gold supporting paragraphs.

The engine's own reader (engine/readers/reader.py `answer`, greedy, the packaged SmolLM2)
reads the supporting paragraphs of each question in the order the file gives them, with
every template of engine/readers/prompts.py. The template is *chosen* on the training files
(HotpotQA train100 + MuSiQue train100, `--split train`) and *reported* on HotpotQA dev500
(`--split dev`); dev500 never decides anything.

    python bench/reader_prompts.py --split train [--templates fewshot,plain,chat,chat-fewshot]
    python bench/reader_prompts.py --split dev --templates fewshot,chat [--limit 500]

Prints one row per (template, dataset): EM, F1, mean prompt tokens, seconds per question
and prefill speed; saves every answer under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import markdown_table, save  # noqa: E402
from engine.metrics import exact_match, f1_score  # noqa: E402
from engine.paths import shared_data_dir  # noqa: E402
from engine.readers.prompts import TEMPLATES  # noqa: E402
from engine.readers.reader import ReaderConfig, answer  # noqa: E402
from engine.types import Candidate, Document  # noqa: E402
from engine.units.build import document_unit  # noqa: E402


def train_questions() -> list[dict]:
    """HotpotQA and MuSiQue train100: question, answers (aliases too), gold paragraphs."""
    root = shared_data_dir()
    out = []
    for item in json.loads((root / "hotpotqa" / "train100.json").read_text()):
        gold = {title for title, _ in item["supporting_facts"]}
        paras = [(t, " ".join(s.strip() for s in sents)) for t, sents in item["context"]
                 if t in gold]
        out.append({"dataset": "hotpotqa", "question": item["question"].strip(),
                    "answers": [item["answer"]], "paragraphs": paras})
    for item in json.loads((root / "musique" / "train100.json").read_text()):
        paras = [(p["title"], p["paragraph_text"].strip()) for p in item["paragraphs"]
                 if p["is_supporting"]]
        out.append({"dataset": "musique", "question": item["question"].strip(),
                    "answers": [item["answer"], *(item.get("answer_aliases") or [])],
                    "paragraphs": paras})
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
                    "answers": answers, "paragraphs": paras})
    return out


def read(item: dict, template: str) -> dict:
    passages = [Candidate(document_unit(Document(f"p{i}", t, x)), 0.0, i)
                for i, (t, x) in enumerate(item["paragraphs"], start=1)]
    step = answer(item["question"], passages, ReaderConfig(prompt=template,
                                                           max_answer_tokens=16))
    return {"question": item["question"], "dataset": item["dataset"], "template": template,
            "said": step.output, "answer": step.answer, "gold": item["answers"],
            "EM": exact_match(step.answer, item["answers"]),
            "F1": f1_score(step.answer, item["answers"]),
            "prompt_tokens": step.prompt_tokens, "seconds": step.seconds}


def summary(rows: list[dict]) -> dict:
    return {"questions": len(rows),
            "EM": round(statistics.fmean(r["EM"] for r in rows), 3),
            "F1": round(statistics.fmean(r["F1"] for r in rows), 3),
            "empty": sum(not r["answer"] for r in rows),
            "prompt_tokens": round(statistics.fmean(r["prompt_tokens"] for r in rows)),
            "s/question": round(statistics.fmean(r["seconds"] for r in rows), 3),
            "prompt tokens/s": round(sum(r["prompt_tokens"] for r in rows)
                                     / sum(r["seconds"] for r in rows))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("train", "dev"), default="train")
    parser.add_argument("--templates", default=",".join(TEMPLATES))
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
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
    rows, table = [], []
    read(items[0], "plain")  # warm-up: load the reader once, outside the timings
    for template in args.templates.split(","):
        started = time.perf_counter()
        mine = [read(item, template) for item in items]
        rows += mine
        for dataset in [*dict.fromkeys(r["dataset"] for r in mine), "all"]:
            part = [r for r in mine if dataset in ("all", r["dataset"])]
            table.append({"template": template, "dataset": dataset, **summary(part)})
        print(f"{template}: {len(mine)} questions in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
    print(markdown_table(list(table[0]), [list(row.values()) for row in table]))
    save(f"reader_prompts_{args.split}", {"summary": table, "rows": rows})


if __name__ == "__main__":
    main()
