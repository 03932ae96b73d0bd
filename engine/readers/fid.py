"""Fusion-in-Decoder reading with a decoder-only LM, and FunnelRAG's attention post-ranking.

Each `question + passage` block is encoded on its own, in one right-padded batch with the
same position ids in every block, so cost grows linearly with the number of passages as in
FiD. The blocks' key/value caches are then laid side by side into one cache, padding masked,
and the answer is decoded attending to all of them. The attention the first decoded token
pays to each passage's own tokens gives its post-ranking score (engine.readers.attention); chat
template and question tokens repeat in every block and soak up attention, so they are not
scored. The answer can be decoded over the best-scored blocks only, reusing their caches.

Shortcuts taken on purpose: greedy decoding; the prompt's closing template tokens are
decoded at positions after the longest block (blocks are not position-aligned at their
ends); attention is `eager` throughout because the scoring step needs the weights.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from engine.readers import attention
from engine.readers.answers import LOOP_NGRAM, repeats_tail, short_answer
from engine.readers.prompts import fid_layout


class FiDSettings(Protocol):
    """What a FiD reader reads of the reader's options: an engine.readers.reader
    .ReaderConfig, which sits above this module (it checks its backend against the
    backends' table, whose in-process backends make FiD readers)."""

    max_passage_tokens: int
    aggregation: str
    lr: int
    max_answer_tokens: int


@dataclass(frozen=True)
class ReaderOutput:
    """Scores and attention for every passage read, and the answer."""

    answer: str
    scores: tuple[float, ...]
    attention: np.ndarray  # [passage, layer, head] over each passage's representative tokens
    top_tokens: tuple[tuple[str, ...], ...]
    answered_from: tuple[int, ...]  # indexes of the passages the answer was decoded over
    input_tokens: int
    answer_tokens: int
    encode_seconds: float  # block encoding
    score_seconds: float  # the first-token attention pass over all blocks
    answer_seconds: float  # greedy decoding over the chosen blocks
    # per passage, the raw first-token attention [layer, head, passage token]: any scheme or
    # lr can be re-scored from it without reading again (bench/postrank_gain.py)
    token_attention: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class _Blocks:
    keys: list  # per layer, [blocks, kv_heads, L, d]
    values: list
    mask: Any  # [blocks, L] 1 for real tokens
    spans: list[tuple[int, int]]  # passage token span inside each block
    ids: Any  # [blocks, L]


class FiDReader:
    """FiD over a Hugging Face causal LM (default: the packaged SmolLM2)."""

    def __init__(self, model: str = "smollm2", tokenizer: Any = None, lm: Any = None,
                 precision: str = "auto") -> None:
        if lm is None:
            from engine.models.loading import load_causal_lm

            tokenizer, lm = load_causal_lm(model, precision)
        self.name, self.tokenizer, self.model = model, tokenizer, lm
        self.layout = fid_layout(tokenizer)
        self.eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>") \
            if "<|im_end|>" in tokenizer.get_vocab() else tokenizer.eos_token_id

    # --- public ---------------------------------------------------------------------------

    def read(self, question: str, passages: Sequence[tuple[str, str]], config: FiDSettings,
             answer_top: int | None = None, answer: bool = True) -> ReaderOutput:
        """Score every (title, text) passage and, with `answer`, answer from the
        `answer_top` best (all passages when None) reusing their encoded blocks."""
        import torch

        from engine.models.loading import model_lock

        cfg = config
        with model_lock(self.model), torch.inference_mode():
            start = time.perf_counter()
            blocks = self._encode(question, passages, cfg.max_passage_tokens)
            encoded = time.perf_counter()
            attn = self._first_token_attention(blocks)
            scores = [attention.passage_score(a, cfg.aggregation, cfg.lr) for a in attn]
            scored = time.perf_counter()
            chosen = attention.best_indexes(scores, answer_top)
            answer_ids = self._generate(blocks, chosen, cfg.max_answer_tokens) if answer else []
            done = time.perf_counter()
        return ReaderOutput(
            answer=short_answer(self.tokenizer.decode(answer_ids, skip_special_tokens=True)),
            scores=tuple(scores),
            attention=np.stack([attention.summary(a, cfg.lr) for a in attn]),
            top_tokens=tuple(self._top_tokens(blocks, i, a, cfg.lr) for i, a in enumerate(attn)),
            answered_from=chosen,
            input_tokens=int(blocks.mask.sum()),
            answer_tokens=len(answer_ids),
            encode_seconds=encoded - start,
            score_seconds=scored - encoded,
            answer_seconds=done - scored,
            token_attention=tuple(attn),
        )

    # --- encoding -------------------------------------------------------------------------

    def _block_ids(self, question: str, title: str, text: str,
                   max_tokens: int) -> tuple[list[int], tuple]:
        encode = self.tokenizer.encode
        head = encode(self.layout.head.format(title=title), add_special_tokens=False)
        body = encode(text, add_special_tokens=False)[:max_tokens]
        tail = encode(self.layout.tail.format(question=question), add_special_tokens=False)
        return head + body + tail, (len(head), len(head) + len(body))

    def _encode(self, question: str, passages: Sequence[tuple[str, str]],
                max_tokens: int) -> _Blocks:
        import torch
        from transformers import DynamicCache

        built = [self._block_ids(question, t, x, max_tokens) for t, x in passages]
        length = max(len(ids) for ids, _ in built)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([b + [pad] * (length - len(b)) for b, _ in built])
        mask = torch.tensor([[1] * len(b) + [0] * (length - len(b)) for b, _ in built])
        # End-aligned positions: every block's last token sits at position length-1, right
        # before the decoded tokens, so no block is nearer to the answer than another.
        positions = torch.stack([torch.arange(length) + length - len(b) for b, _ in built])
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                         past_key_values=DynamicCache(config=self.model.config),
                         use_cache=True)
        cache = out.past_key_values
        return _Blocks([layer.keys for layer in cache.layers],
                       [layer.values for layer in cache.layers], mask,
                       [span for _, span in built], ids)

    def _fused_cache(self, blocks: _Blocks, chosen: Sequence[int]):
        """One cache holding the chosen blocks side by side: [1, heads, n*L, d] per layer."""
        from transformers import DynamicCache

        def fuse(t):
            t = t[list(chosen)]
            n, heads, length, dim = t.shape
            return t.permute(1, 0, 2, 3).reshape(1, heads, n * length, dim)

        data = [(fuse(k), fuse(v)) for k, v in zip(blocks.keys, blocks.values, strict=True)]
        return DynamicCache(ddp_cache_data=data, config=self.model.config)

    # --- decoding -------------------------------------------------------------------------

    def _prompt_end(self) -> list[int]:
        return self.tokenizer.encode(self.layout.end, add_special_tokens=False)

    def _step(self, cache, fused_mask, new_ids, position: int, output_attentions=False):
        import torch

        mask = torch.cat([fused_mask, torch.ones(1, len(new_ids), dtype=fused_mask.dtype)], 1)
        positions = torch.arange(position, position + len(new_ids)).unsqueeze(0)
        return self.model(input_ids=torch.tensor([new_ids]), attention_mask=mask,
                          position_ids=positions, past_key_values=cache, use_cache=True,
                          output_attentions=output_attentions)

    def _first_token_attention(self, blocks: _Blocks) -> list[np.ndarray]:
        """Per passage, `[layer, head, passage token]` attention of the first decoded token."""
        n, length = blocks.mask.shape
        cache = self._fused_cache(blocks, range(n))
        out = self._step(cache, blocks.mask.reshape(1, -1), self._prompt_end(), length,
                         output_attentions=True)
        # last prompt position = the step that predicts the first answer token
        rows = np.stack([a[0, :, -1, : n * length].detach().float().numpy()
                         for a in out.attentions])
        rows = rows.reshape(rows.shape[0], rows.shape[1], n, length)
        return [rows[:, :, i, a:b] for i, (a, b) in enumerate(blocks.spans)]

    def _generate(self, blocks: _Blocks, chosen: Sequence[int], max_tokens: int) -> list[int]:
        """Greedy answer over the chosen blocks' fused cache.

        SmolLM2 over fused blocks likes to open with "The answer is:" and then stop, so the
        end token is refused until `short_answer` of the text so far is non-empty; decoding
        stops at the first line break after some content, and when the answer starts to
        loop (its last 3 tokens repeat earlier ones, which are then dropped).
        """
        import torch

        cache = self._fused_cache(blocks, chosen)
        mask = blocks.mask[list(chosen)].reshape(1, -1)  # grows with every token fed
        new_ids, position, answer = self._prompt_end(), blocks.mask.shape[1], []
        for _ in range(max_tokens):
            out = self._step(cache, mask, new_ids, position)
            mask = torch.cat([mask, mask.new_ones(1, len(new_ids))], dim=1)
            position += len(new_ids)
            logits = out.logits[0, -1]
            said = short_answer(self.tokenizer.decode(answer, skip_special_tokens=True))
            if not said:
                logits[self.eos_id] = float("-inf")
            token = int(logits.argmax())
            if token == self.eos_id or (said and "\n" in self.tokenizer.decode([token])):
                break
            answer.append(token)
            if repeats_tail(answer):  # "2014S/S/S/S...": a loop, not an answer
                del answer[-LOOP_NGRAM:]
                break
            new_ids = [token]
        return answer

    def _top_tokens(self, blocks: _Blocks, i: int, attn: np.ndarray,
                    lr: int) -> tuple[str, ...]:
        start, _ = blocks.spans[i]
        return tuple(attention.content_tokens(
            lambda j: self.tokenizer.decode([int(blocks.ids[i, start + j])]), attn, lr))


_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _shared(model: str, precision: str) -> FiDReader:
    return FiDReader(model, precision=precision)


def shared_fid_reader(model: str = "smollm2", precision: str = "auto") -> FiDReader:
    """One FiD reader per model and precision for the whole process (it shares the loaded
    model)."""
    from engine.models.loading import resolve_precision

    with _LOCK:
        return _shared(model, resolve_precision(precision))


def loaded_fid_readers() -> int:
    """How many FiD readers are loaded (for the memory checks)."""
    return _shared.cache_info().currsize
