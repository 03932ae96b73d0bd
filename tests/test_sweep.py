"""Sweeps (engine.eval.sweep): the grid and its refusals, the frontier, stage reuse across
grid points (engine.stages.base.reusing_stages) and a sweep stored as an evaluation."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import gradio as gr
import pytest

from engine.documents import Candidate, Unit
from engine.errors import ConfigError
from engine.eval.sweep import grid, pareto
from engine.stages.base import Stage, StageOutput, rerank, reusing_stages, run_stage
from tests.fakes import qa_file


def test_a_grid_runs_every_combination_largest_first_and_leaves_out_what_cannot_run():
    points = grid("flat", {"M": [10, 50], "k": [4, 20]})
    assert [p.label for p in points] == ["flat M=50 k=20", "flat M=50 k=4", "flat M=10 k=4"]
    assert points[0].config == {"M": 50, "k": 20}  # M=10 k=20 is refused by flat: left out
    nested = grid("funnel", {"reader.max_context_tokens": [0, 512]}, {"K": 5})
    assert nested[0].config == {"K": 5, "reader": {"max_context_tokens": 512}}


@pytest.mark.parametrize(("options", "message"), [
    ({"K": list(range(1, 101)), "N": list(range(1, 101))}, "The grid has 10,000 points"),
    ({"Q": [1, 2]}, "funnel has no numeric option 'Q' to sweep; choose from: "),
    ({"K": [5], "N": [4], "H": [2]}, "Give one or two options"),
    ({"K": [-3, 5]}, "K=-3 is out of range; allowed: 1 to 200"),
    ({"K": ["ten"]}, "K='ten' is not an integer"),
    ({"K": 5}, "give a list of values"),
    ({"cluster_algorithm": ["greedy"]}, "no numeric option 'cluster_algorithm'"),
])
def test_bad_grids_are_refused_by_name(options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        grid("funnel", options)
    with pytest.raises(ConfigError, match="No combination"):
        grid("flat", {"M": [2, 3], "k": [10]})


def test_the_frontier_keeps_the_points_nothing_beats_on_both_axes():
    points = [("slow good", 3.0, 0.8), ("fast poor", 0.5, 0.4), ("slow poor", 3.5, 0.3),
              ("middle", 1.0, 0.6), ("beaten", 1.2, 0.55), ("tie faster", 0.5, 0.4)]
    assert pareto(points) == ["fast poor", "middle", "slow good"]


class Counting(Stage):
    """Ranks by a fixed score per unit and counts its calls (bookkeeping: private)."""

    name = "counting"
    prefix_stable = True

    def __init__(self) -> None:
        self._calls = 0

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        self._calls += 1
        return StageOutput(rerank(candidates, [len(c.unit.text) for c in candidates], k))


def test_a_prefix_stable_stage_runs_once_per_question_and_input_within_a_sweep():
    units = [Candidate(Unit(f"u{i}", "", "x" * i, (f"d{i}",), "documents"), 0.0, i)
             for i in range(1, 9)]
    stage = Counting()
    fresh = run_stage(stage, "q", units, 3)
    with reusing_stages():
        big = run_stage(stage, "q", units, 6)
        small = run_stage(stage, "q", units, 3)  # cut from the six
        assert stage._calls == 2 and small.candidates == fresh.candidates
        assert small.seconds == big.seconds
        run_stage(stage, "other question", units, 3)
        run_stage(stage, "q", units[:5], 3)  # another input
        run_stage(stage, "q", units, 8)  # more than it gave: runs again
        assert stage._calls == 5
    run_stage(stage, "q", units, 3)  # outside a sweep nothing is reused
    assert stage._calls == 6
    stage.prefix_stable = False
    with reusing_stages():
        run_stage(stage, "q", units, 3)
        run_stage(stage, "q", units, 3)
    assert stage._calls == 8


def test_a_sweep_is_stored_as_an_evaluation_of_its_grid_points(explorer, tmp_path):
    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    evaluation_id = explorer.evaluations.sweep(qa, "echo", {"k": [1, 3]}, {"voice": "loud"})
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    stored = explorer.evaluations.evaluation(evaluation_id)
    assert stored.state == "done" and stored.paradigms == ("echo k=3", "echo k=1")
    assert stored.configs["echo k=1"] == {"k": 1, "voice": "loud"}
    rows = explorer.evaluations.evaluation_rows(evaluation_id)
    assert {r["paradigm"] for r in rows} == {"echo k=3", "echo k=1"}
    assert all("EM" not in r["metrics"] and r["llm_calls"] == 0 for r in rows)  # no reader
    assert {r["outcome"]["answer"] for r in rows} == {"kept to the last cut"}
    trace = explorer.evaluations.evaluation_trace(evaluation_id, 0, "echo k=1")
    assert trace.paradigm == "echo" and len(trace.stages[0].candidates) == 1
    assert set(explorer.diagnoses.attribution(evaluation_id)) == {"echo k=3", "echo k=1"}
    exported = json.loads(explorer.evaluations.export_evaluation(evaluation_id, "ragchecker"))
    assert sorted(r["query_id"] for r in exported["results"]) == [
        "echo k=1/q0", "echo k=1/q1", "echo k=3/q0", "echo k=3/q1"]  # one id per run
    from app.tabs import explore

    opened = explore.open_evaluation_run(explorer, 11, evaluation_id, [2, "q1", "echo k=3"])
    assert "question 2, through echo k=3" in opened[0]
    assert opened[-3] == "echo"  # Explore's paradigm choice: the paradigm, not the label
    with pytest.raises(ConfigError, match="k=9 is out of range"):
        explorer.evaluations.sweep(qa, "echo", {"k": [1, 9]})


# --- the Sweep tab's callbacks (app/tabs/sweep.py) without a browser -----------------------


def test_the_tab_offers_each_paradigms_options_and_refuses_what_is_not_a_number():
    from app.tabs import sweep

    first, values, second, more = sweep.option_choices("funnel")
    assert (first.value, values, second.value, more) == ("K", "5, 10, 20", "N", "4, 8, 16")
    assert "H" in first.choices[0] or ("H", "H") in first.choices
    assert sweep.parse_values("K", "5; 10 ,20") == [5, 10, 20]
    assert sweep.parse_values("alpha", "0.1, 1") == [0.1, 1]
    with pytest.raises(ConfigError, match="K: 'x' is not a number"):
        sweep.parse_values("K", "5, x")
    with pytest.raises(ConfigError, match="Give values for K"):
        sweep.parse_values("K", " , ")


def test_the_frontier_table_tells_points_apart_in_milliseconds_or_says_they_tie():
    from app.views.frontier import SHARED, frontier_columns, frontier_rows, tie_note

    points = [("flat M=10", 0.0851, 0.5), ("flat M=20", 0.0853, 0.6), ("flat M=50", 0.0849, 0.6)]
    rows = frontier_rows(points, pareto(points))
    assert frontier_columns("AR@4")[2] == "ms per question (median)"
    assert [(r[0], r[2]) for r in rows] == [("flat M=50", 84.9), ("flat M=10", 85.1),
                                            ("flat M=20", 85.3)]  # all "0.085" in seconds
    assert tie_note(points) == ""
    assert tie_note([(label, 0.0851, v) for label, _, v in points]) == (
        " All 3 points tie on time (85.1 ms per question)." + SHARED)
    some = [*points, ("flat M=5", 0.0851, 0.2)]
    assert tie_note(some) == " Tied on time: flat M=10, flat M=5 (85.1 ms)." + SHARED


def test_a_sweep_started_from_the_tab_is_followed_and_its_frontier_plotted(explorer, tmp_path):
    from app.tabs import sweep

    qa = qa_file(tmp_path / "qa.jsonl", n=2)
    form = [qa, 2, 0, 0, "echo", "k", "1, 3", sweep.NONE, "", False, "", "echo sweep"]
    progress, evaluation_id, timer, confirm, ids = sweep.begin(explorer, False, *form)
    assert f"Evaluation {evaluation_id}" in progress and ids == str(evaluation_id)
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    progress, timer, message, plot, table, against = sweep.follow(explorer, evaluation_id,
                                                                  "EM")
    assert "done, 2 of 2" in progress and timer.active is False and against == gr.skip()
    assert "2 points" in message  # with the reader: EM and seconds for both points
    assert table.headers[1] == "EM"  # the column names the metric plotted
    assert table.headers[2] == "ms per question (median)"
    rows = table.value["data"]
    assert {row[0] for row in rows} == {"echo k=1", "echo k=3"}
    assert any(row[3] == "yes" for row in rows)
    assert {t.name for t in plot.data} == {"echo", "frontier"}
    both, *_ = sweep.frontier(explorer, f"{evaluation_id}, {evaluation_id}", "AR@1")
    assert "points" in both
    refused, *_ = sweep.begin(explorer, False, *form[:6], "1, x", *form[7:])
    assert "'x' is not a number" in html.unescape(refused)
    refused, *_ = sweep.begin(explorer, False, *form[:5], "voice", *form[6:])
    assert "no numeric option 'voice'" in html.unescape(refused)
    refused, *_ = sweep.frontier(explorer, "seven", "EM")
    assert "Evaluation ids are numbers" in refused


def test_the_tab_renders_its_own_widgets_only(explorer):
    import gradio as gr

    from app.tabs import sweep

    with gr.Blocks() as demo:
        sweep.build(explorer)
    shown = [b for b in demo.blocks.values() if isinstance(b, gr.components.Component)
             and not isinstance(b, gr.State | gr.Timer | gr.Markdown)]
    ours = ("fe-sweep", "fe-tune")  # the Grid view's and the Tune view's
    assert all((b.elem_id or "").startswith(ours) for b in shown), [
        type(b).__name__ for b in shown if not (b.elem_id or "").startswith(ours)]
    first = next(b for b in shown if b.elem_id == "fe-sweep-first")
    assert first.value == "K" and ("N", "N") in next(
        b for b in shown if b.elem_id == "fe-sweep-second").choices


def test_a_sweep_of_judged_questions_is_drawn_and_picked_against_ndcg(explorer, tmp_path):
    from app.tabs import sweep

    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps({"id": f"q{i}", "text": text, "judgments": [[doc, 2]]})
                              + "\n" for i, (text, doc) in enumerate(
                                  [("Who painted with dots?", "Seurat"),
                                   ("Which river flows east?", "Danube")])))
    evaluation_id = explorer.evaluations.sweep(str(judged), "echo", {"k": [1, 3]})
    explorer.evaluations.wait_for_evaluation(evaluation_id, 30)
    message, plot, table, against = sweep.frontier(explorer, str(evaluation_id), "AR@4")
    assert "against nDCG@10 of the last cut instead" in message and "2 points" in message
    assert against["value"] == "nDCG@10" and table.headers[1] == "nDCG@10"
