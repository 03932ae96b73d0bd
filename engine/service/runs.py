"""Runs: a question through a paradigm over a prepared corpus (Explore, Compare, the API's
`run`), a run's reader again over other passages (re-answer) or with leave-one-out
attribution, and runs saved, read again, exported and imported from another pipeline's
files. The Explorer (engine.service.explorer) hands the app's calls here.

A run's config may need a build the corpus's preparation has not made (a dense index for
another passage size, BM25 over other passages, another clustering): a run reads only what
is built, so any such build is refused with `BuildNeeded` (which, and its estimate here)
until an admin confirms it; it then takes its turn with the process's other long builds
(engine.service.long_builds). Each finished run goes to the trace collector, if one is set
(engine.service.otel), measured against Annotate's labels where its question has some.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import NamedTuple

from engine.documents import Corpus, Question
from engine.errors import ConfigError
from engine.paradigms.base import Paradigm, check_question
from engine.paradigms.needs import Need
from engine.paradigms.registry import make_config, parse_config, spec
from engine.service.corpora import Corpora, check_searched
from engine.service.datasets import dataset_label, dataset_of, supporting_documents
from engine.service.door import Door, guarded
from engine.service.imports import Imported, import_files
from engine.service.labelled import labelled_relevance, with_label_measures
from engine.service.long_builds import (
    RUN_BUILD_SECONDS,
    BuildNeeded,
    build_in_turn,
    long_builds,
)
from engine.service.otel import Tracing
from engine.service.preparation import Preparation
from engine.service.readiness import NotReady, check_ready
from engine.service.store import make_paradigm
from engine.store.evaluations import EvaluationStore
from engine.store.labels import LabelStore
from engine.store.presets import PresetStore
from engine.store.sessions import SavedRun, SessionStore
from engine.trace import FAILED, RunTrace

# what a run's long build asks of whoever starts it (engine.service.long_builds)
RUN_CONFIRM = ("A run reads only what is built: an admin builds it by confirming the build "
               "(Explore's Build button, or build=true over the API; the run then waits for "
               "it while the app stays usable); or keep the options the app prepared.")


class Plan(NamedTuple):
    """A run before anything is loaded: its paradigm, corpus, config and the long builds it
    was confirmed to make first (each with its estimate)."""

    name: str
    corpus: Corpus
    config: object
    builds: list[tuple[Need, float]]
    preset: str = ""  # the named preset it runs (engine.store.presets), if any


@guarded
class Runs:
    """Questions run through paradigms over prepared corpora; runs saved and reloaded. Each
    method is an action its door checks (engine.service.door)."""

    def __init__(self, sessions: SessionStore, corpora: Corpora, labels: LabelStore,
                 tracing: Tracing | None = None, door: Door | None = None,
                 presets: PresetStore | None = None) -> None:
        """`sessions` keeps the saved runs; `corpora` prepares the corpus a run names;
        `labels` are Annotate's, which a run's question is measured against too;
        `tracing` sends every finished run to an OTLP collector; `door` names who saves a
        run and lets only its owner or an admin delete it; `presets` are the named ones a
        run may name."""
        self._sessions, self._corpora, self._labels = sessions, corpora, labels
        self._tracing = tracing
        self.door = door or Door()
        self._presets = presets
        self._prepared_by_runs: set[tuple[str, str]] = set()  # (corpus fingerprint, need key)

    # --- running --------------------------------------------------------------------------

    def paradigm(self, name: str, config_json: str = "", corpus: str = "",
                 build: bool = False) -> Paradigm:
        """The paradigm `name` with a JSON config (defaults when empty) over `corpus` (a
        corpus's name; empty: the one the app started with). A config needing a build
        (a new dense index for another passage size) is
        refused with `BuildNeeded` (which one, how long) unless `build` confirms it."""
        plan = self._planned(name, config_json, corpus, build)
        return make_paradigm(plan.name, plan.corpus, plan.config)

    def _planned(self, name: str, config_json: str, corpus: str, build: bool,
                 preset: str = "") -> Plan:
        """A run's paradigm, corpus and config, and the long builds a confirmed run makes
        first with their estimates; `BuildNeeded` when there are some and `build` is
        False. Nothing is loaded yet. With `preset`, its paradigm and options run (those
        of `config_json` over them)."""
        options = parse_config(config_json)
        if preset:
            if self._presets is None:
                raise ConfigError(f"preset={preset!r}: no presets are stored here.")
            chosen = self._presets.get(preset)
            name, options = chosen.paradigm, {**chosen.config, **options}
            corpus = corpus or chosen.corpus  # over the corpus it was made over
        spec(name)  # an unknown name before a bad config
        config = make_config(name, options)
        preparation = self._corpora.preparation(corpus)
        check_ready(self._corpora, name, preparation)
        pending = self._unprepared(preparation, name, config)
        long = long_builds(preparation, pending, RUN_BUILD_SECONDS)
        if long and not build:
            raise BuildNeeded(long, RUN_CONFIRM, "This config needs")
        if long:  # a long build is the server's: confirming one is an admin's to do
            self.door.check("build_index", ", ".join(label for label, _ in long))
        estimates = dict(long)
        return Plan(name, preparation.corpus, config,
                    [(need, estimates[need.label]) for need in pending
                     if need.label in estimates], preset)

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
        paradigm = make_paradigm(plan.name, plan.corpus, plan.config)
        text = question.text if isinstance(question, Question) else question
        relevance = labelled_relevance(self._labels.list(text))
        trace = None
        for trace in paradigm.stream(question):
            # measured against Annotate's labels too, where the question has them
            trace = with_label_measures(trace, relevance) if relevance else trace
            trace = replace(trace, preset=plan.preset) if plan.preset else trace
            yield trace
        if self._tracing is not None and trace is not None:
            self._tracing.send(trace)  # the finished run (the last one streamed)
        self._prepared_by_runs.update(
            (plan.corpus.fingerprint, need.key)
            for need in type(paradigm).needs(paradigm.config))

    def stream(self, question: str | Question, name: str, config_json: str = "",
               corpus: str = "", build: bool = False, preset: str = ""
               ) -> Iterator[RunTrace]:
        """The run's trace after every stage, then the finished trace (with `preset`, of
        that preset's paradigm and options, `name` ignored). The question is checked first,
        by the one rule of every run, typed or sent over the API
        (engine.paradigms.base.check_question: refused, never cut)."""
        return self._stream(question, name, config_json, corpus, build, preset)

    def run(self, question: str | Question, name: str, config_json: str = "",
            corpus: str = "", build: bool = False, preset: str = "") -> RunTrace:
        """The finished trace of `stream` (one run's share taken, not two)."""
        *_, trace = self._stream(question, name, config_json, corpus, build, preset)
        return trace

    def _stream(self, question: str | Question, name: str, config_json: str,
                corpus: str, build: bool, preset: str) -> Iterator[RunTrace]:
        check_question(question.text if isinstance(question, Question) else question)
        return self._streamed(self._planned(name, config_json, corpus, build, preset),
                              question)

    def reanswer(self, trace: RunTrace, unit_ids: list[str], oracle: bool = False
                 ) -> RunTrace:
        """`trace` re-answered over the units `unit_ids` (any of its candidates), plus the
        gold supporting documents with `oracle`, ranked first so that the reader reads them
        next to the question (after them, the small reader's EM did not rise; before them it
        rose 0.160 -> 0.250 for flat on 100 dev500 questions; docs/benchmarks/diagnosis.md,
        "The reader's ceiling"): only the
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
        check_ready(self._corpora, trace.paradigm, preparation)
        return check_searched(trace.corpus, preparation.corpus)

    # --- saved runs -----------------------------------------------------------------------

    def save_run(self, trace: RunTrace, name: str = "", notes: str = "") -> int:
        """Save `trace` as the acting user's; returns the new run's id. The same run saved
        again is refused, naming the run it is saved as (a second Save click once made a
        silent twin)."""
        before = self._sessions.saved_as(trace)
        if before is not None:
            run_id, saved_name = before
            raise ConfigError(f"This run is already saved as run {run_id} ({saved_name!r}); "
                              "nothing was saved again. Run the question again to save "
                              "another run of it.")
        return self._sessions.save(trace, name, notes, self.door.name())

    def saved_runs(self) -> list[SavedRun]:
        """Saved runs, newest first."""
        return self._sessions.list()

    def load_run(self, run_id: int) -> RunTrace:
        return self._sessions.load(run_id)

    def delete_run(self, run_id: int) -> None:
        """Delete saved run `run_id`: one's own, or anyone's as an admin."""
        self.door.owns(self._sessions.owner(run_id), "delete_run", f"run {run_id}")
        self._sessions.delete(run_id)

    def export_runs(self, fmt: str, run_ids: list[int] | None = None) -> str:
        """Saved runs (all, or `run_ids`) as JSONL, CSV or an evaluation tool's format."""
        return self._sessions.export(fmt, run_ids)

    def export_run_files(self, fmt: str, run_ids: list[int] | None = None) -> dict[str, str]:
        """Saved runs' files ({name: text}) in `fmt`: JSONL, CSV or another tool's
        (engine.store.sessions.SessionStore.export_files)."""
        return self._sessions.export_files(fmt, run_ids)

    def import_pipeline(self, files: list[tuple[str, str]], dataset: str = "",
                        label: str = "") -> Imported:
        """Store a pipeline's trace files or TREC run files ((name, text); see
        engine.eval.imports.import_files): with `dataset` (a listed one or a QA file) as an
        evaluation beside the paradigms', without as saved sessions. TREC docids name the
        start-up corpus's documents or the dataset's own."""
        from engine.data.corpus import eval_corpus

        chosen = dataset_of(dataset) if str(dataset or "").strip() else None

        def searched() -> Corpus:
            if self._corpora.startup.corpus is None:
                raise NotReady("The corpus is still loading; import the run files once "
                               "the status above the tabs says it is ready.")
            return eval_corpus(chosen, self._corpora.startup.corpus, dataset_label(dataset))

        imported = import_files(files, self._sessions, dataset=chosen,
                                dataset_name=dataset_label(dataset) if chosen else "",
                                label=label, corpus=searched)
        owner = self.door.name()
        if owner and imported.sessions:
            self._sessions.set_owner(list(imported.sessions), owner)
        if owner and imported.evaluation is not None:
            EvaluationStore(self._sessions).set_owner(imported.evaluation, owner)
        return imported
