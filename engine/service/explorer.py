"""The engine as the app sees it: one object that runs paradigms, lists datasets and saves runs.

`Explorer` ties together the corpora and their background `Preparation`s (the start-up
corpus, the packaged ones and those users add; every request may name one), the paradigm
registry,
the QA datasets found in the shared data folder, the saved runs, the stored evaluations and
the selection classifier's annotation. The app and the API call its methods only; its
collaborators are private. A paradigm object is cheap (its indexes and models live in
process-wide stores), so each run builds its own; no config ever loads a second copy of
anything. It holds no UI code; the Gradio callbacks only convert what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from engine.cache import sweep_leftovers
from engine.documents import Corpus, Dataset, Question
from engine.errors import ConfigError, EngineError
from engine.paradigms.base import Need, Paradigm, check_question
from engine.paradigms.registry import make_config, parse_config, spec
from engine.service.annotation import Annotation, JudgedPair
from engine.service.corpora import IDLE_SECONDS, Corpora, CorpusRow, check_searched
from engine.service.datasets import (
    dataset_file,
    dataset_label,
    dataset_of,
    listed_datasets,
    listed_path,
    listed_questions,
    missing_note,
    supporting_documents,
)
from engine.service.diagnosis import (
    ceilings_of,
    diagnosed_rows,
    gold_coverage,
    outcomes_of,
    paired_of,
    regressions_of,
)
from engine.service.evaluation_jobs import EvaluationJobs, EvaluationRequest
from engine.service.imports import IMPORTED, Imported, import_files
from engine.service.labelled import labelled_relevance, with_label_measures
from engine.service.long_builds import (
    RUN_BUILD_SECONDS,
    BuildNeeded,
    build_in_turn,
    long_builds,
)
from engine.service.models import ModelRow
from engine.service.otel import Tracing
from engine.service.preparation import Preparation
from engine.service.store import handed, make_paradigm
from engine.store.evaluations import EvaluationStore, StoredEvaluation
from engine.store.labels import Label
from engine.store.sessions import SavedRun, SessionStore
from engine.trace import FAILED, RunTrace

logger = logging.getLogger(__name__)

# what a run's long build asks of whoever starts it (engine.service.long_builds)
RUN_CONFIRM = ("Confirm the build to have this run wait for it (the app stays usable), or "
               "keep the options the app prepared.")


class NotReady(EngineError):
    """A paradigm's models or indexes are still being prepared."""


class Plan(NamedTuple):
    """A run before anything is loaded: its paradigm, corpus, config and the long builds it
    was confirmed to make first (each with its estimate)."""

    name: str
    corpus: Corpus
    config: object
    builds: list[tuple[Need, float]]


class Explorer:
    """Runs questions through paradigms over prepared corpora; saves and reloads runs."""

    def __init__(self, preparation: Preparation, store: SessionStore, *,
                 corpus_root: Path | None = None, idle_seconds: float = IDLE_SECONDS,
                 preparing: Callable[..., Preparation] = Preparation,
                 tracing: Tracing | None = None) -> None:
        """`preparation` prepares the corpus the app starts with (the default of every
        request); `corpus_root` is the folder server-side corpus paths may be read from
        (default: the data directory); `preparing` prepares any other corpus
        (engine.service.corpora); `tracing` sends every run (Explore, Compare, re-answer,
        each question of an evaluation) to an OTLP collector as OpenInference spans."""
        self._tracing = tracing
        self._runs = store
        self._evaluations = EvaluationStore(store)
        self._evaluations.mark_interrupted()  # left running by a process that died
        sweep_leftovers()  # and what such a process was writing (never read)
        self._jobs = EvaluationJobs(self._evaluations,
                                    sent=tracing.send if tracing is not None else None)
        self._corpora = Corpora(preparation, root=corpus_root, idle_seconds=idle_seconds,
                                in_use=self._jobs.corpora_in_use, preparing=preparing)
        self._preparation = preparation
        self._prepared_by_runs: set[tuple[str, str]] = set()  # (corpus fingerprint, need key)
        self._annotation = Annotation(lambda name: self._corpora.preparation(name).corpus,
                                      store, self._corpora.loaded_preparations)

    # --- running --------------------------------------------------------------------------

    def paradigm(self, name: str, config_json: str = "", corpus: str = "",
                 build: bool = False) -> Paradigm:
        """The paradigm `name` with a JSON config (defaults when empty) over `corpus` (a
        corpus's name; empty: the one the app started with). A config needing a build of
        RUN_BUILD_SECONDS or more here (a new dense index for another passage size) is
        refused with `BuildNeeded` (which one, how long) unless `build` confirms it."""
        plan = self._planned(name, config_json, corpus, build)
        return handed(plan.name, plan.corpus, plan.config)

    def _planned(self, name: str, config_json: str, corpus: str, build: bool) -> Plan:
        """A run's paradigm, corpus and config, and the long builds a confirmed run makes
        first with their estimates; `BuildNeeded` when there are some and `build` is
        False. Nothing is loaded yet."""
        spec(name)  # an unknown name before a bad config
        config = make_config(name, parse_config(config_json))
        preparation = self._corpora.preparation(corpus)
        self._check_ready(name, preparation)
        pending = self._unprepared(preparation, name, config)
        long = long_builds(preparation, pending, RUN_BUILD_SECONDS)
        if long and not build:
            raise BuildNeeded(long, RUN_CONFIRM, "This config needs")
        estimates = dict(long)
        return Plan(name, preparation.corpus, config,
                    [(need, estimates[need.label]) for need in pending
                     if need.label in estimates])

    def _unprepared(self, preparation: Preparation, name: str, config: object) -> list[Need]:
        """What paradigm `name` needs with `config` that neither `preparation` plans
        (ready, under way or failed, a stand-in answers for it) nor an earlier run of this
        process prepared (estimating a dense build reads the whole corpus's passages: a
        second each time on 10k documents, so a config that ran once is not estimated
        again)."""
        fingerprint = preparation.corpus.fingerprint
        return [need for need in preparation.unprepared(name, config)
                if need.key not in preparation.tasks
                and (fingerprint, need.key) not in self._prepared_by_runs]

    def _streamed(self, plan: Plan, question: str | Question) -> Iterator[RunTrace]:
        """The planned paradigm's `stream(question)` after the long builds it was confirmed
        to make, each taking its turn with the other long builds of the process (BUILDS: a
        short one goes first, pausing a long one; a long one waits); then it is handed what
        it uses (quick builds are made then). Once it has run to its end, everything it
        needs is prepared."""
        for need, seconds in plan.builds:
            build_in_turn(need, plan.corpus, seconds)
        paradigm = handed(plan.name, plan.corpus, plan.config)
        text = question.text if isinstance(question, Question) else question
        relevance = labelled_relevance(self._annotation.labels.list(text))
        trace = None
        for trace in paradigm.stream(question):
            # measured against Annotate's labels too, where the question has them
            trace = with_label_measures(trace, relevance) if relevance else trace
            yield trace
        if self._tracing is not None and trace is not None:
            self._tracing.send(trace)  # the finished run (the last one streamed)
        self._prepared_by_runs.update(
            (plan.corpus.fingerprint, need.key)
            for need in type(paradigm).needs(paradigm.config))

    def _check_ready(self, name: str, preparation: Preparation) -> None:
        spec(name)  # an unknown name: the ConfigError listing the registered ones
        loading = preparation.tasks["corpus"]
        if loading.state == "failed":
            raise ConfigError(f"Corpus '{preparation.corpus_spec}' could not be read: "
                              f"{loading.error}. Nothing can run over it; "
                              f"{self._corpora.fix_for_failed(preparation.corpus_spec)}.")
        waiting = preparation.missing(name)
        if waiting:
            # no progress figures: a notice stays on the page while they move on; the
            # status line above the tabs (and the `status` endpoint) keeps them current
            where = ("The status above the tabs (or the status endpoint) shows"
                     if preparation is self._preparation else
                     f"The Corpora tab (or list_corpora) shows corpus "
                     f"'{preparation.corpus_spec}' and")
            raise NotReady(f"'{name}' is not ready yet; waiting for: "
                           + "; ".join(t.headline() for t in waiting)
                           + f". {where} how far each has got; run again when it lists "
                           f"'{name}' as ready.")

    def stream(self, question: str | Question, name: str, config_json: str = "",
               corpus: str = "", build: bool = False) -> Iterator[RunTrace]:
        """The run's trace after every stage, then the finished trace. The question is
        checked first, by the one rule of every run, typed or sent over the API
        (engine.paradigms.base.check_question: refused, never cut)."""
        check_question(question.text if isinstance(question, Question) else question)
        return self._streamed(self._planned(name, config_json, corpus, build), question)

    def run(self, question: str | Question, name: str, config_json: str = "",
            corpus: str = "", build: bool = False) -> RunTrace:
        *_, trace = self.stream(question, name, config_json, corpus, build)
        return trace

    def reanswer(self, trace: RunTrace, unit_ids: list[str], oracle: bool = False
                 ) -> RunTrace:
        """`trace` re-answered over the units `unit_ids` (any of its candidates), plus the
        gold supporting documents with `oracle`, ranked first so that the reader reads them
        next to the question (after them, the small reader's EM did not rise; before them it
        rose 0.160 -> 0.250 for flat on 100 dev500 questions, bench/README.md): only the
        reader runs again (engine.paradigms.reanswer)."""
        from engine.paradigms.reanswer import reanswer

        corpus = self._searched_again(trace, "Re-answer")
        gold = supporting_documents(trace.gold, corpus) if oracle and trace.gold else ()
        if oracle and not gold:
            raise ConfigError("The oracle adds a dataset question's gold supporting "
                              "paragraphs; this run's question has none. Pick a question "
                              "from a dataset, or untick the oracle.")
        paradigm = make_paradigm(trace.paradigm, corpus, trace.config)
        again = reanswer(paradigm, trace, unit_ids, gold, oracle_first=True)
        if self._tracing is not None:
            self._tracing.send(again)
        return again

    def ablation(self, trace: RunTrace) -> RunTrace:
        """`trace` with leave-one-out attribution on its reader step (engine/readers/
        ablation.py): the run's reader reads what it read again, with and without each
        passage; nothing else runs. The step's `ablation` says what each passage does to
        the answer."""
        from dataclasses import replace

        from engine.readers.ablation import reading_step

        if trace.status == FAILED:
            raise ConfigError(f"This run failed ({trace.error}); there is no answer to "
                              "attribute. Run the question again first.")
        if not trace.read:
            raise ConfigError("The reader read no passages in this run, so there is "
                              "nothing to leave out.")
        corpus = self._searched_again(trace, "Attribute")
        config = {**trace.config, "reader": {**trace.config.get("reader", {}),
                                             "ablation": True}}
        paradigm = make_paradigm(trace.paradigm, corpus, config)
        again = replace(trace, llm_steps=tuple(paradigm.reader_steps(trace.question,
                                                                      trace.read)))
        found = reading_step(again)
        if found is None:
            raise ConfigError(f"{trace.paradigm!r} has no reader step over passages to "
                              "attribute.")
        steps = list(trace.llm_steps)
        at = max((i for i, s in enumerate(steps) if s.purpose == found.purpose), default=None)
        if at is None:
            raise ConfigError(f"This run has no {found.purpose!r} step to attribute.")
        steps[at] = replace(steps[at], ablation=found.ablation)
        return replace(trace, llm_steps=tuple(steps))

    def _searched_again(self, trace: RunTrace, doing: str) -> Corpus:
        """The corpus `trace` searched, once its paradigm is ready over it, for running
        part of the run again; an imported run is refused (its pipeline is not here)."""
        if "imported" in trace.config:
            source = trace.config["imported"]
            source = ", ".join(source) if isinstance(source, list) else source
            raise ConfigError(f"This run of {trace.paradigm!r} was imported (from {source}): "
                              f"its pipeline is not here to read again. {doing} a run of "
                              "one of our paradigms.")
        preparation = self._corpora.preparation(trace.corpus.get("name", ""))
        self._check_ready(trace.paradigm, preparation)
        return check_searched(trace.corpus, preparation.corpus)

    # --- corpora and their preparation ---------------------------------------------------

    @property
    def corpus(self) -> Corpus | None:
        """The corpus the app started with; None while it is still loading."""
        return self._preparation.corpus

    def corpus_names(self) -> list[str]:
        """Every corpus a request may name, the start-up one first."""
        return self._corpora.names()

    def corpora(self) -> list[CorpusRow]:
        """Every corpus with its state, size and what is built for it."""
        return self._corpora.rows()

    def models(self) -> list[ModelRow]:
        """The models each role can use here and what each has built (its indexes named
        by the corpora they index)."""
        from engine.service.models import model_rows

        return model_rows(self._corpora.named_fingerprints())

    def add_corpus(self, name: str, source: str | Path, *, upload: bool,
                   original: str = "", ray: str = "", shards: int = 0, qdrant: str = "",
                   collection: str = "") -> str:
        """Add corpus `name` from an uploaded file or a path under the corpus root; it is
        read, stored and prepared in the background (`corpora()` shows how far). `ray`: a
        Ray address (or "local") to encode its dense passages on, and with `shards`, to
        serve its dense indexes from that many Ray actors. `qdrant`: a Qdrant server's URL
        or local-mode folder to serve them from instead, its passages from `collection`
        (default: the corpus's name)."""
        return self._corpora.add(name, source, upload=upload, original=original, ray=ray,
                                 shards=shards, qdrant=qdrant, collection=collection)

    def remove_corpus(self, name: str) -> None:
        self._corpora.remove(name)

    @property
    def corpus_spec(self) -> str:
        return self._preparation.corpus_spec

    def status(self) -> list[str]:
        """The start-up corpus's tasks, then every other long build in the process's build
        queue (a run's confirmed build, an evaluation's, a retrain), each with how long it
        still needs or its place in the queue; the added corpora's own builds are listed
        in the Corpora tab."""
        from engine.paradigms.registry import failed_plugins
        from engine.service.builds import BUILDS

        left_out = [plugin.left_out() for plugin in failed_plugins()]
        owned = {task.turn for preparation in (self._preparation,
                                               *self._corpora.loaded_preparations())
                 for task in preparation.tasks.values() if task.turn is not None}
        return [*left_out, *self._preparation.status_lines(), *BUILDS.lines(skip=owned)]

    def failures(self) -> list[str]:
        """What failed while preparing the start-up corpus (or fetching the QA data), a
        line each with why."""
        from engine.paradigms.registry import failed_plugins

        return [*(plugin.left_out() for plugin in failed_plugins()),
                *(task.describe() for task in self._preparation.failed())]

    def standing_in(self) -> list[str]:
        """What answers meanwhile for builds and training still under way (stand-ins)."""
        return self._preparation.standing_in()

    def ready(self, name: str | None = None, corpus: str = "") -> bool:
        """Whether paradigm `name` can answer now over `corpus` (None: whether everything
        of the start-up corpus is prepared). Asking about a corpus starts preparing it."""
        preparation = self._corpora.preparation(corpus) if corpus else self._preparation
        return preparation.ready() if name is None else not preparation.missing(name)

    # --- datasets -------------------------------------------------------------------------

    def datasets(self) -> dict[str, str]:
        """{relative path: label} of the QA files present in the shared data folder."""
        return listed_datasets()

    def datasets_note(self) -> str:
        """'' when every listed dataset is here; else which are missing and the fix, as
        the app's background fetch of them stands (under way, or failed: try again)."""
        fetching = self._preparation.tasks.get("qa data")
        return missing_note(fetching.state if fetching is not None else "")

    def questions(self, dataset: str, limit: int = 300) -> tuple[Question, ...]:
        """The first `limit` questions of a listed dataset."""
        return listed_questions(dataset, limit)

    def supporting_in_corpus(self, question: Question, corpus: str = "") -> tuple[int, int]:
        """(how many of the question's supporting documents corpus `corpus` holds (empty
        or not loaded: the start-up one), how many it has); (0, n) too while the corpus is
        still loading."""
        loaded = self._corpora.corpus_if_loaded(corpus) if corpus else None
        loaded = loaded if loaded is not None else self._preparation.corpus
        titles = question.supporting_titles
        held = sum(t in loaded.by_id for t in titles) if loaded is not None else 0
        return held, len(titles)

    def counted_corpus(self, corpus: str = "") -> str:
        """The name of the corpus `supporting_in_corpus(q, corpus)` counts in."""
        if corpus and self._corpora.corpus_if_loaded(corpus) is not None:
            return corpus.strip()
        return self._corpora.default

    # --- saved runs -----------------------------------------------------------------------

    def save_run(self, trace: RunTrace, name: str = "", notes: str = "") -> int:
        """Save `trace`; returns the new run's id. The same run saved again is refused,
        naming the run it is saved as (a second Save click once made a silent twin)."""
        before = self._runs.saved_as(trace)
        if before is not None:
            run_id, saved_name = before
            raise ConfigError(f"This run is already saved as run {run_id} ({saved_name!r}); "
                              "nothing was saved again. Run the question again to save "
                              "another run of it.")
        return self._runs.save(trace, name, notes)

    def saved_runs(self) -> list[SavedRun]:
        """Saved runs, newest first."""
        return self._runs.list()

    def load_run(self, run_id: int) -> RunTrace:
        return self._runs.load(run_id)

    def delete_run(self, run_id: int) -> None:
        self._runs.delete(run_id)

    def export_runs(self, fmt: str, run_ids: list[int] | None = None) -> str:
        """Saved runs (all, or `run_ids`) as JSONL, CSV or an evaluation tool's format."""
        return self._runs.export(fmt, run_ids)

    def export_run_files(self, fmt: str, run_ids: list[int] | None = None) -> dict[str, str]:
        """Saved runs' files ({name: text}) in `fmt`: JSONL, CSV or another tool's
        (engine.store.sessions.SessionStore.export_files)."""
        return self._runs.export_files(fmt, run_ids)

    # --- annotation -----------------------------------------------------------------------

    def import_pipeline(self, files: list[tuple[str, str]], dataset: str = "",
                        label: str = "") -> Imported:
        """Store a pipeline's trace files or TREC run files ((name, text); see
        engine.eval.imports.import_files): with `dataset` (a listed one or a QA file) as an
        evaluation beside the paradigms', without as saved sessions. TREC docids name the
        start-up corpus's documents or the dataset's own."""
        from engine.data.corpus import eval_corpus

        chosen = dataset_of(dataset) if str(dataset or "").strip() else None

        def searched() -> Corpus:
            if self.corpus is None:
                raise NotReady("The corpus is still loading; import the run files once "
                               "the status above the tabs says it is ready.")
            return eval_corpus(chosen, self.corpus, dataset_label(dataset))

        return import_files(files, self._runs, dataset=chosen,
                            dataset_name=dataset_label(dataset) if chosen else "",
                            label=label, corpus=searched)

    def judged_pairs(self, trace: RunTrace) -> list[JudgedPair]:
        """The selection classifier's judged pairs of a drrag trace, in labelling order."""
        return self._annotation.pairs(trace)

    def add_label(self, question: str, d1_id: str, d2_id: str, value: int, **who) -> Label:
        return self._annotation.label(question, d1_id, d2_id, value, **who)

    def labels(self) -> list[Label]:
        """Every stored label, newest first."""
        return self._annotation.labels.list()

    def export_labels(self) -> str:
        return self._annotation.labels.export_jsonl()

    def import_labels(self, text: str, filename: str) -> tuple[int, int]:
        """(labels added, labels already stored) from a labels JSONL export."""
        return self._annotation.labels.import_jsonl(text, filename)

    def classifier_status(self) -> dict:
        """The active classifier version, every version's held-out figures, any retrain."""
        return self._annotation.status()

    def retrain_classifier(self) -> dict:
        return self._annotation.retrain()

    def activate_classifier(self, version: str) -> dict:
        return self._annotation.activate(version)

    # --- evaluations ----------------------------------------------------------------------

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
        chosen = dataset_of(dataset)
        preparation = self._searched(corpus, dataset, chosen, dataset_name)
        for paradigm in paradigms:
            self._check_ready(paradigm, preparation)
        request = EvaluationRequest(dataset_name or dataset_label(dataset),
                                    chosen.questions, tuple(paradigms),
                                    dict(configs or {}), limit, sample, seed, name,
                                    ray=(ray or "").strip())
        return self._jobs.start(request, preparation, build)

    def _searched(self, corpus: str, dataset: str, chosen: Dataset,
                  shown: str = "") -> Preparation:
        """The preparation of what an evaluation of `chosen` (read from `dataset`) over
        `corpus` searches: the corpus plus its paragraphs the corpus lacks, named after a
        listed dataset, or after the file as the user named it (`shown`, an upload's name
        without "(uploaded)"), never after a path on the server."""
        listed = listed_path(dataset) is not None
        label = dataset_label(dataset) if listed else (
            (shown or "").removesuffix(" (uploaded)").strip() or Path(dataset).name)
        path = dataset_file(dataset) if listed else Path(dataset)
        return self._corpora.for_dataset(corpus, chosen, label, str(path))

    def sweep(self, dataset: str, paradigm: str, options: dict, config: dict | None = None,
              *, limit: int = 0, sample: int = 0, seed: int = 0,
              retrieval_only: bool = True, name: str = "", build: bool = False,
              dataset_name: str = "", corpus: str = "") -> int:
        """Start a sweep of `paradigm` over the grid of `options` ({option: [values]}, one
        or two numeric options; the rest of `config` fixed) as an evaluation whose
        paradigms are the grid points (engine.eval.sweep); returns its id."""
        from engine.eval.sweep import grid

        chosen = dataset_of(dataset)
        preparation = self._searched(corpus, dataset, chosen, dataset_name)
        self._check_ready(paradigm, preparation)
        points = grid(paradigm, options, config)
        request = EvaluationRequest(
            dataset_name or dataset_label(dataset), chosen.questions,
            tuple(p.label for p in points), {p.label: p.config for p in points}, limit,
            sample, seed, name or f"sweep of {paradigm}: {', '.join(options)}",
            kinds={p.label: paradigm for p in points}, retrieval_only=retrieval_only)
        return self._jobs.start(request, preparation, build)

    def ceilings(self, evaluation_id: int, paradigms: list[str] | None = None,
                 build: bool = False) -> int:
        """Start the ceiling evaluation of stored evaluation `evaluation_id`: each of its
        dataset questions' runs by `paradigms` (all of them by default) again with one cut
        made perfect, for every cut (engine.eval.ceilings); returns its id. Its runs reuse
        the stored ones' stages before the cut; `ceiling_table` pairs them with these."""
        from engine.eval.ceilings import cut_stages, label
        from engine.paradigms.registry import PARADIGMS

        source = self._evaluations.get(evaluation_id)
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
            self._check_ready(name, preparation)
        check_searched({"name": source.corpus, "fingerprint": source.corpus_fingerprint},
                       preparation.corpus)
        rows = self._evaluations.rows(evaluation_id)
        runs = list(zip(rows, self._evaluations.traces(evaluation_id), strict=True))
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
        request = EvaluationRequest(
            source.dataset, tuple(golds[p] for p in positions), tuple(labels), configs,
            name=f"ceilings of evaluation {evaluation_id}", kinds=kinds,
            baseline=evaluation_id, cuts=cuts, positions=tuple(positions))
        return self._jobs.start(request, preparation, build)

    def ceiling_table(self, ceiling_id: int) -> dict:
        """A ceiling evaluation against the evaluation it came from, per paradigm and cut
        (engine.service.diagnosis.ceilings_of), and under `gold` how many questions' gold
        documents its corpus lacks (`gold_coverage`; None while that corpus is not
        loaded)."""
        table = ceilings_of(self._evaluations, ceiling_id)
        table["gold"] = self.gold_coverage(table["baseline"])
        return table

    def gold_coverage(self, evaluation_id: int) -> dict | None:
        """engine.service.diagnosis.gold_coverage of a stored evaluation over the corpus it
        searched, if that corpus is loaded as it was (None otherwise, or for a QA file no
        longer here)."""
        source = self._evaluations.get(evaluation_id)
        corpus = self._corpora.corpus_if_loaded(source.corpus)
        if corpus is None or corpus.fingerprint != source.corpus_fingerprint:
            return None
        try:
            dataset = dataset_of(source.dataset)
        except EngineError:
            return None
        return gold_coverage(self._evaluations, evaluation_id, corpus, dataset,
                             dataset_label(source.dataset))

    def coverage(self, evaluation_id: int) -> dict:
        """An evaluation's questions and its corpus's passages in one 2-D map, the questions
        far from every passage flagged in groups (engine.eval.coverage), over the dense
        index the app prepared (flat's default); computed once per corpus and evaluation
        and cached."""
        import json

        from engine.cache import load_or_build
        from engine.eval.coverage import Asked, coverage
        from engine.index.dense import DenseIndex
        from engine.service.store import process_store

        source = self._evaluations.get(evaluation_id)
        preparation = self._corpora.preparation(source.corpus)
        self._check_ready("flat", preparation)
        corpus = check_searched({"fingerprint": source.corpus_fingerprint},
                                preparation.corpus)
        flat = make_config("flat")
        index = process_store().dense(corpus, flat.passages(), flat.bi_encoder, stand_in=True)
        if not isinstance(index, DenseIndex):
            raise ConfigError(f"The dense index of corpus '{corpus.name}' is still being "
                              "built; the map is drawn from its vectors, so map once the "
                              "status says it is ready.")
        rows = diagnosed_rows(self._evaluations, evaluation_id)
        asked: dict[int, Asked] = {}
        for r in rows:
            question = Question(r["question_id"], r["question"])
            found = asked.setdefault(r["position"], Asked(r["position"], question, {}))
            found.outcomes[r["paradigm"]] = r.get("outcome", {}).get("answer", "")
        if not asked:
            raise ConfigError(f"Evaluation {evaluation_id} has no stored question yet.")
        key = {"corpus": corpus.fingerprint, "evaluation": evaluation_id,
               "runs": len(rows), "encoder": flat.bi_encoder,
               "passage_tokens": flat.passage_tokens, "version": 1}

        def build(folder: Path) -> None:
            found = coverage(index, [asked[p] for p in sorted(asked)])
            (folder / "coverage.json").write_text(json.dumps(found), encoding="utf-8")

        return load_or_build("coverage", key, build, lambda folder: json.loads(
            (folder / "coverage.json").read_text(encoding="utf-8")))

    def wait_for_evaluation(self, evaluation_id: int, timeout: float | None = None) -> None:
        """Block until the evaluation started here ends (or `timeout` seconds pass)."""
        job = self._jobs.get(evaluation_id)
        if job is not None:
            job.wait(timeout)

    def evaluation_status(self, evaluation_id: int) -> dict:
        """A running evaluation's live status, or a stored one's as it ended."""
        job = self._jobs.get(evaluation_id)
        if job is not None:
            return job.status()
        stored = self._evaluations.get(evaluation_id)
        means = stored.summary
        if not means and stored.done:  # ended without a summary (interrupted): its rows'
            from engine.eval.summary import summarise

            means = summarise(self._evaluations.rows(stored.id))
        return {"id": stored.id, "state": stored.state, "phase": "", "done": stored.done,
                "total": stored.questions, "seconds": stored.seconds, "seconds_left": None,
                "error": stored.error, "means": means, "corpus": stored.corpus,
                "imported": stored.code_version == IMPORTED,
                "partial": stored.state != "done" and stored.done < stored.questions}

    def cancel_evaluation(self, evaluation_id: int) -> None:
        self._jobs.cancel(evaluation_id)

    def resume_evaluation(self, evaluation_id: int, build: bool = False) -> int:
        """Go on with a stored evaluation that ended before every question ran
        (interrupted, cancelled or failed): its questions not yet stored, through its
        paradigms and configs, over the corpus it searched (refused, with the reason, if
        that corpus changed or it was imported: engine.service.resume); returns its id."""
        from engine.service.resume import resumable_plan

        stored = self._evaluations.get(evaluation_id)
        kinds = resumable_plan(self._evaluations, stored).get("kinds") or {}  # before loading
        preparation = self._corpora.preparation(stored.corpus)
        for paradigm in dict.fromkeys(kinds.get(label, label) for label in stored.paradigms):
            self._check_ready(paradigm, preparation)
        return self._jobs.resume(evaluation_id, preparation, build)

    def remove_evaluation(self, evaluation_id: int) -> None:
        """Delete a stored evaluation and its runs (one running here is refused: cancel
        it first)."""
        job = self._jobs.get(evaluation_id)
        if job is not None and job.state == "running":
            raise ConfigError(f"Evaluation {evaluation_id} is running; cancel it first.")
        self._evaluations.delete(evaluation_id)

    def evaluations(self) -> list[StoredEvaluation]:
        """Stored evaluations, newest first."""
        return self._evaluations.list()

    def evaluation(self, evaluation_id: int) -> StoredEvaluation:
        return self._evaluations.get(evaluation_id)

    def evaluation_rows(self, evaluation_id: int) -> list[dict]:
        """One row per (question, paradigm) of a stored evaluation (engine.eval.summary.row)."""
        return self._evaluations.rows(evaluation_id)

    def evaluation_trace(self, evaluation_id: int, position: int, paradigm: str) -> RunTrace:
        return self._evaluations.trace(evaluation_id, position, paradigm)

    def evaluation_traces(self, evaluation_id: int) -> list[RunTrace]:
        return self._evaluations.traces(evaluation_id)

    def export_evaluation(self, evaluation_id: int, fmt: str) -> str:
        """Every run of an evaluation in `fmt` (engine.eval.exports), each named by the
        paradigm or grid point it is stored under."""
        from engine.eval.exports import export

        rows = self._evaluations.rows(evaluation_id)
        return export(self._evaluations.traces(evaluation_id), fmt,
                      [r["paradigm"] for r in rows],
                      [f"evaluation {evaluation_id}'s run of question {r['position']} by "
                       f"{r['paradigm']!r}" for r in rows])

    def export_evaluation_files(self, evaluation_id: int, fmt: str) -> tuple[dict, str]:
        """({file name: text}, a note) of an evaluation for another tool
        (engine.eval.exports.export_files: ragas one file per paradigm, trec qrels and a
        run per stage); the note says what runs without gold became. ragas's
        reference_contexts come from the corpus loaded here."""
        from engine.eval.exports import export_files, without_gold

        rows = self._evaluations.rows(evaluation_id)
        traces = self._evaluations.traces(evaluation_id)
        by_id = self.corpus.by_id if self.corpus is not None else {}

        def text(doc_id: str) -> str | None:  # looked up, not copied (1M documents)
            found = by_id.get(doc_id)
            return found.text if found is not None else None

        files = export_files(traces, fmt, [r["paradigm"] for r in rows], documents=text)
        missing = without_gold(traces)
        note = {"ragchecker": f"{missing} runs without a gold answer left out",
                "ragas": f"{missing} runs without a gold answer put after the rest"}.get(
            fmt, "") if missing else ""
        return files, note

    # --- diagnosis --------------------------------------------------------------------------

    def attribution(self, evaluation_id: int, track: str = "answer") -> dict[str, dict]:
        """Per paradigm of a stored evaluation: where each question's gold was lost
        (engine.eval.outcomes), its counts in funnel order and the question positions."""
        return outcomes_of(self._evaluations, evaluation_id, track)

    def ablation_agreement(self, evaluation_id: int) -> dict[str, dict]:
        """Per paradigm of a stored evaluation: attention against leave-one-out attribution
        over its runs that carry an ablation (engine.eval.ablations)."""
        from engine.eval.ablations import agreement_summary

        rows = self._evaluations.rows(evaluation_id)  # the traces' order: each one's label
        return agreement_summary(self._evaluations.traces(evaluation_id),
                                 [r["paradigm"] for r in rows])

    def regressions(self, evaluation_id: int, a: str = "", b: str = "",
                    other_id: int | None = None, metric: str = "EM") -> dict:
        """The questions B improved, regressed or left as A had them on `metric` (A and B
        as `paired` takes them), regressions first (engine.eval.regressions)."""
        return regressions_of(self._evaluations, evaluation_id, a, b, other_id, metric)

    def paired(self, evaluation_id: int, a: str = "", b: str = "",
               other_id: int | None = None) -> dict:
        """Paired differences A minus B with bootstrap intervals and McNemar p-values:
        two paradigms of one evaluation, or of two evaluations on their shared questions."""
        return paired_of(self._evaluations, evaluation_id, a, b, other_id)
