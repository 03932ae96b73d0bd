"""The reader in bf16 against fp32: answers, FiD post-ranking order, and speed, side by side.

Both precisions of the packaged SmolLM2 are loaded in one process and every question is
read by both, in alternating order (a drift in load hits both alike):
1. Answers: the default reader (few-shot prompt) over each question's gold supporting
   paragraphs, as `reader_prompts.py --context gold`: EM/F1 per precision, the share of
   identical answers, prompt tokens per second.
2. Post-ranking: FiD first-token attention (the funnel's post-ranker, its default scheme)
   over all of a HotpotQA question's own paragraphs (10: 2 supporting, 8 distractors):
   supporting-paragraph recall of the attention order at 2 and 4, the share of questions
   whose top-2 and whose full order agree, block-encoding tokens per second.
Training questions choose (`--split train`: HotpotQA + MuSiQue train100; post-ranking uses
the HotpotQA ones); `--split dev` reports on the first dev500 questions.

    python -m bench.reader_precision [--split train] [--limit N] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import markdown_table, opened, save
from bench.reader_prompts import dev_questions, train_questions
from engine.documents import Candidate, Document
from engine.metrics import exact_match, f1_score
from engine.models.loading import PRECISIONS, load_causal_lm
from engine.paradigms.funnel import FunnelConfig
from engine.readers.fid import FiDReader
from engine.readers.hf_generator import HFGenerator
from engine.readers.reader import ReaderConfig, answer
from engine.units.lazy import document_unit


def passages(paragraphs: list[tuple[str, str]]) -> list[Candidate]:
    return [Candidate(document_unit(Document(f"p{i}", t, x)), 0.0, i)
            for i, (t, x) in enumerate(paragraphs, start=1)]


def answers(items: list[dict], generators: dict[str, HFGenerator]) -> dict:
    config = ReaderConfig()
    rows = {p: [] for p in generators}
    for n, item in enumerate(items):
        for precision in PRECISIONS if n % 2 == 0 else PRECISIONS[::-1]:
            step = answer(item["question"], passages(item["paragraphs"]), config,
                          generator=generators[precision])
            rows[precision].append({"answer": step.answer,
                                    "EM": exact_match(step.answer, item["answers"]),
                                    "F1": f1_score(step.answer, item["answers"]),
                                    "tokens": step.prompt_tokens, "seconds": step.seconds})
    out = {p: {"EM": round(statistics.fmean(r["EM"] for r in rs), 3),
               "F1": round(statistics.fmean(r["F1"] for r in rs), 3),
               "tokens_per_s": round(sum(r["tokens"] for r in rs)
                                     / sum(r["seconds"] for r in rs)),
               "s_per_question": round(statistics.fmean(r["seconds"] for r in rs), 3)}
           for p, rs in rows.items()}
    same = [a["answer"] == b["answer"] for a, b in zip(*rows.values(), strict=True)]
    return {"questions": len(items), "by_precision": out,
            "same_answer": round(statistics.fmean(same), 3),
            "answers": {p: [r["answer"] for r in rs] for p, rs in rows.items()}}


def postranking(items: list[dict], readers: dict[str, FiDReader]) -> dict:
    config = FunnelConfig().reader
    orders = {p: [] for p in readers}
    recall = {p: {2: [], 4: []} for p in readers}
    tokens = {p: 0 for p in readers}
    seconds = {p: 0.0 for p in readers}
    for n, item in enumerate(items):
        gold = {t for t, _ in item["paragraphs"]}
        for precision in PRECISIONS if n % 2 == 0 else PRECISIONS[::-1]:
            out = readers[precision].read(item["question"], item["all"], config, answer=False)
            order = sorted(range(len(out.scores)), key=lambda i: -out.scores[i])
            orders[precision].append(order)
            tokens[precision] += out.input_tokens
            seconds[precision] += out.encode_seconds
            for k in recall[precision]:
                found = {item["all"][i][0] for i in order[:k]} & gold
                recall[precision][k].append(len(found) / len(gold))
    pairs = list(zip(*orders.values(), strict=True))
    return {"questions": len(items),
            "by_precision": {p: {"support_recall@2": round(statistics.fmean(recall[p][2]), 3),
                                 "support_recall@4": round(statistics.fmean(recall[p][4]), 3),
                                 "encode_tokens_per_s": round(tokens[p] / seconds[p])}
                             for p in readers},
            "same_top2": round(statistics.fmean(x[:2] == y[:2] for x, y in pairs), 3),
            "same_order": round(statistics.fmean(x == y for x, y in pairs), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev"), default="train")
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
    args = opened(parser)
    items = train_questions() if args.split == "train" else dev_questions()
    items = items[: args.limit] if args.limit else items
    hotpot = [i for i in items if i["dataset"].startswith("hotpotqa")]
    models = {p: load_causal_lm("smollm2", p) for p in PRECISIONS}
    generators = {p: HFGenerator("smollm2", *models[p]) for p in PRECISIONS}
    readers = {p: FiDReader("smollm2", *models[p]) for p in PRECISIONS}
    for p in PRECISIONS:  # warm-up
        answer(items[0]["question"], passages(items[0]["paragraphs"]), ReaderConfig(),
               generator=generators[p])
    started = time.perf_counter()
    report = {"split": args.split, "threads": args.threads,
              "answers": answers(items, generators)}
    report["postranking"] = postranking(hotpot, readers)
    report["seconds"] = round(time.perf_counter() - started)
    ans, post = report["answers"], report["postranking"]
    print(f"Answers over gold paragraphs, {ans['questions']} {args.split} questions "
          f"(identical answers: {ans['same_answer']})\n")
    print(markdown_table(["precision", "EM", "F1", "prompt tokens/s", "s/question"],
                         [[p, r["EM"], r["F1"], r["tokens_per_s"], r["s_per_question"]]
                          for p, r in ans["by_precision"].items()]))
    print(f"\nFiD post-ranking of each question's 10 paragraphs, {post['questions']} HotpotQA "
          f"questions (same top 2: {post['same_top2']}, same order: {post['same_order']})\n")
    print(markdown_table(["precision", "support recall@2", "support recall@4",
                          "block-encoding tokens/s"],
                         [[p, r["support_recall@2"], r["support_recall@4"],
                           r["encode_tokens_per_s"]]
                          for p, r in post["by_precision"].items()]))
    save(f"reader_precision_{args.split}", report)


if __name__ == "__main__":
    main()
