"""Model loading: packaged aliases, any local path or hub id, and the cached GGUF conversion.

Aliases name the offline models this machine has:
- `minilm`: the packaged all-MiniLM-L6-v2 (bi-encoder, and the base of trained classifiers)
- `smollm2`: SmolLM2-135M-Instruct, dequantised once from the packaged GGUF file into a
  cached safetensors folder (transformers reads GGUF in ~20 s and ~2 GB; the cached copy
  loads in well under a second)
Anything else is passed to `from_pretrained` as a path or hub id; with no hub reachable a
hub id fails, and the error says which aliases work offline.

Models are process-global (loaded once, `lru_cache`); heavy imports happen inside. Below
this: `resolve` (engine.models.locations), `from_pretrained`, `quiet_transformers`,
`onnx_installed` and `ALIASES` (engine.models.pretrained), which the models loaded here
(encoders, the ONNX export, the GGUF conversion) use without this module.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ResourceMissingError, check_choice
from engine.models.locations import resolve
from engine.models.pretrained import from_pretrained, onnx_installed

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16")
PRECISION_CHOICES = ("auto", *PRECISIONS)
# CPU flags (Linux /proc/cpuinfo) of units that multiply bf16 natively. Without them torch
# emulates bf16 and it is slower than fp32: bench/dense_precision.py measured bf16 weights at
# 0.17x fp32 on an AVX2-only EPYC, and at 2.1x on an EPYC with avx512_bf16.
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags (empty where /proc/cpuinfo is not there)."""
    if not sys.platform.startswith("linux"):
        return frozenset()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def resolve_precision(precision: str, flags: frozenset[str] | None = None) -> str:
    """"fp32" or "bf16" as asked; "auto" is bf16 where the CPU has native bf16 units
    (`NATIVE_BF16_FLAGS`) and fp32 elsewhere. Vectors and caches are named by the resolved
    precision, so machines of either kind never mix them."""
    check_choice("precision", precision, PRECISION_CHOICES)
    if precision != "auto":
        return precision
    return "bf16" if NATIVE_BF16_FLAGS & (cpu_flags() if flags is None else flags) else "fp32"


ENCODER_PRECISIONS = ("fp32", "bf16", "int8")
ENCODER_PRECISION_ENV = "FUNNEL_ENCODER_PRECISION"


def resolve_encoder_precision(precision: str = "auto",
                              flags: frozenset[str] | None = None) -> str:
    """The bi-encoder's precision: `precision` when it names one of ENCODER_PRECISIONS;
    "auto" is $FUNNEL_ENCODER_PRECISION when set, else what `resolve_precision` picks for
    this CPU. fp32 and int8 run in ONNX Runtime, bf16 in torch (engine.models.onnx_encoder).
    Vectors are stored by the resolved precision."""
    named_by = "encoder precision"
    if precision == "auto":
        precision = os.environ.get(ENCODER_PRECISION_ENV, "").strip() or "auto"
        named_by = f"${ENCODER_PRECISION_ENV}"
    check_choice(named_by, precision, ("auto", *ENCODER_PRECISIONS))
    return resolve_precision(precision, flags) if precision == "auto" else precision


def query_precision(name: str, precision: str) -> str:
    """The precision `name` encodes a query in when its documents are in `precision`
    (resolved): bf16 documents get fp32 queries through ONNX Runtime, others their own.
    One query at a time, ONNX Runtime fp32 took 5.7 ms against torch bf16's 8.1 ms, and the
    training questions' AR@4 stayed the same (docs/benchmarks/cpu.md, "Fast on any CPU")."""
    from engine.models.encoders import known_encoders

    if precision == "bf16" and name not in known_encoders() and onnx_installed():
        return "fp32"
    return precision


def load_bi_encoder(name: str = "minilm", precision: str = "auto") -> SentenceTransformer:
    """A sentence-transformers bi-encoder on the CPU (or a plugin's encoder of that name,
    engine.models.encoders) in `precision` (see `resolve_encoder_precision`); one per name
    and precision for the whole process."""
    return _bi_encoder(name, resolve_encoder_precision(precision))


@lru_cache(maxsize=4)
def _bi_encoder(name: str, precision: str) -> SentenceTransformer:
    from engine.models.encoders import known_encoders

    plugin = known_encoders().get(name)
    if plugin is not None:
        return plugin.load(precision)
    if precision != "bf16":
        from engine.models.onnx_encoder import onnx_bi_encoder

        if precision == "int8" or onnx_installed():
            try:
                return onnx_bi_encoder(name, precision)
            except ResourceMissingError:
                raise
            except Exception as err:  # noqa: BLE001 - an exporter fails in many ways
                if precision == "int8":
                    raise
                logger.warning("Encoding with %s in torch: its ONNX export failed (%s)",
                               name, err)
    import torch
    from sentence_transformers import SentenceTransformer

    model = from_pretrained(SentenceTransformer, resolve(name), device="cpu",
                            local_files_only=True)
    return model.to(torch.bfloat16) if precision == "bf16" else model


def load_sequence_classifier(location: str, trained_alias: str,
                             report: str = "training_report.json") -> tuple[Any, Any, float]:
    """(tokenizer, model, threshold) of a sequence classifier folder or hub id, on the CPU
    in eval mode; the threshold comes from the training report beside a model trained here
    (0.5 otherwise). `trained_alias` names what "trained" means in error messages."""
    import json

    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    aliases = (f"trained: {trained_alias}",)
    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, location, aliases=aliases,
                                local_files_only=True)
    model = from_pretrained(AutoModelForSequenceClassification.from_pretrained, location,
                            aliases=aliases, local_files_only=True)
    model.eval()
    path = Path(location) / report
    threshold = float(json.loads(path.read_text(encoding="utf-8"))["threshold"]) \
        if path.is_file() else 0.5
    return tokenizer, model, threshold


_MODEL_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def model_lock(model: Any) -> threading.Lock:
    """The lock of one loaded model: readers that share it (the answering generator, the
    FiD reader) hold it while they run, since the generator switches the model's attention
    implementation and back."""
    with _LOCKS_GUARD:
        return _MODEL_LOCKS.setdefault(model, threading.Lock())


def load_causal_lm(name: str = "smollm2", precision: str = "auto") -> tuple[Any, Any]:
    """(tokenizer, model) of a decoder-only LM with eager attention (weights are needed),
    its weights in `precision` (see `resolve_precision`); one per name and precision."""
    return _causal_lm(name, resolve_precision(precision))


@lru_cache(maxsize=2)
def _causal_lm(name: str, precision: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    location = resolve(name)
    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, location,
                                 local_files_only=True)
    model = from_pretrained(AutoModelForCausalLM.from_pretrained, location,
                             attn_implementation="eager", local_files_only=True,
                             dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
    model.eval()
    return tokenizer, model
