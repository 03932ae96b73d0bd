"""What a plugin may import: `from engine.api import ...`, and nothing else of the engine.

A plugin is an installed package that names its specs in entry points of its
pyproject.toml, one group per kind: `funnel_explorer.paradigms` (a `ParadigmSpec`),
`funnel_explorer.rerankers` (a `RerankerSpec`), `funnel_explorer.retrievers` (a
`RetrieverSpec`), `funnel_explorer.generators` (a `Backend`), `funnel_explorer.encoders` (an
`EncoderSpec`). examples/funnel-explorer-example is one:

    [project.entry-points."funnel_explorer.rerankers"]
    rrf = "funnel_example.rrf:RRF_RERANKER"

Kinds:
- `ParadigmSpec(name, label, description, config, paradigm)`: `config` is a frozen
  dataclass of `param(default, help, low=, high=, choices=)` fields (its options form and
  API validation; `options.reader()` (a `ReaderConfig`), `options.bi_encoder(of)`,
  `options.passage_tokens(help)` and `options.check_kept(config, "k", "M", why)` are the
  built-ins' shared options: import the `options` module, not its functions;
  `check_config(config)` checks a config's ranges and choices).
  `paradigm` is a `Paradigm` subclass with a `name`, a `resources(config)` classmethod
  returning a `Resources` dataclass of what it reads, handed to it loaded as `self.uses`,
  and `steps(question)` yielding each stage's `run_stage(stage, question, candidates, k)`
  (a `StageResult`) and then `yield from self.read(question, candidates)` (the reader).
- `RerankerSpec(name, description, make, resources=None)`: `make(corpus, passages,
  granularity=, name=)` returns a `Reranker` (a `Stage` whose `scores(query, candidates)`
  gives one float per candidate). Its name then works in every re-ranker option
  (`{"reranker": "rrf"}` for flat). With `resources(at)` (a `StageAt`: `at.units`, the
  candidates' units; `at.passages`; `at.bi_encoder`) returning a `Resources` dataclass,
  the app prepares those in the background with the paradigm naming the re-ranker, and
  `make` gets them loaded as `uses=` (a `Uses`).
- `RetrieverSpec(name, description, make, resources=None)`: `make(corpus, passages)` returns
  a `Stage` whose `run(query, (), k)` gives the top `k` of those passages (made once per
  corpus); flat's `{"retriever": name}` then uses it. `resources(at)` as for a re-ranker.
- `Backend(name, description, capabilities, remote, make)`: `make(model, endpoint,
  precision)` returns a generator with `name`, `capabilities` (`Capabilities`) and
  `generate(prompt, max_new_tokens=, stop=, **others)` returning a `Generation`
  (a prompt is text or a tuple of `Message(role, content)`; `prompt_text(prompt)` reads
  it as text). Any paradigm then reads with it: `{"reader": {"backend": name}}`.
- `EncoderSpec(name, description, load, version="1")`: `load(precision)` returns an object
  with `encode_query(texts, **kw)`, `encode_document(texts, **kw)` and
  `get_embedding_dimension()`; every `bi_encoder` option takes its name. An encoder
  declares no resources: its vectors are cached by text for every corpus, so they may not
  depend on one corpus's indexes.

Resources (each a `Resource`, declared, then handed loaded; one per field of a `Resources`
dataclass):
`BM25(units)` (a BM25 index), `Dense(units, model)` (a dense index and its query encoder),
`DocumentScores(how, weight, passages, model)`, `Clusters(units)`, `Ranker(model, passages,
bi_encoder, granularity, name)` (a re-ranking stage), `Retriever(name, passages, bi_encoder)`,
`Reader(config)`, `Encoder(model)`, `SelectionClassifier(model)`, `QueryClassifier(model)`.
`UnitConfig("passages", Chunker(max_tokens))` or `UnitConfig("documents")` names units.
A loaded BM25 or dense index (exact, HNSW, Ray shards, Qdrant, or BM25 standing in while
the dense index is built) answers `search(query, k)` (a list of `Candidate`) and
`score_units(query, ids)`: a float32 array, one score per unit id (`candidate.unit.id`), as
its search scores that unit; -inf for an id it does not hold. Every loaded resource says
whether it is a stand-in: `resource.stand_in` (a `StandIn`, None for the real one), and
`uses.stand_in` for any of a stage's resources; a stage returning it as its own
`stand_in` property gets it noted in the trace.

Records: a `Candidate(unit, score, rank)` holds a `Unit(id, title, text, doc_ids,
granularity)`; a `Corpus` holds `Document`s (`corpus.documents`, `corpus.index_of[id]`); a
`Question` holds a question's gold answers and supporting titles; a `Passage` is a
chunk of a document;
`StageOutput(candidates, details=StageDetails(note=...), n_in=)` is what a `Stage.run`
returns; `StageResult`, `LLMStep` and `RunTrace` are what a run records. Text
helpers: `query_terms(text)` (its lower-cased words of 3+ letters, no stopwords), `count_tokens`,
`split_sentences`; `build_units(corpus, units)`, `index_text(unit)`. Errors: raise
`ConfigError` for a bad option (its message names the value and the fix), `EngineError`
for something that failed.

The built-in stages (handed what `uses` holds): `BM25Retriever(bm25)`,
`DenseRetriever(dense)`, `HybridRetriever(bm25, dense, alpha, depth)`,
`DocumentRetriever(index, corpus)`, `ScoredDocumentRetriever(document_scores)`,
`ClusterRetriever(*clusters, corpus, document_scores)`, `LongUnitRetriever`,
`StoredScoreReranker(document_scores)`, `CrossEncoderReranker`, `FiDPostRanker`,
`ReaderContext(corpus, max_tokens)`, `QueryDocumentConcatenation`, `ForwardSelection`,
`InverseSelection`, `ExtractiveSummariser`, `SentencePruner(scorer, PruneConfig(...))`,
`QueryClassification`, and `expand_to_documents(corpus, clusters)`,
`chunk_documents(corpus, documents, chunker)`. A plugin paradigm that declares
`prune: PruneConfig = options.prune()` and a `pruner=SentenceScorer.of(config)` resource
ends with the sentence cut as the built-in ones do (`Paradigm.read` makes it).

tests/test_plugin_api.py pins these names: one that disappears fails there.
"""

from __future__ import annotations

from engine.config import check_config, param
from engine.documents import Candidate, Corpus, Document, Passage, Question, Unit
from engine.errors import ConfigError, EngineError
from engine.models.encoders import EncoderSpec
from engine.paradigms import options
from engine.paradigms.base import Paradigm, ParadigmSpec, RerankerSpec, RetrieverSpec
from engine.paradigms.needs import Resource, Resources, StageAt, Uses
from engine.paradigms.resources import (
    BM25,
    Clusters,
    Dense,
    DocumentScores,
    Encoder,
    QueryClassifier,
    Ranker,
    Reader,
    Retriever,
    SelectionClassifier,
    SentenceScorer,
)
from engine.readers.backends import Backend
from engine.readers.generator import Capabilities, Generation, Message, prompt_text
from engine.readers.reader import ReaderConfig
from engine.stages.base import Reranker, Stage, StageOutput, run_stage
from engine.stages.classify import QueryClassification
from engine.stages.expand import ReaderContext, chunk_documents, expand_to_documents
from engine.stages.postrank import FiDPostRanker
from engine.stages.prune import PruneConfig, SentencePruner
from engine.stages.rerank import CrossEncoderReranker, StoredScoreReranker
from engine.stages.retrieve import (
    BM25Retriever,
    ClusterRetriever,
    DenseRetriever,
    DocumentRetriever,
    HybridRetriever,
    LongUnitRetriever,
    ScoredDocumentRetriever,
)
from engine.stages.select import ForwardSelection, InverseSelection, QueryDocumentConcatenation
from engine.stages.summarise import ExtractiveSummariser
from engine.text import count_tokens, query_terms, split_sentences
from engine.trace import LLMStep, RunTrace, StageResult
from engine.trace_details import StageDetails, StandIn
from engine.units.build import UnitConfig, build_units, index_text
from engine.units.chunking import Chunker

__all__ = [
    # the specs a plugin's entry points name, and where its stages run
    "Backend", "EncoderSpec", "ParadigmSpec", "RerankerSpec", "RetrieverSpec", "StageAt",
    # paradigms and their configs
    "Paradigm", "ReaderConfig", "check_config", "options", "param",
    # stages
    "Reranker", "Stage", "StageDetails", "StageOutput", "run_stage",
    # the built-in stages
    "BM25Retriever", "ClusterRetriever", "CrossEncoderReranker", "DenseRetriever",
    "DocumentRetriever", "ExtractiveSummariser", "FiDPostRanker", "ForwardSelection",
    "HybridRetriever", "InverseSelection", "LongUnitRetriever", "PruneConfig",
    "QueryClassification", "QueryDocumentConcatenation", "ReaderContext",
    "ScoredDocumentRetriever", "SentencePruner", "StoredScoreReranker", "chunk_documents",
    "expand_to_documents",
    # resources: declared, then handed loaded
    "BM25", "Clusters", "Dense", "DocumentScores", "Encoder", "QueryClassifier", "Ranker",
    "Reader", "Resource", "Resources", "Retriever", "SelectionClassifier", "SentenceScorer",
    "StandIn", "Uses",
    # records
    "Candidate", "Chunker", "Corpus", "Document", "LLMStep", "Passage", "Question",
    "RunTrace", "StageResult", "Unit", "UnitConfig",
    # reader backends
    "Capabilities", "Generation", "Message", "prompt_text",
    # helpers and errors
    "ConfigError", "EngineError", "build_units", "count_tokens", "index_text",
    "query_terms", "split_sentences",
]
