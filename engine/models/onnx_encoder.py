"""The bi-encoder through ONNX Runtime: a sentence-transformers model whose transformer runs
as an ONNX graph, in fp32 or with int8 weights. Everything around the transformer (the
tokeniser, prompts, length-sorted batches, pooling, progress bars) stays
sentence-transformers' own, so the vectors are the model's vectors.

The export, once per checkpoint, precision and tool versions (cached through
`load_or_build`, ~5 s for MiniLM):
1. `torch.onnx.export` of the transformer with eager attention: the pattern ONNX Runtime's
   optimizer recognises (the SDPA export leaves the attention unfused).
2. BERT-family graphs are optimised by `onnxruntime.transformers.optimizer`: fused
   attention, embeddings with their LayerNorm, bias+GELU, skip LayerNorms.
3. int8: weights per output channel, activations quantised on the fly
   (`engine.models.onnx_export.quantise`; VNNI where the CPU has it).
4. A check: probe sentences through torch and through the graph. fp32 must give the same
   vectors (cosine >= `SAME_COSINE`); an int8 graph whose vectors stray below
   `INT8_COSINE` is refused.

bench/encoder_runtimes.py measures it against torch fp32 and bf16 (docs/benchmarks/cpu.md, "Fast on
any CPU (issue 39)").
"""

from __future__ import annotations

import logging
import warnings
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cache import load_or_build
from engine.errors import EngineError, ResourceMissingError
from engine.models.locations import resolve
from engine.models.onnx_export import checkpoint_folder, fingerprint, held_back, quantise
from engine.models.pretrained import from_pretrained, onnx_installed

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EXPORT_VERSION = 1
INSTALL = "pip install onnxruntime==1.32.0 onnx==1.23.2"
SAME_COSINE = 0.9999
INT8_COSINE = 0.95
# model types whose graphs onnxruntime.transformers' BERT optimizer fuses
FUSED_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "camembert"})
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PROBES = ("Who wrote the novel that the 1962 film was based on?",
          "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
          "named after the engineer Gustave Eiffel, whose company designed and built it.",
          "short")


def onnx_bi_encoder(name: str, precision: str) -> SentenceTransformer:
    """The sentence-transformers model `name` (an alias, a folder or a cached hub id) with
    its transformer running in ONNX Runtime in `precision` ("fp32" or "int8"), exported on
    first use."""
    from sentence_transformers import SentenceTransformer

    if not onnx_installed():
        raise ResourceMissingError(f"Encoding in {precision} through ONNX Runtime needs it: "
                                   f"{INSTALL} (requirements.txt pins it).")
    model = from_pretrained(SentenceTransformer, resolve(name), device="cpu",
                            local_files_only=True,
                            model_kwargs={"attn_implementation": "eager"})
    source = checkpoint_folder(name)
    key = {"source": fingerprint(source), "precision": precision,
           "onnxruntime": metadata.version("onnxruntime"), "version": EXPORT_VERSION}
    folder = load_or_build("onnx-encoder", key,
                           lambda out: export(model, out, precision), _checked)
    model[0].model = onnx_transformer(folder / "model.onnx", model[0].model.config)
    return model


def _checked(folder: Path) -> Path:
    if not (folder / "model.onnx").is_file():
        raise FileNotFoundError(folder / "model.onnx")
    return folder


def onnx_transformer(path: Path, config: Any, threads: int = 0) -> Any:
    """A module that stands in for the transformers model inside sentence-transformers'
    Transformer module: called with the tokeniser's tensors, it runs the graph at `path`
    and returns the last hidden states. `config` is the model's (sentence-transformers
    reads the hidden size from it). `threads` (0: as many as torch uses, so a process, a
    Ray worker or a benchmark that set torch's threads sets these too)."""
    import numpy as np
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.log_severity_level = 3
    # no spinning between runs: its idle threads would hold the cores torch's next
    # operation needs (a query through torch took 6x longer after one through here)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    inputs = [i.name for i in session.get_inputs()]

    class OnnxTransformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config
            self.session = session

        def forward(self, input_ids: Any, attention_mask: Any = None,
                    token_type_ids: Any = None, **_: Any) -> dict:
            given = {"input_ids": input_ids,
                     "attention_mask": torch.ones_like(input_ids)
                     if attention_mask is None else attention_mask,
                     "token_type_ids": torch.zeros_like(input_ids)
                     if token_type_ids is None else token_type_ids}
            feed = {name: np.asarray(given[name].numpy(), dtype=np.int64) for name in inputs}
            return {"last_hidden_state": torch.from_numpy(session.run(None, feed)[0])}

    return OnnxTransformer()


def export(model: SentenceTransformer, folder: Path, precision: str) -> None:
    """Write `model`'s transformer as an ONNX graph in `precision` to `folder`/model.onnx
    (see the module's docstring)."""
    import torch

    transformer = model[0].model
    model_type = transformer.config.model_type
    logger.info("Exporting the %s encoder to ONNX (%s; once, ~5 s)", model_type, precision)
    plain = folder / "plain.onnx"
    probe = model[0].tokenizer(["hello world", "a longer probe sentence"], padding=True,
                               return_tensors="pt")
    names = [n for n in INPUTS if n in probe]
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on data-dependent branches
        torch.onnx.export(
            _hidden_states(transformer, names), tuple(probe[n] for n in names), str(plain),
            input_names=names, output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names,
                                                                 "last_hidden_state"]},
            opset_version=17, dynamo=False)
    graph = plain
    if model_type in FUSED_TYPES:
        graph = folder / "fused.onnx"
        _fuse(plain, graph, transformer.config)
    if precision == "int8":
        quantise(graph, folder / "model.onnx", op_types=None)
    else:
        graph.rename(folder / "model.onnx")
    for leftover in (plain, folder / "fused.onnx"):
        leftover.unlink(missing_ok=True)
    _check(model, folder / "model.onnx", precision)


def _hidden_states(transformer: Any, names: list[str]) -> Any:
    """`transformer` as a module of the positional inputs `names` returning its last hidden
    states (what the exporter traces; transformers' forward takes more, by keyword)."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    return Hidden()


def _fuse(source: Path, target: Path, config: Any) -> None:
    from onnxruntime.transformers import optimizer

    with held_back(logging.WARNING, "onnx_model", "onnx_model_bert", "fusion_base"):
        fused = optimizer.optimize_model(str(source), model_type="bert",
                                         num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size)
        logger.info("ONNX encoder fusions: %s",
                    {k: v for k, v in fused.get_fused_operator_statistics().items() if v})
        fused.save_model_to_file(str(target))


def _check(model: SentenceTransformer, path: Path, precision: str) -> None:
    """Encode `PROBES` through torch and through the graph at `path`; refuse a graph whose
    vectors are not the model's."""
    import numpy as np
    import torch

    transformer = model[0].model
    with torch.inference_mode():
        expected = model.encode(list(PROBES), convert_to_numpy=True,
                                normalize_embeddings=True)
        model[0].model = onnx_transformer(path, transformer.config)
        try:
            got = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True)
        finally:
            model[0].model = transformer
    cosine = float(np.min(np.sum(np.asarray(expected) * np.asarray(got), axis=1)))
    floor = SAME_COSINE if precision == "fp32" else INT8_COSINE
    logger.info("ONNX encoder (%s): cosine to torch fp32 >= %.6f", precision, cosine)
    if cosine < floor:
        raise EngineError(f"The ONNX export of the encoder in {precision} gives vectors "
                          f"unlike the model's (cosine {cosine:.4f} < {floor}); encode in "
                          "torch instead (FUNNEL_ENCODER_PRECISION=bf16).")
