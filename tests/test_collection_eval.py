"""A test collection measured end to end: read as a dataset, added beside its corpus and
listed, its judged questions measured against their graded judgments (no answer measures,
the query's own document left out), followed on a relevant document, and evaluated by the
command line."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

from engine.data.collection_store import add_collection, check_corpus, collection_splits, split_of
from engine.data.ingest import stored_corpora
from engine.data.loaders import read_dataset
from engine.documents import Candidate, Question, Unit, judged_question, question_from_dict
from engine.errors import ConfigError, DataFormatError
from engine.eval.outcomes import attribution, followed, offered, outcome, row_outcomes
from engine.eval.summary import row as row_of
from engine.metrics import ir_measures_by_stage
from engine.paradigms.base import Paradigm, annotate
from engine.stages.base import (
    Stage,
    StageOutput,
    leaving_out,
    replaying,
    reusing_stages,
    run_stage,
)
from engine.trace import LLMStep, RunTrace, StageResult
from tests.conftest import TINY_DOCS
from tests.test_collections import QRELS, beir_folder


def test_a_beir_folder_is_a_dataset_of_judged_questions_and_its_corpus(tmp_path):
    dataset = read_dataset(beir_folder(tmp_path))
    assert (dataset.name, dataset.format, dataset.split) == ("tinybeir", "beir", "test")
    q1 = dataset.questions[0]
    assert q1.judgments == (("d1", 2), ("d2", 1)) and q1.grades == {"d1": 2, "d2": 1}
    assert q1.supporting_titles == ("d1", "d2") and q1.answers == ()
    q2 = dataset.questions[1]
    assert q2.supporting_titles == ("3",) and q2.grades == {"3": 1, "d1": 0}
    assert read_dataset(beir_folder(tmp_path / "b"), split="train").questions[0].id == "q3"
    # a QA file's supporting documents are its judgments, each of grade 1
    assert Question("x", "?", supporting_titles=("A", "B")).grades == {"A": 1, "B": 1}


def test_a_judged_question_survives_json(tmp_path):
    question = judged_question("q1", "Who?", {"d1": 2, "d9": 0}, "tiny", own_document="q1")
    again = question_from_dict(json.loads(json.dumps(question.__dict__)))
    assert again == question and again.judgments == (("d1", 2), ("d9", 0))
    assert again.own_document == "q1"


def test_the_judged_layout_reads_and_refuses_a_bad_pair(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [{"id": "q1", "text": "Who?", "judgments": [["d1", 2], ["d2", 0]]},
            {"id": 7, "text": "What?", "judgments": [["d3", 1]], "answers": ["Seurat"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    dataset = read_dataset(path)
    assert dataset.format == "judged"
    assert [q.grades for q in dataset.questions] == [{"d1": 2, "d2": 0}, {"d3": 1}]
    assert dataset.questions[1].answers == ("Seurat",) and dataset.questions[1].id == "7"
    path.write_text(json.dumps({"id": "q1", "text": "Who?", "judgments": [["d1", "high"]]}))
    with pytest.raises(DataFormatError, match=r"line 1: field 'judgments': \['d1', 'high'\]"):
        read_dataset(path)


def test_graded_measures_of_a_judged_question_match_trec_eval(tmp_path):
    """Hand-checked: ranking x, b, a, y, c with a=2, c=1 and b judged 0 (trec_eval's
    linear gain): nDCG@10 = (3/log2(4) + 1/log2(6)) / (3 + 1/log2(3)) = 0.527; condensed
    (x and y removed: b, a, c) = (3/log2(3) + 1/log2(4)) / (3 + 1/log2(3)) = 0.670."""
    found = ir_measures_by_stage({"s": ["x", "b", "a", "y", "c"]},
                                 {"a": 2, "b": 0, "c": 1}, judged=True)["s"]
    assert found["nDCG@10"] == pytest.approx(0.5271, abs=1e-4)
    assert found["nDCG'@10"] == pytest.approx(0.6697, abs=1e-4)
    assert found["Judged@10"] == pytest.approx(0.6)  # b, a, c of the five
    assert found["RR"] == pytest.approx(1 / 3) and found["R@100"] == 1.0
    assert found["AP"] == pytest.approx((1 / 3 + 2 / 5) / 2)
    assert "Judged@10" not in ir_measures_by_stage({"s": ["a"]}, ["a"])["s"]  # QA files'


def _unit(doc: str) -> Unit:
    return Unit(doc, doc, f"text of {doc}", (doc,), "documents")


def _trace(question: Question, docs: list[str], read: bool) -> RunTrace:
    stage = StageResult("dense", "documents", 10,
                        tuple(Candidate(_unit(d), 1.0 / i, i) for i, d in enumerate(docs, 1)),
                        0.01)
    kept = replace(stage, name="reranker", candidates=stage.candidates[:1])
    steps = (LLMStep("answer", "m", "p", "o", 1, 1, 0.0, "o"),) if read else ()
    return RunTrace(question.text, "flat", {}, (stage, kept), answer="o" if read else "",
                    llm_steps=steps)


def test_a_judged_run_has_ranking_measures_and_no_answer_measures():
    question = judged_question("q1", "An argument", {"d1": 1, "d2": 0}, "tiny", "q1")
    # the query is itself document q1 (ArguAna): it is left out of the measured ranking
    scored = annotate(_trace(question, ["q1", "d1", "d2"], read=True), question)
    assert scored.metrics["RR@dense"] == 1.0 and scored.metrics["Judged@10@dense"] == 1.0
    assert not [k for k in scored.metrics if k.startswith(("AR@", "EM", "F1"))]
    assert scored.metrics["gold_doc_recall@reranker"] == 0.0  # kept q1 only
    assert outcome(scored, "answer") is None
    assert outcome(scored, "relevant") == "relevant lost at reranker"
    kept = annotate(_trace(question, ["d1", "q1"], read=False), question)
    assert outcome(kept, "relevant") == "relevant kept to the last cut"
    read = annotate(_trace(question, ["d1"], read=True), question)
    assert outcome(read, "relevant") == "relevant read"
    missed = annotate(_trace(question, ["d2"], read=True), question)
    assert outcome(missed, "relevant") == "no relevant retrieved"
    rows = [{"paradigm": "flat", "position": i, **row_outcomes(t)}
            for i, t in enumerate((scored, kept, read, missed))]
    assert attribution(rows, "relevant")["flat"].counts == {
        "no relevant retrieved": 1, "relevant lost at reranker": 1,
        "relevant kept to the last cut": 1, "relevant read": 1}
    # no answer to follow: a relevant document is followed when the gold answer is asked
    assert offered(rows) == ["support", "relevant"]
    assert followed(offered(rows)) == "relevant" and followed(offered(rows), "support") \
        == "support"
    assert followed(["answer", "support", "relevant"], "relevant") == "relevant"


@dataclass(frozen=True)
class _NoOptions:
    pass


class _OneCut(Paradigm):
    """One cut of fixed documents, then the reader (a step that says it was called)."""

    name = "one-cut"

    def steps(self, question):
        stage = _trace(Question("x", question), ["d1", "d2"], read=False).stages[0]
        yield stage
        yield from self.read(question, stage.candidates)

    def reader_steps(self, question, candidates):
        yield LLMStep("answer", "m", "p", "o", 1, 1, 0.0, "o")


def test_a_judged_question_is_run_without_the_reader_and_the_paradigm_keeps_it(tiny_corpus):
    paradigm = _OneCut(tiny_corpus, _NoOptions())
    judged = paradigm.run(judged_question("q1", "An argument", {"d1": 2}, "tiny"))
    assert judged.stages and not judged.llm_steps and judged.answer == ""
    assert judged.metrics["nDCG@10@dense"] == 1.0 and "EM" not in judged.metrics
    assert paradigm.retrieval_only is False  # other questions on it are still answered
    answered = paradigm.run(Question("q2", "Which river?", answers=("o",)))
    assert answered.answer == "o" and answered.metrics["EM"] == 1.0


class _Listed(Stage):
    """A first stage that returns the head of a fixed list of passages, noting each k asked."""

    name, granularity = "listed", "passages"

    def __init__(self, docs: list[str]) -> None:
        self.docs, self.asked = docs, []

    def run(self, query, candidates, k):
        self.asked.append(k)
        return StageOutput(tuple(Candidate(replace(_unit(d), id=f"{d}#{i}",
                                                   granularity="passages"), 1.0 / i, i)
                                 for i, d in enumerate(self.docs[:k], 1)))


class _Listing(_OneCut):
    name = "listing"

    def steps(self, question):
        first = run_stage(self.uses, question, (), 2)
        yield first
        yield from self.read(question, first.candidates)


def test_the_query_s_own_document_takes_no_cut_s_place_and_only_its_run_leaves_it_out(
        tiny_corpus):
    # ArguAna: query q1 is itself a corpus document; BEIR retrieves k + 1 and drops it
    stage = _Listed(["q1", "d1", "q1", "d2", "d3"])
    with leaving_out(frozenset({"q1"})):
        result = run_stage(stage, "An argument", (), 2)
    assert [(c.unit.doc_ids, c.rank) for c in result.candidates] == [(("d1",), 1),
                                                                     (("d2",), 2)]
    assert stage.asked == [2, 3, 4]  # asked again for as many more as it left out
    assert "left out 2 units of the question's own document" in result.details.note
    assert [c.unit.doc_ids for c in run_stage(stage, "An argument", (), 2).candidates] \
        == [("q1",), ("d1",)]  # outside the block nothing is left out
    listing = _Listing(tiny_corpus, _NoOptions(), _Listed(["q1", "d1", "d2"]))
    judged = listing.run(judged_question("q1", "An argument", {"d1": 2}, "tiny", "q1"))
    assert [c.unit.doc_ids for c in judged.stages[0].candidates] == [("d1",), ("d2",)]
    assert judged.metrics["nDCG@10@listed"] == 1.0
    typed = listing.run("An argument")  # a typed question has no own document
    assert [c.unit.doc_ids for c in typed.stages[0].candidates] == [("q1",), ("d1",)]
    # a judged question whose id a document merely shares (TREC DL numbers both) keeps it
    other = listing.run(judged_question("q1", "An argument", {"d1": 2}, "tiny"))
    assert [c.unit.doc_ids for c in other.stages[0].candidates] == [("q1",), ("d1",)]


class _Shifting(_Listed):
    """A stage whose longer output is no extension of its shorter one."""

    def run(self, query, candidates, k):
        self.docs = ["q1", "d1"] if k <= 2 else ["d1", "d2", "d3", "d4"]
        return super().run(query, candidates, k)


class _Stable(_Listed):
    prefix_stable = True  # its top k is the head of its top k' > k: a sweep reuses it


def test_leaving_out_keeps_k_reuses_a_sweep_s_results_and_filters_a_replayed_one():
    own = frozenset({"q1"})
    with leaving_out(own):  # asked again, it gives more than k, none of them its own
        shifted = run_stage(_Shifting([]), "An argument", (), 2)
    assert [c.unit.doc_ids for c in shifted.candidates] == [("d1",), ("d2",)]
    stage = _Stable(["q1", "d1", "q1", "d2", "d3"])
    with reusing_stages() as memo, leaving_out(own):
        first = run_stage(stage, "An argument", (), 2)
        again = run_stage(stage, "An argument", (), 2)  # another grid point: reused
    assert stage.asked == [2, 3, 4] and again.candidates == first.candidates
    (widest,) = [result for k, result in memo.values() if k == 4]
    assert again.seconds == widest.seconds  # the run it was cut from: no time added up
    stored = replace(first, candidates=(Candidate(_unit("q1"), 2.0, 1),
                                        *first.candidates[:1]))  # kept before a fix
    replayed = _Listed(["d9"])
    with replaying([stored], 0, lambda result, given: result), leaving_out(own):
        made = run_stage(replayed, "An argument", (), 2)
    assert replayed.asked == [] and [c.unit.doc_ids for c in made.candidates] == [("d1",)]


def test_an_added_collection_is_listed_by_split_and_judged_over_its_own_corpus(tmp_path):
    corpus, splits = add_collection("tiny-beir", beir_folder(tmp_path))
    assert corpus.name == "tiny-beir" and len(corpus) == 3
    assert [(s.label, s.questions) for s in splits] == [("tiny-beir (test)", 2),
                                                        ("tiny-beir (train)", 1)]
    assert [s.label for s in collection_splits()] == ["tiny-beir (test)", "tiny-beir (train)"]
    (stored,) = stored_corpora()
    assert stored.collection == {"format": "beir", "splits": {"test": 2, "train": 1}}
    assert split_of("Tiny-BEIR  (test)") == splits[0]
    dataset = read_dataset(splits[0].path)
    assert [q.grades for q in dataset.questions] == [{"d1": 2, "d2": 1}, {"3": 1, "d1": 0}]
    check_corpus("tiny-beir (test)", "tiny-beir")
    with pytest.raises(ConfigError, match="judged over corpus 'tiny-beir', not 'wiki'"):
        check_corpus("tiny-beir (test)", "wiki")


def test_a_bad_collection_stores_nothing(tmp_path):
    folder = beir_folder(tmp_path, qrels={**QRELS, "dev": "query-id\tcorpus-id\tscore\n"
                                                          "q1\tnope\t1\n"})
    with pytest.raises(DataFormatError, match="dev.tsv, line 2: field 'corpus-id'"):
        add_collection("tiny-beir", folder)
    assert stored_corpora() == [] and collection_splits() == []


def tiny_beir(root, **qrels):
    """A BEIR folder over the tiny corpus (the toy paradigm echo's documents)."""
    corpus = [{"_id": title, "title": title, "text": text} for title, text in TINY_DOCS]
    judged = {"test": "query-id\tcorpus-id\tscore\nq1\tA Sunday Afternoon\t2\n"
                      "q1\tGeorges Seurat\t1\nq2\tDanube\t1\nq2\tVienna\t0\n",
              "train": "query-id\tcorpus-id\tscore\nq3\tPointillism\t1\n", **qrels}
    return beir_folder(root, corpus=corpus, qrels=judged)


def test_eval_of_a_beir_folder_adds_it_and_prints_graded_measures_per_cut(tmp_path, capsys,
                                                                          echo):
    from engine.cli import main as cli_main

    folder = tiny_beir(tmp_path)
    assert cli_main.main(["eval", "--dataset", str(folder), "--paradigm", "echo",
                          "--json"]) == 0
    said = capsys.readouterr().out
    assert "added collection 'tinybeir': test (2 judged questions), train (1 judged " \
           "question)" in said
    assert "answer measures (AR@k, EM, F1): no answers" in said
    assert "| echo | overlap |" in said and "Judged@10" in said
    assert "where the relevant documents were lost" in said
    summary = json.loads(said.strip().splitlines()[-1])["echo"]
    assert "EM" not in summary and "AR@1" not in summary  # absent, not 0
    assert 0 < summary["nDCG@10@overlap"] <= 1 and summary["corpus"] == "tinybeir"
    # a second run finds it added; another corpus is refused by name
    assert cli_main.main(["eval", "--dataset", "tinybeir (train)", "--paradigm", "echo"]) == 0
    assert "added collection" not in capsys.readouterr().out
    assert cli_main.main(["eval", "--dataset", str(folder), "--corpus", "wiki"]) == 2
    assert "judged over corpus 'tinybeir', not 'wiki'" in capsys.readouterr().err


def test_a_folder_of_trec_topics_qrels_and_a_corpus_is_a_collection(tmp_path):
    folder = tmp_path / "dl-tiny"
    folder.mkdir()
    (folder / "topics.tsv").write_text("101\tWho painted La Grande Jatte?\n102\tUnjudged?\n")
    (folder / "qrels.txt").write_text("101 0 d1 3\n101 0 d2 0\n")
    rows = [{"id": "d1", "title": "", "text": "Seurat painted it."},
            {"id": "d2", "title": "", "text": "The Danube."}]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    dataset = read_dataset(folder)
    assert (dataset.format, dataset.name, len(dataset.documents)) == ("trec", "dl-tiny", 2)
    assert [(q.id, q.grades) for q in dataset.questions] == [("101", {"d1": 3, "d2": 0})]
    (folder / "qrels.txt").write_text("101 0 d1 3\n101 0 d7 1\n")
    with pytest.raises(DataFormatError, match="qrels.txt, line 2: field 'corpus-id'"):
        read_dataset(folder)
    assert read_dataset(folder, drop_unknown=True).questions[0].grades == {"d1": 3}


def test_what_the_app_shows_of_a_judged_question_and_evaluation():
    from app.tabs.explore import attribute_run
    from app.tabs.picker import judged_markdown
    from app.tabs.reanswer import _answer
    from app.views.evaluation import paper_table
    from app.views.gold import gold_banner, gold_counts
    from app.views.heatmap import heatmap_figure
    from app.views.trace import compare_table, stage_table

    question = judged_question("q1", "An argument", {"d1": 2, "d2": 1, "d3": 0}, "tiny")
    trace = annotate(_trace(question, ["d1", "d3", "d2"], read=False), question)
    assert "A relevant document survived every stage" in gold_banner(trace)
    assert "Judged: 2 relevant (grades 2, 1), 1 not relevant" in gold_banner(trace)
    assert gold_counts(trace) == {"kept, judged relevant (grade 2)": [1, 1],
                                  "kept, judged relevant (grade 1)": [1, 0]}
    lost = annotate(_trace(question, ["d3", "d1"], read=False), question)
    assert "Relevant documents lost at stage <b>reranker</b>" in gold_banner(lost)
    assert "d1 (2), d2 (1)" in judged_markdown(question)
    assert "Seurat&#x27;s painting `d1` (2), d2 (1)" in judged_markdown(
        question, {"d1": "Seurat's painting"})
    # the stage table badges the grade and the query's own document, measured without it
    own = judged_question("q1", "An argument", {"d1": 2, "d2": 1, "d3": 0}, "tiny", "q1")
    table = stage_table(annotate(_trace(own, ["q1", "d1", "d3"], read=False), own), 0)
    assert table.count("relevant (2)") == 1 and ">the question</span>" in table
    assert "relevant (1)" not in table and ">support<" not in table
    compared = compare_table([trace])
    assert "<i>no answers</i>" in compared and "<i>no reader ran</i>" in compared
    assert "relevant documents 0.50" in compared and "gold documents" not in compared
    # no reader ran: the heatmap says why, and there is no answer to attribute
    assert "No reader ran" in heatmap_figure(trace).layout.annotations[0].text
    assert "no reader ran" in _answer(trace, "As run")  # Explore's re-answer columns
    refused, *_ = attribute_run(None, trace.to_json(), "layers")
    assert "This run has no answer to attribute: no reader ran" in refused
    summary = {"flat": {"questions": 2, "nDCG@10@dense": 0.5, "AP@dense": 0.4,
                        "gold_doc_recall@dense": 0.5,
                        "Judged@10@dense": 0.3, "nDCG'@10@dense": 0.7,
                        "seconds_dense_median": 0.1, "seconds_dense_p95": 0.2}}
    table = paper_table(summary)
    assert ">MAP</th>" in table and "nDCG&#x27;@10 (condensed" in table
    assert "<tr><td>flat</td><td>dense</td><td>0.500</td>" in table  # a row per cut
    assert "relevant-document recall at dense" in table and "gold-document" not in table
    assert table.index("no answers") < table.index("relevant-document recall at dense")
    assert "<td>no answers</td>" in table and ">0.000<" not in table
    assert "as little as 30% of a cut's top 10 is judged" in table
    answered = paper_table({"flat": {"questions": 2, "EM": 0.5, "nDCG@10@dense": 0.5}})
    assert "no answers" not in answered and "Judgments are partial" not in answered


def test_exports_carry_the_grades_and_a_perfect_cut_puts_the_higher_grade_first(tiny_corpus):
    from engine.eval.ceilings import perfect
    from engine.eval.exports import export_files

    question = judged_question("q1", "An argument", {"Danube": 1, "Budapest": 2, "Vienna": 0},
                               "tiny")
    trace = annotate(_trace(question, ["Vienna", "Danube", "Budapest"], read=False), question)
    qrels = export_files([trace], "trec")["qrels.txt"].splitlines()
    assert sorted(qrels) == ["q1 0 Budapest 2", "q1 0 Danube 1", "q1 0 Vienna 0"]
    made = perfect(trace.stages[0], (), question, tiny_corpus)
    assert [c.unit.id for c in made.candidates] == ["Budapest", "Danube", "Vienna"]


def test_a_sweep_of_judged_questions_is_drawn_against_its_last_cuts_measures():
    from app.views.frontier import frontier_points

    summaries = {f"k={k}": {"seconds_dense_median": 0.01 * k, "seconds_reranker_median": 0.02,
                            "seconds_total_median": 0.01 * k + 0.02,
                            "nDCG@10@dense": 0.1 * k, "nDCG@10@reranker": 0.2 * k,
                            "AP@reranker": 0.05 * k}
                 for k in (1, 2)}
    assert frontier_points(summaries, "nDCG@10") == [("k=1", 0.03, 0.2), ("k=2", 0.04, 0.4)]
    assert [p[2] for p in frontier_points(summaries, "MAP")] == [0.05, 0.1]
    assert frontier_points(summaries, "AR@4") == []


def test_imported_runs_are_measured_against_graded_qrels():
    from engine.eval.imports import read_qrels

    assert read_qrels("q1 0 Danube 2\nq1 0 Vienna 0\nq2 0 Budapest 1\n", "qrels.txt") == {
        "q1": {"Danube": 2, "Vienna": 0}, "q2": {"Budapest": 1}}


def test_a_judged_evaluations_plots_show_the_first_and_last_cuts_recall_and_ndcg():
    from app.views.evaluation import question_rows, recall_at_k_figure, recall_latency_figure

    # the re-ranker keeps 4: past them its recall is flat, the retrieval's is not
    summary = {"flat": {"seconds_dense_median": 0.02, "seconds_reranker_median": 0.01,
                        "seconds_total_median": 0.03,
                        "R@4@dense": 0.5, "R@10@dense": 0.7, "R@100@dense": 0.9,
                        "R@4@reranker": 0.6, "R@10@reranker": 0.6, "R@100@reranker": 0.6,
                        "nDCG@10@dense": 0.5, "nDCG@10@reranker": 0.6}}
    retrieved, sent = recall_at_k_figure(summary).data
    assert list(retrieved.x) == ["4", "10", "100"] and list(retrieved.y) == [0.5, 0.7, 0.9]
    assert list(sent.y) == [0.6, 0.6, 0.6] and retrieved.line.color == sent.line.color
    assert (retrieved.line.dash, sent.line.dash) == ("dash", "solid")
    assert sent.name == "flat, last cut"  # no reader ran: nothing was sent to one
    assert "reader" not in recall_at_k_figure(summary).layout.title.text
    (point,) = recall_latency_figure(summary).data
    assert recall_latency_figure(summary).layout.yaxis.title.text == "nDCG@10 (at the last cut)"
    assert list(point.y) == [0.6]
    question = judged_question("q1", "An argument", {"d1": 2, "d2": 0}, "tiny")
    trace = annotate(_trace(question, ["d1", "d2"], read=False), question)
    (row,) = question_rows([{**row_of(trace), "position": 0}])
    assert row[5:8] == ["", "", ""] and row[8] == 1.0  # the re-ranker kept d1 alone


def test_the_coverage_map_draws_questions_with_no_answer_outcome():
    """A judged evaluation's rows have no answer outcome (None): the map drew an error."""
    from app.views.probes import coverage_figure
    from engine.eval.coverage import CoverageMap, Fitted, MappedPassage, MappedQuestion, Nearby

    found = CoverageMap(
        questions=(MappedQuestion(0, "q0", "An argument", 0.1, 0.2, 0.8, 0, {"flat": None},
                                  (Nearby("d1", "d1", "", 0.8),)),),
        passages=(MappedPassage("d1", "d1", 0.0, 0.0),), groups=(), far_below=0.5,
        fitted_on=Fitted(1, 1, 1), explained=(0.5, 0.2))
    fig = coverage_figure(found, "flat")
    assert [t.name for t in fig.data] == ["passages (a sample)", "no outcome"]


def test_a_judged_evaluations_ceilings_are_drawn_and_told_by_ndcg_and_relevant_documents():
    from app.views.probes import ceiling_figure, ceiling_table
    from engine.eval.paired import PairedDifference
    from engine.service.diagnosis import CeilingTable, CutCeiling, ParadigmCeilings

    diff = PairedDifference("nDCG@10", n=3, a=0.9, b=0.5, diff=0.4, ci=(0.1, 0.7), p=None)
    cut = CutCeiling("flat: perfect dense", {"nDCG@10": 0.9, "gold_doc_recall": 0.6,
                                             "runs": 3}, (diff,))
    flat = ParadigmCeilings({"nDCG@10": 0.5, "gold_doc_recall": 0.3, "runs": 3}, (cut,),
                            {"nDCG@10": "flat: perfect dense"})
    found = CeilingTable(id=2, baseline=1, state="done", done=3, questions=3,
                         paradigms={"flat": flat})
    table = ceiling_table(found)
    assert "nDCG@10" in table and "relevant-document recall" in table
    assert "judged relevant first" in table and "gold supporting" not in table
    assert "<b>0.900 (+0.400 [+0.100, +0.700])</b>" in table
    (bars,) = ceiling_figure(found).data
    assert bars.name == "nDCG@10" and list(bars.y) == [0.4]
