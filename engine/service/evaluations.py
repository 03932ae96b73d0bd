"""Evaluations as the app starts and reads them: a QA file's questions through paradigms
(`evaluate`), a sweep over a grid of options (`sweep`), each stage's ceiling (`ceilings`),
one that ended early run on (`resume_evaluation`), and the stored ones listed, read,
removed and exported. The Explorer (engine.service.explorer) hands the app's calls here;
each runs in the background as an engine.service.evaluation_jobs.EvaluationJob, one at a
time, and is stored as it goes (engine.store.evaluations). What Diagnose reads of them is
engine.service.diagnosis.Diagnoses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.data.collection_store import check_corpus, split_of
from engine.documents import Dataset, unanswered
from engine.errors import ConfigError
from engine.service.corpora import Corpora, check_searched
from engine.service.datasets import (
    dataset_file,
    dataset_label,
    dataset_of,
    listed_datasets,
    listed_path,
)
from engine.service.door import Door, guarded
from engine.service.evaluation_jobs import EvaluationJobs, EvaluationStatus
from engine.service.evaluation_request import EvaluationRequest
from engine.service.preparation import Preparation
from engine.service.readiness import check_ready
from engine.store.evaluations import IMPORTED, EvaluationStore, StoredEvaluation
from engine.store.presets import PresetStore
from engine.trace import RunTrace


@dataclass(frozen=True)
class EvaluationForm:
    """What started a stored evaluation, as Evaluate's form takes it: the `dataset` (its
    listed path; "" when it is no longer listed, as an upload), how its questions were
    chosen (`limit` first ones, or a `sample` drawn with `seed`), its `paradigms` and their
    `configs`, its `name` and the `corpus` it searched."""

    dataset: str
    limit: int
    sample: int
    seed: int
    paradigms: list
    configs: dict
    name: str
    corpus: str


def preparation_for(corpora: Corpora, corpus: str, dataset: str, chosen: Dataset,
                    shown: str = "") -> Preparation:
    """The preparation of what an evaluation (or a tuning search) of `chosen` (read from
    `dataset`) over `corpus` searches: the corpus plus its paragraphs the corpus lacks,
    named after a listed dataset, or after the file as the user named it (`shown`, an
    upload's name without "(uploaded)"), never after a path on the server. An added
    collection's split is searched over its own corpus (another is refused by name)."""
    split = split_of(dataset)
    if split is not None:  # an added collection's split: over its own corpus
        corpus = (corpus or "").strip() or split.corpus
        check_corpus(split.label, corpus)
    listed = listed_path(dataset) is not None
    label = dataset_label(dataset) if listed else (
        (shown or "").removesuffix(" (uploaded)").strip() or Path(dataset).name)
    path = dataset_file(dataset) if listed else Path(dataset)
    return corpora.for_dataset(corpus, chosen, label, str(path))


@guarded
class Evaluations:
    """Starts evaluations, sweeps and ceilings over prepared corpora; reads stored ones."""

    def __init__(self, store: EvaluationStore, jobs: EvaluationJobs, corpora: Corpora,
                 door: Door | None = None, presets: PresetStore | None = None) -> None:
        """`store` keeps the evaluations and their runs; `jobs` runs them in the
        background; `corpora` prepares the corpus each searches; `door` checks each
        method's role (engine.service.door) and names the user who starts one; `presets`,
        the named presets an evaluation may run beside the paradigms."""
        self._store, self._jobs, self._corpora = store, jobs, corpora
        self.door, self._presets = door or Door(), presets

    def _start(self, request: EvaluationRequest, preparation: Preparation, build: bool
               ) -> int:
        """Start `request` in the background, recorded as the acting user's; its id."""
        evaluation_id = self._jobs.start(request, preparation, build)
        owner = self.door.name()
        if owner:
            self._store.set_owner(evaluation_id, owner)
        return evaluation_id

    # --- starting -------------------------------------------------------------------------

    def evaluate(self, dataset: str, paradigms: list[str], configs: dict | None = None, *,
                 limit: int = 0, sample: int = 0, seed: int = 0, name: str = "",
                 build: bool = False, ray: str = "", dataset_name: str = "",
                 corpus: str = "") -> int:
        """Start evaluating `dataset` (a listed one, or a QA file) through `paradigms` over
        `corpus` (empty: the start-up one) plus the dataset's paragraphs it lacks (a corpus
        of its own, "wiki+HotpotQA dev500": the CLI's rule too), in the background; returns
        the evaluation's id. One runs at a time (two would share the same two cores).

        A config may need an index the app has not prepared (another passage size, say).
        Quick ones are prepared when the evaluation starts; one that takes longer than
        LONG_BUILD_SECONDS here is refused with `BuildNeeded` (which one, how long) unless
        `build` confirms it. With a `ray` address ("local": two workers on this machine)
        the questions run as Ray tasks (engine.eval.on_ray). `dataset_name` names the
        dataset in the stored evaluation (default: its label, or the file's path).
        """
        from engine import allowed

        ray = allowed.place("ray", ray, "ray", words=("local",))  # an allowed name's address
        chosen = dataset_of(dataset)
        preparation = preparation_for(self._corpora, corpus, dataset, chosen, dataset_name)
        kinds, configs = self._presets_among(paradigms, dict(configs or {}))
        for paradigm in paradigms:
            check_ready(self._corpora, kinds.get(paradigm, paradigm), preparation)
        # a collection's questions are judged, not answered: nothing for a reader to do
        judged_only = unanswered(chosen.questions)
        request = EvaluationRequest(dataset_name or dataset_label(dataset),
                                    chosen.questions, tuple(paradigms), configs, limit,
                                    sample, seed, name, ray=(ray or "").strip(),
                                    kinds=kinds, retrieval_only=judged_only)
        return self._start(request, preparation, build)

    def _presets_among(self, names: list[str], configs: dict) -> tuple[dict, dict]:
        """({preset: its paradigm}, configs with each preset's options (its own entry in
        `configs` over them)) of the names that are no paradigm but a stored preset."""
        from engine.paradigms.registry import PARADIGMS

        kinds = {}
        for name in names:
            if name in PARADIGMS or self._presets is None:
                continue
            preset = self._presets.find(name)
            if preset is None:
                continue  # an unknown name is refused as an unknown paradigm
            kinds[name] = preset.paradigm
            configs[name] = {**preset.config, **configs.get(name, {})}
        return kinds, configs

    def sweep(self, dataset: str, paradigm: str, options: dict, config: dict | None = None,
              *, limit: int = 0, sample: int = 0, seed: int = 0,
              retrieval_only: bool = True, name: str = "", build: bool = False,
              dataset_name: str = "", corpus: str = "") -> int:
        """Start a sweep of `paradigm` over the grid of `options` ({option: [values]}, one
        or two numeric options; the rest of `config` fixed) as an evaluation whose
        paradigms are the grid points (engine.eval.sweep); returns its id."""
        from engine.eval.sweep import grid

        chosen = dataset_of(dataset)
        preparation = preparation_for(self._corpora, corpus, dataset, chosen, dataset_name)
        check_ready(self._corpora, paradigm, preparation)
        points = grid(paradigm, options, config)
        request = EvaluationRequest(
            dataset_name or dataset_label(dataset), chosen.questions,
            tuple(p.label for p in points), {p.label: p.config for p in points}, limit,
            sample, seed, name or f"sweep of {paradigm}: {', '.join(options)}",
            kinds={p.label: paradigm for p in points}, retrieval_only=retrieval_only)
        return self._start(request, preparation, build)

    def ceilings(self, evaluation_id: int, paradigms: list[str] | None = None,
                 build: bool = False) -> int:
        """Start the ceiling evaluation of stored evaluation `evaluation_id`: each of its
        dataset questions' runs by `paradigms` (all of them by default) again with one cut
        made perfect, for every cut (engine.eval.ceilings); returns its id. Its runs reuse
        the stored ones' stages before the cut; `ceiling_table` pairs them with these."""
        from engine.eval.ceilings import cut_stages, label
        from engine.paradigms.registry import PARADIGMS

        source = self._store.get(evaluation_id)
        if source.baseline is not None:
            raise ConfigError(f"Evaluation {evaluation_id} holds ceilings already (of "
                              f"evaluation {source.baseline}); pick the evaluation they "
                              "came from.")
        if source.code_version == IMPORTED:
            raise ConfigError(f"Evaluation {evaluation_id} was imported: its pipeline is not "
                              "here to run again with a perfect stage.")
        names = list(paradigms or source.paradigms)
        ours = [n for n in names if n in source.paradigms and n in PARADIGMS]
        if ours != names:
            bad = next(n for n in names if n not in ours)
            raise ConfigError(f"{bad!r} is not a paradigm evaluation {evaluation_id} ran "
                              f"(it ran: {', '.join(source.paradigms)}; a sweep's grid "
                              "points have no ceilings).")
        preparation = self._corpora.preparation(source.corpus)
        for name in names:
            check_ready(self._corpora, name, preparation)
        check_searched({"name": source.corpus, "fingerprint": source.corpus_fingerprint},
                       preparation.corpus)
        rows = self._store.rows(evaluation_id)
        runs = list(zip(rows, self._store.traces(evaluation_id), strict=True))
        golds = {r["position"]: t.gold for r, t in runs if t.gold is not None}
        labels, configs, kinds, cuts = [], {}, {}, {}
        for name in names:
            sample = next((t for r, t in runs if r["paradigm"] == name and t.gold is not None
                           and cut_stages(t)), None)
            for n, i in enumerate(cut_stages(sample) if sample else [], start=1):
                labelled = label(name, n, sample.stages[i].name)
                labels.append(labelled)
                configs[labelled], kinds[labelled], cuts[labelled] = (
                    source.configs[name], name, n)
        if not labels:
            raise ConfigError(f"Evaluation {evaluation_id} has no run of a dataset question "
                              "with gold and a ranking stage, so no stage has a ceiling.")
        positions = sorted(golds)
        questions = tuple(golds[p] for p in positions)
        request = EvaluationRequest(
            source.dataset, questions, tuple(labels), configs,
            name=f"ceilings of evaluation {evaluation_id}", kinds=kinds,
            baseline=evaluation_id, cuts=cuts, positions=tuple(positions),
            retrieval_only=unanswered(questions))
        return self._start(request, preparation, build)

    def resume_evaluation(self, evaluation_id: int, build: bool = False) -> int:
        """Go on with a stored evaluation that ended before every question ran
        (interrupted, cancelled or failed): its questions not yet stored, through its
        paradigms and configs, over the corpus it searched (refused, with the reason, if
        that corpus changed or it was imported: engine.service.resume); returns its id."""
        from engine.service.resume import resumable_plan

        stored = self._store.get(evaluation_id)
        kinds = resumable_plan(self._store, stored).get("kinds") or {}  # before loading
        preparation = self._corpora.preparation(stored.corpus)
        for paradigm in dict.fromkeys(kinds.get(label, label) for label in stored.paradigms):
            check_ready(self._corpora, paradigm, preparation)
        return self._jobs.resume(evaluation_id, preparation, build)

    def wait_for_evaluation(self, evaluation_id: int, timeout: float | None = None) -> None:
        """Block until the evaluation started here ends (or `timeout` seconds pass)."""
        job = self._jobs.get(evaluation_id)
        if job is not None:
            job.wait(timeout)

    def evaluation_status(self, evaluation_id: int) -> EvaluationStatus:
        """A running evaluation's live status, or a stored one's as it ended (read from
        the store even when it ran in this process: a question set's evaluation is measured
        again there by the judgments given since)."""
        job = self._jobs.get(evaluation_id)
        if job is not None and job.state == "running":
            return job.status()
        stored = self._store.get(evaluation_id)
        means = stored.summary
        if not means and stored.done:  # ended without a summary (interrupted): its rows'
            from engine.eval.summary import summarise

            means = summarise(self._store.rows(stored.id))
        return EvaluationStatus(
            id=stored.id, state=stored.state, done=stored.done, total=stored.questions,
            seconds=stored.seconds, error=stored.error, means=means, corpus=stored.corpus,
            imported=stored.code_version == IMPORTED,
            partial=stored.state != "done" and stored.done < stored.questions)

    def cancel_evaluation(self, evaluation_id: int) -> None:
        self._jobs.cancel(evaluation_id)

    def remove_evaluation(self, evaluation_id: int) -> None:
        """Delete a stored evaluation and its runs (one running here is refused: cancel
        it first)."""
        job = self._jobs.get(evaluation_id)
        if job is not None and job.state == "running":
            raise ConfigError(f"Evaluation {evaluation_id} is running; cancel it first.")
        self._store.delete(evaluation_id)

    # --- stored ---------------------------------------------------------------------------

    def list_evaluations(self) -> list[StoredEvaluation]:
        """Stored evaluations, newest first."""
        return self._store.list()

    def evaluation(self, evaluation_id: int) -> StoredEvaluation:
        return self._store.get(evaluation_id)

    def evaluation_form(self, evaluation_id: int) -> EvaluationForm | None:
        """What started a stored evaluation, as Evaluate's form takes it; None for what no
        form starts (a sweep, a ceiling evaluation, an import)."""
        stored = self._store.get(evaluation_id)
        plan = self._store.plan(evaluation_id) or {}
        if stored.baseline is not None or plan.get("kinds") or stored.code_version == IMPORTED:
            return None
        positions = [int(p) for p, _ in plan.get("questions", [])]
        chosen = plan.get("chosen_by") or (  # an evaluation stored before it was kept
            {"limit": len(positions), "sample": 0, "seed": 0}
            if positions == list(range(len(positions))) else
            {"limit": 0, "sample": len(positions), "seed": 0})
        listed = {label: path for path, label in listed_datasets().items()}
        return EvaluationForm(dataset=listed.get(stored.dataset, ""), limit=chosen["limit"],
                              sample=chosen["sample"], seed=chosen["seed"],
                              paradigms=list(stored.paradigms), configs=stored.configs,
                              name=stored.name, corpus=stored.corpus)

    def evaluation_rows(self, evaluation_id: int) -> list[dict]:
        """One row per (question, paradigm) of a stored evaluation (engine.eval.summary.row)."""
        return self._store.rows(evaluation_id)

    def evaluation_trace(self, evaluation_id: int, position: int, paradigm: str) -> RunTrace:
        return self._store.trace(evaluation_id, position, paradigm)

    def evaluation_traces(self, evaluation_id: int) -> list[RunTrace]:
        return self._store.traces(evaluation_id)

    def export_evaluation(self, evaluation_id: int, fmt: str) -> str:
        """Every run of an evaluation in `fmt` (engine.eval.exports), each named by the
        paradigm or grid point it is stored under."""
        from engine.eval.exports import export

        rows = self._store.rows(evaluation_id)
        return export(self._store.traces(evaluation_id), fmt,
                      [r["paradigm"] for r in rows],
                      [f"evaluation {evaluation_id}'s run of question {r['position']} by "
                       f"{r['paradigm']!r}" for r in rows])

    def export_evaluation_files(self, evaluation_id: int, fmt: str) -> tuple[dict, str]:
        """({file name: text}, a note) of an evaluation for another tool
        (engine.eval.exports.export_files: ragas one file per paradigm, trec qrels and a
        run per stage); the note says what runs without gold became. ragas's
        reference_contexts come from the corpus loaded here."""
        from engine.eval.exports import export_files, without_gold

        rows = self._store.rows(evaluation_id)
        traces = self._store.traces(evaluation_id)
        corpus = self._corpora.startup.corpus
        by_id = corpus.by_id if corpus is not None else {}

        def text(doc_id: str) -> str | None:  # looked up, not copied (1M documents)
            found = by_id.get(doc_id)
            return found.text if found is not None else None

        files = export_files(traces, fmt, [r["paradigm"] for r in rows], documents=text)
        missing = without_gold(traces)
        note = {"ragchecker": f"{missing} runs without a gold answer left out",
                "ragas": f"{missing} runs without a gold answer put after the rest"}.get(
            fmt, "") if missing else ""
        return files, note
