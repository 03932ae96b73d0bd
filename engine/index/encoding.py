"""A bi-encoder's vectors: texts encoded L2-normalised in float32 (`encode`), what names an
encoder's vectors in a cache key (`encoder_identity`: its weights and precision), and how
fast an encoder encodes here (`encoding_rate`, which a dense build's estimate reads).
engine.index.dense builds and searches its indexes with these; the passage vector store
(engine.index.vectors) keeps vectors by `encoder_identity`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.models.loading import load_bi_encoder, query_precision, resolve_encoder_precision
from engine.models.locations import resolve
from engine.models.pretrained import ALIASES
from engine.text import count_tokens

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

# bench/dense_throughput.py (bench/results/dense_throughput.json): 2,000 pooled passages,
# MiniLM, 2 cores shared with other jobs (load 4-7): batch size 64 encoded 23.3 passages/s,
# 8 / 16 / 32 / 128 reached 0.35 / 0.54 / 0.79 / 0.84 of that. 64 and 128 were within
# noise of each other across runs. Not in the cache key: it changes speed, not the vectors.
DEFAULT_BATCH_SIZE = 64
# bf16 where the CPU multiplies it natively, fp32 through ONNX Runtime elsewhere
# (engine.models.loading `resolve_encoder_precision`): bench/dense_precision.py and
# bench/encoder_runtimes.py, figures in docs/benchmarks/cpu.md, "Encoder runtimes side by side".
DEFAULT_PRECISION = "auto"
# building the pooled passage index (35,297 passages, 2,367,137 engine tokens) took 318 s
# in bf16 (torch), 533 s in fp32 and 255 s in int8 (ONNX Runtime) on this machine's 2
# cores (bench/dense_precision.py, bench/encoder_runtimes.py): what `build_seconds`
# estimates a build from
ENCODE_TOKENS_PER_SECOND = {"bf16": 7_400.0, "fp32": 4_400.0, "int8": 9_300.0}
SAMPLE_TEXTS = 64  # texts timed to estimate the build of an encoder other than MiniLM


def encode(texts: list[str], model: str = "minilm", batch_size: int = DEFAULT_BATCH_SIZE, *,
           queries: bool = False, show_progress: bool = False,
           precision: str = DEFAULT_PRECISION) -> np.ndarray:
    """Embeddings of `texts` by the bi-encoder `model`, L2-normalised, float32, C-ordered.

    `queries` picks the model's query prompt instead of its document prompt (MiniLM has
    neither, so both give the same vectors for it), and the precision queries are encoded
    in (engine.models.loading `query_precision`). `precision` is the documents' ("auto":
    `resolve_encoder_precision`); vectors are normalised in float32 either way.
    """
    precision = resolve_encoder_precision(precision)
    if queries:
        precision = query_precision(model, precision)
    return encode_with(load_bi_encoder(model, precision), texts, batch_size,
                       queries=queries, show_progress=show_progress)


def encode_with(encoder: SentenceTransformer, texts: list[str],
                batch_size: int = DEFAULT_BATCH_SIZE, *, queries: bool = False,
                show_progress: bool = False) -> np.ndarray:
    """Embeddings of `texts` by a loaded bi-encoder, as `encode` gives them."""
    if not texts:
        return np.zeros((0, encoder.get_embedding_dimension()), dtype=np.float32)
    method = encoder.encode_query if queries else encoder.encode_document
    vectors = np.asarray(method(texts, batch_size=batch_size, show_progress_bar=show_progress,
                                convert_to_numpy=True), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(vectors)


def model_identity(model: str) -> dict:
    """What names `model`'s weights in a cache key: alias or path, plus config.json sha256
    (a plugin's encoder: its name and version)."""
    from engine.models.encoders import known_encoders

    plugin = known_encoders().get(model)
    if plugin is not None:
        return {"plugin": model, "version": plugin.version}
    if model in ALIASES:
        return {"alias": model, "config_sha256": _config_sha256(Path(resolve(model)))}
    path = Path(model).expanduser()
    if path.exists():
        path = path.resolve()
        return {"path": str(path), "config_sha256": _config_sha256(path)}
    return {"hub_id": model}


def encoder_identity(model: str, precision: str) -> dict:
    """What names an encoder's vectors: its weights (`model_identity`) and the precision
    they were encoded in ("auto" resolved)."""
    return {**model_identity(model), "precision": resolve_encoder_precision(precision)}


def _config_sha256(folder: Path) -> str | None:
    config = folder / "config.json"
    return hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else None


_RATES: dict[str, float] = {}


RATES_FILE = "encoding-rates.json"  # in the cache folder: each encoder's pace on this machine
MIN_TOKENS_RECORDED = 20_000  # a build that encoded fewer says little about the pace


def _machine() -> str:
    """This machine as far as its pace goes: its CPU's model name and core count."""
    import os

    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        name = next((line.partition(":")[2].strip() for line in text.splitlines()
                     if line.startswith("model name")), "")
    except OSError:
        name = ""
    return f"{name or 'unknown CPU'} x{os.cpu_count()}"


def _rates_path() -> Path:
    from engine.paths import data_dir

    return data_dir() / "cache" / RATES_FILE


def _rates() -> dict:
    """Every encoder's recorded pace, by `_rate_key` ({} before any, or when unreadable)."""
    try:
        found = json.loads(_rates_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _rate_key(model: str, precision: str) -> str:
    return json.dumps(encoder_identity(model, precision), sort_keys=True)


def recorded_rate(model: str, precision: str) -> float | None:
    """The tokens per second the last build with `model` at `precision` encoded at on this
    machine (the machine shared or not, as it was), None before any."""
    entry = _rates().get(_rate_key(model, precision))
    if not isinstance(entry, dict) or entry.get("machine") != _machine():
        return None
    rate = entry.get("tokens_per_second")
    return float(rate) if isinstance(rate, int | float) and rate > 0 else None


def record_rate(model: str, precision: str, tokens: int, seconds: float) -> None:
    """Keep the pace a build measured (`tokens` encoded in `seconds`, pauses left out) for
    the next estimate of `model` at `precision` here."""
    from engine.cache import write_json_atomic

    if tokens < MIN_TOKENS_RECORDED or seconds <= 0:
        return
    path, rates = _rates_path(), _rates()
    rates[_rate_key(model, precision)] = {
        "tokens_per_second": round(tokens / seconds, 1), "machine": _machine(),
        "tokens": tokens, "seconds": round(seconds, 1), "measured": time.time()}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, rates)
    logger.info("Dense: %s encoded %.0f tokens/s here (%d tokens); later estimates use it",
                model, tokens / seconds, tokens)


clock = time.perf_counter  # what the timed sample is timed by (a test moves its own)


def encoding_rate(model: str, precision: str, texts: list[str]) -> float:
    """Engine tokens per second `model` encodes here: the pace its last build here
    measured (`recorded_rate`); before any, MiniLM's ENCODE_TOKENS_PER_SECOND and any other
    encoder's timed once per process on a sample of `texts` (SAMPLE_TEXTS, after one
    warm-up batch): a larger model's build is estimated at its own speed, not MiniLM's."""
    precision = resolve_encoder_precision(precision)
    recorded = recorded_rate(model, precision)
    if recorded is not None:
        return recorded
    if model == "minilm":
        return ENCODE_TOKENS_PER_SECOND[precision]
    name = _rate_key(model, precision)
    if name not in _RATES:
        sample = texts[:: max(1, len(texts) // SAMPLE_TEXTS)][:SAMPLE_TEXTS]
        encode(sample[:4], model, precision=precision)  # warm-up: loading, first batch
        started = clock()
        encode(sample, model, precision=precision)
        seconds = max(clock() - started, 1e-3)
        _RATES[name] = sum(count_tokens(t) for t in sample) / seconds
        logger.info("Dense: %s encodes ~%.0f tokens/s here (%d texts timed)", model,
                    _RATES[name], len(sample))
    return _RATES[name]
