"""Diagnosis of stored evaluations: where each paradigm lost the answer, and whether the
difference between two paradigms (or two evaluations) is beyond noise.

Rows stored before rows carried outcomes get them from their stored traces. `Diagnoses`
answers the Diagnose tab's calls (through the Explorer) with these, over the corpora an
evaluation searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from engine.documents import Corpus, Dataset, Question
from engine.errors import ConfigError, EngineError
from engine.eval.ablations import AblationAgreement, agreement_summary
from engine.eval.coverage import Asked, CoverageMap, coverage
from engine.eval.outcomes import (
    TRACKS,
    Attribution,
    attribution,
    offered,
    renamed,
    row_outcomes,
)
from engine.eval.paired import (
    METRICS,
    RESAMPLES,
    SEED,
    PairedDifference,
    corrected,
    paired,
    question_values,
)
from engine.eval.regressions import Changed, changes
from engine.eval.summary import read_gold_doc_recall
from engine.paradigms.registry import make_config
from engine.results import plain
from engine.service.corpora import Corpora, check_searched
from engine.service.datasets import dataset_label, dataset_of
from engine.service.door import Door, guarded
from engine.service.readiness import check_ready
from engine.store.evaluations import EvaluationStore, StoredEvaluation
from engine.trace import FAILED


def diagnosed_rows(evaluations: EvaluationStore, evaluation_id: int) -> list[dict]:
    """The evaluation's rows, each with its outcomes on every track, cuts and read
    gold-document recall (a row stored before it carried them, or before a track was
    added, has them read from its trace; one stored under an outcome's earlier name has
    its current one)."""
    rows = [_sentences_filled(renamed(r)) for r in evaluations.rows(evaluation_id)]
    if all(set(TRACKS) <= set(r.get("outcome", {})) for r in rows):
        return rows
    traces = evaluations.traces(evaluation_id)  # same order: position, then paradigm
    return [r if set(TRACKS) <= set(r.get("outcome", {})) else
            {**r, **row_outcomes(t), "gold_doc_recall": read_gold_doc_recall(t)}
            for r, t in zip(rows, traces, strict=True)]


def _sentences_filled(row: dict) -> dict:
    """A row stored before the sentence track: its question carried no sentence gold (it
    came in with the track), so its outcome there is None, read without its trace."""
    outcome = row.get("outcome")
    if outcome is None or "sentences" in outcome:
        return row
    return {**row, "outcome": {**outcome, "sentences": None}}


def outcomes_of(evaluations: EvaluationStore, evaluation_id: int,
                track: str = "answer") -> dict[str, Attribution]:
    """engine.eval.outcomes.attribution of a stored evaluation, its paradigms in the
    order it ran them."""
    found = attribution(diagnosed_rows(evaluations, evaluation_id), track)
    ran = [p for p in evaluations.get(evaluation_id).paradigms if p in found]
    return {p: found[p] for p in [*ran, *(p for p in found if p not in ran)]}


@dataclass(frozen=True)
class PairedComparison:
    """A minus B over their shared questions (engine.eval.paired), each side named
    "evaluation id: paradigm", with the corpus it searched and how many questions it
    answered."""

    a: str
    b: str
    a_corpus: str
    b_corpus: str
    shared: int
    a_questions: int
    b_questions: int
    resamples: int
    seed: int
    differences: tuple[PairedDifference, ...]


def paired_of(evaluations: EvaluationStore, evaluation_id: int, a: str = "", b: str = "",
              other_id: int | None = None, *, resamples: int = RESAMPLES,
              seed: int = SEED) -> PairedComparison:
    """A minus B over their shared questions: paradigms `a` and `b` of one evaluation, or
    `a` of `evaluation_id` and `b` of `other_id` (each may be left empty when its
    evaluation ran one paradigm, or the other names one both ran)."""
    pair = _paired_rows(evaluations, evaluation_id, a, b, other_id)
    ids_a = {r["question_id"] for r in pair.rows_a if r.get("status") != FAILED}
    ids_b = {r["question_id"] for r in pair.rows_b if r.get("status") != FAILED}
    if not ids_a & ids_b:
        raise ConfigError(f"Evaluations {pair.first.id} and {pair.second.id} share no "
                          f"question id ({len(ids_a)} and {len(ids_b)} questions), so "
                          "nothing can be paired; compare evaluations of the same dataset.")
    return PairedComparison(
        f"{pair.first.id}: {pair.a}", f"{pair.second.id}: {pair.b}", pair.first.corpus,
        pair.second.corpus, len(ids_a & ids_b), len(ids_a), len(ids_b), resamples, seed,
        tuple(paired(pair.rows_a, pair.rows_b, resamples=resamples, seed=seed)))


def corrected_across(comparisons: Sequence[PairedComparison]) -> list[PairedComparison]:
    """Several comparisons with each McNemar p Holm-corrected for their number
    (engine.eval.paired.corrected); one is left as it is."""
    fixed = corrected([c.differences for c in comparisons])
    return [replace(c, differences=d) for c, d in zip(comparisons, fixed, strict=True)]


@dataclass(frozen=True)
class Regressions:
    """The questions B improved, regressed or left as A had them on `metric`
    (engine.eval.regressions), each side named and its evaluation and paradigm apart (a
    question's runs are opened by them)."""

    a: str
    b: str
    a_evaluation: int
    b_evaluation: int
    a_paradigm: str
    b_paradigm: str
    metric: str
    counts: dict[str, int]
    questions: tuple[Changed, ...]


def regressions_of(evaluations: EvaluationStore, evaluation_id: int, a: str = "",
                   b: str = "", other_id: int | None = None,
                   metric: str = "EM") -> Regressions:
    """The questions B improved, regressed or left as A had them on `metric` (A and B as
    `paired_of` takes them): engine.eval.regressions.changes, with both sides named."""
    pair = _paired_rows(evaluations, evaluation_id, a, b, other_id)
    found = changes(pair.rows_a, pair.rows_b, metric)
    return Regressions(f"{pair.first.id}: {pair.a}", f"{pair.second.id}: {pair.b}",
                       pair.first.id, pair.second.id, pair.a, pair.b, found.metric,
                       found.counts, found.questions)


@dataclass(frozen=True)
class PairedRows:
    first: StoredEvaluation
    second: StoredEvaluation
    a: str
    b: str
    rows_a: list[dict]
    rows_b: list[dict]


def _paired_rows(evaluations: EvaluationStore, evaluation_id: int, a: str, b: str,
                 other_id: int | None) -> PairedRows:
    """A's and B's rows, each paradigm named or the one its evaluation ran."""
    first = evaluations.get(evaluation_id)
    second = evaluations.get(other_id) if other_id is not None else first
    if second is first:
        if not a or not b:
            names = list(first.paradigms)
            if len(names) != 2 or a or b:
                raise ConfigError(f"Name the two paradigms of evaluation {first.id} to pair "
                                  f"(it ran {', '.join(names)}), e.g. a={names[0]!r}.")
            a, b = names
        if a == b:
            raise ConfigError(f"a and b are both {a!r}: pair two different paradigms, or "
                              "give a second evaluation id.")
    a = a or _only(first, b)
    b = b or _only(second, a)
    for evaluation, name in ((first, a), (second, b)):
        if name not in evaluation.paradigms:
            raise ConfigError(f"Evaluation {evaluation.id} has no paradigm {name!r}; it ran "
                              f"{', '.join(evaluation.paradigms)}.")
    rows_a = [r for r in diagnosed_rows(evaluations, first.id) if r["paradigm"] == a]
    rows_b = [r for r in diagnosed_rows(evaluations, second.id) if r["paradigm"] == b]
    return PairedRows(first, second, a, b, rows_a, rows_b)


def _only(evaluation, fallback: str) -> str:
    """The evaluation's one paradigm, else `fallback` (the other side's name)."""
    if len(evaluation.paradigms) == 1:
        return evaluation.paradigms[0]
    if fallback in evaluation.paradigms:
        return fallback
    raise ConfigError(f"Evaluation {evaluation.id} ran {', '.join(evaluation.paradigms)}; "
                      "name the paradigm to pair from it.")


CEILING_METRICS = ("AR@4", "EM", "F1", "nDCG@10", "gold_doc_recall")


@dataclass(frozen=True)
class CutCeiling:
    """One cut made perfect: its label ("flat: perfect cut 1 (dense)"), its means, and the
    paired differences ceiling minus actual on each metric."""

    label: str
    means: dict[str, float]
    differences: tuple[PairedDifference, ...]


@dataclass(frozen=True)
class ParadigmCeilings:
    """A paradigm's means as it ran (`actual`), each cut's ceiling, and per metric the cut
    whose ceiling gains most (none where no cut gains)."""

    actual: dict[str, float]
    cuts: tuple[CutCeiling, ...]
    pays_most: dict[str, str]


@dataclass(frozen=True)
class GoldCoverage:
    """Of an evaluation's questions with supporting documents (`questions`), how many lack
    some in `corpus` (`lacking`) or all (`none`), and the corpora that would hold them."""

    corpus: str
    questions: int
    lacking: int
    none: int
    holds_it: tuple[str, ...]


@dataclass(frozen=True)
class CeilingTable:
    """A ceiling evaluation against its baseline, per paradigm; `gold`: how many
    questions' gold its corpus lacks (None while that corpus is not loaded)."""

    id: int
    baseline: int
    state: str
    done: int
    questions: int
    paradigms: dict[str, ParadigmCeilings]
    gold: GoldCoverage | None = None


def ceilings_of(evaluations: EvaluationStore, ceiling_id: int,
                metrics: Sequence[str] = CEILING_METRICS) -> CeilingTable:
    """A ceiling evaluation against its baseline: per paradigm, the baseline's means and,
    per cut made perfect, its means and the paired differences (ceiling minus actual, 95%
    bootstrap interval, McNemar p, Holm-corrected across every cut shown) on `metrics`,
    the cut that pays most on each metric named."""
    ceiling = evaluations.get(ceiling_id)
    if ceiling.baseline is None:
        raise ConfigError(f"Evaluation {ceiling_id} is no ceiling evaluation; compute the "
                          "ceilings of an evaluation first (Diagnose, or the API's "
                          "ceilings), then read them by the id it returns.")
    baseline = evaluations.get(ceiling.baseline)
    rows = evaluations.rows(ceiling_id)
    actual = evaluations.rows(baseline.id)
    labels = [(label, label.split(":", 1)[0]) for label in ceiling.paradigms]  # its paradigm
    as_run = {p: [r for r in actual if r["paradigm"] == p] for p in dict.fromkeys(
        p for _, p in labels)}
    means, found = [], []
    for label, paradigm in labels:
        mine = [r for r in rows if r["paradigm"] == label]
        by_metric = {d.metric: d for d in paired(mine, as_run[paradigm])
                     if d.metric in metrics}
        means.append(_means(mine, metrics))
        found.append(tuple(by_metric[m] for m in metrics if m in by_metric))
    cuts = [CutCeiling(label, mean, differences) for (label, _), mean, differences
            in zip(labels, means, corrected(found), strict=True)]
    out = {}
    for paradigm, theirs in as_run.items():
        mine = tuple(c for c, (_, p) in zip(cuts, labels, strict=True) if p == paradigm)
        out[paradigm] = ParadigmCeilings(_means(theirs, metrics), mine,
                                         _pays_most(mine, metrics))
    return CeilingTable(ceiling.id, baseline.id, ceiling.state, ceiling.done,
                        ceiling.questions, out)


def _pays_most(cuts: Sequence[CutCeiling], metrics: Sequence[str]) -> dict[str, str]:
    """Per metric, the cut whose ceiling gains most over the run as it was (none where no
    cut gains)."""
    best = {}
    for metric in metrics:
        gains = [(d.diff, cut.label) for cut in cuts for d in cut.differences
                 if d.metric == metric and d.diff > 0]
        if gains:
            best[metric] = max(gains)[1]
    return best


def _means(rows: list[dict], metrics: Sequence[str]) -> dict:
    """Mean of each metric over the rows that have it (failed runs left out)."""
    answered = [question_values(r) for r in rows if r.get("status") != FAILED]
    means = {}
    for metric in metrics:
        values = [v[metric] for v in answered if metric in v]
        if values:
            means[metric] = round(sum(values) / len(values), 4)
    return {**means, "runs": len(answered)}


def gold_coverage(evaluations: EvaluationStore, evaluation_id: int, corpus: Corpus,
                  dataset: Dataset, label: str) -> GoldCoverage:
    """How many of the evaluation's questions with supporting documents have some of them
    missing from `corpus` (`lacking`; `none`: not one of them there), and the corpora that
    would hold them: the corpus plus the dataset's paragraphs (what an evaluation searches
    now: engine.data.corpus.with_paragraphs) and, for a listed dataset, `pooled`. A
    perfect cut can add only the gold the corpus holds, so these questions' ceilings stay
    low whatever the stages do."""
    from engine.data.corpus import grown_name, lacking
    from engine.qa_data import dataset_path

    asked = {r["question_id"] for r in evaluations.rows(evaluation_id)}
    golds = [q for q in dataset.questions if q.id in asked and q.supporting_titles]
    there = [sum(t in corpus.by_id for t in set(q.supporting_titles)) for q in golds]
    short = sum(n < len(set(q.supporting_titles)) for n, q in zip(there, golds, strict=True))
    holds = []
    if short:
        holds = [grown_name(corpus.name, label)] if lacking(corpus, dataset) else []
        if dataset_path(label) is not None and corpus.name != "pooled":
            holds.append("pooled")
    return GoldCoverage(corpus.name, len(golds), short, sum(n == 0 for n in there),
                        tuple(holds))


@guarded
class Diagnoses:
    """What Diagnose asks of stored evaluations (the Explorer's `diagnoses`): where each
    paradigm lost the gold, paired differences and the questions that changed, each
    stage's ceiling, the gold the corpus lacks, the coverage map and attention against
    leave-one-out attribution. Each method is an action its door checks (all a viewer's)."""

    def __init__(self, store: EvaluationStore, corpora: Corpora,
                 door: Door | None = None) -> None:
        """`store` keeps the evaluations; `corpora` loads the corpus each searched; `door`
        checks each method's role (engine.service.door)."""
        self._store, self._corpora = store, corpora
        self.door = door or Door()

    def tracks(self, evaluation_id: int) -> list[str]:
        """The tracks a stored evaluation's questions can be followed on
        (engine.eval.outcomes.offered: a test collection's have no `answer`)."""
        return offered(diagnosed_rows(self._store, evaluation_id))

    def attribution(self, evaluation_id: int,
                    track: str = "answer") -> dict[str, Attribution]:
        """Per paradigm of a stored evaluation: where each question's gold was lost
        (engine.eval.outcomes), its counts in funnel order and the question positions."""
        return outcomes_of(self._store, evaluation_id, track)

    def paired(self, evaluation_id: int, a: str = "", b: str = "",
               other_id: int | None = None) -> PairedComparison:
        """Paired differences A minus B with bootstrap intervals and McNemar p-values:
        two paradigms of one evaluation, or of two evaluations on their shared questions."""
        return paired_of(self._store, evaluation_id, a, b, other_id)

    def measured(self, evaluation_id: int) -> list[str]:
        """The metrics (engine.eval.paired.METRICS) a stored evaluation's runs have, in
        that order: a test collection's have ranking measures and no EM."""
        have: set[str] = set()
        for row in self._store.rows(evaluation_id):
            if row.get("status") != FAILED:
                have.update(question_values(row))
        return [m for m in METRICS if m in have]

    def regressions(self, evaluation_id: int, a: str = "", b: str = "",
                    other_id: int | None = None, metric: str = "EM") -> Regressions:
        """The questions B improved, regressed or left as A had them on `metric` (A and B
        as `paired` takes them), regressions first (engine.eval.regressions)."""
        return regressions_of(self._store, evaluation_id, a, b, other_id, metric)

    def ceiling_table(self, ceiling_id: int) -> CeilingTable:
        """A ceiling evaluation against the evaluation it came from, per paradigm and cut
        (engine.service.diagnosis.ceilings_of), and under `gold` how many questions' gold
        documents its corpus lacks (`gold_coverage`; None while that corpus is not
        loaded)."""
        table = ceilings_of(self._store, ceiling_id)
        return replace(table, gold=self.gold_coverage(table.baseline))

    def gold_coverage(self, evaluation_id: int) -> GoldCoverage | None:
        """engine.service.diagnosis.gold_coverage of a stored evaluation over the corpus it
        searched, if that corpus is loaded as it was (None otherwise, or for a QA file no
        longer here)."""
        source = self._store.get(evaluation_id)
        corpus = self._corpora.corpus_if_loaded(source.corpus)
        if corpus is None or corpus.fingerprint != source.corpus_fingerprint:
            return None
        try:
            dataset = dataset_of(source.dataset)
        except EngineError:
            return None
        return gold_coverage(self._store, evaluation_id, corpus, dataset,
                             dataset_label(source.dataset))

    def coverage(self, evaluation_id: int) -> CoverageMap:
        """An evaluation's questions and its corpus's passages in one 2-D map, the questions
        far from every passage flagged in groups (engine.eval.coverage), over the dense
        index the app prepared (flat's default); computed once per corpus and evaluation
        and cached."""
        import json

        from engine.cache import load_or_build
        from engine.index.dense import DenseIndex
        from engine.service.store import process_store

        source = self._store.get(evaluation_id)
        preparation = self._corpora.preparation(source.corpus)
        check_ready(self._corpora, "flat", preparation)
        corpus = check_searched({"fingerprint": source.corpus_fingerprint},
                                preparation.corpus)
        flat = make_config("flat")
        index = process_store().dense(corpus, flat.passages(), flat.bi_encoder, stand_in=True)
        if not isinstance(index, DenseIndex):
            raise ConfigError(f"The dense index of corpus '{corpus.name}' is still being "
                              "built; the map is drawn from its vectors, so map once the "
                              "status says it is ready.")
        rows = diagnosed_rows(self._store, evaluation_id)
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
            (folder / "coverage.json").write_text(json.dumps(plain(found)), encoding="utf-8")

        return load_or_build("coverage", key, build, lambda folder: CoverageMap.from_dict(
            json.loads((folder / "coverage.json").read_text(encoding="utf-8"))))

    def ablation_agreement(self, evaluation_id: int) -> dict[str, AblationAgreement]:
        """Per paradigm of a stored evaluation: attention against leave-one-out attribution
        over its runs that carry an ablation (engine.eval.ablations)."""
        rows = self._store.rows(evaluation_id)  # the traces' order: each one's label
        return agreement_summary(self._store.traces(evaluation_id),
                                 [r["paradigm"] for r in rows])
