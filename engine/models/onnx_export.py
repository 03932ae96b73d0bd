"""A causal LM exported once to ONNX for ONNX Runtime (the reader's "onnx" backend).

onnxruntime-genai's model builder writes the graph from the checkpoint the torch path loads
(the packaged SmolLM2's safetensors copy, a local folder, or a hub id already in the local
Hugging Face cache), with ONNX Runtime's fused operators (GroupQueryAttention with rotary
embeddings, SkipSimplifiedLayerNormalization). Two changes follow:
- the vocabulary projection reads only the last position: a prompt's logits are wanted at
  its end only, and projecting every position costs ~20% of a 479-token prefill;
- for int8, every MatMul's weights are quantised per output channel and its activations on
  the fly (`onnxruntime.quantization.quantize_dynamic`; u8 x s8 products, VNNI where the CPU
  has it): 2.2x fp32's prefill on an avx512_vnni CPU, but the small reader's answers
  change (docs/benchmarks/cpu.md, "Reader runtimes side by side").

The export is cached by the checkpoint's files, the precision and the tools' versions.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from engine.cache import load_or_build
from engine.errors import ConfigError, EngineError, ResourceMissingError
from engine.models.locations import resolve
from engine.models.pretrained import ALIASES
from engine.paths import data_dir

logger = logging.getLogger(__name__)

EXPORT_VERSION = 1
ONNX_PRECISIONS = ("int8", "fp32")
INSTALL = "pip install onnxruntime==1.32.0 onnxruntime-genai==0.18.0 onnx==1.23.2 onnx-ir==1.1.0"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json")


def onnx_model_dir(model: str, precision: str) -> Path:
    """The folder of `model` (an alias, a local folder or a cached hub id) exported to ONNX
    in `precision` ("int8" or "fp32"), exported on first use (~20 s for SmolLM2)."""
    if precision not in ONNX_PRECISIONS:
        raise ConfigError(f"ONNX precision {precision!r} is not one of "
                          f"{', '.join(ONNX_PRECISIONS)}.")
    source = checkpoint_folder(model)
    key = {"source": fingerprint(source), "precision": precision,
           "tools": _versions(), "version": EXPORT_VERSION}
    return load_or_build("onnx", key, lambda folder: export(source, folder, precision),
                         _checked)


def checkpoint_folder(model: str) -> Path:
    """The local folder holding `model`'s checkpoint: an alias's, a folder as given, or a
    hub id's snapshot in the local Hugging Face cache (nothing is downloaded)."""
    location = Path(resolve(model))
    if location.is_dir():
        return location
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(model), local_files_only=True))
    except Exception as err:  # noqa: BLE001 - the hub's own errors vary by version
        logger.debug("no local snapshot of %r: %s", model, err)
        raise ResourceMissingError(
            f"Cannot export model {model!r} to ONNX: it is neither an alias "
            f"({', '.join(ALIASES)}) nor a local folder, and no copy of it is in the local "
            "Hugging Face cache. Give a folder, or download the model first.") from None


def fingerprint(folder: Path) -> dict:
    """What identifies a checkpoint folder for its exports: where it is, its weight files'
    sizes and their latest change. A folder inside the data directory's cache (the
    packaged SmolLM2 converted from its GGUF) is named by its place in the cache, whose
    entry names are their own inputs' fingerprints, so a data directory moved, copied or
    linked elsewhere keeps its exports."""
    files = sorted(p for p in folder.iterdir() if p.suffix in _WEIGHT_SUFFIXES)
    resolved, cache = folder.resolve(), (data_dir() / "cache").resolve()
    where = (f"<cache>/{resolved.relative_to(cache).as_posix()}"
             if resolved.is_relative_to(cache) else str(resolved))
    return {"folder": where,
            "files": {p.name: p.stat().st_size for p in files},
            "mtime": max((p.stat().st_mtime_ns for p in files), default=0)}


def _versions() -> dict:
    try:
        return {name: metadata.version(name) for name in ("onnxruntime", "onnxruntime-genai")}
    except metadata.PackageNotFoundError:
        raise ResourceMissingError(
            f"The onnx reader backend needs ONNX Runtime and its model builder: {INSTALL} "
            "(requirements.txt pins them).") from None


def _checked(folder: Path) -> Path:
    if not (folder / "model.onnx").is_file():
        raise FileNotFoundError(folder / "model.onnx")
    return folder


def export(source: Path, folder: Path, precision: str) -> None:
    """Write `source` as ONNX into `folder` (see the module's docstring)."""
    built = folder / "fp32"
    logger.info("Exporting %s to ONNX (%s; once, ~20 s)", source.name, precision)
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source),
               "-o", str(built), "-p", "fp32", "-e", "cpu", "-c", str(folder / "builder-cache")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode or not (built / "model.onnx").is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise EngineError(f"onnxruntime-genai's model builder could not export {source}: "
                          f"{' | '.join(tail)}. It exports the architectures it lists "
                          "(llama, mistral, qwen, phi, gemma, ...); use the transformers "
                          "backend for others.")
    last_position_logits(built / "model.onnx")
    if precision == "int8":
        quantise(built / "model.onnx", folder / "model.onnx")
    else:
        for part in built.glob("model.onnx*"):
            part.rename(folder / part.name)
    shutil.copy(built / "genai_config.json", folder / "genai_config.json")
    shutil.rmtree(built)
    shutil.rmtree(folder / "builder-cache", ignore_errors=True)


def quantise(source: Path, target: Path, exclude: tuple[str, ...] = (),
             op_types: tuple[str, ...] | None = ("MatMul",)) -> None:
    """int8 weights per output channel of every node of `op_types` (None: every type the
    quantiser knows, fused attention included) but the nodes named in `exclude`,
    activations quantised on the fly (one scale per tensor). The quantiser logs a line per
    tensor on the root logger at INFO, and advice at WARNING: both held back here."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with held_back(logging.ERROR, ""):
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=list(op_types) if op_types else None,
                         nodes_to_exclude=list(exclude), use_external_data_format=True,
                         # fused nodes (com.microsoft) defeat ONNX's shape inference
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})


@contextmanager
def held_back(level: int, *names: str) -> Iterator[None]:
    """Hold the loggers `names` ("" for the root logger) at `level` or above meanwhile:
    ONNX Runtime's tools log a line per tensor or fusion."""
    loggers = [logging.getLogger(name or None) for name in names]
    levels = [each.level for each in loggers]
    for each, was in zip(loggers, levels, strict=True):
        each.setLevel(max(was, level))
    try:
        yield
    finally:
        for each, was in zip(loggers, levels, strict=True):
            each.setLevel(was)


def last_position_logits(path: Path) -> None:
    """Rewrite the graph at `path` so that `logits` are the last position's only: a Slice
    of the final hidden states before the vocabulary projection (its weights stay in the
    external data file, which is left as it is)."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    head = next(n for n in graph.node if "logits" in n.output)
    graph.initializer.extend([
        helper.make_tensor("last_position/start", TensorProto.INT64, [1], [-1]),
        helper.make_tensor("last_position/end", TensorProto.INT64, [1], [2**62]),
        helper.make_tensor("last_position/axis", TensorProto.INT64, [1], [1])])
    last = helper.make_node("Slice", [head.input[0], "last_position/start",
                                      "last_position/end", "last_position/axis"],
                            ["last_position/hidden"], name="/last_position/Slice")
    head.input[0] = "last_position/hidden"
    graph.node.insert(list(graph.node).index(head), last)
    onnx.save(model, str(path))


def runtime_shape(folder: Path) -> tuple[int, int]:
    """(key/value heads, head size) of an exported model, from the builder's config."""
    decoder = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
    return int(decoder["num_key_value_heads"]), int(decoder["head_size"])
