"""engine.service.models: the models each role can use, and what each has built here, read
from a real cache directory (the tiny corpus's indexes built with the packaged MiniLM)."""

from __future__ import annotations

import pytest

from app.tabs.corpora import models_table
from engine.service.models import model_rows


@pytest.fixture
def built(tiny_corpus, data_dir):
    pytest.importorskip("faiss")
    from engine.index.dense import dense_index

    dense_index(tiny_corpus, kind="exact")
    dense_index(tiny_corpus, kind="hnsw")
    return {tiny_corpus.fingerprint: "tiny"}


def by(rows, role, name):
    found = [row for row in rows if row.role == role and row.name == name]
    assert len(found) == 1, [(r.role, r.name) for r in rows]
    return found[0]


@pytest.mark.fresh_data
def test_every_role_is_listed_with_your_own_model_as_an_option(data_dir):
    rows = model_rows({})
    roles = {row.role for row in rows}
    assert roles == {"encoder", "re-ranker", "selection classifier", "query classifier",
                     "generator"}
    for role in roles:
        assert by(rows, role, "a folder or hub id").source == "your own"
    assert by(rows, "generator", "an OpenAI-compatible endpoint").option.startswith(
        "reader.endpoint")
    # an empty data directory: nothing trained, nothing built
    assert by(rows, "re-ranker", "trained").status.startswith("not trained yet")
    assert by(rows, "selection classifier", "trained").status.startswith("not trained yet")
    assert by(rows, "encoder", "minilm").built == ()
    # the ONNX reader says what runs (fp32 by default), as its exports do ("fp32: ...")
    onnx = by(rows, "generator", "smollm2 through ONNX Runtime")
    assert onnx.source.startswith("exported here (fp32;") and "int8 with reader." in onnx.source


def test_an_encoders_indexes_and_vectors_are_listed_by_corpus(built, tiny_corpus, data_dir):
    from engine.units.build import UnitConfig, build_units, index_text

    minilm = by(model_rows(built), "encoder", "minilm")
    assert minilm.status.startswith("ready") and minilm.source == "packaged"
    indexes = [b for b in minilm.built if b.startswith("dense index of tiny")]
    assert len(indexes) == 2
    assert any("exact" in b for b in indexes)
    assert any("approximate HNSW, recall@100 1.000 vs exact" in b for b in indexes)
    texts = {index_text(u) for u in build_units(tiny_corpus, UnitConfig("passages"))}
    assert f"{len(texts)} texts' vectors stored (fp32)" in minilm.built or (
        f"{len(texts)} texts' vectors stored (bf16)" in minilm.built)
    unnamed = by(model_rows({}), "encoder", "minilm").built  # a corpus never loaded
    assert any("dense index of corpus " in b for b in unnamed)


def test_the_allowed_endpoints_and_models_are_listed_by_name_never_their_keys(
        data_dir, monkeypatch, tmp_path):
    from engine import allowed

    monkeypatch.setenv("VLLM_KEY", "sk-test")
    path = tmp_path / "allow.toml"
    path.write_text('[endpoints.vllm]\nurl = "http://127.0.0.1:8000/v1"\nkey_env = "VLLM_KEY"'
                    f'\n[models]\ne5 = "/srv/e5"\nmine = "{tmp_path}"\n'
                    'hub = "no-such-org/no-such-model"\n')
    assert "none yet: --allow FILE" in by(model_rows({}), "re-ranker",
                                          "a folder or hub id").status
    with allowed.confined(allowed.Allowed.read(path)):
        rows = model_rows({})
    row = by(rows, "generator", "endpoint 'vllm'")
    assert "its key is sent to it alone" in row.status
    assert all("sk-test" not in r.status and "/srv/e5" not in r.status for r in rows)
    # issue 67: a name whose model cannot load here is said so, not listed as usable
    assert ("by a name the operator allowed (e5: its folder is missing, hub: not in the "
            "local hub cache, so it cannot load offline, mine)") in by(
        rows, "encoder", "a folder or hub id").status


def test_the_table_escapes_what_it_shows(data_dir):
    from engine.service.models import ModelRow

    html = models_table([ModelRow("encoder", "<b>x</b>", "your own", "ready",
                                  ("a<script>",), "bi_encoder")])
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "a&lt;script&gt;" in html and "data-role='encoder'" in html


def test_a_corpus_ready_says_how_many_documents_its_files_gave():
    """Issue 67, in the browser: 15 HTML pages became 36 documents and nothing said why."""
    from app.tabs.corpora import ended
    from engine.service.corpus_rows import CorpusRow

    said = ended([CorpusRow("mydocs", "added", "ready", 36, "abc")], "mydocs")
    assert "It holds 36 documents (an HTML page gives one per section" in said
    assert "holds" not in ended([CorpusRow("big", "added", "ready", None, "")], "big")
