"""Collections by their ir_datasets ids (issue 67): `irds:<id>` read through ir_datasets
from its local cache, tested with a collection registered from small local files in
ir_datasets' own registry; one whose files are not here is refused naming each file and
where to put it, before anything is fetched."""

from __future__ import annotations

import json
import time

import pytest

from engine.data.loaders.irds import MissingFiles, read_irds
from engine.errors import ConfigError


@pytest.fixture
def registered(tmp_path):
    """`funnel-test/tiny/test`, from local TSV files; `funnel-test/absent/test`, whose files
    a download would fetch from an address where nothing listens."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import Download, LocalDownload, RequestsDownload

    (tmp_path / "docs.tsv").write_text("d1\tThe Danube flows through Budapest.\n"
                                       "d2\tSeurat painted La Grande Jatte.\n")
    (tmp_path / "queries.tsv").write_text("q1\twhich river flows through budapest\n"
                                          "q2\twho painted la grande jatte\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq2 0 d2 1\nq2 0 d1 0\n")
    qrels = {0: "not relevant", 1: "relevant", 2: "highly relevant"}
    tiny = Dataset(TsvDocs(LocalDownload(tmp_path / "docs.tsv")),
                   TsvQueries(LocalDownload(tmp_path / "queries.tsv")),
                   TrecQrels(LocalDownload(tmp_path / "qrels.txt"), qrels))
    fetched = Download([RequestsDownload("http://127.0.0.1:9/absent.tsv")],
                       cache_path=str(tmp_path / "home" / "absent.tsv"))
    absent = Dataset(TsvDocs(fetched), TsvQueries(LocalDownload(tmp_path / "queries.tsv")),
                     TrecQrels(LocalDownload(tmp_path / "qrels.txt"), qrels))
    names = ("funnel-test/tiny/test", "funnel-test/absent/test")
    for name, dataset in zip(names, (tiny, absent), strict=True):
        ir_datasets.registry.register(name, dataset)
    yield tmp_path
    for name in names:
        ir_datasets.registry._registered.pop(name, None)


def test_a_collection_registered_in_ir_datasets_is_read_by_its_id(registered):
    collection = read_irds("irds:funnel-test/tiny/test")
    assert [d.id for d in collection.documents] == ["d1", "d2"]
    assert collection.judgments == {"q1": {"d1": 2}, "q2": {"d2": 1, "d1": 0}}
    question = {q.id: q for q in collection.questions}["q1"]
    assert question.text == "which river flows through budapest"
    assert question.supporting_titles == ("d1",)  # graded 1 or more
    assert collection.split == "test"


def test_missing_files_are_named_with_where_to_put_them_and_nothing_is_fetched(registered):
    began = time.monotonic()
    with pytest.raises(MissingFiles) as missing:
        read_irds("irds:funnel-test/absent/test")
    assert time.monotonic() - began < 5  # refused at once: no download was tried
    said = str(missing.value)
    assert str(registered / "home" / "absent.tsv") in said and "nothing is downloaded" in said
    with pytest.raises(ConfigError, match="ir_datasets has no dataset 'no/such/set'"):
        read_irds("irds:no/such/set")


def test_eval_takes_an_ir_datasets_id(registered, capsys):
    from engine.cli.main import main
    from engine.paradigms import registry
    from tests.fakes import ECHO

    registry.register(ECHO)
    try:
        assert main(["eval", "--dataset", "irds:funnel-test/tiny/test", "--paradigm", "echo",
                     "--json"]) == 0
    finally:
        registry.unregister(ECHO.name)
    out = capsys.readouterr().out
    assert "added collection 'funnel-test-tiny-test': test (2 judged questions)" in out
    assert json.loads(out.strip().splitlines()[-1])
