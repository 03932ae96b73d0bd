"""engine.data.loaders.read_dataset on tiny fixture files of every format, malformed input, and
the real QA files in the shared data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.data.corpus import load_corpus
from engine.data.loaders import FORMATS, read_dataset
from engine.documents import Corpus, Dataset, Question
from engine.errors import ConfigError, DataFormatError
from engine.paths import shared_data_dir

# --- helpers ------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def source_of(path: Path) -> str:
    """How QA loaders name a file in Document.sources: `<folder>/<file>`."""
    return f"{path.parent.name}/{path.name}"


def by_id(dataset: Dataset) -> dict[str, Question]:
    return {q.id: q for q in dataset.questions}


def format_error(path: Path) -> str:
    with pytest.raises(DataFormatError) as info:
        read_dataset(path)
    message = str(info.value)
    assert str(path) in message
    return message


# --- fixtures of every format -------------------------------------------------------------

HOTPOT_CONTEXTS_ROWS = [
    {
        "question_id": "q1",
        "question_text": "Which position did the star of Kiss and Tell hold?",
        "answers_objects": [{"number": "", "date": {"day": "", "month": "", "year": ""},
                             "spans": ["Chief of Protocol"]}],
        "contexts": [
            {"id": "0", "title": "Shirley Temple", "paragraph_text": "Shirley Temple was a "
             "diplomat.", "is_supporting": True},
            {"id": "1", "title": "Kiss and Tell", "paragraph_text": "Kiss and Tell is a film.",
             "is_supporting": True},
            {"id": "2", "title": "Distractor", "paragraph_text": "Unrelated text.",
             "is_supporting": False},
        ],
    },
    {
        "question_id": 42,
        "question_text": "Were both women actresses?",
        "answers_objects": [{"spans": ["yes"]}],
        "contexts": [
            {"id": "0", "title": "Shirley Temple", "paragraph_text": "Shirley Temple was a "
             "diplomat.", "is_supporting": True},
            {"id": "1", "title": "Distractor", "paragraph_text": "Another distractor.",
             "is_supporting": True},
        ],
    },
]

HOTPOT_ORIGINAL = [
    {
        "_id": "h1",
        "question": "Which city is the capital of France?",
        "answer": "Paris",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["France", 1], ["Paris", 0]],
        "context": [
            ["France", ["France is a country.", " Its capital is Paris."]],
            ["Paris", ["Paris is a city.", " It is large."]],
            ["Lyon", ["Lyon is another city."]],
        ],
    },
    {
        "_id": "h2",
        "question": "Is Lyon bigger than Paris?",
        "answer": "no",
        "type": "comparison",
        "level": "hard",
        "supporting_facts": [["Lyon", 0], ["Paris", 0]],
        "context": [
            ["Lyon", ["Lyon is another city."]],
            ["Paris", ["Paris is the capital."]],
        ],
    },
]

MUSIQUE_ITEMS = [
    {
        "id": "2hop__150763_14904",
        "question": "Who founded the publisher of the journal?",
        "answer": "Benjamin Franklin",
        "answer_aliases": ["Ben Franklin", "B. Franklin"],
        "paragraphs": [
            {"idx": 0, "title": "Journal", "paragraph_text": "The journal is published by AIP.",
             "is_supporting": True},
            {"idx": 1, "title": "Other", "paragraph_text": "A distractor paragraph.",
             "is_supporting": False},
            {"idx": 2, "title": "AIP", "paragraph_text": "AIP was founded by Ben Franklin.",
             "is_supporting": True},
            {"idx": 3, "title": "Journal", "paragraph_text": "It started in 1960.",
             "is_supporting": True},
        ],
        "question_decomposition": [],
    },
    {
        "id": "custom-7",
        "question": "What is the other thing?",
        "answer": "Other",
        "paragraphs": [
            {"idx": 0, "title": "Other", "paragraph_text": "A distractor paragraph.",
             "is_supporting": True},
        ],
    },
]

SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Normans",
            "paragraphs": [
                {
                    "context": "The Normans lived in Normandy, in France.",
                    "qas": [
                        {"id": "s1", "question": "In what country is Normandy?",
                         "answers": [{"text": "France", "answer_start": 34},
                                     {"text": "France", "answer_start": 34},
                                     {"text": "in France", "answer_start": 31}],
                         "is_impossible": False},
                        {"id": "s2", "question": "Who gave Normandy its name?",
                         "answers": [],
                         "plausible_answers": [{"text": "Normans", "answer_start": 4}],
                         "is_impossible": True},
                    ],
                },
                {
                    "context": "Rollo was a Viking leader.",
                    "qas": [{"id": "s3", "question": "Who was Rollo?",
                             "answers": [{"text": "a Viking leader", "answer_start": 10}]}],
                },
            ],
        },
    ],
}

NQ_ROWS = [
    {"question": "when was the last time anyone was on the moon",
     "answer": ["14 December 1972 UTC", "December 1972"]},
    None,  # a blank line
    {"question": "who wrote he ain't heavy", "answer": ["Bobby Scott", "Bob Russell"]},
    {"id": "custom", "question": "how many seasons", "answer": ["one"]},
]

TITLE_TEXT = [
    {"title": "Alpha", "text": "Alpha is the first letter."},
    {"title": "Beta", "text": "Beta is the second letter."},
    {"title": "Alpha", "text": "Alpha is the first letter."},  # exact duplicate
    {"title": "Alpha", "text": "It comes before beta."},  # new text, same title
    {"title": "Beta", "text": "Beta is the second"},  # contained in a kept text
]


def write_nq(path: Path) -> Path:
    lines = ["" if row is None else json.dumps(row) for row in NQ_ROWS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- hotpotqa-contexts --------------------------------------------------------------------


def test_hotpotqa_contexts_questions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dev.jsonl", HOTPOT_CONTEXTS_ROWS)
    dataset = read_dataset(path)
    assert (dataset.name, dataset.format) == ("dev", "hotpotqa-contexts")
    questions = by_id(dataset)
    assert list(questions) == ["q1", "42"]
    q1 = questions["q1"]
    assert q1.text == "Which position did the star of Kiss and Tell hold?"
    assert q1.answers == ("Chief of Protocol",)
    assert q1.supporting_titles == ("Shirley Temple", "Kiss and Tell")
    assert q1.supporting_paragraph_ids == ("0", "1")
    assert q1.type == "span"
    assert q1.source == source_of(path)
    assert questions["42"].type == "yes/no"
    assert questions["42"].supporting_titles == ("Shirley Temple", "Distractor")


def test_hotpotqa_contexts_documents_are_paragraphs_keyed_by_title(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dev.jsonl", HOTPOT_CONTEXTS_ROWS)
    documents = read_dataset(path).documents
    assert [d.id for d in documents] == ["Shirley Temple", "Kiss and Tell", "Distractor",
                                         "Shirley Temple", "Distractor"]
    assert all(d.id == d.title for d in documents)
    assert all(d.sources == (source_of(path),) for d in documents)


def test_hotpotqa_contexts_load_corpus_merges_paragraphs_by_title(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dev.jsonl", HOTPOT_CONTEXTS_ROWS)
    corpus = load_corpus(str(path))
    assert corpus.name == "dev"
    assert [d.id for d in corpus.documents] == ["Shirley Temple", "Kiss and Tell", "Distractor"]
    assert corpus.by_id["Shirley Temple"].text == "Shirley Temple was a diplomat."
    assert corpus.by_id["Distractor"].text == "Unrelated text.\n\nAnother distractor."


# --- hotpotqa (original) ------------------------------------------------------------------


def test_hotpotqa_original_questions(tmp_path: Path) -> None:
    path = write_json(tmp_path / "train.json", HOTPOT_ORIGINAL)
    dataset = read_dataset(path)
    assert dataset.format == "hotpotqa"
    questions = by_id(dataset)
    assert list(questions) == ["h1", "h2"]
    h1 = questions["h1"]
    assert h1.answers == ("Paris",)
    assert h1.supporting_titles == ("France", "Paris")
    assert h1.supporting_paragraph_ids == ("France:1", "Paris:0")
    assert h1.type == "bridge"
    assert questions["h2"].type == "comparison"
    assert questions["h2"].answers == ("no",)


def test_hotpotqa_original_sentences_are_joined_into_paragraphs(tmp_path: Path) -> None:
    path = write_json(tmp_path / "train.json", HOTPOT_ORIGINAL)
    documents = read_dataset(path).documents
    assert documents[0].id == "France"
    assert documents[0].text == "France is a country. Its capital is Paris."
    corpus = load_corpus(str(path))
    assert [d.id for d in corpus.documents] == ["France", "Paris", "Lyon"]
    assert corpus.by_id["Paris"].text == "Paris is a city. It is large.\n\nParis is the capital."
    assert corpus.by_id["Lyon"].text == "Lyon is another city."


# --- musique ------------------------------------------------------------------------------


def check_musique(dataset: Dataset, path: Path) -> None:
    assert dataset.format == "musique"
    questions = by_id(dataset)
    assert list(questions) == ["2hop__150763_14904", "custom-7"]
    q = questions["2hop__150763_14904"]
    assert q.answers == ("Benjamin Franklin", "Ben Franklin", "B. Franklin")
    assert q.supporting_titles == ("Journal", "AIP")  # deduplicated, in order
    assert q.supporting_paragraph_ids == ("0", "2", "3")
    assert q.type == "2hop"
    assert q.source == source_of(path)
    other = questions["custom-7"]
    assert other.answers == ("Other",)  # no answer_aliases field
    assert other.type == "multi-hop"
    assert len(dataset.documents) == 5


def test_musique_json_list(tmp_path: Path) -> None:
    path = write_json(tmp_path / "musique.json", MUSIQUE_ITEMS)
    check_musique(read_dataset(path), path)


def test_musique_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "musique.jsonl", MUSIQUE_ITEMS)
    check_musique(read_dataset(path), path)


def test_musique_load_corpus_merges_paragraphs_by_title(tmp_path: Path) -> None:
    path = write_json(tmp_path / "musique.json", MUSIQUE_ITEMS)
    corpus = load_corpus(str(path))
    assert [d.id for d in corpus.documents] == ["Journal", "Other", "AIP"]
    assert corpus.by_id["Journal"].text == (
        "The journal is published by AIP.\n\nIt started in 1960."
    )
    assert corpus.by_id["Other"].text == "A distractor paragraph."


# --- squad --------------------------------------------------------------------------------


def test_squad_v2_questions_including_unanswerable(tmp_path: Path) -> None:
    path = write_json(tmp_path / "squad.json", SQUAD)
    dataset = read_dataset(path)
    assert dataset.format == "squad"
    questions = by_id(dataset)
    assert list(questions) == ["s1", "s2", "s3"]
    assert questions["s1"].answers == ("France", "in France")  # duplicates dropped
    assert questions["s1"].type == "span"
    assert questions["s1"].supporting_titles == ("Normans",)
    assert questions["s1"].supporting_paragraph_ids == ("Normans:0",)
    assert questions["s2"].answers == ()
    assert questions["s2"].type == "unanswerable"
    assert questions["s3"].supporting_paragraph_ids == ("Normans:1",)
    assert questions["s3"].type == "span"


def test_squad_paragraphs_become_one_document_per_article(tmp_path: Path) -> None:
    path = write_json(tmp_path / "squad.json", SQUAD)
    assert [d.id for d in read_dataset(path).documents] == ["Normans", "Normans"]
    corpus = load_corpus(str(path))
    assert len(corpus) == 1
    assert corpus.by_id["Normans"].text == (
        "The Normans lived in Normandy, in France.\n\nRollo was a Viking leader."
    )


# --- nq-open ------------------------------------------------------------------------------


def test_nq_open_questions_have_answers_and_no_documents(tmp_path: Path) -> None:
    path = write_nq(tmp_path / "nq.jsonl")
    dataset = read_dataset(path)
    assert dataset.format == "nq-open"
    assert dataset.documents == ()
    questions = by_id(dataset)
    assert list(questions) == ["nq-1", "nq-3", "custom"]  # default id = line number
    assert questions["nq-1"].answers == ("14 December 1972 UTC", "December 1972")
    assert questions["nq-3"].text == "who wrote he ain't heavy"
    assert all(q.type == "open" and q.supporting_titles == () for q in dataset.questions)


# --- {title, text} JSON list --------------------------------------------------------------


def test_title_text_list_is_documents_only(tmp_path: Path) -> None:
    path = write_json(tmp_path / "corpus.json", TITLE_TEXT)
    dataset = read_dataset(path)
    assert dataset.format == "title-text"
    assert dataset.questions == ()
    assert [d.id for d in dataset.documents] == ["Alpha", "Beta", "Alpha", "Alpha", "Beta"]


def test_title_text_load_corpus_merges_and_drops_repeated_text(tmp_path: Path) -> None:
    path = write_json(tmp_path / "corpus.json", TITLE_TEXT)
    corpus = load_corpus(str(path))
    assert [d.id for d in corpus.documents] == ["Alpha", "Beta"]
    assert corpus.by_id["Alpha"].text == "Alpha is the first letter.\n\nIt comes before beta."
    assert corpus.by_id["Beta"].text == "Beta is the second letter."
    assert corpus.by_id["Alpha"].sources == (source_of(path),)


# --- user corpora -------------------------------------------------------------------------

USER_ROWS = [
    {"id": "d1", "title": "Doc One", "text": "Text one, with a comma.", "links": ["d2", "Doc 3"]},
    {"id": 2, "title": "Doc Two", "text": "Text two."},
]


def check_user_corpus(dataset: Dataset, path: Path) -> None:
    assert dataset.format == "corpus"
    assert dataset.questions == ()
    docs = {d.id: d for d in dataset.documents}
    assert list(docs) == ["d1", "2"]
    assert docs["d1"].title == "Doc One"
    assert docs["d1"].text == "Text one, with a comma."
    assert docs["d1"].links == ("d2", "Doc 3")
    assert docs["2"].links == ()
    assert docs["d1"].sources == (path.name,)


def test_user_corpus_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", USER_ROWS)
    check_user_corpus(read_dataset(path), path)


def test_user_corpus_csv_with_pipe_separated_links(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text('id,title,text,links\nd1,Doc One,"Text one, with a comma.",d2|Doc 3\n'
                    "2,Doc Two,Text two.,\n", encoding="utf-8")
    check_user_corpus(read_dataset(path), path)


def test_user_corpus_csv_links_may_be_a_json_list(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text('id,title,text,links\nd1,One,Text.,"[""a|b"", ""c""]"\n', encoding="utf-8")
    assert read_dataset(path).documents[0].links == ("a|b", "c")


def test_user_corpus_csv_without_links_column(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("id,title,text\nd1,One,Text one.\n", encoding="utf-8")
    (document,) = read_dataset(path).documents
    assert (document.id, document.title, document.text, document.links) == (
        "d1", "One", "Text one.", ())


def test_user_corpus_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "mine.parquet"
    table = pa.table({
        "id": ["d1", "2"],
        "title": ["Doc One", "Doc Two"],
        "text": ["Text one, with a comma.", "Text two."],
        "links": [["d2", "Doc 3"], None],
    })
    pq.write_table(table, path)
    check_user_corpus(read_dataset(path), path)


def test_user_folder_of_txt_and_md(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "plain_note.txt").write_text("Just some text.\nSecond line.\n", encoding="utf-8")
    (folder / "sub" / "page.md").write_text("# My Heading\n\nBody text.\n", encoding="utf-8")
    (folder / "untitled.md").write_text("No heading here.\n", encoding="utf-8")
    (folder / "empty.txt").write_text("   \n", encoding="utf-8")
    (folder / "ignored.rst").write_text("Not read.\n", encoding="utf-8")
    dataset = read_dataset(folder)
    assert dataset.format == "corpus"
    docs = {d.id: d for d in dataset.documents}
    assert sorted(docs) == ["plain_note", "sub/page", "untitled"]
    assert docs["sub/page"].title == "My Heading"
    assert docs["sub/page"].text == "# My Heading\n\nBody text."
    assert docs["plain_note"].title == "plain note"
    assert docs["untitled"].title == "untitled"
    assert docs["plain_note"].sources == ("notes",)


def test_user_corpus_load_corpus_merges_rows_with_the_same_id(tmp_path: Path) -> None:
    rows = [
        {"id": "d1", "title": "One", "text": "First part.", "links": ["a"]},
        {"id": "d2", "title": "Two", "text": "Other."},
        {"id": "d1", "title": "One", "text": "Second part.", "links": ["b", "a"]},
    ]
    corpus = load_corpus(str(write_jsonl(tmp_path / "mine.jsonl", rows)))
    assert [d.id for d in corpus.documents] == ["d1", "d2"]
    assert corpus.by_id["d1"].text == "First part.\n\nSecond part."
    assert corpus.by_id["d1"].links == ("a", "b")


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(USER_ROWS[0]).encode("utf-8") + b"\n")
    assert read_dataset(path).documents[0].id == "d1"


def test_load_corpus_of_a_missing_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_corpus(str(tmp_path / "nope.jsonl"))


def test_every_format_is_listed() -> None:
    assert set(FORMATS) == {"hotpotqa-contexts", "hotpotqa", "musique", "squad", "nq-open",
                            "title-text", "corpus", "beir", "trec", "judged"}


# --- malformed input ----------------------------------------------------------------------


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"question": "q", "answer": ["a"]})
    path.write_text(f"{good}\n{good}\n\n{{\"question\": oops}}\n{good}\n", encoding="utf-8")
    message = format_error(path)
    assert "line 4" in message
    assert "invalid JSON" in message


def test_bad_json_inside_an_array_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n{"title": "A", "text": "a"},\n{"title": "B",\n "text": oops}\n]\n',
                    encoding="utf-8")
    message = format_error(path)
    assert "line 4" in message
    assert "invalid JSON" in message


def test_missing_field_in_json_array_item_names_file_line_and_field(tmp_path: Path) -> None:
    lines = ["["]
    lines += [json.dumps({"title": f"T{i}", "text": f"text {i}"}) + "," for i in range(7)]
    lines.append(json.dumps({"title": "T7"}) + ",")  # line 9
    lines.append(json.dumps({"title": "T8", "text": "text 8"}))
    lines.append("]")
    path = tmp_path / "corpus.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = format_error(path)
    assert "line 9" in message
    assert "'text'" in message
    assert "missing" in message


def test_missing_field_in_pretty_printed_array_names_the_item_start_line(
    tmp_path: Path,
) -> None:
    path = write_json(tmp_path / "corpus.json", [{"title": "A", "text": "a"}, {"title": "B"}])
    message = format_error(path)  # indent=2: the second item opens on line 6
    assert "line 6" in message
    assert "'text'" in message


@pytest.mark.parametrize(
    ("name", "content", "facts"),
    [
        ("corpus.json", [{"title": "A", "text": 5}], ["line 2", "'text'", "expected str, got int"]),
        ("nq.jsonl", None, ["line 1", "'answer'", "expected list, got int"]),
        ("hotpot.json", [{**HOTPOT_ORIGINAL[0], "context": [["Only a title"]]}],
         ["line 2", "'context'"]),
        ("musique.json", [{**MUSIQUE_ITEMS[0], "answer_aliases": ["ok", 3]}],
         ["line 2", "'answer_aliases'", "list of strings"]),
    ],
)
def test_wrong_field_type_names_line_and_field(
    tmp_path: Path, name: str, content: object, facts: list[str]
) -> None:
    path = tmp_path / name
    if content is None:
        write_jsonl(path, [{"question": "q", "answer": 7}])  # a string is one answer
    else:
        write_json(path, content)
    message = format_error(path)
    for fact in facts:
        assert fact in message


def test_contexts_item_without_text_names_the_field(tmp_path: Path) -> None:
    row = {**HOTPOT_CONTEXTS_ROWS[0], "contexts": [{"id": "0", "title": "T"}]}
    path = write_jsonl(tmp_path / "dev.jsonl", [HOTPOT_CONTEXTS_ROWS[0], row])
    message = format_error(path)
    assert "line 2" in message
    assert "'contexts'" in message
    assert "'paragraph_text'" in message


def test_blank_required_text_is_an_error_and_a_blank_title_is_none(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [{"id": "d1", "title": "T", "text": "  "}])
    message = format_error(path)
    assert "'text'" in message and "is empty" in message
    # a test collection's corpus often has no titles: an empty one is kept as none
    path = write_jsonl(tmp_path / "untitled.jsonl", [{"id": "d1", "title": "  ", "text": "x"}])
    assert read_dataset(path).documents[0].title == ""
    path = write_jsonl(tmp_path / "numbered.jsonl", [{"id": "d1", "title": 7, "text": "x"}])
    assert "'title'" in format_error(path)


def test_invalid_utf8_names_line_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "nq.jsonl"
    good = json.dumps({"question": "q", "answer": ["a"]}).encode("utf-8")
    path.write_bytes(good + b"\n" + good + b"\n" + b'{"question": "caf\xe9", "answer": ["x"]}\n')
    message = format_error(path)
    assert "line 3" in message
    assert "UTF-8" in message
    assert "0xe9" in message


def test_invalid_utf8_in_a_folder_file_names_that_file(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ok.txt").write_text("Fine.\n", encoding="utf-8")
    bad = folder / "bad.txt"
    bad.write_bytes(b"first line\nsecond \xff line\n")
    with pytest.raises(DataFormatError) as info:
        read_dataset(folder)
    message = str(info.value)
    assert str(bad) in message
    assert "line 2" in message and "UTF-8" in message


def test_csv_missing_a_column(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("id,title\nd1,One\n", encoding="utf-8")
    message = format_error(path)
    assert "line 1" in message
    assert "'text'" in message
    assert "missing column" in message


def test_csv_bad_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("id,title,text\nd1,One,Text one.\nd2,Two,\n", encoding="utf-8")
    message = format_error(path)
    assert "line 3" in message
    assert "'text'" in message


def test_csv_links_that_are_not_a_json_list(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text('id,title,text,links\nd1,One,Text.,"[broken"\n', encoding="utf-8")
    message = format_error(path)
    assert "line 2" in message and "'links'" in message


def test_unreadable_parquet_file(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "mine.parquet"
    path.write_bytes(b"this is not parquet")
    assert "not a readable Parquet file" in format_error(path)


def test_parquet_missing_column_names_row_and_field(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"id": ["d1"], "title": ["One"]}), path)
    message = format_error(path)
    assert "line 1" in message and "'text'" in message


@pytest.mark.parametrize("suffix", [".xml", ".txt", ".tsv", ""])
def test_unknown_file_suffix(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"rows{suffix}"
    path.write_text("id,title,text\n", encoding="utf-8")
    message = format_error(path)
    assert f"unsupported file type {suffix!r}" in message


@pytest.mark.parametrize(
    ("name", "content", "fact"),
    [
        ("empty.jsonl", "", "no records"),
        ("blank.jsonl", "\n  \n\n", "no records"),
        ("empty.json", "", "the file is empty"),
        ("spaces.json", " \n ", "the file is empty"),
        ("list.json", "[ ]", "empty list"),
        ("empty.csv", "", "missing column"),
        ("header.csv", "id,title,text\n", "no documents"),
    ],
)
def test_empty_files(tmp_path: Path, name: str, content: str, fact: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert fact in format_error(path)


def test_folder_without_text_files(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.rst").write_text("x", encoding="utf-8")
    message = format_error(folder)
    assert "no .txt, .md, .html or .pdf file with text" in message
    assert "skipped: readme.rst (not a .txt, .md, .html or .pdf file)" in message


def test_missing_path(tmp_path: Path) -> None:
    assert "no such file or folder" in format_error(tmp_path / "missing.json")


def test_unrecognised_jsonl_record(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "odd.jsonl", [{"foo": 1, "bar": 2}])
    message = format_error(path)
    assert "unrecognised JSONL record" in message and "'bar', 'foo'" in message


def test_squad_item_missing_question_names_the_json_path(tmp_path: Path) -> None:
    squad = json.loads(json.dumps(SQUAD))
    del squad["data"][0]["paragraphs"][0]["qas"][1]["question"]
    path = write_json(tmp_path / "squad.json", squad)
    message = format_error(path)
    assert "data[0].paragraphs[0].qas[1].question" in message
    assert "missing" in message


def test_squad_paragraph_missing_context_names_the_json_path(tmp_path: Path) -> None:
    squad = json.loads(json.dumps(SQUAD))
    del squad["data"][0]["paragraphs"][1]["context"]
    message = format_error(write_json(tmp_path / "squad.json", squad))
    assert "data[0].paragraphs[1].context" in message


def test_squad_with_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "squad.json"
    path.write_text('{\n  "data": [\n    oops\n  ]\n}\n', encoding="utf-8")
    message = format_error(path)
    assert "line 3" in message and "invalid JSON" in message


def test_jsonl_string_with_unicode_line_separator_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "nq.jsonl"
    row = {"question": "first part\u2028second part", "answer": ["x"]}
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    (question,) = read_dataset(path).questions
    assert question.text == "first part\u2028second part"


def test_content_after_the_json_array_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    path.write_text('[{"title": "A", "text": "a"}]\n[{"title": "B", "text": "b"}]\n',
                    encoding="utf-8")
    message = format_error(path)
    assert "line 2" in message


def test_non_object_jsonl_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "nq.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": ["a"]}) + "\n[1, 2]\n",
                    encoding="utf-8")
    message = format_error(path)
    assert "line 2" in message and "expected a JSON object" in message


def test_suffix_is_case_insensitive(tmp_path: Path) -> None:
    path = write_nq(tmp_path / "NQ.JSONL")
    assert read_dataset(path).format == "nq-open"


# --- the real files in ../shared/data -----------------------------------------------------

SHARED = shared_data_dir()
needs_shared_data = pytest.mark.skipif(not SHARED.is_dir(),
                                       reason=f"shared QA data not found at {SHARED}")


@pytest.fixture(scope="module")
def dev500() -> Dataset:
    return read_dataset(SHARED / "hotpotqa" / "dev500_contexts.jsonl")


@needs_shared_data
def test_real_hotpotqa_dev500(dev500: Dataset) -> None:
    assert dev500.format == "hotpotqa-contexts"
    assert len(dev500.questions) == 500
    assert len({q.id for q in dev500.questions}) == 500
    assert all(len(q.supporting_titles) == 2 for q in dev500.questions)
    assert all(q.answers for q in dev500.questions)
    assert len({(d.title, d.text) for d in dev500.documents}) == 4858


@needs_shared_data
def test_real_hotpotqa_train100() -> None:
    dataset = read_dataset(SHARED / "hotpotqa" / "train100.json")
    assert dataset.format == "hotpotqa"
    assert len(dataset.questions) == 100
    assert {q.type for q in dataset.questions} == {"bridge", "comparison"}
    titles = {d.id for d in dataset.documents}
    assert all(set(q.supporting_titles) <= titles for q in dataset.questions)


@needs_shared_data
def test_real_train_and_dev_share_no_question_id(dev500: Dataset) -> None:
    train = read_dataset(SHARED / "hotpotqa" / "train100.json")
    musique = read_dataset(SHARED / "musique" / "train100.json")
    dev_ids = {q.id for q in dev500.questions}
    assert dev_ids.isdisjoint(q.id for q in train.questions)
    assert dev_ids.isdisjoint(q.id for q in musique.questions)


@needs_shared_data
def test_real_musique_train100() -> None:
    dataset = read_dataset(SHARED / "musique" / "train100.json")
    assert dataset.format == "musique"
    assert len(dataset.questions) == 100
    assert len(dataset.documents) == 100 * 20
    assert all(q.supporting_titles and q.answers for q in dataset.questions)


@needs_shared_data
def test_real_squad_small_v2() -> None:
    dataset = read_dataset(SHARED / "squad" / "small_v2.json")
    assert dataset.format == "squad"
    assert len(dataset.questions) == 626
    assert sum(q.type == "span" for q in dataset.questions) == 293
    assert all(q.answers for q in dataset.questions if q.type == "span")
    assert len(dataset.documents) == 87
    assert len(load_corpus(str(SHARED / "squad" / "small_v2.json"))) == 2


@needs_shared_data
def test_real_nq_open_dev() -> None:
    dataset = read_dataset(SHARED / "nq_open" / "dev.jsonl")
    assert dataset.format == "nq-open"
    assert len(dataset.questions) == 3610
    assert dataset.documents == ()
    assert all(q.answers for q in dataset.questions)


@needs_shared_data
def test_real_title_text_corpora() -> None:
    two_wiki = load_corpus(str(SHARED / "2wikimultihopqa" / "corpus.json"))
    assert len(two_wiki) == 6119
    musique = read_dataset(SHARED / "musique" / "corpus.json")
    assert musique.format == "title-text"
    assert len(musique.documents) == 1890


@pytest.fixture(scope="module")
def pooled() -> Corpus:
    return load_corpus("pooled")


@needs_shared_data
def test_pooled_corpus_holds_every_dev500_supporting_title(pooled: Corpus, dev500: Dataset) -> None:
    missing = {t for q in dev500.questions for t in q.supporting_titles} - set(pooled.by_id)
    assert not missing


@needs_shared_data
def test_pooled_corpus_has_documents_from_several_sources(pooled: Corpus) -> None:
    assert pooled.name == "pooled"
    assert len(pooled) > 10_033  # the Wikipedia summaries plus the QA paragraphs
    multi = [d for d in pooled.documents if len(d.sources) > 1]
    assert multi
    assert any("wiki" in d.sources and len(d.sources) > 1 for d in multi)
    assert len({d.id for d in pooled.documents}) == len(pooled)
