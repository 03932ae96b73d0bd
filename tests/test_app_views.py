"""The UI's pure parts: figures and HTML from a small trace, escaping, the failsafe, the
question cut and the config JSON built from the widgets."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from app.params import config_json, label_of
from app.tabs.sessions import parse_ids, pick_id
from app.views import figures, heatmap
from app.views.gold import gold_banner
from app.views.reader_calls import llm_steps_table
from app.views.trace import (
    answer_box,
    compare_table,
    esc,
    final_passages,
    highlight,
    stage_table,
)
from engine.config import config_from_dict
from engine.documents import Candidate, Unit
from engine.errors import EngineError
from engine.paradigms.flat import FlatConfig
from engine.paradigms.funnel import FunnelConfig
from engine.paradigms.registry import PARADIGMS
from engine.service.annotation import ClassifierStatus
from engine.trace import LLMStep, StageResult
from engine.trace_details import (
    BestChunk,
    ClassifierCall,
    QueryDecision,
    ReadCount,
    ReaderAttention,
    StageDetails,
    WeighedSentence,
    deep_tuple,
)
from tests.fakes import answer_step, ranked_stage, sample_trace


def test_funnel_figure_counts_in_kept_and_gold(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    fig = figures.funnel_figure(trace)
    names = [bar.name for bar in fig.data]
    assert names == ["candidates in", "kept", "kept, holding the answer",
                     "kept, holding a supporting document"]
    assert list(fig.data[0].x) == [s.n_in for s in trace.stages]
    assert list(fig.data[1].x) == [len(s.candidates) for s in trace.stages]
    answer, support = (list(bar.x) for bar in fig.data[2:])
    # "Georges Seurat" is written in several kept documents, one of them the supporting
    # one: the two counts differ, so one "holding gold" bar adding them up would mislead
    first = trace.stages[0].candidates
    assert answer[0] == sum("Georges Seurat" in c.unit.text for c in first) > 1
    assert support[0] == sum(c.unit.id == "A Sunday Afternoon" for c in first) == 1
    assert answer[-1] == support[-1] == 0  # the river stage kept no gold


def test_the_funnel_figure_notes_a_missing_gold_as_its_subtitle_not_in_its_title(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    typed = figures.funnel_figure(replace(trace, gold=None, gold_flags=(), metrics={}))
    assert typed.layout.title.text == "Candidates per stage"  # no inline <sub> after it
    assert typed.layout.title.subtitle.text == "gold bars come with a dataset question"
    assert figures.funnel_figure(trace).layout.title.subtitle.text is None


def test_waterfall_adds_up_to_the_total(tiny_corpus):
    trace = replace(sample_trace(tiny_corpus), llm_steps=(answer_step(seconds=0.5),))
    (bars,) = figures.waterfall_figure(trace).data
    assert list(bars.x) == ["overlap", "rivers", "answer", "total"]
    assert list(bars.measure)[-1] == "total"
    assert bars.text[-1] == f"{sum(s.seconds for s in trace.stages) + 0.5:.2f} s"


def _with_attention(trace):
    attn = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)  # passage, layer, head
    read = ReaderAttention(cells=deep_tuple(attn.tolist()), passages=("p<1>", "p2"),
                           top_tokens=(("Seur", "<b>"), ("Dan",)), answered_from=("p2",))
    last = replace(trace.stages[-1], details=StageDetails(attention=read))
    return replace(trace, stages=(*trace.stages[:-1], last)), attn


def test_heatmap_by_layers_or_heads_with_escaped_hover(tiny_corpus):
    trace, attn = _with_attention(sample_trace(tiny_corpus))
    (layers,) = heatmap.heatmap_figure(trace, "layers").data
    assert np.allclose(np.asarray(layers.z), attn.mean(axis=2))
    assert list(layers.y) == ["#1 p&lt;1&gt;", "* #2 p2"]  # markup as text; * = answered
    assert "&lt;b&gt;" in layers.text[0][0] and "<b>" not in layers.text[0][0]
    (heads,) = heatmap.heatmap_figure(trace, "heads").data
    assert np.asarray(heads.z).shape == (2, 2)


def test_heatmap_keeps_a_row_per_passage_when_shortened_titles_match(tiny_corpus):
    # funnel on "Who painted the Mona Lisa?" read 4 passages, two of them from this
    # long-titled document: shortened alike, plotly drew them as one row (3 rows shown)
    long = "Along the River During the Qingming Festival"
    read = ReaderAttention(cells=deep_tuple(np.ones((4, 2, 2)).tolist()),
                           passages=("Mona Lisa#0", f"{long}#3", f"{long}#0", "x" * 60),
                           top_tokens=((), (), (), ()))
    trace = sample_trace(tiny_corpus)
    last = replace(trace.stages[-1], details=StageDetails(attention=read))
    (heat,) = heatmap.heatmap_figure(replace(trace, stages=(*trace.stages[:-1], last))).data
    rows = list(heat.y)
    assert len(rows) == len(set(rows)) == np.asarray(heat.z).shape[0] == 4
    assert rows[0] == "#1 Mona Lisa (p0)"
    assert rows[1].startswith("#2 Along the River") and rows[1].endswith("… (p3)")
    assert rows[2].startswith("#3 Along the River") and rows[2].endswith("… (p0)")
    assert rows[3] == "#4 " + "x" * 33 + "…"
    assert heat.text[1][0].startswith(f"{long}#3<br>")  # the whole id on hover

    # ranked as the stage tables rank them (the reader reads the best one last)
    ranked = ranked_with_ids("postranker", f"{long}#0", f"{long}#3", "Mona Lisa#0")
    ranked = replace(ranked, details=StageDetails(attention=read))
    (heat,) = heatmap.heatmap_figure(replace(trace, stages=(ranked,))).data
    assert [row.split(" ")[0] for row in heat.y] == ["#3", "#2", "#1", "#4"]
    assert len(set(heat.y)) == 4
    # first of two stages each: the same rank, ids alike when shortened: still two rows
    twins = (f"{long} (painting)#0", f"{long} (scroll)#0")
    pair = ReaderAttention(cells=deep_tuple(np.ones((2, 1, 1)).tolist()), passages=twins,
                           top_tokens=((), ()))
    stages = (ranked_with_ids("a", twins[0]),
              replace(ranked_with_ids("b", twins[1]), details=StageDetails(attention=pair)))
    (heat,) = heatmap.heatmap_figure(replace(trace, stages=stages)).data
    assert len(set(heat.y)) == 2 and [row[-3:] for row in heat.y] == ["[1]", "[2]"]


def ranked_with_ids(name: str, *ids: str) -> StageResult:
    """A passage stage whose candidates carry `ids`, best first."""
    stage = ranked_stage(name, *((uid, "text") for uid in ids))
    return replace(stage, candidates=tuple(replace(c, unit=replace(c.unit, id=uid))
                                           for c, uid in zip(stage.candidates, ids,
                                                             strict=True)))


def test_heatmap_without_attention_says_so(tiny_corpus):
    # read by a backend that gives no attention: it is named, not promised for later
    fig = heatmap.heatmap_figure(replace(sample_trace(tiny_corpus), config={
        "reader": {"backend": "best-sentence"}}))
    assert "backend (best-sentence) gave no attention" in fig.layout.annotations[0].text
    # an evaluation's run, read with attention off: how to get its heatmap
    fig = heatmap.heatmap_figure(replace(sample_trace(tiny_corpus), config={
        "reader": {"attention": False}}))
    assert "through ONNX Runtime (backend onnx, or auto with reader.attention off" in \
        fig.layout.annotations[0].text
    # a run shown before its reader's step (Explore streams each stage as it ends)
    streaming = replace(sample_trace(tiny_corpus), llm_steps=())
    assert "no reader attention yet" in heatmap.heatmap_figure(
        streaming).layout.annotations[0].text
    # a request answered without retrieval: nothing was read, and the figure says so
    skipped = replace(sample_trace(tiny_corpus), stages=())
    assert "read no passages" in heatmap.heatmap_figure(skipped).layout.annotations[0].text


def test_a_failing_figure_becomes_a_message():
    fig = figures.funnel_figure(None)
    assert not fig.data and "funnel_figure could not be drawn" in fig.layout.annotations[0].text


def test_corpus_markup_is_shown_as_text(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    evil = Unit("x", "<img src=x onerror=alert(1)>", "<script>alert('Seurat')</script>",
                ("x",), "documents")
    stage = StageResult("evil", "documents", 1, (Candidate(evil, 1.0, 1),), 0.0)
    trace = replace(trace, stages=(stage,), gold_flags=())
    html = stage_table(trace, 0)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html


def test_a_stage_note_says_how_its_scores_were_made(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    post = replace(trace.stages[-1],
                   details=StageDetails(note="score: rank fusion <0.5 x attention>"))
    trace = replace(trace, stages=(*trace.stages[:-1], post))
    html = stage_table(trace, len(trace.stages) - 1)
    assert "<small>score: rank fusion &lt;0.5 x attention&gt;</small>" in html
    assert "rank fusion" not in stage_table(trace, 0)


def test_every_llm_call_is_listed_with_its_prompt_escaped(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    long = replace(answer_step(1.5, 900), purpose="long answer", answer="",
                   prompt="Context: <b>War</b> & Peace", output=" It is <i>Tolstoy</i>'s.")
    trace = replace(trace, llm_steps=(long, replace(answer_step(0.2, 480), cached_tokens=350)))
    html = llm_steps_table(trace)
    assert html.count("<tr><td>") == 2
    assert "350 cached" in html and html.count("cached") == 1  # only the step that had any
    assert "long answer" in html and "900" in html and "1.50" in html
    assert "&lt;b&gt;War&lt;/b&gt; &amp; Peace" in html and "<b>War" not in html
    assert "&lt;i&gt;Tolstoy&lt;/i&gt;" in html
    assert llm_steps_table(replace(trace, llm_steps=())) == ""


def test_a_units_best_chunk_is_shown_under_it(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    first = trace.stages[0]
    unit = first.candidates[0].unit
    chunk = BestChunk(unit.id, f"{unit.doc_ids[0]}#0", "t", "He devised <pointillism>.",
                      0.61234)
    trace = replace(trace, stages=(replace(first, details=StageDetails(best_chunks=(chunk,))),
                                   *trace.stages[1:]))
    html = stage_table(trace, 0)
    assert f"best chunk {unit.doc_ids[0]}#0 (cosine 0.6123)" in html
    assert "&lt;pointillism&gt;" in html and html.count("best chunk") == 1


def test_highlight_marks_gold_and_query_words_without_breaking_markup():
    out = highlight("Georges Seurat painted A Sunday <b>Afternoon</b>",
                    "Who painted Sunday Afternoon?", ["Georges Seurat"])
    assert '<mark class="gold">Georges Seurat</mark>' in out
    assert "<mark>painted</mark>" in out and "<mark>Sunday</mark>" in out
    assert "&lt;b&gt;<mark>Afternoon</mark>&lt;/b&gt;" in out
    assert "<mark>Who</mark>" not in out  # stopword


def test_clusters_expand_to_members_and_documents_to_passages(tiny_corpus):
    from engine.stages.expand import chunk_documents, expand_to_documents
    from engine.units.chunking import Chunker

    cluster = Candidate(Unit("c0", "Danube", "", ("Danube", "Budapest"), "clusters"), 2.0, 1)
    docs = expand_to_documents(tiny_corpus, (cluster,))
    passages = chunk_documents(tiny_corpus, docs[:1], Chunker(8))
    stages = (StageResult("bm25", "clusters", 9, (cluster,), 0.0),
              StageResult("pre", "documents", 2, docs[:1], 0.0),
              StageResult("post", "passages", len(passages), passages[:1], 0.0))
    trace = replace(sample_trace(tiny_corpus), stages=stages, gold_flags=())
    clusters_html = stage_table(trace, 0)
    assert "<b>Danube</b> (kept)" in clusters_html and "<li>Budapest</li>" in clusters_html
    assert "Danube#0 (rank 1)" in stage_table(trace, 1)


def test_gold_banner_answer_box_and_compare_table(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    assert "lost at stage <b>rivers</b>" in gold_banner(trace)
    assert "EM 1" in answer_box(trace) and "42 tokens" in answer_box(trace)
    assert gold_banner(replace(trace, gold=None)) == ""
    table = compare_table([trace, replace(trace, paradigm="other")])
    assert "<th>fake</th><th>other</th>" in table and "AR@1" in table


def test_compare_scores_say_why_a_run_has_none(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    typed = replace(trace, paradigm="typed", gold=None, gold_flags=(), metrics={})
    silent = replace(trace, paradigm="silent", llm_steps=(),
                     metrics={k: v for k, v in trace.metrics.items()
                              if k not in ("EM", "F1", "refined_EM")})
    table = compare_table([trace, typed, silent])
    scores = table.split("<td>EM / F1</td>")[1].split("</tr>")[0]
    assert scores == "<td>1 / 1.00</td><td><i>no gold</i></td><td><i>not answered</i></td>"


def test_the_seconds_per_stage_legend_runs_across_under_the_bars(tiny_corpus):
    """Five paradigms' runs have ~16 steps: a legend beside the bars was cut to the plot's
    height and scrolled; under them, the figure grows a row per few steps."""
    trace = sample_trace(tiny_corpus)
    many = [replace(trace, paradigm=f"p{i}", stages=tuple(
        replace(s, name=f"{s.name} {i}") for s in trace.stages)) for i in range(8)]
    few, lots = figures.compare_figure([trace]), figures.compare_figure(many)
    assert len(lots.data) == 17  # 2 stages x 8 runs and the shared LLM answer
    for fig in (few, lots):
        assert fig.layout.legend.orientation == "h" and fig.layout.legend.y < 0
    assert lots.layout.height > few.layout.height
    assert len(set(lots.layout.colorway)) >= len(lots.data)  # no two steps share a colour


def test_compare_table_shows_every_cut_with_gold_in_or_out(tiny_corpus):
    trace = sample_trace(tiny_corpus)  # "overlap" keeps Seurat's documents, "rivers" drops them
    assert (trace.metrics["AR@overlap"], trace.metrics["AR@rivers"]) == (1.0, 0.0)
    short = replace(trace, paradigm="short", stages=trace.stages[:1],
                    gold_flags=trace.gold_flags[:1])
    table = compare_table([trace, short])
    cut1, cut2 = (row.split("</tr>")[0] for row in table.split("<td>cut ")[1:])
    assert cut1.count("gold answer in") == 2 and "gold documents 1.00" in cut1
    assert "<b>rivers</b>: 2 of 5 documents" in cut2 and "gold answer out" in cut2
    # trec_eval's measures of each cut (ir_measures): Seurat's documents kept, then dropped
    assert f"nDCG@10 {trace.metrics['nDCG@10@overlap']:.2f}" in cut1
    assert "RR 0.00 · R@4 0.00" in cut2
    assert cut2.endswith("<td></td>")  # the one-stage run has no second cut

    routed = StageResult("classify", "query", 1, (), 0.01, StageDetails(
        decision=QueryDecision(retrieve=False, probability=0.003, threshold=0.5)))
    skipped = replace(trace, paradigm="best", stages=(routed,), gold_flags=())
    cell = compare_table([skipped]).split("<td>cut 1</td>")[1]
    assert "<b>classify</b>: no retrieval (P 0.003)" in cell and " of " not in cell


def test_widget_values_make_configs_the_engine_accepts():
    """Widget values as Gradio sends them (sliders give floats) for both panels."""
    keys = [(p, o.name) for p in ("funnel", "flat") for o in PARADIGMS[p].options()]
    chosen = {("funnel", "K"): 5.0, ("funnel", "N"): 4, ("funnel", "H"): 2.0,
              ("funnel", "cluster_algorithm"): "funnelrag", ("funnel", "cluster_tokens"): 1024,
              ("funnel", "reader.lr"): 8.0, ("flat", "M"): 30.0, ("flat", "k"): 3}
    defaults = {(p, o.name): o.default for p in ("funnel", "flat")
                for o in PARADIGMS[p].options()}
    values = [chosen.get(key, defaults[key]) for key in keys]
    funnel = json.loads(config_json("funnel", keys, values))
    cfg = config_from_dict(FunnelConfig, funnel)
    assert (cfg.K, cfg.N, cfg.H, cfg.cluster_tokens, cfg.reader.lr) == (5, 4, 2, 1024, 8)
    assert "M" not in funnel and isinstance(funnel["K"], int)
    flat = config_from_dict(FlatConfig, json.loads(config_json("flat", keys, values)))
    assert (flat.M, flat.k) == (30, 3)


def test_an_out_of_range_number_typed_in_a_panel_is_refused_by_name_not_clamped():
    """The panel's number box passes K = -3 on as typed; the engine names it and the range."""
    from app.params import widget
    from engine.config import describe

    (k,) = [o for o in describe(FunnelConfig) if o.name == "K"]
    box = widget(k, "fe-test-K")
    assert box.minimum is None and box.maximum is None and "(1 to 200)" in box.info
    keys = [("funnel", "K")]
    with pytest.raises(EngineError, match=r"K=-3 is out of range; allowed: 1 to 200"):
        config_from_dict(FunnelConfig, json.loads(config_json("funnel", keys, [-3])))


def test_picker_lists_questions_by_their_text_cut_at_a_word():
    from app.tabs.picker import question_label
    from engine.documents import Question

    long = Question("5a8b57f25542995d1e6f1371", "Were Scott Derrickson and Ed Wood of the same "
                    "nationality, and did either of them direct a film released in the year "
                    "nineteen ninety-four?")
    label = question_label(long, "●")
    assert label.startswith("● Were Scott Derrickson") and "5a8b57f2" not in label
    assert label.endswith("…") and len(label) <= 102
    assert label[:-1] == label[:-1].rstrip() and long.text.startswith(label[2:-1])
    assert long.text[len(label) - 3] in " ,"  # the cut falls between words
    assert question_label(Question("q", "Who?")) == "Who?"


def test_run_ids_are_parsed_or_refused_clearly():
    assert parse_ids("3, 5") == [3, 5] and parse_ids(" 7 ") == [7]
    with pytest.raises(EngineError, match="got 'a; drop'"):
        parse_ids("a; drop")
    with pytest.raises(EngineError, match="Type a run id"):
        parse_ids("")
    with pytest.raises(EngineError, match="Type an evaluation id"):
        parse_ids(" ", "evaluation")
    with pytest.raises(EngineError, match="Evaluation ids are numbers"):
        parse_ids("x", "evaluation")


def test_clicking_runs_picks_one_then_a_pair_then_starts_again():
    assert pick_id("", 3) == "3"
    assert pick_id("3", 5) == "3, 5"
    assert pick_id("3, 5", 7) == "7"
    assert pick_id("3", 3) == "3"  # the same run twice is no pair
    assert pick_id("oops", 4) == "4"


def test_picked_gold_is_escaped_and_missing_evidence_points_to_the_pooled_corpus():
    from app.tabs.picker import gold_markdown
    from engine.documents import Question

    q = Question("q", "Who?", ("<b>Seurat</b>",), supporting_titles=("A", "B"))
    shown = gold_markdown(q, 1, 2, corpus="wiki", grown="wiki+HotpotQA dev500")
    assert "&lt;b&gt;Seurat&lt;/b&gt;" in shown and "<b>" not in shown
    assert "Corpus wiki holds 1 of its 2 supporting documents" in shown
    assert "`wiki+HotpotQA dev500`" in shown and "`pooled` corpus" in shown
    assert "`pooled` corpus" not in gold_markdown(q, 2, 2)


def test_compared_saved_runs_are_headed_by_id_name_question_paradigm_and_corpus(tiny_corpus):
    from app.tabs.sessions import run_heading
    from engine.store.sessions import SavedRun

    trace = sample_trace(tiny_corpus)
    run = SavedRun(7, "<b>mine</b>", "", "2026-11-23", trace.paradigm, trace.question,
                   trace.answer, 42, 1.0, {})
    head = run_heading(run, trace)
    assert head.startswith("run 7: &lt;b&gt;mine&lt;/b&gt;")
    assert esc(trace.question) in head and f"{trace.paradigm} · tiny" in head
    assert tiny_corpus.fingerprint[:10] in head
    table = compare_table([trace, trace], [head, run_heading(replace(run, id=8), trace)])
    assert "<th>run 7: " in table and "<th>run 8: " in table
    old = replace(trace, corpus={})  # saved before corpora were recorded
    assert "corpus not recorded" in run_heading(run, old)


def test_classifier_decisions_are_shown_escaped_with_gold_marks(tiny_corpus):
    from app.views.trace import decisions_table
    from engine.documents import Question
    from engine.units.lazy import document_unit

    docs = {d.id: d for d in tiny_corpus.documents}
    static = Candidate(document_unit(docs["Budapest"]), 0.9, 1)
    found = Candidate(document_unit(docs["Danube"]), 0.5, 2, parents=("Budapest",))
    evil = Candidate(Unit("x", "<b>Evil</b>", "<script>x</script>", ("x",), "documents"),
                     0.1, 3, parents=("Budapest",))
    calls = (ClassifierCall("Budapest", "Budapest", "Danube", "Danube", 0.91, 0.42, True),
             ClassifierCall("Budapest", "Budapest", "x", "<b>Evil</b>", 0.1, 0.42, False))
    stages = (StageResult("dense", "documents", 8, (static,), 0.01),
              StageResult("qdc", "documents", 1, (static, found, evil), 0.02),
              StageResult("cfs", "documents", 3, (static, found), 0.03,
                          StageDetails(calls=calls)))
    trace = replace(sample_trace(tiny_corpus), stages=stages, gold_flags=(),
                    gold=Question("q", "Which river?", ("Danube",), ("Budapest", "Danube")),
                    llm_steps=(answer_step(),))
    html = decisions_table(trace, 2)
    assert html.count("<tr>") == 3 and "0.910" in html and "0.420" in html
    assert "fe-kept-badge'>kept" in html and "fe-dropped'>dropped" in html
    assert html.count("both gold") == 1  # only Budapest + Danube are both supporting
    assert "<script>" not in html and "&lt;b&gt;Evil&lt;/b&gt;" in html
    assert decisions_table(trace, 0) == ""  # a stage without classifier calls
    qdc = stage_table(trace, 1)
    assert qdc.count("found with q + Budapest") == 2  # QDC documents name their static one
    assert "sent to the reader" in stage_table(trace, 2)
    assert "sent to the reader" not in qdc


def test_precision_recall_points_and_figure():
    recall, precision = figures.precision_recall([[0.9, 1], [0.8, 0], [0.7, 1], [0.1, 0]])
    assert recall == [0.5, 0.5, 1.0, 1.0]
    assert precision == [1.0, 0.5, 2 / 3, 0.5]
    version = {"id": "abc", "labels": 3, "threshold": 0.5,
               "heldout": {"recall": 0.5, "precision": 1.0},
               "heldout_scores": [[0.9, 1], [0.2, 0]]}
    fig = figures.precision_recall_figure(ClassifierStatus(None, [version], 3, {}))
    assert len(fig.data) == 2 and "3 labels" in fig.data[0].name
    empty = figures.precision_recall_figure(ClassifierStatus(None, [], 0, {}))
    assert "No classifier" in empty.layout.annotations[0].text


def test_equal_reader_budget_caps_every_paradigms_reader():
    from app.tabs.compare import with_budget

    for name in PARADIGMS:
        capped = json.loads(with_budget(config_json(name, [], []), 500))
        assert capped["reader"]["max_context_tokens"] == 500
        config = config_from_dict(PARADIGMS[name].config, capped)  # the engine accepts it
        assert config.reader.max_context_tokens == 500
    kept = json.loads(with_budget('{"K": 3, "reader": {"lr": 2}}', 64))
    assert kept == {"K": 3, "reader": {"lr": 2, "max_context_tokens": 64}}


def test_option_labels_read_as_words_not_keys():
    assert label_of("reader.max_new_tokens") == "reader: max new tokens"
    assert label_of("K") == "K"
    labels = {label_of(o.name) for spec in PARADIGMS.values() for o in spec.options()}
    assert {"reader: max context tokens", "context tokens", "M", "summary tokens"} <= labels


def test_the_picker_marks_how_much_gold_evidence_the_corpus_holds():
    from app.tabs.picker import HELD, NONE, PART, UNKNOWN, evidence_mark

    assert [evidence_mark(2, 2), evidence_mark(1, 2), evidence_mark(0, 2),
            evidence_mark(0, 0)] == [HELD, PART, NONE, UNKNOWN]


def test_a_token_cap_shows_what_the_reader_read_and_what_it_left(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    sent = trace.stages[-1].candidates
    assert len(sent) == 2 and "not read" not in final_passages(trace)
    step = replace(trace.llm_steps[0], capped=ReadCount(read=1, offered=2))
    capped = replace(trace, llm_steps=(step,))
    html = final_passages(capped)
    assert html.count("<li>") == 1 and "1 more not read" in html
    assert "read the first 1 within its token cap" in stage_table(capped, 1)


def test_final_passages_collapse_beyond_the_first_few(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    sent = trace.stages[-1].candidates
    html = final_passages(trace, shown=1)
    shown, collapsed = html.split("<details>")
    assert shown.count("<li>") == 1 and collapsed.count("<li>") == len(sent) - 1
    assert "fe-final-more" in collapsed
    assert f"{len(sent) - 1} more read" in collapsed and "start='2'" in collapsed
    assert "<details>" not in final_passages(trace, shown=len(sent))


def test_summarisation_lists_every_sentence_weighed_best_first(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    assert "fe-sentences" not in stage_table(trace, 1)  # no summarisation, no list
    sentences = (WeighedSentence("p1", "Dots make <it>.", 0.2, False),
                 WeighedSentence("p2", "The Danube flows.", 0.7, True))
    last = replace(trace.stages[1], details=StageDetails(sentences=sentences))
    html = stage_table(replace(trace, stages=(trace.stages[0], last)), 1)
    listed = html.split("fe-sentences")[-1]
    assert "2 sentences weighed" in html and "1 kept" in html
    assert listed.index("The Danube") < listed.index("make &lt;it&gt;")  # best first
    assert listed.count("fe-kept-badge") == 1 and listed.count("fe-dropped") == 1


def test_the_sentence_cut_shows_scores_neighbours_tokens_saved_and_gold_sentences(tiny_corpus):
    trace = sample_trace(tiny_corpus)
    gold = replace(trace.gold, supporting_sentences=("It flows through Budapest.",))
    sentences = (WeighedSentence("p1", "The Danube is a river.", 0.2, True, 5, "neighbour"),
                 WeighedSentence("p1", "It flows through Budapest.", 0.9, True, 4),
                 WeighedSentence("p2", "Vienna is a city.", 0.1, False, 4))
    cut = replace(trace.stages[1], name="sentences", settings={"sentence_scorer": "trained"},
                  details=StageDetails(sentences=sentences, tokens=9, tokens_in=13))
    # the reader read them in the other order (reverse packing): the heatmap's rows say so
    read = ReaderAttention(cells=(), passages=("p1",), top_tokens=(),
                           sentence_passages=("p1", "p1"),
                           sentence_texts=("It flows through Budapest.",
                                           "The Danube is a river."))
    answered = (LLMStep("answer", "m", "p", "Danube", 9, 1, 0.1, answer="Danube",
                        attention=read),)
    html = stage_table(replace(trace, gold=gold, stages=(trace.stages[0], cut),
                               llm_steps=answered), 1)
    listed = html.split("fe-sentences")[-1]
    assert "heatmap s1" in listed.split("<tr>")[2] and "heatmap s2" in listed.split("<tr>")[3]
    assert "2 kept, 1 cut, 9 of 13 tokens read (4 saved)" in html
    assert "score (trained)" in listed and "(neighbour)" in listed
    rows = listed.split("<tr>")[2:]
    assert "Budapest" in rows[0] and "fe-support" in rows[0]  # best first, the gold one
    assert all("fe-support" not in row for row in rows[1:])


def test_the_server_log_keeps_library_chatter_and_progress_bars_out():
    import logging

    from engine.logs import QUIET_LOGGERS, configure_logging

    configure_logging()
    assert all(logging.getLogger(name).getEffectiveLevel() >= logging.WARNING
               for name in QUIET_LOGGERS)
    assert logging.getLogger("engine").level == logging.NOTSET  # the app's own lines stay
    from transformers.utils import logging as transformers_logging

    assert not transformers_logging.is_progress_bar_enabled()  # no bar per model load


def test_retrain_progress_counts_labels_and_says_how_long_is_left():
    from app.views.annotation import classifier_html

    job = {"state": "running", "done": 30, "total": 120, "seconds": 60.0, "left": 180.0,
           "labels": 1, "error": "", "before": "", "after": ""}
    html = classifier_html(ClassifierStatus(None, [], 1, job))
    assert "Retraining on 1 label:" in html and "30/120 (25%)" in html
    assert "about 3 min left" in html and "fe-progress" in html and "fe-error" not in html
    assert "No version is trained yet" in html  # what decides meanwhile
    against = classifier_html(ClassifierStatus("v1", [], 1, job))
    assert "It will be compared with version v1, active meanwhile." in against
    done = classifier_html(ClassifierStatus(
        None, [], 3, {**job, "state": "done", "labels": 3, "after": "v2"}))
    assert "on 3 labels: version v2" in done


def test_a_stage_not_listed_by_score_says_how_it_is_listed(tiny_corpus):
    """DR-RAG's qdc table read 12.05, 5.51, 23.74, 29.09 with nothing saying why."""
    from engine.stages.select import QDC_ORDER

    trace = sample_trace(tiny_corpus)
    qdc = replace(trace.stages[-1], details=StageDetails(order=QDC_ORDER))
    html = stage_table(replace(trace, stages=(trace.stages[0], qdc)), 1)
    assert "listed the static documents first" in html and "not by score" in html
    assert "not by score" not in stage_table(trace, 1)  # a stage listed by score says nothing


def test_the_status_says_what_stands_in_while_builds_and_training_go_on():
    from types import SimpleNamespace

    from app.ui import status_lines, status_summary

    standing = ["BM25 over the same passages stands in until the dense index (minilm, "
                "100-token passages) is built",
                "1 classifier still training; untrained stand-ins decide meanwhile"]
    failures = []
    explorer = SimpleNamespace(catalog=SimpleNamespace(
        corpus_spec="wiki<1>", status=lambda: ["corpus: ready"], standing_in=lambda: standing,
        failures=lambda: failures, datasets_note=lambda: "",
        ready=lambda name=None: name is not None))
    line, failed = status_summary(explorer)
    assert line.startswith("Ready: " + ", ".join(PARADIGMS)) and not failed
    assert "In the background: BM25 over the same passages stands in" in line
    assert "1 classifier still training; untrained stand-ins decide" in line
    assert line.endswith("corpus wiki<1>")  # an accordion's label: text, shown as it is
    assert "<li>1 classifier still training" in status_lines(explorer)
    standing.clear()
    assert "In the background" not in status_summary(explorer)[0]


def test_the_status_is_one_line_with_the_worst_news_first():
    """Seen: while anything built or failed, the status box opened to two-thirds of a
    900-px screen and pushed the tabs below the fold. Folded, its one line reads what
    failed first, then the paradigms still waiting, then what answers."""
    from types import SimpleNamespace

    from app.ui import status_lines, status_summary, status_update

    first = next(iter(PARADIGMS))
    failures = ["fetching the QA data: FAILED - No network answers",
                "train <selection>: FAILED - out of memory"]
    explorer = SimpleNamespace(catalog=SimpleNamespace(
        corpus_spec="wiki", failures=lambda: failures, standing_in=lambda: [],
        status=lambda: ["corpus: ready", *failures, "dense index: building 40%"],
        datasets_note=lambda: "Not here yet: HotpotQA dev500 (run `fetch`)",
        ready=lambda name=None: name == first))
    line, failed = status_summary(explorer)
    assert failed and "Ready" not in line
    assert line.startswith("✖ 2 tasks failed: fetching the QA data: FAILED - No network "
                           "answers (and 1 more) · Waiting: ")
    assert line.index("Waiting: ") < line.index(f"Answering: {first}")
    assert "Not here yet: HotpotQA dev500" in line
    lines = status_lines(explorer)
    assert lines.index("out of memory") < lines.index("corpus: ready")  # failures first
    assert lines.count("No network answers") == 1 and "&lt;selection&gt;" in lines
    box, _ = status_update(explorer)
    assert box["label"] == line and "fe-status-failed" in box["elem_classes"]
    assert "open" not in box  # an update never opens or closes it: the user does


def test_ablation_bars_stand_beside_the_heatmap_rows_they_belong_to(tiny_corpus):
    """A bar per passage left out, on its heatmap row; red where the answer changes; the
    subtitle gives attention's agreement with it; the answers in the hover escaped."""
    from engine.trace_details import Ablation

    trace, _ = _with_attention(sample_trace(tiny_corpus))
    step = replace(trace.llm_steps[0], attention=trace.stages[-1].details.attention,
                   ablation=Ablation(("p2", "p<1>"), "Seurat", -1.0, (-4.0, -0.5),
                                     ("<i>Monet</i>", "Seurat"), 3, 40, 0.3))
    fig = heatmap.heatmap_figure(replace(trace, llm_steps=(step,)))
    heat, bars = fig.data
    assert heat.type == "heatmap" and bars.type == "bar"
    assert list(bars.y) == ["* #2 p2", "#1 p&lt;1&gt;"] and set(bars.y) == set(heat.y)
    assert list(bars.x) == pytest.approx([3.0, -0.5])
    low, high = fig.layout.xaxis2.range  # room for each label outside its bar, both sides
    assert low < -0.5 - 0.5 and high > 3.0 + 0.5 and bars.cliponaxis is False
    assert list(bars.marker.color) == [heatmap.CHANGED, heatmap.KEPT]
    assert "&lt;i&gt;Monet&lt;/i&gt;" in bars.hovertext[0] and "<i>" not in bars.hovertext[0]
    assert "leaving out 1 of 2 passages changes the answer" in fig.layout.title.text
    assert "too few passages for a rank correlation" in fig.layout.title.text
    assert len(heatmap.heatmap_figure(trace).data) == 1  # no ablation, no bars
