"""The reader every paradigm answers with: a prompt template over a generator, one LLM step.

`answer(question, passages, config)` packs the ranked passages (forward, reverse or sides),
builds the prompt (engine/readers/prompts.py), calls the generator (in-process model or
OpenAI-compatible endpoint), extracts the short answer and returns the call as an `LLMStep`
for the trace. With an in-process model the step also carries the first answer token's
attention over each passage (the Explore heatmap). `prompt="fid"` answers FiD-style
instead: each passage encoded on its own, the blocks fused, the answer decoded over all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from engine import allowed
from engine.config import check_config, param
from engine.documents import Candidate
from engine.errors import ConfigError, check_choice
from engine.readers import ablation, attention
from engine.readers.answers import YES_NO, is_yes_no_question, short_answer_of
from engine.readers.backends import (
    READER_PRECISIONS,
    Backend,
    backend_named,
    in_process_backend,
    known_backends,
)
from engine.readers.generator import Capabilities, Generation, Generator, prompt_text
from engine.readers.prompts import (
    TEMPLATES,
    BuiltPrompt,
    answer_prompt,
    extract_prompt,
    hyde_prompt,
)
from engine.text import clip_tokens, count_tokens, split_sentences
from engine.trace import LLMStep
from engine.trace_details import Ablation, ReadCount, ReaderAttention, deep_tuple

if TYPE_CHECKING:
    from engine.readers.fid import FiDReader

PROMPTS = (*TEMPLATES, "fid")
PACKINGS = ("forward", "reverse", "sides")


@dataclass(frozen=True)
class ReaderConfig:
    """Which model reads, how it is prompted, and how its attention scores passages."""

    model: str = param("smollm2", "reader model: an alias, a local folder or a hub id (with "
                       "an endpoint: the model name the server knows)")
    endpoint: str = param("", "an OpenAI-compatible server, by the name the operator allowed "
                          "it by (the app's --allow file; the command line also takes its "
                          "base URL); empty: the model in this process",
                          names="endpoints")
    backend: str = param("auto", "generator backend: transformers (the model in this "
                         "process, torch), onnx (the model in this process through ONNX "
                         "Runtime: torch fp32's answers, faster, no attention), openai (an "
                         "OpenAI-compatible server at endpoint), a plugin's, or auto (openai "
                         "when an endpoint is set; else onnx when the run asks for nothing "
                         "only torch gives: attention, ablation, the fid prompt, bf16; else "
                         "transformers)", choices=lambda: ("auto", *known_backends()))
    prompt: str = param("fewshot", "answer prompt template (fid: fused blocks)",
                        choices=PROMPTS)
    packing: str = param("reverse", "passage order in the prompt: forward (best first), "
                         "reverse (best last, next to the question), sides (best at both "
                         "ends)", choices=PACKINGS)
    aggregation: str = param("eq3", "attention scheme that scores passages (FunnelRAG Table 7)",
                             choices=attention.SCHEMES)
    lr: int = param(4, "representative tokens per passage (Eq. 3)", low=1, high=64)
    max_passage_tokens: int = param(192, "tokens read per passage; longer ones are cut",
                                    low=8, high=4096)
    max_answer_tokens: int = param(24, "longest answer, in model tokens", low=1, high=512)
    max_context_tokens: int = param(0, "tokens read over all passages, best first (the last "
                                    "one read is cut, later ones dropped); 0: no cap. "
                                    "Compare's equal reader budget sets it", low=0,
                                    high=100_000)
    precision: str = param("auto", "weights of an in-process model: fp32, bf16 (torch), int8 "
                           "(onnx), or auto (onnx: fp32; torch: bf16 where the CPU has "
                           "native bf16 units, else fp32)", choices=READER_PRECISIONS)
    attention: bool = param(True, "the first answer token's attention over the passages "
                            "(Explore's heatmap), where the backend gives it (torch); off, "
                            "the auto backend answers through ONNX Runtime (torch fp32's "
                            "answers, faster: docs/benchmarks/cpu.md, \"Reader runtimes side "
                            "by side\")")
    ablation: bool = param(False, "leave-one-out attribution: score the answer again with "
                           "each passage read left out, and say whether it changes "
                           "(engine/readers/ablation.py; its cost: "
                           "docs/benchmarks/diagnosis.md, \"Attention against leave-one-out "
                           "attribution\")")

    def __post_init__(self) -> None:
        check_choice("aggregation scheme", self.aggregation, attention.SCHEMES)
        check_config(self)
        # a model a request may not load is refused here, as an endpoint is (check_config)
        if not self.endpoint:
            allowed.check_model("model", self.model)
        backend = self.backend_of()
        if self.precision not in backend.precisions:
            others = [b.name for b in known_backends().values()
                      if self.precision in b.precisions and not b.remote]
            raise ConfigError(f"reader.precision {self.precision!r} is not one the "
                              f"{backend.name!r} backend runs ({', '.join(backend.precisions)})"
                              f"; {self.precision} runs on {' or '.join(others)}"
                              + (" (auto picks onnx with reader.attention off)"
                                 if "onnx" in others else "") + ".")
        if backend.remote and not self.endpoint:
            raise ConfigError(f"reader.backend {backend.name!r} reaches a server: set "
                              "reader.endpoint, e.g. http://127.0.0.1:8000/v1.")
        if self.endpoint and not backend.remote:
            raise ConfigError(f"reader.endpoint is set, but reader.backend {backend.name!r} "
                              "runs the model in this process; clear one of them.")
        can = ", ".join(backend.capabilities.names()) or "text alone"
        if self.prompt == "fid" and not backend.capabilities.attention:
            raise ConfigError(f"The 'fid' prompt reads passages through the reader's own "
                              f"attention, which the {backend.name!r} backend cannot give "
                              f"(it can: {can}); pick another prompt.")
        if self.ablation and not backend.capabilities.ablation:
            raise ConfigError(f"reader.ablation scores the answer under the prompt with each "
                              f"passage left out, which the {backend.name!r} backend cannot "
                              f"(it can: {can}); use the transformers backend or untick "
                              "ablation.")
        if self.ablation and self.prompt == "fid":
            raise ConfigError("Leave-one-out attribution (reader.ablation) leaves passages "
                              "out of one prompt; the 'fid' prompt reads each passage on its "
                              "own, so its answers cannot be attributed. Pick another prompt "
                              "(or leave ablation off).")

    def backend_of(self) -> Backend:
        """The backend that reads (`auto`: openai with an endpoint, else the fastest
        in-process backend that gives what the run asks for)."""
        if self.backend != "auto" or self.endpoint:
            return backend_named(self.backend, self.endpoint)
        wants = Capabilities(attention=self.attention or self.prompt == "fid",
                             ablation=self.ablation)
        return in_process_backend(wants, self.precision)


@dataclass(frozen=True)
class ReaderModels:
    """What the reader runs on, handed to it (engine.paradigms.resources.Reader, loaded): a
    generator (in-process model or OpenAI-compatible endpoint) and, for an in-process model,
    the FiD reader that shares its weights (None for an endpoint)."""

    generator: Generator
    fid: FiDReader | None = None


def answer(question: str, passages: Sequence[Candidate], config: ReaderConfig,
           reader: ReaderModels, purpose: str = "answer", *,
           template: str | None = None, max_new_tokens: int | None = None,
           sentences: bool = False) -> LLMStep:
    """The reader's answer over `passages` (ranked, best first), as one LLM step.

    The passages enter the prompt in `config.packing` order (FiD blocks have no order);
    `reader` is what reads (`config` says how). `template` and `max_new_tokens` override the
    config's prompt and answer length (LongRAG's long-answer turn); a step whose purpose is
    not "answer" carries no short answer. With `sentences` (passages a sentence cut left),
    the attention is kept per sentence too, for the heatmap's sentence rows.
    """
    offered = len(passages)
    passages = within_budget(passages, config.max_context_tokens)
    # under a token cap the step says how many of the passages offered it read
    capped = ReadCount(len(passages), offered) if config.max_context_tokens else None
    pairs = [(c.unit.title, c.unit.text) for c in passages]
    if config.prompt == "fid":
        step = _fid_answer(question, passages, pairs, config, purpose, reader.fid)
        return replace(step, capped=capped)
    generator = reader.generator
    passages, pairs = packed(passages, config)
    template = template or config.prompt
    max_new_tokens = max_new_tokens or config.max_answer_tokens
    built = answer_prompt(template, question, pairs)
    ablated, rows = None, ()
    if config.ablation:  # the answer, and the answer scored without each passage
        variants = [answer_prompt(template, question, pairs[:i] + pairs[i + 1:]).prompt
                    for i in range(len(pairs))]
        ablated = generator.ablate(built.prompt, variants, max_new_tokens=max_new_tokens,
                                   stop=built.stop, **_asks_of(generator, built, question))
        out = ablated.base
    else:
        asked = _asks_of(generator, built, question)
        rows = sentence_spans(built.spans, pairs) if sentences and asked.get("spans") else ()
        if rows:
            asked["spans"] = (*built.spans, *(span for _, span, _ in rows))
        out = generator.generate(built.prompt, max_new_tokens=max_new_tokens, stop=built.stop,
                                 **asked)
    attention_read = None
    if out.attention:
        whole = out.attention[:len(passages)]
        top = [attention.content_tokens(tokens.__getitem__, attn, config.lr)
               for attn, tokens in zip(whole, out.span_tokens[:len(passages)], strict=True)]
        attention_read = reader_attention(passages, whole, top, config.lr,
                                          range(len(passages)))
        if len(out.attention) > len(passages):
            attention_read = with_sentences(attention_read, out.attention[len(passages):],
                                            [(passages[i].unit.id, text) for i, _, text in rows],
                                            config.lr)
    found = ablation.record(ablated, [c.unit.id for c in passages],
                            short=purpose == "answer") if ablated else None
    return _step(purpose, generator, built, out, attention=attention_read, capped=capped,
                 answer=purpose == "answer", ablation=found)


def _asks_of(generator: Generator, built: BuiltPrompt, question: str = "",
          spans: bool = True) -> dict:
    """What a call asks of `generator` beyond the prompt, as far as it declares it can:
    attention over the passages' spans (the heatmap), a ban on opening words, the prompt's
    fixed opening to reuse. A backend without them answers from the text alone."""
    can = generator.capabilities
    asked = {"ban_first": _banned(question) if question and can.ban_first else (),
             "prefix": built.prefix if can.prefix_cache else ""}
    return {**asked, "spans": built.spans if can.attention else ()} if spans else asked


def _banned(question: str) -> tuple[str, ...]:
    """Words an answer may not open with: a small reader copies the worked examples' "no"
    into questions that are not yes/no questions."""
    return () if is_yes_no_question(question) else YES_NO


def _step(purpose: str, generator: Generator, built: BuiltPrompt, out: Generation,
          answer: bool = False, attention: ReaderAttention | None = None,
          capped: ReadCount | None = None, ablation: Ablation | None = None) -> LLMStep:
    """One generator call as the trace records it (its seconds: the answer's own, an
    ablation's are its own); with `answer`, the short answer it gave, ended at a whole word
    and flagged when the answer-token cap cut it."""
    short, cut = short_answer_of(out.text, out.at_cap) if answer else ("", False)
    return LLMStep(purpose=purpose, model=generator.name, prompt=prompt_text(built.prompt),
                   output=out.text, prompt_tokens=out.prompt_tokens,
                   output_tokens=out.output_tokens, seconds=out.seconds, answer=short,
                   attention=attention, capped=capped, cached_tokens=out.cached_tokens,
                   ablation=ablation, answer_cut=cut)


def extract_answer(question: str, long_answer: LLMStep, config: ReaderConfig,
                   reader: ReaderModels) -> LLMStep:
    """LongRAG's second turn: the short answer from the question and the long answer only."""
    generator = reader.generator
    built = extract_prompt(question, long_answer.output)
    out = generator.generate(built.prompt, max_new_tokens=config.max_answer_tokens,
                             stop=built.stop, **_asks_of(generator, built, question, spans=False))
    return _step("answer", generator, built, out, answer=True)


def hyde(question: str, config: ReaderConfig, reader: ReaderModels,
         max_new_tokens: int = 64) -> LLMStep:
    """HyDE: a pseudo-document that would answer `question`, written by the generator."""
    generator = reader.generator
    built = hyde_prompt(question)
    out = generator.generate(built.prompt, max_new_tokens=max_new_tokens, stop=built.stop,
                             **_asks_of(generator, built, spans=False))
    return _step("hyde", generator, built, out)


def within_budget(candidates: Sequence[Candidate], max_tokens: int,
                  min_clipped: int = 1) -> list[Candidate]:
    """The ranked candidates, best first, whose titles and texts fit `max_tokens` (0: all):
    the first one that does not fit is cut to the room left, if at least `min_clipped` of
    its text tokens fit, and nothing after it is read."""
    if not max_tokens:
        return list(candidates)
    out, left = [], max_tokens
    for cand in candidates:
        title = count_tokens(cand.unit.title)
        size = title + count_tokens(cand.unit.text)
        if size > left:
            room = left - title
            if room >= min_clipped:
                out.append(replace(cand, unit=replace(cand.unit,
                                                      text=clip_tokens(cand.unit.text, room))))
            break
        out.append(cand)
        left -= size
    return out


def packed(passages: Sequence[Candidate], config: ReaderConfig
           ) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The passages in the prompt's order (`config.packing`), and each one's (title, text)
    as the prompt reads it (cut to `config.max_passage_tokens`)."""
    order = [passages[i] for i in repack(len(passages), config.packing)]
    return order, [(c.unit.title, clip_tokens(c.unit.text, config.max_passage_tokens))
                   for c in order]


def repack(n: int, packing: str) -> list[int]:
    """The order in which `n` ranked passages (best first) go into the prompt.

    forward: best first; reverse: best last, next to the question (a small reader leans on
    what it read last); sides: the best at both ends, the weakest in the middle
    ("lost in the middle"), as in the best-practices paper's repacking.
    """
    if packing == "forward":
        return list(range(n))
    if packing == "reverse":
        return list(range(n))[::-1]
    front, back = list(range(0, n, 2)), list(range(1, n, 2))
    return front + back[::-1]


def _fid_answer(question: str, passages: Sequence[Candidate], pairs: list[tuple[str, str]],
                config: ReaderConfig, purpose: str, reader: FiDReader | None) -> LLMStep:
    if reader is None:
        raise ConfigError(f"The 'fid' prompt encodes each passage with the reader's own "
                          f"weights; the reader at {config.endpoint!r} is a server. Pick "
                          "another prompt, or run the model in this process.")
    out = reader.read(question, pairs, config)
    read = reader_attention(passages, tuple(out.token_attention), out.top_tokens, config.lr,
                            out.answered_from)
    layout = reader.layout
    # decoding stops at a line break or the end token before the cap, so a full count is it
    short, cut = short_answer_of(out.answer, out.answer_tokens >= config.max_answer_tokens)
    return LLMStep(purpose=purpose, model=reader.name,
                   prompt=f"{len(pairs)} fused blocks of: " + layout.head.format(title="<title>")
                   + "<passage>" + layout.tail.format(question=question) + layout.end,
                   output=out.answer, prompt_tokens=out.input_tokens,
                   output_tokens=out.answer_tokens,
                   seconds=out.encode_seconds + out.score_seconds + out.answer_seconds,
                   answer=short, attention=read, answer_cut=cut)


def sentence_spans(spans: Sequence[tuple[int, int]], pairs: Sequence[tuple[str, str]]
                   ) -> list[tuple[int, tuple[int, int], str]]:
    """(passage index, character span in the prompt, text) of every sentence of the passages
    read, in the prompt's order; `spans` are the passages' texts' spans (none for a chat
    prompt, whose attention is not kept)."""
    return [(i, (a + s, a + e), text[s:e])
            for i, ((a, _), (_, text)) in enumerate(zip(spans, pairs, strict=False))
            for s, e in split_sentences(text)]


def with_sentences(read: ReaderAttention, token_attention: Sequence[np.ndarray],
                   sentences: Sequence[tuple[str, str]], lr: int) -> ReaderAttention:
    """`read` with the heatmap cells of each sentence read ((passage id, text))."""
    cells = np.stack([attention.summary(a, lr) for a in token_attention])
    return replace(read, sentence_cells=deep_tuple(cells.round(6).tolist()),
                   sentence_passages=tuple(p for p, _ in sentences),
                   sentence_texts=tuple(t for _, t in sentences))


def reader_attention(passages: Sequence[Candidate], token_attention: Sequence[np.ndarray],
                     top_tokens: Sequence[Sequence[str]], lr: int,
                     answered_from: Sequence[int]) -> ReaderAttention:
    """What a trace keeps of the reader's attention: heatmap cells [passage, layer, head]
    over each passage's `lr` most attended tokens, and those tokens."""
    cells = np.stack([attention.summary(a, lr) for a in token_attention])
    return ReaderAttention(
        cells=deep_tuple(cells.round(6).tolist()),
        passages=tuple(c.unit.id for c in passages),
        top_tokens=tuple(tuple(t.strip() for t in tokens) for tokens in top_tokens),
        answered_from=tuple(passages[i].unit.id for i in answered_from))
