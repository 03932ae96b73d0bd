"""Test collections in: BEIR folders and zips, TREC topics (tagged and tab-separated) with
qrels, graded judgments kept as grades, and every bad file refused by file, line and field."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from engine.data.collection_store import questions_jsonl
from engine.data.loaders import read_dataset
from engine.data.loaders.collections import read_beir, read_qrels, read_topics, read_trec
from engine.documents import Document
from engine.errors import DataFormatError

CORPUS = [{"_id": "d1", "title": "Seurat", "text": "Georges Seurat painted La Grande Jatte."},
          {"_id": "d2", "title": "", "text": "Pointillism uses small dots of colour."},
          {"_id": 3, "title": "Danube", "text": "The Danube flows through Budapest."}]
QUERIES = [{"_id": "q1", "text": "Who painted La Grande Jatte?"},
           {"_id": "q2", "text": "Which river flows through Budapest?"},
           {"_id": "q3", "text": "A query judged only in train"}]
QRELS = {"test": "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\t3\t1\nq2\td1\t0\n",
         "train": "query-id\tcorpus-id\tscore\nq3\td2\t1\n"}


def beir_folder(root: Path, corpus=CORPUS, queries=QUERIES, qrels=QRELS) -> Path:
    folder = root / "tinybeir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    for split, text in qrels.items():
        (folder / "qrels" / f"{split}.tsv").write_text(text)
    return folder


def test_a_beir_folder_reads_its_split_with_grades_kept(tmp_path):
    collection = read_beir(beir_folder(tmp_path))
    assert collection.format == "beir" and collection.split == "test"
    assert [d.id for d in collection.documents] == ["d1", "d2", "3"]  # numeric ids as text
    assert collection.documents[1].title == ""  # BEIR corpora often have no titles
    assert [(q.id, q.text) for q in collection.questions] == [
        ("q1", "Who painted La Grande Jatte?"), ("q2", "Which river flows through Budapest?")]
    assert collection.judgments == {"q1": {"d1": 2, "d2": 1}, "q2": {"3": 1, "d1": 0}}
    assert collection.relevant("q1", at_least=2) == {"d1": 2}
    assert collection.relevant("q2") == {"3": 1}  # grade 0: judged, not relevant
    train = read_beir(beir_folder(tmp_path / "again"), split="train")
    assert [q.id for q in train.questions] == ["q3"]


def test_a_query_that_is_a_corpus_document_is_known_by_its_id_and_text(tmp_path):
    # ArguAna: a query is a corpus document (same id, same text); TREC DL numbers queries
    # and passages alike, so an id alone may meet a document by chance
    corpus = [*CORPUS, {"_id": "q1", "title": "", "text": "Who painted  La Grande Jatte?"},
              {"_id": "q2", "title": "", "text": "An unrelated passage numbered q2."}]
    collection = read_beir(beir_folder(tmp_path, corpus=corpus))
    assert [(q.id, q.own_document) for q in collection.questions] == [("q1", "q1"),
                                                                      ("q2", "")]
    assert read_beir(beir_folder(tmp_path / "plain")).questions[0].own_document == ""
    stored = tmp_path / "questions-test.jsonl"  # as an added collection keeps its questions
    stored.write_text(questions_jsonl(collection.questions))
    assert [(q.id, q.own_document, q.judgments) for q in read_dataset(stored).questions] \
        == [(q.id, q.own_document, q.judgments) for q in collection.questions]


def test_a_beir_zip_reads_as_its_folder(tmp_path):
    folder = beir_folder(tmp_path)
    archive = tmp_path / "tinybeir.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in folder.rglob("*"):
            z.write(path, path.relative_to(tmp_path))  # one folder down, as BEIR's zips
    collection = read_beir(archive)
    assert collection.name == "tinybeir" and len(collection.documents) == 3
    assert collection.judgments == read_beir(folder).judgments
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\tx\n")
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        for path in folder.rglob("*"):
            z.write(path, path.relative_to(tmp_path))
    with pytest.raises(DataFormatError) as refused:  # the member, not where it was unpacked
        read_beir(bad)
    assert str(refused.value).startswith("bad.zip:tinybeir/qrels/test.tsv, line 2: field "
                                         "'score'")


@pytest.mark.parametrize("change, where, says", [
    ({"qrels": {"test": "query-id\tcorpus-id\tscore\nq9\td1\t1\n"}},
     "test.tsv, line 2: field 'query-id'", "names query 'q9', which the queries lack"),
    ({"qrels": {"test": "query-id\tcorpus-id\tscore\nq1\td7\t1\n"}},
     "test.tsv, line 2: field 'corpus-id'", "names document 'd7', which the corpus lacks"),
    ({"qrels": {"test": "query-id\tcorpus-id\tscore\nq1\td1\thigh\n"}},
     "test.tsv, line 2: field 'score'", "'high' is not an integer grade"),
    ({"qrels": {"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n"}},
     "test.tsv, line 3: field 'corpus-id'", "judges query 'q1' and document 'd1' again "
                                            "(first on line 2)"),
    ({"qrels": {"test": "query-id\tcorpus-id\tscore\nq1\td1\n"}},
     "test.tsv, line 2:", "expected 3 fields"),
    ({"corpus": [*CORPUS, {"_id": "d1", "title": "Again", "text": "Twice."}]},
     "corpus.jsonl, line 4: field '_id'", "'d1' is already the id of line 1"),
    ({"corpus": [{"title": "No id", "text": "Anonymous."}]},
     "corpus.jsonl, line 1: field '_id'", "missing"),
    ({"queries": [*QUERIES, {"_id": "q2", "text": "Twice?"}]},
     "queries.jsonl, line 4: field '_id'", "'q2' is already the id of line 2"),
])
def test_a_bad_beir_file_is_refused_by_file_line_and_field(tmp_path, change, where, says):
    with pytest.raises(DataFormatError) as refused:
        read_beir(beir_folder(tmp_path, **change))
    assert where in str(refused.value) and says in str(refused.value)


def test_a_missing_split_or_file_says_what_a_beir_folder_holds(tmp_path):
    folder = beir_folder(tmp_path)
    with pytest.raises(DataFormatError, match=r"no judgments for split 'dev' \(pick one of: "
                                              r"test, train\)"):
        read_beir(folder, split="dev")
    (folder / "queries.jsonl").unlink()
    with pytest.raises(DataFormatError, match="lacks queries.jsonl .*corpus.jsonl, "
                                              "queries.jsonl and qrels/<split>.tsv"):
        read_beir(folder)
    not_a_zip = tmp_path / "broken.zip"
    not_a_zip.write_text("PK? no")
    with pytest.raises(DataFormatError, match="broken.zip: not a readable zip"):
        read_beir(not_a_zip)


TAGGED = """<top>
<num> Number: 301
<title> International Organized Crime
<desc> Description:
Identify organizations that participate in international criminal activity.
</top>

<top>
<num> Number: 302 <title> Poliomyelitis and
Post-Polio
<desc> Description: Is the disease of Poliomyelitis (polio) under control?
</top>
"""


def test_trec_topics_tagged_and_tab_separated(tmp_path):
    tagged = tmp_path / "topics.301-302.txt"
    tagged.write_text(TAGGED)
    assert read_topics(tagged) == {"301": "International Organized Crime",
                                   "302": "Poliomyelitis and Post-Polio"}
    closed = tmp_path / "fire.txt"  # fields closed on their line (FIRE's, some TREC tracks')
    closed.write_text("<top>\n<num>176</num>\n<title>Seurat's painting</title>\n"
                      "<desc>ignored</desc>\n</top>\n")
    assert read_topics(closed) == {"176": "Seurat's painting"}
    tsv = tmp_path / "queries.tsv"
    tsv.write_text("1030303\twho is aziz hashim\n1037496\twho is rep scalise?\n")
    assert read_topics(tsv) == {"1030303": "who is aziz hashim",
                                "1037496": "who is rep scalise?"}
    tsv.write_text("1030303\twho is aziz hashim\n1030303\tagain\n")
    with pytest.raises(DataFormatError, match=r"queries.tsv, line 2: field 'id': topic "
                                              r"'1030303' is already given on line 1"):
        read_topics(tsv)
    tagged.write_text("<top>\n<num> Number: 303\n<desc> no title here\n</top>\n")
    with pytest.raises(DataFormatError, match=r"line 1: field '<title>': topic '303' has no "
                                              r"title"):
        read_topics(tagged)


def test_trec_qrels_beside_a_corpus_make_a_collection_with_graded_judgments(tmp_path):
    topics = tmp_path / "queries.tsv"
    topics.write_text("q1\tseurat painting\nq2\tdanube\nq3\tunjudged topic\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 3\nq1 0 d2 0\nq2 0 d3 1\n")
    docs = [Document(f"d{i}", f"T{i}", f"text {i}") for i in (1, 2, 3)]
    collection = read_trec(topics, qrels, docs, name="toy-dl")
    assert collection.format == "trec" and collection.name == "toy-dl"
    assert [q.id for q in collection.questions] == ["q1", "q2"]  # judged topics only
    assert collection.judgments == {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 1}}
    qrels.write_text("q1 0 d1 3\nq1 0 d9 1\n")
    with pytest.raises(DataFormatError, match=r"qrels.txt, line 2: field 'corpus-id': names "
                                              r"document 'd9', which the corpus lacks"):
        read_trec(topics, qrels, docs)
    qrels.write_text("")
    with pytest.raises(DataFormatError, match="holds no judgments"):
        read_qrels(qrels)


def test_judgments_of_unknown_documents_are_left_out_with_a_warning_when_asked(tmp_path,
                                                                              caplog):
    """BEIR's own ArguAna judges 5 documents its corpus lacks: refused unless asked."""
    qrels = {"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tgone\t1\nq2\t3\t1\n"}
    folder = beir_folder(tmp_path, qrels=qrels)
    with pytest.raises(DataFormatError, match="names document 'gone'"):
        read_beir(folder)
    collection = read_beir(folder, drop_unknown=True)
    assert collection.judgments == {"q1": {"d1": 1}, "q2": {"3": 1}}
    assert "left out 1 judgments of documents the corpus lacks: gone (line 3)" in caplog.text
