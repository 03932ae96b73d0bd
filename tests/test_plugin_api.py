"""engine/api.py, what a plugin may import: its names stay (one that disappears fails here),
each is named in its reference (the module's docstring) and in docs/plugins.md, and it
imports in a fresh process first or after the registry (no import cycle)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import engine.api as api

# what plugins written against engine.api import: removing one breaks them
PINNED = {
    "Backend", "EncoderSpec", "ParadigmSpec", "RerankerSpec", "RetrieverSpec", "StageAt",
    "Paradigm", "ReaderConfig", "check_config", "options", "param",
    "Reranker", "Stage", "StageDetails", "StageOutput", "run_stage",
    "BM25Retriever", "ClusterRetriever", "CrossEncoderReranker", "DenseRetriever",
    "DocumentRetriever", "ExtractiveSummariser", "FiDPostRanker", "ForwardSelection",
    "HybridRetriever", "InverseSelection", "LongUnitRetriever", "QueryClassification",
    "QueryDocumentConcatenation", "ReaderContext", "ScoredDocumentRetriever",
    "StoredScoreReranker", "chunk_documents", "expand_to_documents",
    "BM25", "Clusters", "Dense", "DocumentScores", "Encoder", "QueryClassifier", "Ranker",
    "Reader", "Resource", "Resources", "Retriever", "SelectionClassifier", "StandIn", "Uses",
    "Candidate", "Chunker", "Corpus", "Document", "LLMStep", "Passage", "Question",
    "RunTrace", "StageResult", "Unit", "UnitConfig",
    "Capabilities", "Generation", "Message", "prompt_text",
    "ConfigError", "EngineError", "build_units", "count_tokens", "index_text",
    "query_terms", "split_sentences",
}


def test_its_names_stay_and_each_is_there():
    assert PINNED <= set(api.__all__), sorted(PINNED - set(api.__all__))
    assert len(api.__all__) == len(set(api.__all__))
    assert [name for name in api.__all__ if not hasattr(api, name)] == []


def test_its_reference_names_every_name():
    """The docstring is the plugin author's reference: every exported name is in it."""
    words = set(re.findall(r"\w+", api.__doc__))
    assert [name for name in api.__all__ if name not in words] == []


def test_the_plugins_page_names_every_name_a_plugin_may_use():
    """docs/plugins.md's prose, above its generated reference, names every name."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text(
        encoding="utf-8")
    section = page[:page.index("## The plugin API")]
    named = set(re.findall(r"\w+", section))
    assert "engine.api" in section and [n for n in api.__all__ if n not in named] == []


def test_the_stages_and_specs_are_the_engines_own():
    """The names are the engine's classes, not copies: a built-in paradigm's stages are
    what a plugin subclasses and runs."""
    from engine.paradigms.base import RerankerSpec
    from engine.stages.base import Reranker, run_stage

    assert api.RerankerSpec is RerankerSpec and api.Reranker is Reranker
    assert api.run_stage is run_stage and issubclass(api.BM25Retriever, api.Stage)
    assert api.options.reader().default_factory() == api.ReaderConfig()


@pytest.mark.parametrize("first", ["engine.api", "engine.paradigms.registry",
                                   "engine.readers.reader", "engine.service.store"])
def test_it_imports_in_a_fresh_process_whatever_comes_first(first):
    done = subprocess.run([sys.executable, "-c", f"import {first}\nimport engine.api\n"
                           "from engine.paradigms import registry\n"
                           "print(len(engine.api.__all__), 'flat' in registry.PARADIGMS)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(len(api.__all__)), "True"]
