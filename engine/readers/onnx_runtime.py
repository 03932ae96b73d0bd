"""The reader's model in ONNX Runtime: the "onnx" generator backend.

The model is exported once (engine/models/onnx_export.py), fp32 unless int8 is asked;
prompts are rendered, tokenised and decoded greedily by the same code as the torch path
(engine/readers/greedy.py), so the two differ only in the logits they compute. The prompt's
fixed opening is read once (engine/readers/prefix_cache.py, on this runtime's key/value
arrays). What it cannot give: attention weights (ONNX Runtime's fused attention returns
none, so no heatmap, FiD post-ranking or "fid" prompt) and leave-one-out attribution;
calls are answered one at a time.

Measured against torch on 200 dev500 prompts: docs/benchmarks/cpu.md, "Reader runtimes side by
side".
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.models.locations import resolve
from engine.models.onnx_export import onnx_model_dir, runtime_shape
from engine.models.pretrained import from_pretrained
from engine.readers.generator import Capabilities, Generation, GeneratorError, Prompt
from engine.readers.greedy import TokenGenerator
from engine.readers.prefix_cache import PrefixCache

logger = logging.getLogger(__name__)


class ORTGenerator(TokenGenerator):
    """Greedy generation with a causal LM exported to ONNX, in this process."""

    capabilities = Capabilities(ban_first=True, prefix_cache=True, logprobs=True)

    def __init__(self, model: str = "smollm2", precision: str = "fp32",
                 threads: int = 0, folder: Path | None = None) -> None:
        """`model` exported in `precision` (engine/models/onnx_export.py), or the export
        in `folder` (a variant a benchmark made); `threads`: 0 for torch's count."""
        import onnxruntime as ort
        import torch
        from transformers import AutoTokenizer

        folder = folder or onnx_model_dir(model, precision)
        super().__init__(from_pretrained(AutoTokenizer.from_pretrained, resolve(model),
                                         local_files_only=True))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its warnings about unused initialisers are noise
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.name, self.precision = f"{model} (onnx {precision})", precision
        self.heads, self.head_size = runtime_shape(folder)
        self.layers = sum(i.name.endswith(".key") for i in self.session.get_inputs())
        outputs = [o.name for o in self.session.get_outputs()]
        self._read = ["logits", *(f"present.{i}.{kind}" for i in range(self.layers)
                                  for kind in ("key", "value"))]
        self._past = [(f"past_key_values.{i}.key", f"past_key_values.{i}.value")
                      for i in range(self.layers)]
        missing = set(self._read) - set(outputs)
        if missing:
            raise GeneratorError(f"The ONNX model of {model!r} has no outputs "
                                 f"{', '.join(sorted(missing))}; export it again.")
        self.prefix_cache = PrefixCache(self._forward, self._new_cache)
        self.lock = threading.Lock()

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 32, stop: tuple[str, ...] = (),
                 spans: tuple[tuple[int, int], ...] = (),
                 ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Generation:
        """As `Generator.generate`; `spans` (attention) are refused."""
        if spans:
            raise GeneratorError("The onnx backend cannot give attention weights (ONNX "
                                 "Runtime's fused attention returns none); use the "
                                 "transformers backend for the heatmap.")
        start = time.perf_counter()
        _, request = self._request(prompt, max_new_tokens, stop, (), ban_first, prefix)
        ids = request.ids
        with self.lock:
            cache, cached = self.prefix_cache.start(ids, request.prefix_ids)
            logits = self._forward(ids[cached:], cached, cache)
            answer = self._continuation(request)
            position = len(ids)
            while (token := answer.step(logits)) is not None:
                logits = self._forward([token], position, cache)
                position += 1
        return Generation(self._said(answer.out, stop), len(ids), len(answer.out),
                          time.perf_counter() - start, cached_tokens=cached,
                          logprobs=tuple(answer.logprobs),
                          at_cap=self._at_cap(answer.out, request))

    def _new_cache(self) -> ArrayCache:
        empty = np.zeros((1, self.heads, 0, self.head_size), np.float32)
        return ArrayCache([ArrayLayer(empty, empty) for _ in range(self.layers)])

    def _forward(self, ids: list[int], position: int, cache: ArrayCache):
        """The model over `ids` from `position` on `cache` (replaced by the states after
        them); the last position's logits as a torch vector."""
        import torch

        feed: dict[str, Any] = {"input_ids": np.array([ids], np.int64),
                                "attention_mask": np.ones((1, position + len(ids)), np.int64)}
        for (keys, values), layer in zip(self._past, cache.layers, strict=True):
            feed[keys], feed[values] = layer.keys, layer.values
        logits, *present = self.session.run(self._read, feed)
        cache.layers = [ArrayLayer(k, v) for k, v in zip(present[::2], present[1::2],
                                                           strict=True)]
        return torch.from_numpy(logits[0, -1].copy())


class ArrayLayer:
    """One layer's key and value arrays `[batch, heads, positions, head size]`."""

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        self.keys, self.values = keys, values


class ArrayCache:
    """Key/value states as NumPy arrays, with the interface the prefix cache reads
    (`layers`, `update`); every position is kept (`plain`)."""

    plain = True

    def __init__(self, layers: list[ArrayLayer]) -> None:
        self.layers = layers

    def update(self, keys: np.ndarray, values: np.ndarray, layer: int) -> None:
        held = self.layers[layer]
        self.layers[layer] = ArrayLayer(np.concatenate([held.keys, keys], axis=2),
                                        np.concatenate([held.values, values], axis=2))
