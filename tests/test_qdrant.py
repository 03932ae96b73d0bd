"""engine.index.qdrant: a corpus's dense index served from a Qdrant collection (Qdrant's
local mode, the client a Qdrant cluster is served by) gives what one index gives, to every
dense stage."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.index.dense import dense_index
from engine.index.document_scores import DocumentScorer
from engine.index.qdrant import UNIT_KEY, QdrantDenseIndex, qdrant_dense_index
from engine.index.qdrant_locations import (
    check_collection,
    check_location,
    client_for,
    close_clients,
    derived_collection,
)
from engine.units.build import UnitConfig
from engine.units.chunking import Chunker
from tests.fakes import serves_as

PASSAGES = UnitConfig("passages", Chunker(max_tokens=10))  # seventeen rows
QUESTIONS = ("Which river flows through Budapest?", "Who painted A Sunday Afternoon?",
             "pointillism technique dots", "capital city on the Danube")


@pytest.fixture
def where(tmp_path):
    """A folder for Qdrant's local mode; its client closed after the test."""
    yield str(tmp_path / "qdrant")
    close_clients()


def test_a_missing_collection_is_written_from_the_index_then_served(tiny_corpus, where):
    one = dense_index(tiny_corpus, PASSAGES, kind="exact")
    written = []
    served = qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "tiny",
                                progress=lambda done, total: written.append((done, total)))
    assert isinstance(served, QdrantDenseIndex) and not served.exact
    assert written[-1] == (len(one.units), len(one.units))
    assert served.description == f"Qdrant collection 'tiny' at {where}"
    assert served.index.point_of_row is None  # its points' ids are rows
    serves_as(served, one, QUESTIONS, score_atol=1e-5, vector_atol=1e-6)
    point = client_for(where).retrieve("tiny", ids=[3], with_payload=True)[0]
    assert point.payload == {UNIT_KEY: one.units[3].id, "document": one.units[3].doc_ids[0]}
    # the funnel's first stage scores documents from it as from one index (its top
    # APPROXIMATE_DEPTH passages here hold every passage)
    for question in QUESTIONS:
        local = DocumentScorer(tiny_corpus, None, one, "dense").scores(question)
        remote = DocumentScorer(tiny_corpus, None, served, "dense").scores(question)
        assert np.allclose(local, remote, atol=1e-5)
    # opened again (another process, a restart): searched as it is, not written again
    close_clients()
    again = qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "tiny",
                               progress=lambda *_: pytest.fail("written again"))
    serves_as(again, one, QUESTIONS, score_atol=1e-5, vector_atol=1e-6)


def test_a_collection_written_from_other_content_or_grown_since_is_refused(tiny_corpus,
                                                                          where, tmp_path):
    from engine.documents import Corpus

    served = qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "tiny")
    assert client_for(where + "/") is client_for(str(tmp_path / "." / "qdrant"))  # one folder
    # the same passage ids over an edited text: the collection's vectors are not its own
    edited = Corpus("tiny", tuple(doc if doc.id != "Vienna" else
                                  type(doc)(doc.id, doc.title, doc.text.replace("Austria",
                                                                                "Europe"))
                                  for doc in tiny_corpus.documents))
    with pytest.raises(ConfigError, match="was written from another index than this "
                                          "corpus's \\(its corpus differ\\): delete"):
        qdrant_dense_index(edited, PASSAGES, "minilm", where, "tiny")
    # a point added after it was opened is named, not a wrong row
    from qdrant_client import models

    vector = served.encode_queries([QUESTIONS[0]])[0]
    client_for(where).upsert("tiny", points=[models.PointStruct(
        id=len(served.units), vector=vector.tolist(), payload={UNIT_KEY: "new#0"})])
    with pytest.raises(ConfigError, match=f"holds point {len(served.units)}, which it did "
                                          "not hold when it was opened"):
        served.top(vector, 3)


def test_points_written_by_another_tool_are_mapped_by_their_payload(tiny_corpus, where):
    from qdrant_client import models

    one = dense_index(tiny_corpus, PASSAGES, kind="exact")
    client = client_for(where)
    client.create_collection("theirs", vectors_config={"dense": models.VectorParams(
        size=one.vectors.shape[1], distance=models.Distance.DOT)})
    order = np.random.default_rng(0).permutation(len(one.units))  # written in any order
    client.upsert("theirs", points=[models.PointStruct(
        id=str(uuid.uuid4()), vector={"dense": one.vectors[row].tolist()},
        payload={UNIT_KEY: one.units[row].id, "source": "their pipeline"})
        for row in order.tolist()])
    served = qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "theirs",
                                progress=lambda *_: pytest.fail("encoded the corpus"))
    assert served.index.point_of_row is not None and served.index.using == "dense"
    vector = one.encode_queries([QUESTIONS[0]])[0]
    rows, _ = served.top(vector, 5)
    assert rows.tolist() == one.top(vector, 5)[0].tolist()
    assert np.allclose(served.vectors[rows], one.vectors[rows], atol=1e-6)


def test_score_units_of_a_collection_are_its_search_scores(tiny_corpus, where):
    """Units scored by id (engine.index.unit_scores) from a written collection and from one
    whose points another tool wrote (point ids mapped by payload), as Qdrant's search
    scores them."""
    from qdrant_client import models

    from tests.test_unit_scores import scores_as_searched

    scores_as_searched(qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "tiny"),
                       atol=1e-5)
    one = dense_index(tiny_corpus, PASSAGES, kind="exact")
    client_for(where).create_collection("theirs", vectors_config=models.VectorParams(
        size=one.vectors.shape[1], distance=models.Distance.COSINE))
    client_for(where).upsert("theirs", points=[models.PointStruct(
        id=str(uuid.uuid4()), vector=one.vectors[row].tolist(),
        payload={UNIT_KEY: one.units[row].id}) for row in range(len(one.units))])
    theirs = qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "theirs")
    assert theirs.index.point_of_row is not None
    scores_as_searched(theirs, atol=1e-5)


@pytest.mark.parametrize(("spoil", "named"), [
    ("dimension", "holds 8-dimensional vectors, but encoder 'minilm' makes 384-dimensional"),
    ("distance", "ranks by Euclid distance; the engine ranks by cosine"),
    ("length", "ranks by dot product over vectors that are not of unit length (norms 3.000"),
    ("count", "holds 16 points, but the corpus has 17 units here"),
    ("unit", "names unit 'Atlantis#0' in its payload's 'unit', which this corpus does not"),
    ("twice", "has no point naming unit"),
])
def test_a_collection_that_does_not_hold_the_corpus_is_refused_naming_why(
        tiny_corpus, where, spoil, named):
    from qdrant_client import models

    one = dense_index(tiny_corpus, PASSAGES, kind="exact")
    vectors, ids = one.vectors, [u.id for u in one.units]
    if spoil == "dimension":
        vectors = vectors[:, :8]
    if spoil == "length":
        vectors = vectors * 3.0
    if spoil == "count":
        vectors, ids = vectors[1:], ids[1:]
    if spoil in {"unit", "twice"}:
        ids = ["Atlantis#0" if spoil == "unit" else ids[1], *ids[1:]]
    client = client_for(where)
    client.create_collection("spoilt", vectors_config=models.VectorParams(
        size=vectors.shape[1],
        distance={"distance": models.Distance.EUCLID, "length": models.Distance.DOT}.get(
            spoil, models.Distance.COSINE)))
    client.upsert("spoilt", points=[
        models.PointStruct(id=row + 100, vector=vector.tolist(), payload={UNIT_KEY: unit})
        for row, (vector, unit) in enumerate(zip(vectors, ids, strict=True))])
    with pytest.raises(ConfigError, match="Qdrant collection 'spoilt'") as refused:
        qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", where, "spoilt")
    assert named in str(refused.value)
    assert "delete" in str(refused.value) or "serve a collection" in str(refused.value)


def test_a_server_that_does_not_answer_and_a_folder_in_use_are_named(tiny_corpus, where):
    from engine.errors import EngineError

    with pytest.raises(EngineError, match=r"Qdrant at http://127.0.0.1:9 did not answer "
                                          r"\(.*refused.*\): check that its server runs"):
        qdrant_dense_index(tiny_corpus, PASSAGES, "minilm", "http://127.0.0.1:9", "tiny")
    from qdrant_client import QdrantClient

    holder = QdrantClient(path=where)  # as another process would hold it
    try:
        with pytest.raises(ConfigError, match="is open in another Qdrant client"):
            client_for(where)
    finally:
        holder.close()


def test_locations_and_collection_names_are_checked(tmp_path):
    assert check_location(" http://qdrant:6333 ") == "http://qdrant:6333"
    assert check_location(str(tmp_path / "new")) == str(tmp_path / "new")
    for bad in ("", "grpc://qdrant:6334", str(tmp_path / "no" / "such" / "folder")):
        with pytest.raises(ConfigError, match="neither a server's URL"):
            check_location(bad)
    assert check_collection(" wiki.passages ") == "wiki.passages"
    for bad in ("", "a/b", "x" * 201):
        with pytest.raises(ConfigError, match="is not 1-200 letters"):
            check_collection(bad)


def test_an_index_other_than_the_primary_gets_a_collection_named_after_it(tmp_path):
    passages = UnitConfig("passages", Chunker(max_tokens=200, overlap=20))
    assert derived_collection("wiki", passages, "minilm") == "wiki.passages-200-20.minilm"
    assert derived_collection("wiki", UnitConfig("documents"), "e5") == "wiki.documents.e5"
    one, two = (derived_collection("wiki", passages, str(tmp_path / p / "bge"))
                for p in ("a", "b"))
    assert one.startswith("wiki.passages-200-20.bge-") and one != two
    clusters = derived_collection("wiki", UnitConfig("clusters"), "minilm")
    assert clusters.startswith("wiki.clusters-funnelrag-4096-")


def test_the_store_serves_every_dense_stage_from_qdrant_when_asked(tiny_corpus, where,
                                                                  monkeypatch):
    from engine.index.qdrant_locations import INSTALL  # noqa: F401  (the extra is installed here)
    from engine.paradigms.flat import FlatConfig
    from engine.service.remote_indexes import InQdrant
    from engine.service.store import LoadedResources, make_paradigm

    served, here = LoadedResources(), LoadedResources()
    with pytest.raises(ConfigError, match="neither a server's URL"):
        served.serve_from_qdrant(tiny_corpus, "nowhere://x")
    served.serve_from_qdrant(tiny_corpus, where)
    assert served.served_by(tiny_corpus.fingerprint, tiny_corpus.name) == \
        f"Qdrant collection {tiny_corpus.name!r} at {where}"
    assert served.served_by("another corpus") == ""
    index = served.dense(tiny_corpus, FlatConfig().passages())
    assert isinstance(index, QdrantDenseIndex) and index.index.name == tiny_corpus.name
    other = served.dense(tiny_corpus, PASSAGES)
    assert other.index.name == InQdrant(where).collection_for(tiny_corpus.name, PASSAGES,
                                                              "minilm")
    assert other.index.name != tiny_corpus.name
    # every paradigm's stages rank what they rank over an index in this process, asking
    # Qdrant (its nearest points, or their vectors) where they read dense vectors
    from engine.index.qdrant import Collection

    asked = []
    for method in ("top", "rows"):
        original = getattr(Collection, method)
        monkeypatch.setattr(Collection, method, lambda self, *a, _o=original, _m=method, **k:
                            (asked.append(_m), _o(self, *a, **k))[1])
    for paradigm, config in (("flat", {}), ("flat", {"reranker": "bi-encoder"}),
                             ("funnel", {}), ("best", {"search": "dense"}),
                             ("drrag", {"retriever": "dense", "selection": "sm"})):
        asked.clear()
        runs = [make_paradigm(paradigm, tiny_corpus, config, retrieval_only=True,
                              store=store).run(QUESTIONS[0]) for store in (served, here)]
        assert asked, f"{paradigm} {config} never asked Qdrant"
        stages = [[(s.name, [c.unit.id for c in s.candidates]) for s in run.stages]
                  for run in runs]
        assert stages[0] == stages[1], (paradigm, config)
        assert any(s.candidates for s in runs[0].stages)


@pytest.mark.parametrize(("argv", "named"), [
    (["--qdrant", "ftp://x"], "--qdrant 'ftp://x': Qdrant location 'ftp://x' is neither"),
    (["--qdrant", "http://q:6333", "--ray", "local"], "both serve the dense indexes"),
])
def test_the_app_names_a_wrong_qdrant_setting_at_start(argv, named, monkeypatch, capsys):
    from tests.fakes import app_refuses_at_start

    assert named in app_refuses_at_start(argv, monkeypatch, capsys)
