"""The app's named API endpoints for evaluations and their diagnosis (app.api registers
them with the others): evaluate, follow, resume, remove, list, load, export and import
evaluations; attribution, ceilings, the coverage map, attention against leave-one-out,
paired differences, regressions and sweeps. Each converts strings and numbers to an
Explorer call and its result to JSON; an engine refusal becomes a gr.Error that names the
bad value and the fix.
"""

from __future__ import annotations

import json

from app.endpoints import endpoint, uploaded
from app.errors import refused
from engine.data.loaders.jsonio import read_text
from engine.errors import ConfigError
from engine.paradigms.registry import parse_config
from engine.results import plain
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded


def evaluation_api(explorer: Explorer) -> None:
    """Named endpoints for evaluations: start, follow, list, load, export."""

    def evaluate(dataset: str, paradigms: str, configs_json: str = "", limit: int = 0,
                 sample: int = 0, seed: int = 0, name: str = "", build: bool = False,
                 ray: str = "", corpus: str = "") -> int:
        """Start evaluating `dataset` (a listed dataset by the name the app shows and
        list_evaluations stores, such as "HotpotQA dev500", or a QA file on the server under
        the folder the app reads from, --corpus-root)
        through comma-separated `paradigms`, with per-paradigm configs as JSON
        ({"funnel": {"K": 5}}); the first `limit` questions or a seeded
        `sample` (0: every question). A config that needs a long index build is refused
        with what and how long, unless `build` is true. With a `ray` address ("local":
        two workers here) the questions run as Ray tasks. `corpus` names the corpus searched
        (empty: the one the app started with). Returns the evaluation id."""
        configs = parse_config(configs_json)
        names = [p.strip() for p in str(paradigms or "").split(",") if p.strip()]
        return explorer.evaluations.evaluate(dataset, names, configs, limit=int(limit),
                                             sample=int(sample), seed=int(seed), name=name,
                                             build=bool(build), ray=ray or "",
                                             corpus=corpus or "")

    def evaluation_status(evaluation_id: int) -> str:
        """{id, state, done, total, seconds, seconds_left, error, means, partial} as JSON
        (partial: it ended before every question ran; its means are of those stored)."""
        return json.dumps(plain(explorer.evaluations.evaluation_status(evaluation_id)))

    def resume_evaluation(evaluation_id: int) -> int:
        """Go on with a stored evaluation that ended before every question ran
        (interrupted by a crash or a kill, cancelled, or failed): the questions it lacks,
        through the same paradigms and configs, over the corpus it searched (refused with
        the reason if that corpus changed, or it was imported). Returns its id; follow it
        with evaluation_status."""
        return explorer.evaluations.resume_evaluation(int(evaluation_id), build=True)

    def remove_evaluation(evaluation_id: int) -> str:
        """Delete a stored evaluation and every run of it (one running here is refused:
        cancel it first). Returns {"removed": its id}."""
        explorer.evaluations.remove_evaluation(int(evaluation_id))
        return json.dumps({"removed": int(evaluation_id)})

    def list_evaluations() -> str:
        """Stored evaluations, newest first, as a JSON list."""
        return json.dumps([vars(e) for e in explorer.evaluations.list_evaluations()])

    def load_evaluation(evaluation_id: int) -> str:
        """A stored evaluation: its description, summary and per-question rows, as JSON."""
        stored = explorer.evaluations.evaluation(evaluation_id)
        return json.dumps({**vars(stored),
                           "rows": explorer.evaluations.evaluation_rows(evaluation_id)})

    def export_evaluation(evaluation_id: int, fmt: str = "ragas") -> str:
        """Every run of an evaluation as ragas JSONL, RAGChecker JSON or FlashRAG JSONL."""
        return explorer.evaluations.export_evaluation(evaluation_id, fmt)

    def export_evaluation_files(evaluation_id: int, fmt: str = "ragas") -> str:
        """Every run of an evaluation as the files a tool reads, as Evaluate's download
        holds them: ragas (a file per paradigm, rows without gold after the rest), trec
        (qrels.txt and a run file per paradigm and stage), ragchecker or flashrag.
        Returns {"files": {name: text}, "note"}."""
        files, note = explorer.evaluations.export_evaluation_files(evaluation_id, fmt)
        return json.dumps({"files": files, "note": note})

    def import_traces(file: dict, dataset: str = "", label: str = "") -> str:
        """Store an uploaded trace file of a pipeline traced with OpenInference
        (handle_file of OTLP/JSON or of Phoenix's spans as JSON): with `dataset` (a listed
        one, or a QA file on the server) as an evaluation measured against its gold, one
        paradigm per pipeline the file holds (its service.name), without as saved runs.
        `label` names one pipeline, or prefixes several ("LABEL: name"). Stored whole or
        not at all. Returns {"runs", "evaluation", "sessions", "paradigms"}."""
        path, original = uploaded(file)
        imported = explorer.runs.import_pipeline([(original, read_text(path))], dataset or "",
                                                 label or "")
        return json.dumps({"runs": imported.runs, "evaluation": imported.evaluation,
                           "sessions": list(imported.sessions),
                           "paradigms": list(imported.paradigms)})

    endpoint(evaluate, "evaluation_id", "the new evaluation's id; follow it with "
             "evaluation_status")
    endpoint(evaluation_status, "status_json", "JSON text: {id, state, done, total, "
             "seconds, seconds_left, error, means, partial}")
    endpoint(resume_evaluation, "evaluation_id", "the resumed evaluation's id; follow it "
             "with evaluation_status")
    endpoint(remove_evaluation, "removed_json", 'JSON text: {"removed": the id}')
    endpoint(list_evaluations, "evaluations_json", "JSON text: the stored evaluations, "
             "newest first, as a list of {id, name, dataset, questions, paradigms, configs, "
             "corpus, state, done, created, seconds, ...}")
    endpoint(load_evaluation, "evaluation_json", "JSON text: the evaluation's description, "
             "summary per paradigm and one row per question and paradigm")
    endpoint(export_evaluation, "export_text", "the export itself: ragas or FlashRAG "
             "JSONL, or RAGChecker JSON")
    endpoint(export_evaluation_files, "export_json", 'JSON text: {"files": {name: text}, '
             '"note"}')
    endpoint(import_traces, "imported_json", 'JSON text: {"runs", "evaluation": its id or '
             'null, "sessions": saved run ids, "paradigms": one per pipeline}')


def diagnosis_api(explorer: Explorer) -> None:
    """Named endpoints that diagnose evaluations: attribution, ceilings, ceiling_table,
    coverage, ablation_agreement, paired, regressions, sweep."""

    def attribution(evaluation_id: int, track: str = "answer") -> str:
        """Per paradigm of an evaluation, where each question lost the gold `track`
        ("answer" or "support": all supporting documents) as JSON: {paradigm: {cuts,
        counts: {outcome: n}, questions: {outcome: [positions]}, traced, total}}."""
        return json.dumps(plain(explorer.diagnoses.attribution(evaluation_id, track or "answer")))

    def ceilings(evaluation_id: int, paradigms: str = "", build: bool = False) -> int:
        """Start the ceiling evaluation of stored evaluation `evaluation_id`: each of its
        dataset questions' runs by `paradigms` (comma-separated; empty: all it ran) again
        with one cut made perfect (the gold supporting paragraphs first, added where the
        stage was not given them), for every cut, the later stages and the reader run as
        usual. Returns the new evaluation's id; follow it with evaluation_status and read
        it with ceiling_table."""
        names = [n.strip() for n in (paradigms or "").split(",") if n.strip()]
        try:
            return explorer.evaluations.ceilings(int(evaluation_id), names or None, bool(build))
        except BuildNeeded as err:
            raise refused(f"{err} Over the API: pass build=True.") from None

    def ceiling_table(evaluation_id: int) -> str:
        """A ceiling evaluation (the id `ceilings` returned) against the evaluation it came
        from. JSON: {id, baseline, state, done, questions, paradigms: {paradigm: {actual:
        {AR@4, EM, F1, gold_doc_recall, runs}, cuts: [{label, means, differences: [{metric,
        a, b, diff, ci, p, p_holm, within_noise, n}]}], pays_most: {metric: label}}}}."""
        return json.dumps(plain(explorer.diagnoses.ceiling_table(int(evaluation_id))))

    def coverage(evaluation_id: int) -> str:
        """An evaluation's questions and its corpus's passages in one 2-D map of their
        stored vectors (two principal components fitted on the questions and a sample of
        the passages), each question's cosine to its nearest passage, and the k-means groups
        of questions far from every passage with the passages nearest them. Cached per
        corpus and evaluation. JSON: {questions: [{position, question_id, question, x, y,
        cover, group, outcomes: {paradigm: outcome}, nearest}], passages: [{id, title, x,
        y}], groups: [{group, size, median_cover, far, positions, nearest}], far_below,
        fitted_on, explained}."""
        return json.dumps(plain(explorer.diagnoses.coverage(int(evaluation_id))))

    def ablation_agreement(evaluation_id: int) -> str:
        """Per paradigm of an evaluation run with reader.ablation: how often attention's
        most attended passage is the one the answer depends on most (leave-one-out), the
        Spearman correlation of the two, how often leaving one passage out changes the
        answer, and the ablation's cost against the answer's. JSON: {paradigm: {runs,
        compared, same_top, spearman_mean, spearman_median, spearman_runs, answer_changes,
        passages, ablation_seconds, answer_seconds, cost_ratio, tokens_ratio}}; {} when no
        run has an ablation."""
        return json.dumps(plain(explorer.diagnoses.ablation_agreement(evaluation_id)))

    def paired(evaluation_id: int, a: str = "", b: str = "",
               other_evaluation_id: str = "") -> str:
        """A minus B per metric with a 95% paired-bootstrap interval (10,000 resamples,
        seed 0) and the exact McNemar p of binary metrics: paradigms `a` and `b` of one
        evaluation, or `a` of it against `b` of `other_evaluation_id` on the questions
        both ran. JSON: {a, b, shared, differences: [{metric, a, b, diff, ci, p,
        within_noise, n}]}."""
        return json.dumps(plain(explorer.diagnoses.paired(evaluation_id, a or "", b or "",
                                                          _other_id(other_evaluation_id))))

    def regressions(evaluation_id: int, a: str = "", b: str = "",
                    other_evaluation_id: str = "", metric: str = "EM") -> str:
        """The questions B improved, regressed or left as A had them on `metric` (EM, F1,
        AR@1..4, gold_doc_recall, nDCG@10, MRR or seconds; A and B as `paired` takes
        them), regressions first. JSON: {a, b, metric, counts: {improved, regressed,
        stayed right, stayed wrong, same}, questions: [{question_id, question, position_a,
        position_b, a, b, change}]}."""
        return json.dumps(plain(explorer.diagnoses.regressions(evaluation_id, a or "", b or "",
                                                               _other_id(other_evaluation_id),
                                                               metric or "EM")))

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
        return explorer.evaluations.sweep(dataset, paradigm, parse_config(options_json),
                                          parse_config(config_json), limit=int(limit),
                                          sample=int(sample), seed=int(seed),
                                          retrieval_only=bool(retrieval_only), name=name,
                                          build=bool(build), corpus=corpus or "")

    endpoint(attribution, "attribution_json", "JSON text: {paradigm: {cuts, counts: "
             "{outcome: n}, questions: {outcome: [positions]}, traced, total}}")
    endpoint(coverage, "coverage_json", "JSON text: {questions: [{position, x, y, cover, "
             "outcomes, nearest}], passages: [{id, title, x, y}], groups: [{size, "
             "median_cover, far, positions, nearest}], far_below, fitted_on}")
    endpoint(ceilings, "evaluation_id", "the ceiling evaluation's id; follow it with "
             "evaluation_status, read it with ceiling_table")
    endpoint(ceiling_table, "ceilings_json", "JSON text: {id, baseline, state, paradigms: "
             "{paradigm: {actual, cuts: [{label, means, differences}], pays_most}}}")
    endpoint(ablation_agreement, "agreement_json", "JSON text: {paradigm: {runs, "
             "same_top, spearman_mean, answer_changes, cost_ratio, ...}}")
    endpoint(paired, "paired_json", "JSON text: {a, b, shared, differences: [{metric, a, "
             "b, diff, ci, p, within_noise, n}]}")
    endpoint(regressions, "regressions_json", "JSON text: {a, b, metric, counts, "
             "questions: [{question_id, question, position_a, position_b, a, b, change}]}")
    endpoint(sweep, "evaluation_id", "the sweep's evaluation id; follow it with "
             "evaluation_status")


def _other_id(other_evaluation_id: str) -> int | None:
    """The second evaluation's id of a pair ("" for none)."""
    other = str(other_evaluation_id or "").strip()
    if other and not other.isdigit():
        raise ConfigError(f"other_evaluation_id={other_evaluation_id!r} is not an "
                          "evaluation id; give a number from list_evaluations.")
    return int(other) if other else None
