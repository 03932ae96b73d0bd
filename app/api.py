"""The app's named API endpoints for gradio_client, over an Explorer.

Each endpoint converts strings and numbers to an Explorer call and its result to JSON; an
engine refusal becomes a gr.Error that names the bad value and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import get_type_hints

import gradio as gr
from gradio.context import get_blocks_context
from gradio_client.utils import python_type_to_json_schema

from app.errors import raising_refusals, refused
from engine.data.loaders.jsonio import read_text
from engine.errors import ConfigError
from engine.paradigms.registry import DEFAULT, PARADIGMS, parse_config
from engine.readers.ablation import agreement, reading_step
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.trace import RunTrace


def register(explorer: Explorer) -> None:
    """Every named endpoint over `explorer` (call inside the app's Blocks)."""
    _runs_api(explorer)
    _annotation_api(explorer)
    _evaluation_api(explorer)
    _diagnosis_api(explorer)
    _corpora_api(explorer)


def _runs_api(explorer: Explorer) -> None:
    """Named endpoints for gradio_client: run, save_run, reanswer, ablation, list_runs,
    load_run, status."""

    def run(question: str, paradigm: str = DEFAULT, config_json: str = "",
            corpus: str = "", build: bool = False) -> str:
        """Run `question` through `paradigm` (config as JSON) over `corpus` (a name from
        list_corpora; empty: the corpus the app started with); returns the trace JSON. A
        config needing an index the app has not built (another passage_tokens: a new
        dense index) that takes long here is refused, naming it and its estimate, unless
        `build` is true: the run then builds it first and waits for it."""
        try:
            return explorer.run(question, paradigm, config_json, corpus,
                                bool(build)).to_json()
        except BuildNeeded as err:
            raise refused(f"{err} Over the API: pass build=True (the fifth argument of "
                          "/run) to build it within this request.") from None

    def save_run(trace_json: str, name: str = "", notes: str = "") -> int:
        """Save a trace (as returned by `run`); returns the new run id."""
        trace = _trace(trace_json)
        return explorer.save_run(trace, name, notes)

    def reanswer(trace_json: str, passage_ids: str, oracle: bool = False) -> str:
        """Re-answer a run (a trace as `run` returned it) over the units whose ids are in
        the JSON list `passage_ids` (any candidate of its stages, in reading order), plus
        the question's gold supporting paragraphs with `oracle`: only the reader runs.
        Returns the new trace JSON; its "reanswer" stage records what changed."""
        trace = _trace(trace_json)
        try:
            ids = json.loads(passage_ids or "[]")
        except json.JSONDecodeError:
            ids = None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise refused(f"passage_ids={passage_ids!r} is not a JSON list of unit ids; "
                          'give e.g. ["Danube#0", "Vienna#1"].')
        return explorer.reanswer(trace, ids, bool(oracle)).to_json()

    def ablation(run_id: int = 0, evaluation_id: int = 0, position: int = -1,
                 paradigm: str = "", trace_json: str = "") -> str:
        """Leave-one-out attribution of a stored run: saved run `run_id`, or question
        `position` of evaluation `evaluation_id` through `paradigm`, or a trace as `run`
        returned it. The run's reader reads its passages again with each one left out
        (nothing else runs). JSON: {ablation: {passages (prompt order), answer, logprob,
        without, effects, answers_without, changed, most, tokens_read, seconds},
        agreement: {spearman, same_top, attended, most} or null (no attention), trace}."""
        trace = _stored_trace(explorer, run_id, evaluation_id, position, paradigm,
                              trace_json)
        attributed = explorer.ablation(trace)
        step = reading_step(attributed)
        found = step.ablation
        agreed = agreement(step.attention, found) if step.attention is not None else None
        return json.dumps({"ablation": {**asdict(found), "effects": found.effects,
                                        "changed": found.changed, "most": found.most},
                           "agreement": asdict(agreed) if agreed else None,
                           "trace": attributed.to_dict()})

    def list_runs() -> str:
        """Saved runs, newest first, as a JSON list of {id, name, paradigm, question, ...}."""
        return json.dumps([vars(r) for r in explorer.saved_runs()])

    def load_run(run_id: int) -> str:
        """The saved trace JSON of run `run_id`, exactly as saved."""
        return explorer.load_run(run_id).to_json()

    def status() -> dict:
        """Preparation progress: {"ready": {paradigm: bool}, "tasks": [line, ...]}."""
        return {"ready": {p: explorer.ready(p) for p in PARADIGMS},
                "tasks": explorer.status()}

    _endpoint(run, "trace_json", TRACE)
    _endpoint(save_run, "run_id", "the saved run's id, which load_run takes")
    _endpoint(reanswer, "trace_json", TRACE + "; its 'reanswer' stage records what changed")
    _endpoint(ablation, "ablation_json", "JSON text: {ablation, agreement, trace}: what "
              "leaving each passage read out does to the answer, how attention ranks them "
              "against it, and the trace with the ablation on its reader step")
    _endpoint(list_runs, "runs_json", "JSON text: the saved runs, newest first, as a list of "
              "{id, name, notes, created, paradigm, question, answer, reader_tokens, seconds, "
              "metrics, corpus, corpus_fingerprint}")
    _endpoint(load_run, "trace_json", "JSON text: the saved run's trace, exactly as saved")
    _endpoint(status, "status", 'a JSON object: {"ready": {paradigm: true when it answers '
              'with everything it needs}, "tasks": [one line per background task]}')


def _annotation_api(explorer: Explorer) -> None:
    """Named endpoints for labelling and retraining the selection classifier."""
    def annotate_label(question: str, d1_id: str, d2_id: str, label: int,
                       annotator: str = "", question_id: str = "", corpus: str = "") -> str:
        """Store label 1 or 0 for documents (d1, d2) of `question` (of `corpus`; empty: the
        start-up one); returns the stored label."""
        stored = explorer.add_label(question, d1_id, d2_id, label, annotator=annotator,
                                    question_id=question_id, corpus=corpus)
        return json.dumps({**stored.record(), "id": stored.id})

    def list_labels() -> str:
        """Every stored label, newest first, as a JSON list (what an export holds, with ids)."""
        return json.dumps([{**x.record(), "id": x.id} for x in explorer.labels()])

    def annotate_pairs(trace_json: str) -> str:
        """The classifier's judged pairs of a drrag trace (as `run` returns), in labelling
        order, as a JSON list."""
        try:
            trace = RunTrace.from_json(trace_json)
            return json.dumps([vars(p) for p in explorer.judged_pairs(trace)])
        except (ValueError, TypeError, KeyError) as err:
            raise refused(f"trace_json is not a run trace ({err}); pass what `run` "
                          "returned.") from None

    def retrain() -> str:
        """Start retraining on the training pairs plus the labels; returns classifier_status."""
        return _status_json(explorer.retrain_classifier())

    def classifier_status() -> str:
        """The active version, every version's held-out figures, the retrain's progress."""
        return _status_json(explorer.classifier_status())

    def activate_classifier(version: str) -> str:
        """Make `version` (an id from classifier_status) the active classifier."""
        return _status_json(explorer.activate_classifier(version))

    _endpoint(annotate_label, "label_json", "JSON text: the stored label {id, question, "
              "question_id, d1_id, d1_title, d1_text, d2_id, ..., label, source, annotator, "
              "created}")
    _endpoint(list_labels, "labels_json", "JSON text: every stored label, newest first")
    _endpoint(annotate_pairs, "pairs_json", "JSON text: the classifier's judged pairs in "
              "labelling order, each {d1_id, d1_title, d1_text, d2_id, ..., probability, "
              "threshold, kept, gold, label}")
    for fn in (retrain, classifier_status, activate_classifier):
        _endpoint(fn, "classifier_json", CLASSIFIER)


def _evaluation_api(explorer: Explorer) -> None:
    """Named endpoints for evaluations: start, follow, list, load, export."""

    def evaluate(dataset: str, paradigms: str, configs_json: str = "", limit: int = 0,
                 sample: int = 0, seed: int = 0, name: str = "", build: bool = False,
                 ray: str = "", corpus: str = "") -> int:
        """Start evaluating `dataset` (a listed dataset by the name the app shows and
        list_evaluations stores, such as "HotpotQA dev500", or a QA file on the server)
        through comma-separated `paradigms`, with per-paradigm configs as JSON
        ({"funnel": {"K": 5}}); the first `limit` questions or a seeded
        `sample` (0: every question). A config that needs a long index build is refused
        with what and how long, unless `build` is true. With a `ray` address ("local":
        two workers here) the questions run as Ray tasks. `corpus` names the corpus searched
        (empty: the one the app started with). Returns the evaluation id."""
        configs = parse_config(configs_json)
        names = [p.strip() for p in str(paradigms or "").split(",") if p.strip()]
        return explorer.evaluate(dataset, names, configs, limit=int(limit),
                                 sample=int(sample), seed=int(seed), name=name,
                                 build=bool(build), ray=ray or "",
                                 corpus=corpus or "")

    def evaluation_status(evaluation_id: int) -> str:
        """{id, state, done, total, seconds, seconds_left, error, means, partial} as JSON
        (partial: it ended before every question ran; its means are of those stored)."""
        return json.dumps(explorer.evaluation_status(evaluation_id))

    def resume_evaluation(evaluation_id: int) -> int:
        """Go on with a stored evaluation that ended before every question ran
        (interrupted by a crash or a kill, cancelled, or failed): the questions it lacks,
        through the same paradigms and configs, over the corpus it searched (refused with
        the reason if that corpus changed, or it was imported). Returns its id; follow it
        with evaluation_status."""
        return explorer.resume_evaluation(int(evaluation_id), build=True)

    def remove_evaluation(evaluation_id: int) -> str:
        """Delete a stored evaluation and every run of it (one running here is refused:
        cancel it first). Returns {"removed": its id}."""
        explorer.remove_evaluation(int(evaluation_id))
        return json.dumps({"removed": int(evaluation_id)})

    def list_evaluations() -> str:
        """Stored evaluations, newest first, as a JSON list."""
        return json.dumps([vars(e) for e in explorer.evaluations()])

    def load_evaluation(evaluation_id: int) -> str:
        """A stored evaluation: its description, summary and per-question rows, as JSON."""
        stored = explorer.evaluation(evaluation_id)
        return json.dumps({**vars(stored),
                           "rows": explorer.evaluation_rows(evaluation_id)})

    def export_evaluation(evaluation_id: int, fmt: str = "ragas") -> str:
        """Every run of an evaluation as ragas JSONL, RAGChecker JSON or FlashRAG JSONL."""
        return explorer.export_evaluation(evaluation_id, fmt)

    def export_evaluation_files(evaluation_id: int, fmt: str = "ragas") -> str:
        """Every run of an evaluation as the files a tool reads, as Evaluate's download
        holds them: ragas (a file per paradigm, rows without gold after the rest), trec
        (qrels.txt and a run file per paradigm and stage), ragchecker or flashrag.
        Returns {"files": {name: text}, "note"}."""
        files, note = explorer.export_evaluation_files(evaluation_id, fmt)
        return json.dumps({"files": files, "note": note})

    def import_traces(file: dict, dataset: str = "", label: str = "") -> str:
        """Store an uploaded trace file of a pipeline traced with OpenInference
        (handle_file of OTLP/JSON or of Phoenix's spans as JSON): with `dataset` (a listed
        one, or a QA file on the server) as an evaluation measured against its gold, one
        paradigm per pipeline the file holds (its service.name), without as saved runs.
        `label` names one pipeline, or prefixes several ("LABEL: name"). Stored whole or
        not at all. Returns {"runs", "evaluation", "sessions", "paradigms"}."""
        path, original = _uploaded(file)
        imported = explorer.import_pipeline([(original, read_text(path))], dataset or "",
                                            label or "")
        return json.dumps({"runs": imported.runs, "evaluation": imported.evaluation,
                           "sessions": list(imported.sessions),
                           "paradigms": list(imported.paradigms)})

    _endpoint(evaluate, "evaluation_id", "the new evaluation's id; follow it with "
              "evaluation_status")
    _endpoint(evaluation_status, "status_json", "JSON text: {id, state, done, total, "
              "seconds, seconds_left, error, means, partial}")
    _endpoint(resume_evaluation, "evaluation_id", "the resumed evaluation's id; follow it "
              "with evaluation_status")
    _endpoint(remove_evaluation, "removed_json", 'JSON text: {"removed": the id}')
    _endpoint(list_evaluations, "evaluations_json", "JSON text: the stored evaluations, "
              "newest first, as a list of {id, name, dataset, questions, paradigms, configs, "
              "corpus, state, done, created, seconds, ...}")
    _endpoint(load_evaluation, "evaluation_json", "JSON text: the evaluation's description, "
              "summary per paradigm and one row per question and paradigm")
    _endpoint(export_evaluation, "export_text", "the export itself: ragas or FlashRAG "
              "JSONL, or RAGChecker JSON")
    _endpoint(export_evaluation_files, "export_json", 'JSON text: {"files": {name: text}, '
              '"note"}')
    _endpoint(import_traces, "imported_json", 'JSON text: {"runs", "evaluation": its id or '
              'null, "sessions": saved run ids, "paradigms": one per pipeline}')


def _diagnosis_api(explorer: Explorer) -> None:
    """Named endpoints that diagnose evaluations: attribution, ceilings, ceiling_table,
    coverage, ablation_agreement, paired, regressions, sweep."""

    def attribution(evaluation_id: int, track: str = "answer") -> str:
        """Per paradigm of an evaluation, where each question lost the gold `track`
        ("answer" or "support": all supporting documents) as JSON: {paradigm: {cuts,
        counts: {outcome: n}, questions: {outcome: [positions]}, traced, total}}."""
        return json.dumps(explorer.attribution(evaluation_id, track or "answer"))

    def ceilings(evaluation_id: int, paradigms: str = "", build: bool = False) -> int:
        """Start the ceiling evaluation of stored evaluation `evaluation_id`: each of its
        dataset questions' runs by `paradigms` (comma-separated; empty: all it ran) again
        with one cut made perfect (the gold supporting paragraphs first, added where the
        stage was not given them), for every cut, the later stages and the reader run as
        usual. Returns the new evaluation's id; follow it with evaluation_status and read
        it with ceiling_table."""
        names = [n.strip() for n in (paradigms or "").split(",") if n.strip()]
        try:
            return explorer.ceilings(int(evaluation_id), names or None, bool(build))
        except BuildNeeded as err:
            raise refused(f"{err} Over the API: pass build=True.") from None

    def ceiling_table(evaluation_id: int) -> str:
        """A ceiling evaluation (the id `ceilings` returned) against the evaluation it came
        from. JSON: {id, baseline, state, done, questions, paradigms: {paradigm: {actual:
        {AR@4, EM, F1, gold_doc_recall, runs}, cuts: [{label, means, differences: [{metric,
        a, b, diff, ci, p, p_holm, within_noise, n}]}], pays_most: {metric: label}}}}."""
        return json.dumps(explorer.ceiling_table(int(evaluation_id)))

    def coverage(evaluation_id: int) -> str:
        """An evaluation's questions and its corpus's passages in one 2-D map of their
        stored vectors (two principal components fitted on the questions and a sample of
        the passages), each question's cosine to its nearest passage, and the k-means groups
        of questions far from every passage with the passages nearest them. Cached per
        corpus and evaluation. JSON: {questions: [{position, question_id, question, x, y,
        cover, group, outcomes: {paradigm: outcome}, nearest}], passages: [{id, title, x,
        y}], groups: [{group, size, median_cover, far, positions, nearest}], far_below,
        fitted_on, explained}."""
        return json.dumps(explorer.coverage(int(evaluation_id)))

    def ablation_agreement(evaluation_id: int) -> str:
        """Per paradigm of an evaluation run with reader.ablation: how often attention's
        most attended passage is the one the answer depends on most (leave-one-out), the
        Spearman correlation of the two, how often leaving one passage out changes the
        answer, and the ablation's cost against the answer's. JSON: {paradigm: {runs,
        compared, same_top, spearman_mean, spearman_median, spearman_runs, answer_changes,
        passages, ablation_seconds, answer_seconds, cost_ratio, tokens_ratio}}; {} when no
        run has an ablation."""
        return json.dumps(explorer.ablation_agreement(evaluation_id))

    def paired(evaluation_id: int, a: str = "", b: str = "",
               other_evaluation_id: str = "") -> str:
        """A minus B per metric with a 95% paired-bootstrap interval (10,000 resamples,
        seed 0) and the exact McNemar p of binary metrics: paradigms `a` and `b` of one
        evaluation, or `a` of it against `b` of `other_evaluation_id` on the questions
        both answered. JSON: {a, b, shared, differences: [{metric, a, b, diff, ci, p,
        within_noise, n}]}."""
        return json.dumps(explorer.paired(evaluation_id, a or "", b or "",
                                          _other_id(other_evaluation_id)))

    def regressions(evaluation_id: int, a: str = "", b: str = "",
                    other_evaluation_id: str = "", metric: str = "EM") -> str:
        """The questions B improved, regressed or left as A had them on `metric` (EM, F1,
        AR@1..4, gold_doc_recall, nDCG@10, MRR or seconds; A and B as `paired` takes
        them), regressions first. JSON: {a, b, metric, counts: {improved, regressed,
        stayed right, stayed wrong, same}, questions: [{question_id, question, position_a,
        position_b, a, b, change}]}."""
        return json.dumps(explorer.regressions(evaluation_id, a or "", b or "",
                                               _other_id(other_evaluation_id),
                                               metric or "EM"))

    def sweep(paradigm: str, options_json: str, dataset: str, limit: int = 0,
              sample: int = 0, seed: int = 0, retrieval_only: bool = True,
              config_json: str = "", name: str = "", build: bool = False,
              corpus: str = "") -> int:
        """Start a sweep of `paradigm` over the grid of one or two numeric options
        (`options_json`: {"K": [5, 10], "N": [4, 8]}; at most 100 points; the rest of
        `config_json` fixed) on `dataset`'s (a listed dataset's name, such as "HotpotQA
        dev500", or a QA file on the server) first `limit` questions or a seeded `sample`,
        without the reader when `retrieval_only`. It is stored as an evaluation whose
        paradigms are the grid points ("funnel K=5 N=8"); follow it with
        `evaluation_status`. `corpus` names the corpus searched (empty: the start-up one).
        Returns its id."""
        return explorer.sweep(dataset, paradigm, parse_config(options_json),
                              parse_config(config_json), limit=int(limit),
                              sample=int(sample), seed=int(seed),
                              retrieval_only=bool(retrieval_only), name=name,
                              build=bool(build), corpus=corpus or "")

    _endpoint(attribution, "attribution_json", "JSON text: {paradigm: {cuts, counts: "
              "{outcome: n}, questions: {outcome: [positions]}, traced, total}}")
    _endpoint(coverage, "coverage_json", "JSON text: {questions: [{position, x, y, cover, "
              "outcomes, nearest}], passages: [{id, title, x, y}], groups: [{size, "
              "median_cover, far, positions, nearest}], far_below, fitted_on}")
    _endpoint(ceilings, "evaluation_id", "the ceiling evaluation's id; follow it with "
              "evaluation_status, read it with ceiling_table")
    _endpoint(ceiling_table, "ceilings_json", "JSON text: {id, baseline, state, paradigms: "
              "{paradigm: {actual, cuts: [{label, means, differences}], pays_most}}}")
    _endpoint(ablation_agreement, "agreement_json", "JSON text: {paradigm: {runs, "
              "same_top, spearman_mean, answer_changes, cost_ratio, ...}}")
    _endpoint(paired, "paired_json", "JSON text: {a, b, shared, differences: [{metric, a, "
              "b, diff, ci, p, within_noise, n}]}")
    _endpoint(regressions, "regressions_json", "JSON text: {a, b, metric, counts, "
              "questions: [{question_id, question, position_a, position_b, a, b, change}]}")
    _endpoint(sweep, "evaluation_id", "the sweep's evaluation id; follow it with "
              "evaluation_status")


def _corpora_api(explorer: Explorer) -> None:
    """Named endpoints: add_corpus, list_corpora, remove_corpus."""

    def add_corpus(file: dict, name: str) -> str:
        """Add corpus `name` from an uploaded file (gradio_client.handle_file of a JSONL /
        CSV / Parquet file with id,title,text[,links], a .zip of .txt/.md files or a QA
        file). Returns {"name", "status"} at once; it is read and prepared in the
        background (list_corpora shows how far), then /run takes its name."""
        path, original = _uploaded(file)
        added = explorer.add_corpus(name, path, upload=True, original=original)
        return json.dumps({"name": added, "status": "preparing"})

    def list_corpora() -> str:
        """Every corpus as a JSON list of {name, origin, status (ready, preparing, failed,
        not loaded), documents, fingerprint, built, disk_bytes, progress, error, answering
        (the paradigms that can answer over it now)}."""
        return json.dumps([asdict(row) for row in explorer.corpora()])

    def remove_corpus(name: str) -> str:
        """Remove an added corpus (not the start-up or a packaged one); returns its name."""
        explorer.remove_corpus(name)
        return json.dumps({"removed": name})

    _endpoint(add_corpus, "corpus_json", 'JSON text: {"name", "status": "preparing"}; '
              "list_corpora shows how far it is")
    _endpoint(list_corpora, "corpora_json", "JSON text: a list of {name, origin, status, "
              "documents, fingerprint, built, disk_bytes, progress, error, answering}")
    _endpoint(remove_corpus, "removed_json", 'JSON text: {"removed": name}')


TRACE = ("JSON text: the run's trace (question, paradigm, config, corpus, every stage with "
         "its candidates, scores and seconds, the LLM calls, the answer and its metrics); "
         "save_run, reanswer and annotate_pairs take it")
CLASSIFIER = ("JSON text: the active classifier version, every version's held-out figures "
              "and the retrain's progress")


def _endpoint(fn: Callable, returns: str, description: str) -> None:
    """Register `fn` as the endpoint /<its name>, its result named `returns` and described
    in view_api, an engine refusal (EngineError) raised as the gr.Error that names it
    (app.errors.raising_refusals, which keeps fn's signature and docstring for gr.api).
    gr.api names every result "1st" and, under postponed annotations, types it Any; the one
    result's component is labelled and typed here instead."""
    dependency = gr.api(raising_refusals(fn), api_name=fn.__name__)
    (output,) = (get_blocks_context().blocks[i] for i in dependency["outputs"])
    output.label = returns
    output._api_info = {**python_type_to_json_schema(get_type_hints(fn)["return"]),
                        "description": description}


def _other_id(other_evaluation_id: str) -> int | None:
    """The second evaluation's id of a pair ("" for none)."""
    other = str(other_evaluation_id or "").strip()
    if other and not other.isdigit():
        raise ConfigError(f"other_evaluation_id={other_evaluation_id!r} is not an "
                          "evaluation id; give a number from list_evaluations.")
    return int(other) if other else None


def _uploaded(file: dict) -> tuple[Path, str]:
    """(server path, original name) of a file a client uploaded; only Gradio's upload
    folder is accepted, so a request cannot name another file on the server."""
    from gradio.utils import get_upload_folder

    path = file.get("path") if isinstance(file, dict) else None
    if not isinstance(path, str) or not path:
        raise refused("file must be an uploaded file: pass handle_file('corpus.jsonl').")
    resolved = Path(path).resolve()
    if not resolved.is_relative_to(Path(get_upload_folder()).resolve()):
        raise refused(f"file {path!r} was not uploaded to this app; pass "
                      "handle_file('corpus.jsonl') so that the client uploads it.")
    return resolved, str(file.get("orig_name") or resolved.name)


def _stored_trace(explorer: Explorer, run_id: int, evaluation_id: int, position: int,
                  paradigm: str, trace_json: str) -> RunTrace:
    """The one run a request names: a saved run, an evaluation's run, or a trace."""
    named = [n for n, given in (("run_id", run_id), ("evaluation_id", evaluation_id),
                                ("trace_json", trace_json)) if given]
    if len(named) != 1:
        raise refused(f"Name one run: {' and '.join(named) or 'none'} given. Pass run_id (a "
                      "saved run), or evaluation_id with position and paradigm, or "
                      "trace_json (what `run` returned).")
    if run_id:
        return explorer.load_run(int(run_id))
    if evaluation_id:
        if int(position) < 0 or not paradigm:
            raise refused(f"evaluation_id={evaluation_id} names an evaluation; give the "
                          "run's question position (as its rows show it, from 0) and "
                          "paradigm too.")
        return explorer.evaluation_trace(int(evaluation_id), int(position), paradigm)
    return _trace(trace_json)


def _trace(trace_json: str) -> RunTrace:
    try:
        return RunTrace.from_json(trace_json)
    except (ValueError, TypeError, KeyError) as err:
        raise refused(f"trace_json is not a run trace ({err}); pass what `run` "
                      "returned.") from None


def _status_json(status: dict) -> str:
    versions = [{k: v for k, v in version.items() if k != "heldout_scores"}
                for version in status["versions"]]
    return json.dumps({**status, "versions": versions})
