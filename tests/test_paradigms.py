"""Funnel and flat end to end with the real packaged models on the tiny corpus.

The pre-ranker here is the MiniLM encoder under a fresh (seeded) scoring head: these tests
check the plumbing (stages, lineage, trace, reader, CLI), not ranking quality, which the
benchmarks measure.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.documents import Question
from engine.metrics import IR_MEASURES
from engine.paradigms.registry import PARADIGMS, make_config
from engine.service.store import make_paradigm, process_store
from engine.trace import RunTrace
from tests.conftest import TINY_DOCS

pytestmark = pytest.mark.slow

QUESTION = Question("q1", "Which river flows through Budapest?", answers=("Danube",),
                    supporting_titles=("Budapest",))
FUNNEL = {"cluster_tokens": 128, "K": 2, "N": 2, "H": 2, "preranker": "minilm",
          "attention_weight": 0.5, "reader": {"max_answer_tokens": 8}}
FLAT = {"M": 4, "k": 2, "reranker": "minilm", "reader": {"max_answer_tokens": 8}}
# deterministic in any process: bi-encoder re-ranking instead of a freshly initialised head
STEADY = {"funnel": {**FUNNEL, "preranker": "bi-encoder"},
          "flat": {**FLAT, "reranker": "bi-encoder"}}


def test_funnel_end_to_end(tiny_corpus, shared_models):
    funnel = make_paradigm("funnel", tiny_corpus, FUNNEL)
    partial = list(funnel.stream(QUESTION))
    assert [len(t.stages) for t in partial] == [1, 2, 3, 3]  # a trace per stage, then done
    assert [t.answer for t in partial[:3]] == ["", "", ""]
    trace = partial[-1]
    assert partial[1].stages == trace.stages[:2] and partial[0].gold_flags
    first, pre, post = trace.stages
    clusters = process_store().clusters(tiny_corpus, funnel.config.clusters())
    assert first.n_in == len(clusters.units) > 0  # the haystack the first stage searched
    # the best cluster is titled by its best-matching members, and lists them first
    best = first.candidates[0].unit
    assert best.title.split(",")[0] in {"Danube", "Budapest"}
    assert best.doc_ids[0] in {"Danube", "Budapest"}
    assert pre.n_in == len({d for c in first.candidates for d in c.unit.doc_ids})
    assert [s.name for s in trace.stages] == ["clusters", "preranker", "postranker"]
    assert [s.granularity for s in trace.stages] == ["clusters", "documents", "passages"]
    assert len(first.candidates) <= 2 and len(pre.candidates) <= 2
    assert 1 <= len(post.candidates) <= 2
    kept_docs = {c.unit.id for c in pre.candidates}
    for passage in post.candidates:  # lineage: cluster -> document -> passage
        cluster_id, doc_id = passage.parents
        assert doc_id in kept_docs and doc_id == passage.unit.doc_ids[0]
        assert any(c.unit.id == cluster_id for c in first.candidates)
    read = post.details.attention
    n_read = len(read.passages)
    assert len(read.cells) == n_read and len(read.cells[0]) == 30  # layers
    assert len(read.cells[0][0]) == 9  # heads
    assert len(read.top_tokens) == n_read
    assert trace.answer and trace.reader_input_tokens > 0
    (step,) = trace.llm_steps  # one LLM call: the answer over the H post-ranked passages
    assert step.purpose == "answer" and step.answer == trace.answer and trace.llm_calls == 1
    assert step.prompt_tokens == trace.reader_input_tokens and step.seconds > 0
    assert {"AR@1", "AR@4", "EM", "F1"} <= set(trace.metrics)
    assert [len(f.answer) for f in trace.gold_flags] == [len(s.candidates) for s in trace.stages]
    assert RunTrace.from_json(trace.to_json()) == trace


def test_funnel_post_ranks_by_stored_passage_cosines_without_a_reader_pass(tiny_corpus,
                                                                          shared_models):
    from engine.stages.expand import chunk_documents
    from engine.units.chunking import Chunker

    funnel = make_paradigm("funnel", tiny_corpus, {**FUNNEL, "H": 3, "attention_weight": 0.0,
                                                   "postrank_prior": "passage"})
    steps = funnel.steps(QUESTION.text)
    _, pre, post = next(steps), next(steps), next(steps)
    steps.close()
    dense = process_store().dense(tiny_corpus, funnel.config.indexed_passages(), "minilm")
    q = dense.encode_queries([QUESTION.text])[0]
    given = chunk_documents(tiny_corpus, pre.candidates, Chunker(100))
    cosine = {c.unit.id: float(dense.vectors[dense.row_of[c.unit.id]] @ q) for c in given}
    best = sorted(cosine, key=lambda i: -cosine[i])[:3]
    assert [c.unit.id for c in post.candidates] == best
    assert "stored dense cosine" in post.details.note and post.details.attention is None


def test_flat_end_to_end(tiny_corpus, shared_models):
    trace = make_paradigm("flat", tiny_corpus, FLAT).run(QUESTION)
    assert [s.name for s in trace.stages] == ["dense", "reranker"]
    dense, reranked = trace.stages
    assert len(dense.candidates) == 4 and len(reranked.candidates) == 2
    assert {c.unit.id for c in reranked.candidates} <= {c.unit.id for c in dense.candidates}
    (step,) = trace.llm_steps
    read = step.attention  # the reader's attention over the k passages it answered from
    # in the order the reader read them: reverse packing puts the best passage last
    assert read.passages == tuple(c.unit.id for c in reranked.candidates)[::-1]
    assert len(read.cells) == 2 and step.answer == trace.answer
    assert trace.answer and trace.reader_input_tokens > 0
    assert trace.config["M"] == 4 and trace.config["reader"]["max_answer_tokens"] == 8


def test_while_a_promised_dense_index_builds_bm25_stands_in_and_each_stage_says_so(
        tiny_corpus, monkeypatch):
    """A fresh start: the app answers before the dense index is built, and says how."""
    store = process_store()
    monkeypatch.setattr(store, "_promised", {})  # this test's promise only
    flat_config = {**STEADY["flat"], "M": 4}
    funnel_config = {"cluster_tokens": 128, "K": 2, "N": 2, "H": 2}
    passages = make_config("flat", flat_config).passages()
    store.promise_dense(tiny_corpus, passages)
    # a run's paradigm is handed what the store has when it is made: the stand-in
    flat = make_paradigm("flat", tiny_corpus, flat_config)
    funnel = make_paradigm("funnel", tiny_corpus, funnel_config)

    steps = flat.steps(QUESTION.text)
    first, ranked = next(steps), next(steps)
    steps.close()  # retrieval only: the reader is not what this is about
    bm25 = store.bm25(tiny_corpus, passages).search(QUESTION.text, 4)
    assert [(c.unit.id, c.score) for c in first.candidates] == [(c.unit.id, c.score)
                                                                for c in bm25]
    assert "BM25 over the same passages stands in" in first.details.note
    assert first.settings["stand_in"] == "bm25"
    # no stored vectors to re-rank by: the order given is kept, and said
    assert [c.unit.id for c in ranked.candidates] == [c.unit.id for c in bm25[:2]]
    assert "still being built" in ranked.details.note

    steps = funnel.steps(QUESTION.text)
    clusters, pre, post = next(steps), next(steps), next(steps)
    steps.close()
    assert clusters.settings["document_scores"] == "bm25"  # hybrid, BM25 standing in
    assert "documents score by BM25 alone" in clusters.details.note
    assert "documents score by BM25 alone" in pre.details.note
    assert "no passage cosines: the dense index is still being built" in post.settings["prior"]

    store.dense(tiny_corpus, passages)  # the build ends: the next question's run reads it
    flat = make_paradigm("flat", tiny_corpus, flat_config)
    funnel = make_paradigm("funnel", tiny_corpus, funnel_config)
    steps = flat.steps(QUESTION.text)
    first = next(steps)
    steps.close()
    assert first.details.note == "" and first.name == "dense"
    assert "stand_in" not in first.settings
    assert all(-1.0 <= c.score <= 1.0 for c in first.candidates)  # cosines
    steps = funnel.steps(QUESTION.text)
    clusters = next(steps)
    steps.close()
    assert clusters.settings["document_scores"] == "hybrid" and clusters.details.note == ""


def test_a_promised_build_that_failed_is_not_tried_again_and_the_stand_in_says_why(
        tiny_corpus, monkeypatch):
    from engine.errors import EngineError
    from engine.units.build import UnitConfig
    from engine.units.chunking import Chunker

    store = process_store()
    monkeypatch.setattr(store, "_promised", {})
    passages = UnitConfig("passages", chunker=Chunker(100))
    store.promise_dense(tiny_corpus, passages)
    store.break_promise(tiny_corpus, passages, "minilm", "disk full")
    stand_in = store.dense(tiny_corpus, passages, stand_in=True)
    assert "the dense index failed to build (disk full)" in stand_in.stand_in.note
    scores = store.documents(tiny_corpus, "hybrid", 0.7, passages, stand_in=True)
    assert scores.how == "bm25" and "failed to build (disk full)" in scores.stand_in.note
    with pytest.raises(EngineError, match=r"failed \(disk full\); restart the app"):
        store.dense(tiny_corpus, passages)  # an evaluation or a dependent task: no rebuild


def test_a_dense_index_nobody_promised_is_built_not_stood_in_for(tiny_corpus, monkeypatch):
    """The CLI and evaluations never get the stand-in: no background build was promised."""
    from engine.index.dense import DenseIndex
    from engine.units.build import UnitConfig
    from engine.units.chunking import Chunker

    monkeypatch.setattr(process_store(), "_promised", {})
    passages = UnitConfig("passages", chunker=Chunker(100))
    assert isinstance(process_store().dense(tiny_corpus, passages, stand_in=True),
                      DenseIndex)


def test_new_stage_parameters_load_nothing_again(tiny_corpus, shared_models):
    """One loaded index per fingerprint, one reader and one re-ranker per model: changing
    K, N, H, M or k (or the prompt) reuses them all."""
    from engine.models.cross_encoder import load_cross_encoder
    from engine.readers.backends import loaded_generators
    from engine.readers.fid import loaded_fid_readers

    def loaded():
        return (len(process_store()), loaded_generators(), loaded_fid_readers(),
                load_cross_encoder.cache_info().currsize)

    funnel = make_paradigm("funnel", tiny_corpus, FUNNEL)
    funnel.run(QUESTION)
    make_paradigm("flat", tiny_corpus, FLAT).run(QUESTION)
    before = loaded()
    index = process_store().clusters(tiny_corpus, funnel.config.clusters())
    for K, N, H in ((1, 1, 1), (3, 3, 3)):
        make_paradigm("funnel", tiny_corpus, {**FUNNEL, "K": K, "N": N, "H": H}).run(QUESTION)
    for M, k, prompt in ((3, 1, "plain"), (5, 3, "chat")):
        config = {**FLAT, "M": M, "k": k, "reader": {"max_answer_tokens": 4, "prompt": prompt}}
        make_paradigm("flat", tiny_corpus, config).run(QUESTION)
    assert loaded() == before
    assert process_store().clusters(tiny_corpus, funnel.config.clusters()) is index


def _cli(args: list[str], data_dir) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "FUNNEL_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True,
                          text=True, timeout=900, env=env)


@pytest.fixture
def tiny_files(tmp_path):
    corpus = tmp_path / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": t, "title": t, "text": x})
                                for t, x in TINY_DOCS))
    qa = tmp_path / "qa.jsonl"
    rows = [{"question_id": "q1", "question_text": QUESTION.text,
             "answers_objects": [{"spans": ["Danube"]}],
             "contexts": [{"id": "0", "title": "Budapest", "is_supporting": True,
                           "paragraph_text": "Budapest is the capital of Hungary."}]},
            {"question_id": "q2", "question_text": "Who devised pointillism?",
             "answers_objects": [{"spans": ["Georges Seurat"]}],
             "contexts": [{"id": "0", "title": "Pointillism", "is_supporting": True,
                           "paragraph_text": "Pointillism is a painting technique."}]}]
    qa.write_text("\n".join(json.dumps(r) for r in rows))
    return corpus, qa


def test_cli_ask_prints_every_stage(tiny_files, shared_models, capsys):
    """The command's `main` in this process, whose models the module has loaded (the CLI
    as a process of its own: test_cli_ask_bad_input below)."""
    from engine.cli.main import main

    corpus, _ = tiny_files
    assert main(["ask", QUESTION.text, "--corpus", str(corpus), "--config",
                 json.dumps(FUNNEL)]) == 0
    out = capsys.readouterr().out
    for stage in ("stage 1  clusters (clusters)", "stage 2  preranker (documents)",
                  "stage 3  postranker (passages)", "answer:"):
        assert stage in out


def test_cli_eval_writes_rows_and_json_summary(tiny_files, shared_models, tmp_path,
                                               tiny_classifier_base, capsys):
    """`eval`'s `main` in this process, as test_cli_ask_prints_every_stage runs `ask`."""
    from engine.cli.main import main

    corpus, qa = tiny_files
    rows = tmp_path / "rows.jsonl"
    drrag = {"k": 3, "k1": 1, "k2": 2, "classifier": str(tiny_classifier_base),
             "reader": {"max_answer_tokens": 8}}
    longrag = {"unit_tokens": 128, "k": 2, "long_answer_tokens": 16,
               "reader": {"max_answer_tokens": 8}}
    best = {"classify": False, "M": 6, "k": 2, "reader": {"max_answer_tokens": 8}}
    names = ("funnel", "flat", "longrag", "drrag", "best")
    assert main(["eval", "--dataset", str(qa), "--paradigm", ",".join(names),
                 "--corpus", str(corpus), "--config",
                 json.dumps({"funnel": FUNNEL, "flat": FLAT, "longrag": longrag,
                             "drrag": drrag, "best": best}),
                 "--out", str(rows), "--json", "--export", "trec", str(tmp_path / "trec")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary) == {*names, "paired"}
    pairs = summary.pop("paired")
    assert len(pairs) == 10 and set(pairs["funnel-flat"]["EM"]) == {
        "diff", "ci", "p", "p_holm", "within_noise", "n"}  # ten comparisons: Holm too
    assert pairs["funnel-flat"]["seconds"]["p"] is None  # McNemar is for binary metrics
    for name in names:  # every question has one outcome
        assert sum(summary[name]["outcomes"].values()) == 2, summary[name]["outcomes"]
    assert summary["longrag"]["llm_calls"] == 2  # the long answer, then the short one
    for name in names:
        assert summary[name]["questions"] == 2 and "AR@1" in summary[name]
        assert summary[name]["reader_tokens"] > 0 and "EM" in summary[name]
    flat_stages = {f"{metric}@{stage}" for metric in ("AR", "gold_doc_recall", *IR_MEASURES)
                   for stage in ("dense", "reranker")} | {
        f"seconds_{stage}{suffix}" for stage in ("dense", "reranker")
        for suffix in ("", "_median", "_p95")}
    assert set(summary["flat"]) - flat_stages <= set(summary["drrag"])  # all but its stages
    assert 1 <= summary["drrag"]["docs_to_reader"] <= 3  # k, at most
    assert 1 <= summary["flat"]["docs_to_reader"] <= 2  # k passages: at most k documents
    lines = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [(r["question_id"], r["paradigm"]) for r in lines] == [
        (q, name) for q in ("q1", "q2") for name in names]
    # the TREC export: trec_eval's code reading it gives the summary's per-stage means
    import ir_measures

    trec = tmp_path / "trec"
    assert (trec / "qrels.txt").is_file() and (trec / "flat.dense.run").is_file()
    qrels = list(ir_measures.read_trec_qrels(str(trec / "qrels.txt")))
    for stage in ("dense", "reranker"):
        run = list(ir_measures.read_trec_run(str(trec / f"flat.{stage}.run")))
        measured = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.RR],
                                              qrels, run)
        assert summary["flat"][f"nDCG@10@{stage}"] == pytest.approx(
            measured[ir_measures.nDCG @ 10], abs=1e-3)
        assert summary["flat"][f"RR@{stage}"] == pytest.approx(measured[ir_measures.RR],
                                                               abs=1e-3)


def test_an_evaluation_on_ray_by_the_cli_and_by_a_job_matches_one_process(
        tiny_files, shared_models, tmp_path, capsys):
    """The same `eval` command in this one process (its models loaded once for the module)
    and with --ray local --workers 2, then an evaluation job asking its questions on Ray,
    which stores the runs one process gives. Both on one local cluster of two workers,
    started once (`connect`, as served index shards keep one), so its workers load the
    models once; a cluster started and stopped for one build: test_corpora's Ray test."""
    pytest.importorskip("ray")
    from engine.cli.main import main
    from engine.data.corpus import load_corpus
    from engine.data.loaders import read_dataset
    from engine.index.on_ray import LOCAL, connect, disconnect
    from engine.service.evaluation_jobs import EvaluationJob
    from engine.service.evaluation_request import EvaluationRequest
    from engine.store.evaluations import EvaluationStore
    from engine.store.sessions import SessionStore

    corpus_file, qa = tiny_files
    args = ["eval", "--dataset", str(qa), "--paradigm", "funnel,flat", "--corpus",
            str(corpus_file), "--config", json.dumps(STEADY), "--json"]
    assert main([*args, "--out", str(tmp_path / "one.jsonl")]) == 0
    printed = {"one": capsys.readouterr().out}
    connect(LOCAL, workers=2)
    try:
        assert main([*args, "--out", str(tmp_path / "ray.jsonl"), "--ray", LOCAL,
                     "--workers", "2"]) == 0
        printed["ray"] = capsys.readouterr().out
        corpus, questions = load_corpus(str(corpus_file)), read_dataset(qa).questions
        store = SessionStore(tmp_path / "sessions.duckdb")
        evaluations = EvaluationStore(store)
        request = EvaluationRequest("qa", questions, ("flat",), STEADY, ray=LOCAL, workers=2)
        job = EvaluationJob(evaluations, corpus, request, corpus_spec=str(corpus_file))
        job.run()
    finally:
        disconnect()
    runs = {}
    for name, stdout in printed.items():
        summary = json.loads(stdout.strip().splitlines()[-1])
        rows = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text()
                .splitlines()]
        runs[name] = ({p: {k: v for k, v in s.items() if not k.startswith("seconds")}
                       for p, s in summary.items() if p != "paired"},
                      [(r["question_id"], r["paradigm"], r["answer"]) for r in rows])
    assert runs["ray"] == runs["one"]  # the same answers, recall and costs; only timings differ
    assert [q for q, _, _ in runs["one"][1]] == ["q1", "q1", "q2", "q2"]
    assert (job.state, job.done) == ("done", 2), job.error
    here = make_paradigm("flat", corpus, STEADY["flat"])
    for position, question in enumerate(questions):
        stored = evaluations.trace(job.id, position, "flat")
        assert stored.answer == here.run(question).answer
        assert stored.corpus["fingerprint"] == corpus.fingerprint
    store.close()


@pytest.mark.parametrize("args,message", [
    (["ask", "  "], "The question is empty"),
    (["ask", "x", "--paradigm", "graph"],
     "Unknown paradigm 'graph'. Choose from: " + ", ".join(sorted(PARADIGMS)) + "."),
    (["ask", "x", "--config", '{"K": 0}'], "K=0 is out of range; allowed: 1 to 200"),
    (["ask", "x", "--config", "{oops"], "--config is not valid JSON"),
])
@pytest.mark.fresh_data  # its data directory must stay without a cache
def test_cli_ask_bad_input(args, message, tiny_files, data_dir):
    corpus, _ = tiny_files
    result = _cli([*args, "--corpus", str(corpus)], data_dir)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (data_dir / "cache").exists()  # refused before any index or model was built


def test_flat_over_bm25_builds_no_dense_index_unless_a_stage_asks_for_one(tiny_corpus):
    """Issue 67: {"retriever": "bm25"} encoded every passage, since the default re-ranker
    read the bi-encoder's stored vectors. The default now follows the first stage: BM25's
    order cut to k, nothing dense needed; asking for the bi-encoder still needs it."""
    from engine.paradigms.flat import FlatParadigm

    def needs(options):
        return [need.key.split()[0] for need in FlatParadigm.needs(make_config("flat", options))]

    assert "dense" not in needs({"retriever": "bm25", "reader": {"max_answer_tokens": 8}})
    assert "dense" in needs({"retriever": "bm25", "reranker": "bi-encoder"})
    assert "dense" in needs({})  # dense retrieval: its own index, re-ranked by its vectors
    trace = make_paradigm("flat", tiny_corpus, {"retriever": "bm25", "M": 4, "k": 2}
                          ).run(QUESTION)
    first, cut = trace.stages[0], trace.stages[1]
    assert [s.name for s in trace.stages] == ["bm25", "reranker"]
    assert cut.settings["kind"].startswith("none: the first stage's order")
    # and its stage says so where Explore shows it: auto resolved to none
    assert "not re-ranked" in cut.details.note and "which auto picks" in cut.details.note
    assert [c.unit.id for c in cut.candidates] == [c.unit.id for c in first.candidates[:2]]
