"""Encoder-decoder Fusion-in-Decoder (Izacard & Grave), behind the same reader interface.

Each `question: ... title: ... context: ...` block is encoded on its own; the encoder
states are laid side by side and the decoder generates the answer cross-attending to all
of them. The first generated token's cross-attention over each passage's context tokens
gives the post-ranking score (engine.readers.attention). Works with any seq2seq checkpoint (e.g.
flan-t5) by path or hub id; tested with a tiny randomly initialised T5.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from engine.readers import attention
from engine.readers.fid import FiDSettings, ReaderOutput


class Seq2SeqFiDReader:
    """FiD over a Hugging Face encoder-decoder model."""

    def __init__(self, model: str, tokenizer=None, lm=None) -> None:
        if lm is None:
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

            from engine.models.locations import resolve
            from engine.models.pretrained import from_pretrained

            location = resolve(model)
            tokenizer = from_pretrained(AutoTokenizer.from_pretrained, location)
            lm = from_pretrained(AutoModelForSeq2SeqLM.from_pretrained, location,
                                 attn_implementation="eager")
        lm.set_attn_implementation("eager")  # scoring needs the attention weights
        self.name, self.tokenizer, self.model = model, tokenizer, lm.eval()

    def read(self, question: str, passages: Sequence[tuple[str, str]], config: FiDSettings,
             answer_top: int | None = None, answer: bool = True) -> ReaderOutput:
        """Score every (title, text) passage and, with `answer`, answer from the
        `answer_top` best."""
        import torch

        with torch.inference_mode():
            start = time.perf_counter()
            states, mask, spans = self._encode(question, passages, config.max_passage_tokens)
            encoded = time.perf_counter()
            first = self._generate(states, mask, range(len(passages)), 1, attentions=True)
            attn = self._passage_attention(first, mask.shape[1], spans)
            cfg = config
            scores = [attention.passage_score(a, cfg.aggregation, cfg.lr) for a in attn]
            scored = time.perf_counter()
            chosen = attention.best_indexes(scores, answer_top)
            answer_ids = []
            if answer:
                out = self._generate(states, mask, chosen, cfg.max_answer_tokens)
                answer_ids = out.sequences[0, 1:].tolist()  # drop the decoder start token
            done = time.perf_counter()
        return ReaderOutput(
            answer=self.tokenizer.decode(answer_ids, skip_special_tokens=True).strip(),
            scores=tuple(scores),
            attention=np.stack([attention.summary(a, cfg.lr) for a in attn]),
            top_tokens=tuple(() for _ in passages),
            answered_from=chosen, input_tokens=int(mask.sum()),
            answer_tokens=len(answer_ids), encode_seconds=encoded - start,
            score_seconds=scored - encoded, answer_seconds=done - scored,
        )

    def _encode(self, question: str, passages: Sequence[tuple[str, str]], limit: int = 192):
        blocks, spans = [], []
        for title, text in passages:
            head = self.tokenizer.encode(f"question: {question} title: {title} context: ",
                                         add_special_tokens=False)
            body = self.tokenizer.encode(text, add_special_tokens=False)[:limit]
            blocks.append(head + body + [self.tokenizer.eos_token_id])
            spans.append((len(head), len(head) + len(body)))
        enc = self.tokenizer.pad({"input_ids": blocks}, return_tensors="pt")
        states = self.model.get_encoder()(input_ids=enc["input_ids"],
                                          attention_mask=enc["attention_mask"]).last_hidden_state
        return states, enc["attention_mask"], spans

    def _generate(self, states, mask, chosen, max_new_tokens: int, attentions: bool = False):
        from transformers.modeling_outputs import BaseModelOutput

        chosen = list(chosen)
        fused = states[chosen].reshape(1, -1, states.shape[-1])
        return self.model.generate(
            encoder_outputs=BaseModelOutput(last_hidden_state=fused),
            attention_mask=mask[chosen].reshape(1, -1), max_new_tokens=max_new_tokens,
            do_sample=False, num_beams=1, output_attentions=attentions,
            return_dict_in_generate=True)

    @staticmethod
    def _passage_attention(out, length: int, spans) -> list[np.ndarray]:
        """Per passage, `[layer, head, context token]` cross-attention of the first token."""
        rows = np.stack([layer[0, :, -1].detach().float().numpy()
                         for layer in out.cross_attentions[0]])  # [layers, heads, n*L]
        rows = rows.reshape(rows.shape[0], rows.shape[1], len(spans), length)
        return [rows[:, :, i, a:b] for i, (a, b) in enumerate(spans)]
