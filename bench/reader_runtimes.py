"""Reader runtimes side by side: torch (fp32, bf16; with and without the attention heatmap),
ONNX Runtime (fp32, int8) and llama.cpp (GGUF quantisations, in their own virtualenvs).

1. Answer step: the first N HotpotQA dev500 questions (default 200), each read as flat
   retrieval read it in bench/ablation.py's stored runs (data/bench/ablation_traces.jsonl,
   its passages), through the real reader (`engine.readers.reader.answer`: few-shot prompt,
   prefix cache, banned first words, stop strings) once per runtime, the runtimes' order
   alternating per question. Per runtime: the answer step's median and mean seconds, EM/F1,
   and how many answers are identical to today's default (torch with the heatmap).
2. LongRAG: the first M of those questions (default 30) through LongRAG's retrieval once,
   then its two reader turns (long answer over ~4k tokens, extraction) per runtime.
3. Throughput: on the first 20 answer prompts, a whole-prompt prefill (no prefix cache) and
   16 greedy decode steps per runtime: prefill and decode tokens per second. llama.cpp runs
   here too, on the same token ids, in a child process per build (`--llama NAME=PYTHON`),
   with greedy answers under the same opening rules for the identical-answer count.

    python -m bench.reader_runtimes [--limit 200] [--longrag 30] [--threads 2]
        [--llama avx2=.venvs/llama-server/bin/python --gguf q4_1=PATH ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from bench.common import dev500_questions, markdown_table, opened, save, shown_cpu_flags
from engine.metrics import exact_match, f1_score
from engine.models.loading import NATIVE_BF16_FLAGS, cpu_flags
from engine.paths import data_dir
from engine.readers.answers import YES_NO, is_yes_no_question, short_answer
from engine.readers.prompts import answer_prompt
from engine.readers.reader import ReaderConfig, ReaderModels, answer, packed
from engine.trace import RunTrace

BASELINE = "torch bf16 + heatmap"
class Blind:
    """A generator without its attention: a run that shows no heatmap."""

    def __init__(self, generator) -> None:
        self.generator, self.name = generator, generator.name
        self.capabilities = replace(generator.capabilities, attention=False)

    def generate(self, prompt, **kwargs):
        return self.generator.generate(prompt, **kwargs)


def runtimes(threads: int) -> dict:
    from engine.readers.hf_generator import HFGenerator
    from engine.readers.onnx_runtime import ORTGenerator

    fp32, bf16 = HFGenerator(precision="fp32"), HFGenerator(precision="bf16")
    return {"torch fp32 + heatmap": fp32, "torch fp32": Blind(fp32),
            BASELINE: bf16, "torch bf16": Blind(bf16),
            "onnx fp32": ORTGenerator(precision="fp32", threads=threads),
            "onnx int8": ORTGenerator(precision="int8", threads=threads)}


def flat_reads(limit: int) -> list[RunTrace]:
    """The flat runs of bench/ablation.py, question by question (their reader's input);
    where it has not run here, flat's retrieval at its defaults over the pooled corpus,
    which gives the passages those runs read (kept in data/bench/flat_reads.jsonl)."""
    path = data_dir() / "bench" / "ablation_traces.jsonl"
    if not path.exists():
        path = flat_retrievals(limit)
    found = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if '"paradigm": "flat"' in line[:2000]:
                trace = RunTrace.from_json(line)
                if trace.paradigm == "flat":
                    found.append(trace)
            if len(found) == limit:
                break
    return found


def flat_retrievals(limit: int):
    """The first `limit` dev500 questions through flat's retrieval (no reader), saved."""
    from engine.data.corpus import load_corpus
    from engine.service.store import make_paradigm

    path = data_dir() / "bench" / "flat_reads.jsonl"
    if path.exists() and sum(1 for _ in path.open(encoding="utf-8")) >= limit:
        return path
    flat = make_paradigm("flat", load_corpus("pooled"), retrieval_only=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for question in dev500_questions(limit):
            out.write(flat.run(question).to_json() + "\n")
    return path


def answer_steps(traces: list[RunTrace], generators: dict, config: ReaderConfig) -> dict:
    rows = {name: [] for name in generators}
    names = list(generators)
    for n, trace in enumerate(traces):
        gold = trace.gold.answers if trace.gold else ()
        for name in names if n % 2 == 0 else names[::-1]:
            step = answer(trace.question, trace.read, config, ReaderModels(generators[name]))
            rows[name].append({"answer": step.answer, "seconds": step.seconds,
                               "tokens": step.prompt_tokens, "cached": step.cached_tokens,
                               "out": step.output_tokens,
                               "EM": exact_match(step.answer, gold),
                               "F1": f1_score(step.answer, gold)})
    return rows


def longrag_steps(questions, generators: dict, threads: int) -> dict:
    """LongRAG's two reader turns per runtime over its own retrieval's context."""
    from engine.data.corpus import load_corpus
    from engine.readers.prompts import LONG_ANSWER
    from engine.readers.reader import extract_answer
    from engine.service.store import make_paradigm

    paradigm = make_paradigm("longrag", load_corpus("pooled"), {})
    cfg = paradigm.config
    rows = {name: [] for name in generators}
    names = list(generators)
    for n, question in enumerate(questions):
        context = list(paradigm.steps(question.text))[1].candidates  # units, then context
        for name in names if n % 2 == 0 else names[::-1]:
            models = ReaderModels(generators[name])
            start = time.perf_counter()
            long = answer(question.text, context, cfg.reader, models, purpose="long answer",
                          template=LONG_ANSWER, max_new_tokens=cfg.long_answer_tokens)
            short = extract_answer(question.text, long, cfg.reader, models)
            rows[name].append({"seconds": time.perf_counter() - start,
                               "tokens": long.prompt_tokens, "answer": short.answer,
                               "EM": exact_match(short.answer, question.answers)})
    return rows


def prompt_ids(traces: list[RunTrace], tokenizer, config: ReaderConfig) -> list[list[int]]:
    """The answer prompts' token ids as `answer` builds them."""
    out = []
    for trace in traces:
        _, pairs = packed(trace.read, config)
        text = answer_prompt(config.prompt, trace.question, pairs).prompt
        out.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return out


def throughput(generators: dict, prompts: list[list[int]], decode: int = 16) -> dict:
    """Whole-prompt prefill and `decode` greedy steps, tokens per second (medians)."""
    import torch

    found = {}
    for name, generator in generators.items():
        if "heatmap" in name:  # the same model as its blind twin
            continue
        generator = getattr(generator, "generator", generator)
        pre, dec = [], []
        for ids in prompts:
            with torch.inference_mode():
                cache = generator._new_cache()
                start = time.perf_counter()
                logits = _forward(generator, ids, 0, cache)
                pre.append(len(ids) / (time.perf_counter() - start))
                start, position = time.perf_counter(), len(ids)
                for _ in range(decode):
                    logits = _forward(generator, [int(logits.argmax())], position, cache)
                    position += 1
                dec.append(decode / (time.perf_counter() - start))
        found[name] = {"prefill_tok_s": round(statistics.median(pre)),
                       "decode_tok_s": round(statistics.median(dec), 1)}
    return found


def _forward(generator, ids, position, cache):
    out = generator._forward(ids, position, cache)
    return out if not hasattr(out, "logits") else out.logits[0, -1]


LLAMA_CHILD = r"""
import json, sys, time
import numpy as np
from llama_cpp import Llama
spec = json.load(open(sys.argv[1]))
llm = Llama(spec["gguf"], n_ctx=8192, n_threads=spec["threads"], n_threads_batch=spec["threads"],
            n_batch=512, verbose=False)
refused, eos, out = set(spec["refused"]), set(spec["eos"]), {"answers": [], "prefill": [],
                                                             "decode": [], "seconds": []}
def last_logits():
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()
previous = []
for ids, banned in zip(spec["prompts"], spec["banned"]):
    start = time.perf_counter()
    common = 0
    for a, b in zip(previous, ids[:-1]):
        if a != b: break
        common += 1
    llm.n_tokens = common
    llm.eval(ids[common:])
    said, text = [], ""
    while len(said) < spec["max_new"]:
        row = last_logits()
        if not text.strip():
            for t in refused | set(banned): row[t] = -1e30
        token = int(row.argmax())
        if token in eos: break
        said.append(token)
        text = llm.detokenize(said).decode("utf-8", "ignore")
        if any(s in text.lstrip() for s in spec["stop"] if s): break
        llm.eval([token])
    out["answers"].append(said); out["seconds"].append(time.perf_counter() - start)
    previous = ids
for ids in spec["prompts"][:spec["throughput"]]:
    llm.reset(); llm.n_tokens = 0
    start = time.perf_counter(); llm.eval(ids)
    out["prefill"].append(len(ids) / (time.perf_counter() - start))
    start = time.perf_counter()
    for _ in range(16):
        llm.eval([int(last_logits().argmax())])
    out["decode"].append(16 / (time.perf_counter() - start))
print(json.dumps(out))
"""


def llama_cpp(python: str, gguf: str, prompts, banned, generator, config, threads: int,
              stop) -> dict:
    spec = {"gguf": gguf, "threads": threads, "prompts": prompts, "banned": banned,
            "refused": sorted(generator._line_break_ids), "eos": sorted(generator.eos_ids),
            "max_new": config.max_answer_tokens, "stop": list(stop), "throughput": 20}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(spec, handle)
    done = subprocess.run([python, "-c", LLAMA_CHILD, handle.name], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--longrag", type=int, default=30)
    parser.add_argument("--llama", nargs="*", default=[], help="NAME=PYTHON of a llama.cpp "
                        "build's virtualenv")
    parser.add_argument("--gguf", nargs="*", default=[], help="NAME=PATH of GGUF files")
    parser.add_argument("--out", default="reader_runtimes")
    args = opened(parser)

    config = ReaderConfig()
    generators = runtimes(args.threads)
    traces = flat_reads(args.limit)
    for generator in generators.values():  # warm-up: prefix states, first-call costs
        answer(traces[0].question, traces[0].read, config, ReaderModels(generator))
    wall = time.perf_counter()
    rows = answer_steps(traces, generators, config)
    wall = time.perf_counter() - wall
    hf = generators[BASELINE]
    ids = prompt_ids(traces, hf.tokenizer, config)
    flops = throughput(generators, ids[:20])

    # llama.cpp builds x GGUF files, in their own processes
    built = answer_prompt(config.prompt, traces[0].question, [("t", "x")])
    yes_no = sorted(hf._first_token_ids(YES_NO))  # as the reader's _banned does
    banned = [[] if is_yes_no_question(t.question) else yes_no for t in traces]
    report(rows, {}, flops, traces, args, wall)  # saved now: the children may fail
    for build in args.llama:
        build_name, python = build.split("=", 1)
        for gguf in args.gguf:
            gguf_name, path = gguf.split("=", 1)
            name = f"llama.cpp {build_name} {gguf_name}"
            try:
                got = llama_cpp(python, path, ids, banned, hf, config, args.threads,
                                built.stop)
            except subprocess.CalledProcessError as err:
                logging.warning("%s failed: %s", name, err.stderr[-500:])
                continue
            answers = [short_answer(hf._said(a, built.stop)) for a in got["answers"]]
            rows[name] = [{"answer": a, "seconds": s, "EM": exact_match(a, t.gold.answers),
                           "F1": f1_score(a, t.gold.answers), "tokens": len(i), "cached": 0}
                          for a, s, t, i in zip(answers, got["seconds"], traces, ids,
                                                strict=True)]
            flops[name] = {"prefill_tok_s": round(statistics.median(got["prefill"])),
                           "decode_tok_s": round(statistics.median(got["decode"]), 1)}

    report(rows, {}, flops, traces, args, wall)
    long_rows = longrag_steps(dev500_questions(args.longrag),
                              {k: v for k, v in generators.items() if "heatmap" not in k},
                              args.threads) if args.longrag else {}
    report(rows, long_rows, flops, traces, args, wall)


def report(rows: dict, long_rows: dict, flops: dict, traces, args, wall: float) -> None:
    """Print the table and save the figures (called after each part)."""
    base = [r["answer"] for r in rows[BASELINE]]
    fp32 = [r["answer"] for r in rows["torch fp32"]]
    flags = shown_cpu_flags()
    payload = {"questions": len(traces), "threads": args.threads, "cpu_flags": flags,
               "native_bf16": bool(NATIVE_BF16_FLAGS & cpu_flags()),
               "answer_wall_s": round(wall, 1), "runtimes": {}}
    table = []
    for name, found in rows.items():
        seconds = [r["seconds"] for r in found]
        answers = [r["answer"] for r in found]
        lr = long_rows.get(name, [])
        entry = {"answer_median_s": round(statistics.median(seconds), 3),
                 "answer_mean_s": round(statistics.fmean(seconds), 3),
                 "EM": round(statistics.fmean(r["EM"] for r in found), 3),
                 "F1": round(statistics.fmean(r["F1"] for r in found), 3),
                 "same_as_default": sum(a == b for a, b in zip(answers, base, strict=True)),
                 "same_as_torch_fp32": sum(a == b for a, b in zip(answers, fp32, strict=True)),
                 "prompt_tokens_median": statistics.median(r["tokens"] for r in found),
                 "cached_tokens_median": statistics.median(r["cached"] for r in found),
                 **flops.get(name, {})}
        if lr:
            entry.update(longrag_median_s=round(statistics.median(r["seconds"] for r in lr), 2),
                         longrag_tokens=statistics.median(r["tokens"] for r in lr),
                         longrag_EM=round(statistics.fmean(r["EM"] for r in lr), 3))
        payload["runtimes"][name] = entry
        table.append([name, f"{entry['answer_median_s']:.3f}", f"{entry['answer_mean_s']:.3f}",
                      f"{entry['EM']:.3f} / {entry['F1']:.3f}",
                      f"{entry['same_as_default']} / {entry['same_as_torch_fp32']}",
                      entry.get("prefill_tok_s", "-"), entry.get("decode_tok_s", "-"),
                      f"{entry['longrag_median_s']:.2f} ({entry['longrag_EM']:.3f})"
                      if lr else "-"])
    print(markdown_table(
        ["runtime", "answer step median s", "mean s", "EM / F1",
         f"answers identical to {BASELINE} / to torch fp32 (of {len(traces)})",
         "prefill tok/s", "decode tok/s", "LongRAG reader median s (EM)"], table))
    print(f"\nCPU flags: {' '.join(flags)}; {args.threads} threads; "
          f"{len(traces)} questions in {wall:.0f} s")
    save(args.out, payload)


if __name__ == "__main__":
    sys.exit(main())
