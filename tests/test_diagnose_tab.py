"""The Diagnose tab's callbacks without a browser: a real Explorer and DuckDB file holding a
stored evaluation of hand-built runs whose outcomes are known; the browser test
(test_live_app) drives the same functions through Gradio."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace

import gradio as gr
import plotly.graph_objects as go
import pytest

from app.tabs import diagnose, difference
from app.views.diagnosis import THIS_EVALUATION, evaluation_label, segment_choices
from engine.documents import Question, judged_question
from engine.eval import outcomes as oc
from engine.eval.summary import row
from engine.store.evaluations import EvaluationStore
from tests.fakes import gold_run, ranked_stage

HIT, MISS = ("Seurat", "Georges Seurat painted it."), ("River", "The Danube flows east.")


def question(i: int) -> Question:
    return Question(f"q{i}", f"Who painted picture {i}?", answers=("Georges Seurat",),
                    supporting_titles=("Seurat",))


def flat_run(i: int):
    """Questions 0-2 lost at the re-ranker, 3-4 answered right, 5 never retrieved."""
    first = ranked_stage("dense", MISS if i == 5 else HIT, MISS)
    kept = ranked_stage("reranker", HIT if i in (3, 4) else MISS)
    return gold_run(question(i), first, kept, paradigm="flat", seconds=1.0)


def funnel_run(i: int):
    """Every question kept to the reader, answered right but question 0."""
    stages = ranked_stage("clusters", HIT), ranked_stage("preranker", HIT, MISS)
    return gold_run(question(i), *stages, said="Vincent" if i == 0 else "Georges Seurat",
                    paradigm="funnel", seconds=3.0)


def store_evaluation(prepared, runs, ids=range(6), with_outcomes=True,
                     fingerprint: str = "f") -> int:
    """A done evaluation of `runs` over questions `ids`, over corpus 'tiny' as it was at
    `fingerprint` (the default is none it ever had: a map or a ceiling of it is refused)."""
    evaluations = EvaluationStore(prepared[1])
    names = [make(0).paradigm for make in runs]
    evaluation_id = evaluations.create(dataset="toy", questions=len(ids), paradigms=names,
                                       configs={}, corpus="tiny",
                                       corpus_fingerprint=fingerprint,
                                       code_version="t")
    for position, i in enumerate(ids):
        traces = [make(i) for make in runs]
        rows = [row(t) for t in traces]
        if not with_outcomes:  # as rows were stored before they carried outcomes
            rows = [{k: v for k, v in r.items() if k not in ("outcome", "cuts")} for r in rows]
        elif with_outcomes == "answer and support":  # stored before the track "relevant"
            rows = [{**r, "outcome": {t: r["outcome"][t] for t in ("answer", "support")}}
                    for r in rows]
        elif with_outcomes == "named before":  # stored under the outcomes' earlier names
            before = {now: then for then, now in oc.RENAMED.items()}
            rows = [{**r, "outcome": {t: before.get(o, o) for t, o in r["outcome"].items()}}
                    for r in rows]
        evaluations.add(evaluation_id, position, traces, rows)
    evaluations.finish(evaluation_id, "done", {})
    return evaluation_id


@pytest.mark.parametrize("with_outcomes", [True, False, "answer and support"])
def test_diagnose_shows_outcomes_flow_and_the_questions_lost_at_a_cut(explorer, prepared,
                                                                       with_outcomes):
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run],
                                     with_outcomes=with_outcomes)
    (message, bars, flow_of, flow, segment, rows, a, b, found,
     current, track) = diagnose.diagnose(explorer, str(evaluation_id), "answer")
    assert track.value == "answer"
    assert [v for _, v in track.choices] == ["answer", "support", "relevant"]
    assert f"Evaluation {evaluation_id} (6 of 6 questions, done)" in message
    assert current == evaluation_id
    assert found["flat"].counts == {"not retrieved": 1, "lost at reranker": 3,
                                       "answered right": 2}
    stacked = {t.name: list(t.y) for t in bars.data}
    assert stacked["lost at reranker"] == [3, 0] and stacked["answered right"] == [2, 5]
    assert isinstance(flow.data[0], go.Sankey)
    labels = list(flow.data[0].node.label)
    assert {"questions (6)", "retrieved (5)", "lost at reranker (3)",
            "kept by reranker (2)", "answered right (2)"} <= set(labels)
    assert segment.value == "flat · lost at reranker"  # the first loss is shown first
    assert [r[0] for r in rows] == [1, 2, 3] and {r[2] for r in rows} == {"flat"}
    assert (a.value, b.value) == ("flat", "funnel")

    # followed on a relevant document: rows stored before that track have it from their
    # traces
    relevant = explorer.diagnoses.attribution(evaluation_id, "relevant")
    assert sum(relevant["flat"].counts.values()) == 6
    funnel_flow = diagnose.show_flow(found, "funnel")
    assert "read, answered wrong (1)" in funnel_flow.data[0].node.label
    right = diagnose.show_segment(explorer, current, found, "funnel · answered right")
    assert [r[0] for r in right] == [2, 3, 4, 5, 6]


def test_a_segment_row_opens_its_stored_run_in_explore(explorer, prepared):
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run])
    *_, found, current, _ = diagnose.diagnose(explorer, str(evaluation_id), "answer")
    rows = diagnose.show_segment(explorer, current, found, "flat · lost at reranker")
    opened = diagnose.open_evaluation_run(explorer, 12, current, rows[1])
    assert "question 2" in opened[0] and "flat" in opened[0]
    assert json.loads(opened[-5])["question"] == "Who painted picture 1?"


def test_pairing_two_paradigms_marks_what_is_within_noise(explorer, prepared):
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run])
    table = difference.pair(explorer, evaluation_id, "flat", "funnel", "")
    assert "paired over 6 shared questions" in table and "10,000" in table
    assert "within noise" in table  # EM 2/6 against 5/6 on six questions
    seconds = table.split("seconds per question")[1].split("</tr>")[0]
    assert "-2.00" in seconds and "B slower" in seconds  # 1 s against 3 s, every question


def test_pairing_two_evaluations_uses_only_their_shared_questions(explorer, prepared):
    first = store_evaluation(prepared, [flat_run])
    second = store_evaluation(prepared, [funnel_run], ids=range(3, 9))
    table = difference.pair(explorer, first, "", "", str(second))
    assert "paired over 3 shared questions" in table and "A has 6, B 6" in table
    apart = store_evaluation(prepared, [funnel_run], ids=range(20, 23))
    refused = difference.pair(explorer, first, "", "", str(apart))
    assert "share no question id" in refused


def test_bs_paradigms_follow_the_evaluation_b_comes_from(explorer, prepared):
    """Picking another evaluation for B offers its paradigms (B kept where it ran it);
    none picked offers the diagnosed one's again."""
    first = store_evaluation(prepared, [flat_run, funnel_run])
    second = store_evaluation(prepared, [funnel_run], ids=range(3, 9))
    offered = difference.b_choices(explorer, first, str(second), "flat")
    assert ([value for _, value in offered.choices], offered.value) == (["funnel"], "funnel")
    kept = difference.b_choices(explorer, first, "", "funnel")
    assert ([value for _, value in kept.choices], kept.value) == (["flat", "funnel"], "funnel")
    assert difference.b_choices(explorer, first, "99", "flat") == gr.skip()  # no such one


def test_a_pair_of_evaluations_over_different_corpora_says_so(explorer, prepared):
    from app.views.diagnosis import paired_table

    first = store_evaluation(prepared, [flat_run])
    second = store_evaluation(prepared, [funnel_run], ids=range(3, 9))
    result = explorer.diagnoses.paired(first, "", "", second)
    assert "searched" not in paired_table(result)  # both searched "tiny"
    warned = paired_table(replace(result, b_corpus="wiki"))
    assert "A searched tiny, B searched wiki: the difference is as much the corpora" in warned


@pytest.mark.parametrize(("ids", "a", "b", "other", "named"), [
    ("abc", "", "", "", "'abc'"),
    ("99", "", "", "", "No evaluation with id 99"),
    (None, "flat", "rerank", "", "no paradigm 'rerank'"),
    (None, "flat", "flat", "", "both 'flat'"),
    (None, "flat", "funnel", "x7", "'x7'"),
])
def test_bad_input_is_refused_by_name(explorer, prepared, ids, a, b, other, named):
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run])
    if ids is not None:
        message = diagnose.diagnose(explorer, ids, "answer")[0]
    else:
        message = difference.pair(explorer, evaluation_id, a, b, other)
    assert named in html.unescape(message) and "fe-error" in message


def test_the_tab_opens_on_the_newest_evaluation_and_says_when_there_is_none(explorer,
                                                                             prepared):
    assert "No stored evaluation yet" in diagnose.diagnose(explorer, "", "answer")[0]
    first = store_evaluation(prepared, [flat_run])
    assert diagnose.newest(explorer, "") == str(first)
    second = store_evaluation(prepared, [flat_run])
    assert diagnose.newest(explorer, "") == str(second)
    assert diagnose.newest(explorer, str(first)) == str(first)  # the one picked stays
    assert diagnose.newest(explorer, "7") == str(second)  # not stored (any more)
    assert "Pick an evaluation" in diagnose.diagnose(explorer, "", "answer")[0]


def test_the_pickers_offer_every_stored_evaluation_by_name_newest_first(explorer, prepared):
    first = store_evaluation(prepared, [flat_run, funnel_run])
    second = store_evaluation(prepared, [funnel_run], ids=range(3, 9))
    picked, other = diagnose.pickers(explorer, "", "")
    assert [value for _, value in picked.choices] == [str(second), str(first)]
    assert picked.value == str(second)
    label = dict((v, k) for k, v in picked.choices)[str(first)]
    assert re.fullmatch(rf"{first}: toy: flat, funnel · \d{{4}}-\d\d-\d\d \d\d:\d\d · "
                        r"done, 6 of 6 questions", label), label
    # B of "Is the difference real?" comes from this evaluation unless another is picked
    assert other.choices == [(THIS_EVALUATION, ""), *picked.choices] and other.value == ""
    picked, other = diagnose.pickers(explorer, str(first), str(second))
    assert (picked.value, other.value) == (str(first), str(second))  # kept on reopening
    picked, other = diagnose.pickers(explorer, "99", "98")
    assert (picked.value, other.value) == (str(second), "")
    table = difference.pair(explorer, first, "flat", "funnel", str(second))
    assert "paired over 3 shared questions" in table


def test_an_evaluation_is_offered_with_its_dataset_unless_its_name_says_it(explorer, prepared):
    stored = explorer.evaluations.evaluation(store_evaluation(prepared, [flat_run]))
    assert " · toy · " not in evaluation_label(stored)  # named "toy: flat" by default
    mine = replace(stored, name="<b>my run</b>", dataset="HotpotQA dev500")
    assert evaluation_label(mine).startswith(f"{stored.id}: <b>my run</b> · HotpotQA dev500 · ")


def test_a_click_on_a_bar_picks_its_segment_as_the_list_does(explorer, prepared):
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run])
    _, bars, *_, found, current, _ = diagnose.diagnose(explorer, str(evaluation_id), "answer")
    drawn = {segment for bar in bars.data
             for segment, n in zip(bar.customdata, bar.y, strict=True) if n}
    assert drawn == {value for _, value in segment_choices(found)}  # each segment knows its own
    picked = diagnose.pick_bar(found, gr.EventData(None, {"segment": "flat · answered right"}))
    assert picked["value"] == "flat · answered right"
    rows = diagnose.show_segment(explorer, current, found, picked["value"])
    assert [r[0] for r in rows] == [4, 5] and {r[2] for r in rows} == {"flat"}
    for data in ({"segment": "flat · lost at nowhere"}, {"segment": None}, {}):
        assert diagnose.pick_bar(found, gr.EventData(None, data)) == gr.skip()
    assert diagnose.pick_bar(None, gr.EventData(None, {"segment": "flat · answered right"})) \
        == gr.skip()  # no evaluation open


def test_an_imported_pipelines_evaluation_is_diagnosed_and_opens_in_explore(explorer):
    """LlamaIndex's traces of three train100 questions imported with their dataset: lost
    per cut of its own stages, and a row opens its run in Explore with its gold, leaving
    the paradigm picker alone (an imported pipeline is none of its choices)."""
    from engine.paths import shared_data_dir
    from tests.test_traces import LLAMAINDEX

    imported = explorer.runs.import_pipeline(
        [(LLAMAINDEX.name, LLAMAINDEX.read_text(encoding="utf-8"))],
        str(shared_data_dir() / "hotpotqa" / "train100.json"), "li")
    from app.views.evaluation import progress_html

    status = progress_html(explorer.evaluations.evaluation_status(imported.evaluation))
    assert ("done, 3 of 3 questions over corpus 'li (as traced)', imported from another "
            "pipeline's files") in status
    *_, found, current, _ = diagnose.diagnose(explorer, str(imported.evaluation), "support")
    assert found["li"].cuts == ("BM25Retriever", "SentenceTransformerRerank")
    assert found["li"].total == 3
    segment = next(value for _, value in segment_choices(found))
    rows = diagnose.show_segment(explorer, current, found, segment)
    opened = diagnose.open_evaluation_run(explorer, 12, current, rows[0])
    trace = json.loads(opened[-5])
    assert trace["paradigm"] == "li" and trace["gold"]["supporting_titles"]
    assert any(any(flags["support"]) for flags in trace["gold_flags"])
    assert opened[-3] == gr.skip()  # the paradigm picker keeps its choice
    assert opened[-2] == gr.skip()  # and the corpus picker: "li (as traced)" is none
    assert "an imported pipeline's run: Run answers the question with the paradigm" in \
        opened[0]


def test_the_questions_b_changed_are_listed_and_open_both_runs(explorer, prepared):
    """flat against funnel: on AR@4 funnel's reader reads the answer for questions 0, 1, 2
    and 5 where flat's re-ranker lost it (improved), 3 and 4 stayed right; on EM funnel
    broke question 0 (said "Vincent"). A row opens both runs from where they part, with
    the gold; the same paradigm twice is refused in the tab's words."""
    evaluation_id = store_evaluation(prepared, [flat_run, funnel_run])
    message, table, found = difference.list_changes(explorer, evaluation_id, "flat", "funnel",
                                                  "", "AR@4", "")
    rows = table.value["data"]
    assert found.counts == {"improved": 4, "stayed right": 2}
    assert "B = funnel (evaluation 1) against A = flat (evaluation 1) on AR@4" in message
    assert "4 improved, 2 stayed right" in message
    assert table.value["headers"][2:4] == ["A's AR@4", "B's AR@4"]
    assert {r[6] for r in rows if r[0] == "improved"} == {"q0", "q1", "q2", "q5"}
    _, regressed, on_em = difference.list_changes(explorer, evaluation_id, "flat", "funnel",
                                                "", "EM", "regressed")
    assert [r[6] for r in regressed.value["data"]] == ["q0"]
    assert on_em.counts["stayed right"] == 5
    none, *_ = difference.list_changes(explorer, evaluation_id, "flat", "funnel", "", "EM",
                                     "improved")
    assert "None improved." in none
    both = difference.both_runs(explorer, found, rows[0])
    assert "They part at cut 1 (dense against clusters)" in both and "Gold: Georges" in both
    assert "A = flat (evaluation 1)" in both and "B = funnel (evaluation 1)" in both
    refused, *_ = difference.list_changes(explorer, evaluation_id, "flat", "funnel", "",
                                        "BLEU", "")
    assert "metric=&#x27;BLEU&#x27;: choose one of EM" in refused
    twice, *_ = difference.list_changes(explorer, evaluation_id, "flat", "flat",
                                      str(evaluation_id), "EM", "")
    assert "A and B are both &#x27;flat&#x27; of this evaluation: pick two different" in twice


def judged_run(i: int):
    """A test collection's question (no answers): its relevant document kept or not."""
    gold = judged_question(f"q{i}", "An argument " + "that goes on " * 40, {"Seurat": 2},
                           "tiny")
    return gold_run(gold, ranked_stage("dense", HIT if i % 2 else MISS, MISS), said=None,
                    paradigm="flat")


def test_which_questions_changed_offers_the_metrics_an_evaluation_has(explorer, prepared):
    answered = store_evaluation(prepared, [flat_run, funnel_run])
    offered = difference.metric_choices(explorer, answered, "AR@4")
    assert offered.value == "AR@4" and "EM" in [v for _, v in offered.choices]
    judged = store_evaluation(prepared, [judged_run])
    offered = difference.metric_choices(explorer, judged, "EM")
    metrics = [v for _, v in offered.choices]
    assert offered.value == "nDCG@10" and "EM" not in metrics and "AR@4" not in metrics
    assert {"MRR", "MAP", "gold_doc_recall"} <= set(metrics)
    assert ("relevant-document recall (at the last cut)", "gold_doc_recall") in offered.choices
    message, bars, *_, track = diagnose.diagnose(explorer, str(judged), "answer")
    assert track.choices == [("every relevant document", "support"),
                             ("a relevant document", "relevant")]
    assert "after which no relevant document was left" in message  # no gold, no reader
    assert bars.layout.title.text == "Where each paradigm loses a relevant document"
    message, bars, *_ = diagnose.diagnose(explorer, str(judged), "support")
    assert "after which a relevant document stayed lost" in message
    assert bars.layout.title.text == "Where each paradigm loses every relevant document"
    paired = difference.pair(explorer, judged, "flat", "flat", str(answered))
    assert "relevant-document recall" in paired and "gold-document" not in paired
    _, table, _ = difference.list_changes(explorer, judged, "flat", "flat", str(answered),
                                          "nDCG@10", "")
    assert table.value["data"] and all(len(r[1]) <= difference.QUESTION_CHARS
                                       for r in table.value["data"])


def test_outcomes_stored_under_an_earlier_name_are_read_under_today_s(explorer, prepared):
    evaluation_id = store_evaluation(prepared, [judged_run], with_outcomes="named before")
    rows = EvaluationStore(prepared[1]).rows(evaluation_id)
    assert {r["outcome"]["relevant"] for r in rows} == {"no relevant retrieved",
                                                        "relevant reached the reader"}
    assert explorer.diagnoses.attribution(evaluation_id, "relevant")["flat"].counts == {
        "no relevant retrieved": 3, "relevant kept to the last cut": 3}


def test_no_two_outcomes_of_the_bars_share_a_colour():
    from app.views.diagnosis import outcome_bars

    cuts = ["clusters", "documents", "preranker", "passages", "reranker", "qdc", "cis",
            "token cap"]
    found = {p: oc.Attribution(tuple(cuts), {f"relevant lost at {c}": 1 for c in half}
                               | {"no relevant retrieved": 1, "relevant kept to the last cut": 2},
                               {}, 0, 0)
             for p, half in (("funnel", cuts[:4]), ("drrag", cuts[4:]))}
    colours = [bar.marker.color for bar in outcome_bars(found, "relevant").data]
    assert len(colours) == len(cuts) + 2 and len(set(colours)) == len(colours)
