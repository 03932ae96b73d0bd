"""The models each role can use here, and what each has built: what the Corpora tab's
Models table shows.

Every role takes a packaged alias, a model trained here, a stand-in or stored scores, or
your own model (a local folder or a hub id; the generator also an OpenAI-compatible
endpoint), named in a paradigm's option of that role. What a model has built is read from
the cache manifests, without loading anything: the dense indexes and stored vectors of each
encoder, the trained versions of the models trained here, the reader's converted weights.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from engine.cache import MANIFEST
from engine.errors import ResourceMissingError
from engine.paths import data_dir

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRow:
    """One model a role can use: how to name it, where it comes from, what it has built."""

    role: str  # "encoder", "re-ranker", "selection classifier", "query classifier", "generator"
    name: str  # what a paradigm option takes
    source: str  # packaged, trained here, stored scores, stand-in, your own
    status: str  # ready, not trained yet, missing, ...
    built: tuple[str, ...] = ()  # what it has built on disk
    option: str = ""  # the paradigm options that take it


def _manifests(kind: str) -> list[tuple[Path, dict]]:
    """(entry folder, key) of every cache entry of `kind` (manifests read, not verified)."""
    found = []
    for manifest in sorted((data_dir() / "cache" / kind).glob(f"*/{MANIFEST}")):
        try:
            found.append((manifest.parent,
                          json.loads(manifest.read_text(encoding="utf-8"))["key"]))
        except (OSError, ValueError, KeyError):
            continue  # a damaged entry is rebuilt when it is next used
    return found


def _encoder_name(identity: dict) -> str:
    return identity.get("alias") or identity.get("plugin") or identity.get("path") or \
        identity.get("hub_id") or "?"


def _units(key: dict) -> str:
    units = key.get("units", {})
    if units.get("granularity") == "passages":
        return f"{units.get('max_tokens')}-token passages"
    return str(units.get("granularity", "units"))


def encoder_rows(corpus_names: dict[str, str]) -> list[ModelRow]:
    """The packaged MiniLM, every plugin's encoder and every encoder that has built
    something here: its dense indexes (by corpus name, or fingerprint for a corpus not
    loaded) and stored vectors."""
    from engine.index.faiss_index import recall_note
    from engine.index.vectors import VectorStore
    from engine.models.encoders import known_encoders
    from engine.models.packaged import minilm_path

    # the packaged one and every plugin's, listed even before they build anything
    built: dict[str, list[str]] = {name: [] for name in ("minilm", *known_encoders())}
    for folder, key in _manifests("dense"):
        name = _encoder_name(key.get("model", {}))
        corpus = corpus_names.get(key.get("corpus", ""), f"corpus {key.get('corpus', '?')[:12]}")
        kind = key.get("index", {}).get("kind", "exact")
        recall = recall_note(folder)
        precision = key.get("model", {}).get("precision", "")
        built.setdefault(name, []).append(
            f"dense index of {corpus} ({_units(key)}, {precision}, "
            f"{'approximate HNSW' if kind == 'hnsw' else 'exact'}"
            f"{', ' + recall if recall else ''})")
    for folder in sorted((data_dir() / "cache" / "vectors").glob("*")):
        shards = _manifests(f"vectors/{folder.name}")
        if not shards:
            continue
        identity = shards[0][1].get("encoder", {})
        texts = sum(_rows(entry / "keys.npy") for entry, _ in shards)
        store = VectorStore(identity)
        if store.folder != folder:
            continue  # another format version's store
        built.setdefault(_encoder_name(identity), []).append(
            f"{texts:,} texts' vectors stored ({identity.get('precision', '?')})")
    try:
        packaged = str(minilm_path().resolve())
    except ResourceMissingError:
        packaged = ""
    for folder, key in _manifests("onnx-encoder"):
        source = key.get("source", {}).get("folder", "?")
        built.setdefault("minilm" if source == packaged else source, []).append(
            f"ONNX Runtime export ({key.get('precision', '?')}): {folder}")
    rows = []
    for name, things in built.items():
        source, status = _source("minilm" if name == "minilm" else name)
        if name == "minilm":
            status = f"{status}; {_runtimes(name)}"
        rows.append(ModelRow("encoder", name, source, status, tuple(things),
                             "bi_encoder (every paradigm)"))
    rows.append(ModelRow("encoder", "a folder or hub id", "your own",
                         your_own("any sentence-transformers model; its vectors and "
                                  "indexes are built once an admin confirms the build, "
                                  "with a time estimate measured on its own encoding "
                                  "speed"), (), "bi_encoder (every paradigm)"))
    return rows


def _runtimes(name: str) -> str:
    """How `name` encodes here: documents and queries, each in its precision and runtime."""
    from engine.models.loading import query_precision, resolve_encoder_precision

    def runtime(precision: str) -> str:
        return f"{precision}, {'torch' if precision == 'bf16' else 'ONNX Runtime'}"

    documents = resolve_encoder_precision()
    return (f"encodes documents in {runtime(documents)}; queries in "
            f"{runtime(query_precision(name, documents))} ($FUNNEL_ENCODER_PRECISION)")


def _rows(keys_file: Path) -> int:
    import numpy as np

    try:
        return int(np.load(keys_file, mmap_mode="r").shape[0])
    except (OSError, ValueError):
        return 0


def _source(name: str) -> tuple[str, str]:
    """Where an encoder named `name` comes from, and whether it is here."""
    from engine.models.encoders import known_encoders
    from engine.models.locations import resolve
    from engine.models.pretrained import ALIASES

    if name in known_encoders():
        return "plugin", "ready"
    if name in ALIASES:
        try:
            return "packaged", f"ready ({resolve(name)})"
        except ResourceMissingError as err:
            return "packaged", f"missing: {err}"
    if Path(name).exists():
        return "your own (folder)", "ready"
    return "your own (hub id)", "loads if the hub or its cache is reachable"


def reranker_rows() -> list[ModelRow]:
    from engine.models.kinds import PRERANKER, TRAINING_TIMES, train_command
    from engine.models.trained import trained_folder

    trained = trained_folder(PRERANKER)
    option = "preranker (funnel), reranker (flat, best)"
    return [
        ModelRow("re-ranker", "hybrid", "stored scores", "ready",
                 ("BM25 and the encoder's stored vectors",), option),
        ModelRow("re-ranker", "bi-encoder", "stored scores", "ready",
                 ("the encoder's stored vectors",), option),
        ModelRow("re-ranker", "bm25", "stored scores", "ready", ("BM25 over documents",),
                 option),
        ModelRow("re-ranker", "trained", "trained here (cross-encoder from MiniLM)",
                 "ready" if trained else f"not trained yet: {train_command(PRERANKER)} "
                 f"(~{TRAINING_TIMES[PRERANKER].seconds / 60:.0f} min)",
                 (str(trained),) if trained else (), option),
        ModelRow("re-ranker", "a folder or hub id", "your own", your_own("any cross-encoder"), (),
                 option)]


def classifier_rows() -> list[ModelRow]:
    from engine.models.kinds import QUERY_CLASSIFIER
    from engine.models.query_classifier import STAND_IN as ALWAYS
    from engine.models.selection_classifier import STAND_IN as COSINES
    from engine.models.selection_classifier import versions
    from engine.models.trained import trained_folder

    found = versions()
    active = [v["id"] for v in found if v["active"]]
    selection = "drrag: classifier"
    query = "best: classifier"
    query_model = trained_folder(QUERY_CLASSIFIER)
    return [
        ModelRow("selection classifier", "trained", "trained here (DR-RAG's C(q, d1, d2))",
                 f"ready, version {active[0]} active" if found and active else
                 "ready" if found else "not trained yet: the app trains it in the "
                 "background (the stand-in answers meanwhile)",
                 tuple(f"version {v['id']} ({v['labels']} labels, held-out AUC "
                       f"{v['heldout_auc'] if v['heldout_auc'] is not None else '-'})"
                       for v in found), selection),
        ModelRow("selection classifier", COSINES, "stand-in", "ready (untrained: the "
                 "encoder's segment cosines)", (), selection),
        ModelRow("selection classifier", "a folder or hub id", "your own",
                 your_own("a sequence classifier over (question, d1, d2)"), (), selection),
        ModelRow("query classifier", "trained", "trained here",
                 "ready" if query_model else "not trained yet: the app trains it in the "
                 "background (always-retrieve answers meanwhile)",
                 (str(query_model),) if query_model else (), query),
        ModelRow("query classifier", ALWAYS, "stand-in", "ready", (), query),
        ModelRow("query classifier", "a folder or hub id", "your own",
                 your_own("a sequence classifier (label 1: needs retrieval)"), (), query)]


def generator_rows() -> list[ModelRow]:
    from engine import allowed

    converted = [str(folder) for folder, key in _manifests("models")]
    exported = [f"{key.get('precision')}: {folder}" for folder, key in _manifests("onnx")]
    option = "reader.model, reader.endpoint (every paradigm)"
    names = allowed.current()
    endpoints = [ModelRow("generator", f"endpoint {name!r}", "allowed by the operator",
                          "reader.endpoint = its name, reader.model = the model name the "
                          "server knows" + ("; its key is sent to it alone" if server.key
                                            else "; no key"), (),
                          "reader.endpoint")
                 for name, server in sorted(names.endpoints.items())]
    return [
        ModelRow("generator", "smollm2", "packaged (SmolLM2-135M-Instruct, GGUF)", "ready",
                 tuple(f"converted weights: {c}" for c in converted), option),
        # what runs: fp32 (auto); int8 only when reader.precision asks for it
        ModelRow("generator", "smollm2 through ONNX Runtime",
                 "exported here (fp32; int8 with reader.precision int8)",
                 "ready" if exported else "exported on first use (~20 s): runs with "
                 "reader.attention off, evaluations and sweeps by default",
                 tuple(f"ONNX export {e}" for e in exported),
                 "reader.backend onnx, or auto with reader.attention off"),
        ModelRow("generator", "a folder or hub id", "your own", your_own("any causal LM"),
                 (), option),
        ModelRow("generator", "an OpenAI-compatible endpoint", "your own",
                 "reader.endpoint = the name the operator allowed it by (--allow FILE; its "
                 "key is sent to it alone), reader.model = its model name; on the command "
                 "line its /v1 URL, the key from $FUNNEL_API_KEY", (),
                 "reader.endpoint (flat, longrag, drrag, best; the funnel reads attention)"),
        *endpoints]


def your_own(kind: str) -> str:
    """The status of a "your own" row: `kind` of model, and how a request names one (by the
    names the operator allowed: engine.allowed)."""
    from engine import allowed

    models = allowed.current().models
    named = ", ".join(f"{name}{_missing(models[name])}" for name in sorted(models))
    return (f"{kind}: in the app by a name the operator allowed "
            + (f"({named})" if named else "(none yet: --allow FILE)")
            + "; on the command line by its path or hub id")


def _missing(location: str) -> str:
    """'' for an allowed model that can load here; else why it cannot (never where it is:
    that is the operator's): a folder that is not there, or a hub id the local hub cache
    does not hold (a machine offline loads nothing else)."""
    path = Path(location).expanduser()
    if path.is_absolute() or location.startswith((".", "~")) or path.exists():
        return "" if path.is_dir() else ": its folder is missing"
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(location, "config.json")
    return "" if isinstance(cached, str) else (
        ": not in the local hub cache, so it cannot load offline")


def plugin_rows() -> list[ModelRow]:
    """What installed plugins add (paradigms, re-rankers, retrievers, reader backends,
    encoders), each ready or left out with why."""
    from engine.models.encoders import ENCODERS
    from engine.paradigms.registry import PARADIGMS, PLUGINS, RERANKERS, RETRIEVERS
    from engine.plugins import BUILT_IN
    from engine.readers.backends import BACKENDS

    option = {"paradigm": "a paradigm of every tab, the API and the CLI",
              "reranker": "preranker (funnel), reranker (flat, best)",
              "generator": "reader.backend (every paradigm)",
              "encoder": "bi_encoder (every paradigm)",
              "retriever": "retriever (flat)"}
    described = {**{name: spec.description for name, spec in PARADIGMS.items()},
                 **{name: spec.description for name, spec in RERANKERS.items()},
                 **{name: spec.description for name, spec in RETRIEVERS.items()},
                 **{name: backend.description for name, backend in BACKENDS.items()},
                 **{name: spec.description for name, spec in ENCODERS.items()}}
    roles = {"reranker": "re-ranker"}  # as the built-in rows name the role

    def source(p) -> str:
        what = described.get(p.name) if not p.error else ""
        return f"plugin ({p.package}: {p.value})" + (f": {what}" if what else "")

    return [ModelRow(f"{roles.get(p.kind, p.kind)} (plugin)", p.name, source(p),
                     f"left out: {p.error}" if p.error else "ready", (),
                     option.get(p.kind, ""))
            for p in PLUGINS if p.package != BUILT_IN
            and not (p.kind == "encoder" and not p.error)]  # encoder_rows lists those


def model_rows(corpus_names: dict[str, str]) -> list[ModelRow]:
    """Every role's models. `corpus_names` names corpora by fingerprint."""
    return [*encoder_rows(corpus_names), *reranker_rows(), *classifier_rows(),
            *generator_rows(), *plugin_rows()]
