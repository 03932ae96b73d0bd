"""The encoder-decoder FiD path on a tiny randomly initialised T5 built here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.readers.fid_seq2seq import Seq2SeqFiDReader
from engine.readers.reader import ReaderConfig

PASSAGES = [("Danube", "The Danube flows through Budapest."),
            ("Vienna", "Vienna is the capital of Austria, on the Danube river."),
            ("Seurat", "Georges Seurat painted with dots.")]


@pytest.fixture(scope="module")
def reader() -> Seq2SeqFiDReader:
    from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    tokenizer = ByT5Tokenizer()
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=8, num_layers=2,
                      num_decoder_layers=2, num_heads=4, decoder_start_token_id=0,
                      pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config)
    return Seq2SeqFiDReader("tiny-t5", tokenizer, model)


CONFIG = ReaderConfig(model="tiny-t5", max_answer_tokens=5, aggregation="mean_tokens")


def test_scores_attention_and_answer_shapes(reader):
    out = reader.read("Which river flows through Budapest?", PASSAGES, CONFIG, answer_top=2)
    assert len(out.scores) == 3 and all(s > 0 for s in out.scores)
    assert out.attention.shape == (3, 2, 4)  # passages x decoder layers x heads
    assert len(out.answered_from) == 2
    top_two = sorted(np.argsort(-np.array(out.scores))[:2].tolist())
    assert list(out.answered_from) == top_two
    assert isinstance(out.answer, str) and out.answer_tokens <= 5
    assert out.input_tokens > sum(len(t) for _, t in PASSAGES)  # bytes + prompts


def test_attention_mass_over_all_blocks_is_at_most_one(reader):
    """The first token's cross-attention is one softmax over every block's tokens, so the
    attention summed over all passages' context tokens cannot exceed 1 per head."""
    states, mask, spans = reader._encode("Which river?", PASSAGES)
    out = reader._generate(states, mask, range(3), 1, attentions=True)
    attn = reader._passage_attention(out, mask.shape[1], spans)
    total = sum(a.sum(axis=-1) for a in attn)  # [layers, heads]
    assert np.all(total <= 1.0 + 1e-5) and np.all(total > 0)


def test_deterministic(reader):
    a = reader.read("Who painted with dots?", PASSAGES, CONFIG)
    b = reader.read("Who painted with dots?", PASSAGES, CONFIG)
    assert a.scores == b.scores and a.answer == b.answer
