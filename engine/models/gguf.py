"""The packaged SmolLM2 GGUF file, dequantised once into a cached safetensors folder.

transformers reads GGUF in ~20 s and ~2 GB of memory; the cached float32 copy loads in well
under a second. The cache key names the file by size and the sha256 of its first MiB.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
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


def convert_gguf(gguf: Path, folder: Path) -> None:
    """Dequantise `gguf` and save it with its tokenizer as an ordinary checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.models.pretrained import quiet_transformers

    quiet_transformers()
    logger.info("Converting %s to safetensors (once; ~20 s)", gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    with _no_tensor_bar():
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
    # The weights are dequantised now; drop the GGUF marker so the copy saves and loads as
    # an ordinary float32 checkpoint.
    del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
