"""The packaged SmolLM2 GGUF file, dequantised once into a cached safetensors folder.

transformers reads GGUF slowly and in ~2 GB of memory; the cached float32 copy loads in well
under a second. The cache key names the file by size and the sha256 of its first MiB. The
conversion reads the file's metadata once (`read_once`), where transformers would parse it
three times and build its tensor-name map once per module: bench/gguf_conversion.py
measures both ways side by side and checks they make the same tensors
(docs/benchmarks/engineering.md, "The packaged models' conversions").
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from engine.cache import load_or_build
from engine.models.packaged import smollm2_gguf_path

logger = logging.getLogger(__name__)

CONVERSION_VERSION = 1


def smollm2_dir() -> Path:
    """Folder of the safetensors copy of the packaged SmolLM2 GGUF (converted on first use)."""
    gguf = smollm2_gguf_path()
    key = {"gguf": gguf.name, "size": gguf.stat().st_size, "head": _head_sha(gguf),
           "version": CONVERSION_VERSION}
    return load_or_build("models", key, lambda folder: convert_gguf(gguf, folder),
                         lambda folder: folder)


def _head_sha(path: Path, size: int = 1 << 20) -> str:
    """sha256 of the first MiB: cheap identity for a large file (size is keyed too)."""
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(size)).hexdigest()


@contextmanager
def _no_tensor_bar() -> Iterator[None]:
    """Without the bar transformers' GGUF reader draws over its tensors: it calls plain
    `tqdm.auto.tqdm`, which neither transformers' nor huggingface_hub's switch turns off,
    and a bar redrawn 272 times does not belong in a server log."""
    from functools import partial

    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    drawn = gguf_utils.tqdm
    gguf_utils.tqdm = partial(drawn, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = drawn


@contextmanager
def read_once() -> Iterator[None]:
    """Meanwhile, gguf-py's reader and tensor-name map made once per argument: transformers
    makes a `GGUFReader` for the config, another for the tokenizer and another for the
    weights (each parses the whole 49k-token vocabulary), and a `TensorNameMap` for each
    of the model's 397 modules. Both are read-only once made; transformers imports them
    from `gguf` at each call, so the memoised ones are what it finds."""
    import gguf

    made = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.lru_cache(maxsize=4)(made[0])
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=16)(made[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = made


def convert_gguf(gguf: Path, folder: Path, *, once: bool = True) -> None:
    """Dequantise `gguf` and save it with its tokenizer as an ordinary checkpoint; `once`
    reads its metadata once (`read_once`; off only to measure it)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.models.pretrained import quiet_transformers

    quiet_transformers()
    logger.info("Converting %s to safetensors (once)", gguf.name)
    with read_once() if once else nullcontext(), _no_tensor_bar():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
    # The weights are dequantised now; drop the GGUF marker so the copy saves and loads as
    # an ordinary float32 checkpoint.
    del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
