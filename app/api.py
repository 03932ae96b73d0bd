"""The app's named API endpoints for gradio_client, over an Explorer.

Each endpoint converts strings and numbers to an Explorer call and its result to JSON; an
engine refusal becomes a gr.Error that names the bad value and the fix. The runs', labels'
and corpora's endpoints are here; the evaluations' and their diagnosis's are in
app.api_evaluations, judging's in app.api_judging, and what every endpoint shares
(`endpoint`, `uploaded`) in app.endpoints.
"""

from __future__ import annotations

import json

from app.api_evaluations import diagnosis_api, evaluation_api
from app.api_judging import judging_api
from app.api_nuggets import nuggets_api
from app.api_tuning import tuning_api
from app.endpoints import endpoint, uploaded
from app.errors import refused
from engine.paradigms.registry import DEFAULT, PARADIGMS
from engine.readers.ablation import agreement, reading_step
from engine.results import plain
from engine.service.annotation import ClassifierStatus
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.trace import RunTrace


def register(explorer: Explorer) -> None:
    """Every named endpoint over `explorer` (call inside the app's Blocks)."""
    _runs_api(explorer)
    _annotation_api(explorer)
    evaluation_api(explorer)
    diagnosis_api(explorer)
    tuning_api(explorer)
    _corpora_api(explorer)
    judging_api(explorer)
    nuggets_api(explorer)
    _people_api(explorer)


def _runs_api(explorer: Explorer) -> None:
    """Named endpoints for gradio_client: run, save_run, reanswer, ablation, list_runs,
    load_run, status."""

    def run(question: str, paradigm: str = DEFAULT, config_json: str = "",
            corpus: str = "", build: bool = False, preset: str = "") -> str:
        """Run `question` through `paradigm` (config as JSON) over `corpus` (a name from
        list_corpora; empty: the corpus the app started with); returns the trace JSON. A
        config needing an index the app has not built (another passage_tokens: a new
        dense index) that takes long here is refused, naming it and its estimate, unless
        `build` is true: the run then builds it first and waits for it. With `preset` (a
        name list_presets gives), that preset's paradigm and options run instead (those of
        `config_json` over them); the trace's "preset" names it."""
        try:
            return explorer.runs.run(question, paradigm, config_json, corpus, bool(build),
                                     preset or "").to_json()
        except BuildNeeded as err:
            raise refused(f"{err} Over the API: pass build=True (the fifth argument of "
                          "/run) to build it within this request.") from None

    def save_run(trace_json: str, name: str = "", notes: str = "") -> int:
        """Save a trace (as returned by `run`); returns the new run id."""
        trace = _trace(trace_json)
        return explorer.runs.save_run(trace, name, notes)

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
        return explorer.runs.reanswer(trace, ids, bool(oracle)).to_json()

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
        attributed = explorer.runs.ablation(trace)
        step = reading_step(attributed)
        found = step.ablation
        agreed = agreement(step.attention, found) if step.attention is not None else None
        return json.dumps({"ablation": {**plain(found), "effects": found.effects,
                                        "changed": found.changed, "most": found.most},
                           "agreement": plain(agreed) if agreed else None,
                           "trace": attributed.to_dict()})

    def list_runs() -> str:
        """Saved runs, newest first, as a JSON list of {id, name, paradigm, question, ...}."""
        return json.dumps([vars(r) for r in explorer.runs.saved_runs()])

    def load_run(run_id: int) -> str:
        """The saved trace JSON of run `run_id`, exactly as saved."""
        return explorer.runs.load_run(run_id).to_json()

    def status() -> dict:
        """Preparation progress: {"ready": {paradigm: bool}, "tasks": [line, ...]}."""
        return {"ready": {p: explorer.catalog.ready(p) for p in PARADIGMS},
                "tasks": explorer.catalog.status()}

    endpoint(run, "trace_json", TRACE)
    endpoint(save_run, "run_id", "the saved run's id, which load_run takes")
    endpoint(reanswer, "trace_json", TRACE + "; its 'reanswer' stage records what changed")
    endpoint(ablation, "ablation_json", "JSON text: {ablation, agreement, trace}: what "
             "leaving each passage read out does to the answer, how attention ranks them "
             "against it, and the trace with the ablation on its reader step")
    endpoint(list_runs, "runs_json", "JSON text: the saved runs, newest first, as a list of "
             "{id, name, notes, created, paradigm, question, answer, reader_tokens, seconds, "
             "metrics, corpus, corpus_fingerprint, owner: who saved it}")
    endpoint(load_run, "trace_json", "JSON text: the saved run's trace, exactly as saved")
    endpoint(status, "status", 'a JSON object: {"ready": {paradigm: true when it answers '
             'with everything it needs}, "tasks": [one line per background task]}')


def _annotation_api(explorer: Explorer) -> None:
    """Named endpoints for labelling and retraining the selection classifier."""
    def annotate_label(question: str, d1_id: str, d2_id: str, label: int,
                       annotator: str = "", question_id: str = "", corpus: str = "") -> str:
        """Store label 1 or 0 for documents (d1, d2) of `question` (of `corpus`; empty: the
        start-up one); returns the stored label."""
        stored = explorer.annotation.add_label(question, d1_id, d2_id, label, annotator=annotator,
                                               question_id=question_id, corpus=corpus)
        return json.dumps({**stored.record(), "id": stored.id})

    def list_labels() -> str:
        """Every stored label, newest first, as a JSON list (what an export holds, with ids)."""
        return json.dumps([{**x.record(), "id": x.id} for x in explorer.annotation.labels()])

    def annotate_pairs(trace_json: str) -> str:
        """The classifier's judged pairs of a drrag trace (as `run` returns), in labelling
        order, as a JSON list."""
        try:
            trace = RunTrace.from_json(trace_json)
            return json.dumps([vars(p) for p in explorer.annotation.judged_pairs(trace)])
        except (ValueError, TypeError, KeyError) as err:
            raise refused(f"trace_json is not a run trace ({err}); pass what `run` "
                          "returned.") from None

    def retrain() -> str:
        """Start retraining on the training pairs plus the labels; returns classifier_status."""
        return _status_json(explorer.annotation.retrain_classifier())

    def classifier_status() -> str:
        """The active version, every version's held-out figures, the retrain's progress."""
        return _status_json(explorer.annotation.classifier_status())

    def activate_classifier(version: str) -> str:
        """Make `version` (an id from classifier_status) the active classifier."""
        return _status_json(explorer.annotation.activate_classifier(version))

    endpoint(annotate_label, "label_json", "JSON text: the stored label {id, question, "
             "question_id, d1_id, d1_title, d1_text, d2_id, ..., label, source, annotator, "
             "created}")
    endpoint(list_labels, "labels_json", "JSON text: every stored label, newest first")
    endpoint(annotate_pairs, "pairs_json", "JSON text: the classifier's judged pairs in "
             "labelling order, each {d1_id, d1_title, d1_text, d2_id, ..., probability, "
             "threshold, kept, gold, label}")
    for fn in (retrain, classifier_status, activate_classifier):
        endpoint(fn, "classifier_json", CLASSIFIER)


def _corpora_api(explorer: Explorer) -> None:
    """Named endpoints: add_corpus, list_corpora, remove_corpus."""

    def add_corpus(file: dict, name: str, drop_unknown: bool = False) -> str:
        """Add corpus `name` from an uploaded file (gradio_client.handle_file of a JSONL /
        CSV / Parquet file with id,title,text[,links], a .zip of .txt/.md files, a QA
        file, or a test collection's BEIR .zip). Returns {"name", "status"} at once; it is
        read and prepared in the background (list_corpora shows how far), then /run takes
        its name. A collection's splits are datasets from then on ("name (test)": /evaluate
        takes them); `drop_unknown` leaves out its judgments of documents its corpus lacks
        instead of refusing it."""
        path, original = uploaded(file)
        added = explorer.catalog.add_corpus(name, path, upload=True, original=original,
                                            drop_unknown=bool(drop_unknown))
        return json.dumps({"name": added, "status": "preparing"})

    def list_corpora() -> str:
        """Every corpus as a JSON list of {name, origin, status (ready, preparing, failed,
        not loaded), documents, fingerprint, built, disk_bytes, progress, error, answering
        (the paradigms that can answer over it now), served_by, judged (a test
        collection's splits)}."""
        return json.dumps([plain(row) for row in explorer.catalog.corpora()])

    def remove_corpus(name: str) -> str:
        """Remove an added corpus (not the start-up or a packaged one); returns its name."""
        explorer.catalog.remove_corpus(name)
        return json.dumps({"removed": name})

    endpoint(add_corpus, "corpus_json", 'JSON text: {"name", "status": "preparing"}; '
             "list_corpora shows how far it is")
    endpoint(list_corpora, "corpora_json", "JSON text: a list of {name, origin, status, "
             "documents, fingerprint, built, disk_bytes, progress, error, answering}")
    endpoint(remove_corpus, "removed_json", 'JSON text: {"removed": name}')


TRACE = ("JSON text: the run's trace (question, paradigm, config, corpus, every stage with "
         "its candidates, scores and seconds, the LLM calls, the answer and its metrics); "
         "save_run, reanswer and annotate_pairs take it")
CLASSIFIER = ("JSON text: the active classifier version, every version's held-out figures "
              "and the retrain's progress")


def _people_api(explorer: Explorer) -> None:
    """Named endpoints about the people who use the app and what they keep: their labels'
    agreement, the audit log, the named presets."""

    def label_agreement() -> str:
        """Every two annotators who labelled a pair in common: [{first, second, pairs,
        exact, kappa}]."""
        return json.dumps([{"first": a, "second": b, "pairs": found.pairs,
                            "exact": found.exact, "kappa": found.kappa}
                           for a, b, found in explorer.annotation.label_agreement()])

    def audit_log(limit: int = 200, user: str = "") -> str:
        """The latest admin actions and refusals (of `user` only, if given), newest first:
        an admin's to read."""
        return json.dumps(plain(explorer.audit_log(int(limit), user or "")))

    endpoint(label_agreement, "agreement_json", "JSON text: a list of {first, second, pairs, "
             "exact, kappa}: Cohen's kappa of every two annotators on the pairs both "
             "labelled")
    def list_presets() -> str:
        """Every named preset: [{name, paradigm, config, source, notes, created}]."""
        return json.dumps([p.record() for p in explorer.presets.list_presets()])

    def save_preset(name: str, paradigm: str, config_json: str = "", notes: str = "",
                    replace: bool = False) -> str:
        """Save `paradigm` with its options (JSON) as preset `name` (checked as a run
        checks them), run by name from then on (/run's `preset`, Explore, `ask --preset`);
        a name taken is replaced only with `replace`, by its owner or an admin."""
        saved = explorer.presets.save_preset(name, paradigm, config_json or "",
                                             source="api", notes=notes or "",
                                             replace=bool(replace))
        return json.dumps(saved.record())

    endpoint(list_presets, "presets_json", "JSON text: a list of {name, paradigm, config, "
             "source, notes, created}")
    endpoint(save_preset, "preset_json", "JSON text: the saved preset {name, paradigm, "
             "config, source, notes, created}")
    endpoint(audit_log, "audit_json", "JSON text: a list of {id, happened, username, role, "
             "action, allowed, detail}, newest first")


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
        return explorer.runs.load_run(int(run_id))
    if evaluation_id:
        if int(position) < 0 or not paradigm:
            raise refused(f"evaluation_id={evaluation_id} names an evaluation; give the "
                          "run's question position (as its rows show it, from 0) and "
                          "paradigm too.")
        return explorer.evaluations.evaluation_trace(int(evaluation_id), int(position), paradigm)
    return _trace(trace_json)


def _trace(trace_json: str) -> RunTrace:
    try:
        return RunTrace.from_json(trace_json)
    except (ValueError, TypeError, KeyError) as err:
        raise refused(f"trace_json is not a run trace ({err}); pass what `run` "
                      "returned.") from None


def _status_json(status: ClassifierStatus) -> str:
    versions = [{k: v for k, v in version.items() if k != "heldout_scores"}
                for version in status.versions]
    return json.dumps({**plain(status), "versions": versions})
