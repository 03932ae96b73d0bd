"""Answer normalisation, answer metrics and retrieval measures (SQuAD conventions).

`normalize_answer` lower-cases, drops punctuation and the articles a/an/the, and folds
whitespace, as the SQuAD evaluation script does. Answer recall at k (AR@k, LongRAG) asks
whether any normalised gold answer occurs in the normalised concatenation of the top-k
units; like LongRAG, only questions with span answers count (yes/no are reported apart).
Containment splits words at punctuation instead of deleting it (`answer_words`), as DPR's
`has_answer` tokeniser does, which LongRAG's evaluation uses: "City-based" holds "City".

Shortcuts taken on purpose:
- Punctuation is `string.punctuation`, i.e. ASCII only, exactly as in SQuAD: unicode
  dashes and curly quotes survive ("Jean–Paul" stays one token "jean–paul", while
  "Jean-Paul" becomes "jeanpaul"). Punctuation goes before articles, so "The-End" ->
  "theend". We keep this so numbers stay comparable with published SQuAD-style scores.
- EM and F1 follow the official SQuAD v2.0 script: gold answers that normalise to ""
  are dropped, and when none is left the only correct prediction is the empty string.
  The containment metrics (accuracy, refined EM, AR@k) simply ignore such answers.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from engine.documents import Question
from engine.errors import ConfigError

_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_PUNCT_TO_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))


def at_stage(measure: str, stage: str) -> str:
    """The key of `measure` at a run's cut `stage` in its metrics and an evaluation's
    summary: at_stage("nDCG@10", "dense") is "nDCG@10@dense". The one maker of such keys;
    `measure_of` reads them back."""
    return f"{measure}@{stage}"


def measure_of(key: str) -> tuple[str, str | None]:
    """(measure, stage) of a metrics key: "nDCG@10@dense" is ("nDCG@10", "dense"); a key at
    no cut is (itself, None): "EM", and "AR@4" (answer recall in the top 4, a rank, not a
    stage: stage names are never numbers)."""
    measure, at, stage = key.rpartition("@")
    if not at or not measure or stage.isdigit():
        return key, None
    return measure, stage


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES_RE.sub(" ", text).split())


def has_span_answer(question: Question) -> bool:
    """True if the question has a gold answer that is a span (not yes/no, not empty)."""
    return any(normalize_answer(a) not in ("", "yes", "no") for a in question.answers)


def answer_words(text: str) -> str:
    """Containment normalisation: as `normalize_answer`, except that punctuation separates
    words ("Jean-Paul" -> "jean paul", "3,677" -> "3 677") rather than gluing them."""
    text = text.lower().translate(_PUNCT_TO_SPACE)
    return " ".join(_ARTICLES_RE.sub(" ", text).split())


@lru_cache(maxsize=8192)
def _text_words(text: str) -> str:
    """`answer_words` of a candidate's text, remembered: the same passages are checked at
    every stage of a run and at every grid point of a sweep (it was 90% of a retrieval-only
    sweep's time)."""
    return answer_words(text)


def answer_in(texts: Iterable[str], answers: Sequence[str]) -> bool:
    """Whether any answer occurs, as whole words, in the joined texts (`answer_words` on
    both sides; normalising each text and joining them is normalising the joined text)."""
    haystack = f" {' '.join(w for w in map(_text_words, texts) if w)} "
    return any(f" {norm} " in haystack for a in answers if (norm := _text_words(a)))


def sentences_held(texts: Iterable[str], sentences: Sequence[str]) -> tuple[bool, ...]:
    """For each gold sentence, whether one of `texts` holds it whole (`answer_words` on both
    sides, so the white space and punctuation a sentence cut joins with do not count)."""
    haystacks = [f" {words} " for words in map(_text_words, texts) if words]
    return tuple(any(f" {norm} " in h for h in haystacks) if (norm := _text_words(s)) else False
                 for s in sentences)


def is_gold_sentence(text: str, gold: Sequence[str], least_words: int = 5) -> bool:
    """Whether `text` holds a gold supporting sentence, or is a part of one of at least
    `least_words` words (a splitter may cut a dataset's sentence in two; a short fragment
    such as "He died." is found in too many sentences to count)."""
    if any(sentences_held([text], gold)):
        return True
    return len(_text_words(text).split()) >= least_words and any(sentences_held(gold, (text,)))


def support_recall(doc_ids: Iterable[str], gold_titles: Sequence[str]) -> float:
    """Share of gold supporting documents among `doc_ids` (0 when there is no gold)."""
    if not gold_titles:
        return 0.0
    found = set(doc_ids)
    return sum(t in found for t in gold_titles) / len(gold_titles)


# --- answer metrics (reader output vs gold answers) ---------------------------------------


def _squad_golds(answers: Sequence[str]) -> list[str]:
    # SQuAD v2.0 get_raw_scores: drop golds that normalise to "", fall back to [""].
    return [n for a in answers if (n := normalize_answer(a))] or [""]


def _token_f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:  # SQuAD v2.0 compute_f1: 1 if both are empty, else 0
        return float(pred == gold)
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD EM: 1.0 if normalize_answer(prediction) equals a normalised gold alias.

    Max over aliases, as in the official SQuAD v2.0 script (`compute_exact`); with no
    non-empty gold, only an empty prediction scores 1.0.
    """
    pred = normalize_answer(prediction)
    return float(any(pred == gold for gold in _squad_golds(answers)))


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD token F1, max over gold aliases (official SQuAD v2.0 `compute_f1`).

    Tokens are normalize_answer(...).split(); overlap is the multiset (Counter)
    intersection; F1 = 2PR / (P + R). If either token list is empty, F1 is 1.0 when
    both are empty and 0.0 otherwise.
    """
    pred = normalize_answer(prediction).split()
    return max(_token_f1(pred, gold.split()) for gold in _squad_golds(answers))


def accuracy(prediction: str, answers: Sequence[str]) -> float:
    """Accuracy for long readers: 1.0 if a gold answer occurs inside the prediction.

    Same matching as `answer_in`: the gold's words inside the prediction's, on word
    boundaries (cf. the "substring match" on the long answer in LongRAG's eval/eval_qa.py);
    an exact match counts too, so accuracy >= EM even where the two normalisations differ
    ("3677" against "3,677"). Golds that normalise to "" never match.
    """
    real = [a for a in answers if normalize_answer(a)]
    return float(bool(real) and (answer_in([prediction], real)
                                 or bool(exact_match(prediction, real))))


def refined_exact_match(prediction: str, answers: Sequence[str]) -> float:
    """LongRAG-style refined EM: EM, or the gold inside a prediction that stays short.

    LongRAG (Jiang et al., 2024, arXiv:2406.15319) notes that plain EM is too strict for
    generated answers. Our exact rule: 1.0 if `exact_match` is 1.0, or if some gold answer
    with n normalised tokens occurs inside the normalised prediction on word boundaries
    and the prediction has at most max(2 * n, n + 5) normalised tokens; else 0.0. The
    length bound is Funnel Explorer's own choice, not a formula from the paper. For golds
    that do not normalise to "", EM <= refined EM <= accuracy.
    """
    if exact_match(prediction, answers):
        return 1.0
    pred = answer_words(prediction)  # containment as in `answer_in`
    size = len(pred.split())
    for answer in answers:
        gold = answer_words(answer)
        n = len(gold.split())
        if gold and f" {gold} " in f" {pred} " and size <= max(2 * n, n + 5):
            return 1.0
    return 0.0


# --- retrieval measures (ranked units vs gold) ---------------------------------------------


def _check_k(k: int) -> None:
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k!r}: ranks start at 1.")


def answer_recall_at(texts_by_rank: Sequence[str], answers: Sequence[str],
                     ks: Iterable[int]) -> dict[int, bool]:
    """AR@k for each k: `answer_in` over the texts of the top-k units (LongRAG).

    Args:
        texts_by_rank: unit texts, best first.
        answers: gold answer aliases.
        ks: cut-offs; a k beyond the list means "all units".

    Returns:
        {k: whether a gold answer occurs in the concatenation of units 1..k}.

    Raises:
        ConfigError: if some k < 1.
    """
    ks = list(ks)
    for k in ks:  # validate all before computing any
        _check_k(k)
    return {k: answer_in(texts_by_rank[:k], answers) for k in ks}


def _top_docs(doc_ids_by_rank: Sequence[Sequence[str]], k: int) -> set[str]:
    _check_k(k)
    return {doc for unit in doc_ids_by_rank[:k] for doc in unit}


def gold_document_recall(doc_ids_by_rank: Sequence[Sequence[str]],
                         gold_titles: Sequence[str], k: int) -> float:
    """Share of distinct gold documents among the documents of the top-k units.

    Args:
        doc_ids_by_rank: per unit (best first), the documents it is made of (a passage
            has one, a grouped unit several).
        gold_titles: gold supporting documents (HotpotQA titles, MuSiQue paragraphs).
        k: how many units count.

    Returns:
        |gold ∩ docs of units 1..k| / |gold|, 0.0 when there is no gold.

    Raises:
        ConfigError: if k < 1.
    """
    return support_recall(_top_docs(doc_ids_by_rank, k), list(dict.fromkeys(gold_titles)))


def all_gold_at(doc_ids_by_rank: Sequence[Sequence[str]], gold_titles: Sequence[str],
                k: int) -> bool:
    """True if every gold document is among the documents of the top-k units.

    False when there is no gold, as `gold_document_recall` gives 0.0; ConfigError if k < 1.
    """
    docs = _top_docs(doc_ids_by_rank, k)
    return bool(gold_titles) and set(gold_titles) <= docs


# trec_eval's measures an IR reader looks for first, at the reader's budget (4), at 10 and
# at 100; graded where the judgments are (nDCG's gain is the grade, the others count grade 1
# and up as relevant)
IR_MEASURES = ("nDCG@10", "RR", "AP", "R@4", "R@10", "R@100", "P@4")
# and where a test collection's judgments are given (partial, as pooled judgments are): the
# share of the top 10 that is judged, and nDCG@10 of the condensed list (unjudged documents
# removed before measuring, Sakai's nDCG')
JUDGED_MEASURES = ("Judged@10", "nDCG'@10")
_SPELLED = {"nDCG'@10": "nDCG(judged_only=True)@10"}  # as ir_measures parses it


def document_ranking(doc_ids_by_rank: Sequence[Sequence[str]]) -> list[str]:
    """The documents of ranked units, each at the rank of the first unit holding it (a
    cluster's members in their order within it)."""
    return list(dict.fromkeys(doc for unit in doc_ids_by_rank for doc in unit))


def ir_measures_by_stage(rankings: dict[str, Sequence[str]],
                         relevant: Sequence[str] | Mapping[str, int],
                         judged: bool = False) -> dict[str, dict[str, float]]:
    """`IR_MEASURES` of each stage's document ranking ({stage: documents, best first})
    against the `relevant` documents (or {document: grade}, grade 0 judged not relevant),
    computed by ir_measures (trec_eval's own code through pytrec_eval), so they match
    trec_eval on the same run; with `judged` (a test collection's judgments) also
    `JUDGED_MEASURES`. A document's score is derived from its rank (trec_eval orders by
    score, breaking ties by document id, which would reorder a stage's equal scores); a
    stage that returned nothing scores 0."""
    import ir_measures

    names = (*IR_MEASURES, *JUDGED_MEASURES) if judged else IR_MEASURES
    measures = [ir_measures.parse_measure(_SPELLED.get(name, name)) for name in names]
    named = {str(m): name for m, name in zip(measures, names, strict=True)}
    grades = relevant if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1)
    qrels = [ir_measures.Qrel(stage, doc, int(grade)) for stage in rankings
             for doc, grade in grades.items()]
    run = [ir_measures.ScoredDoc(stage, doc, float(len(docs) - rank))
           for stage, docs in rankings.items() for rank, doc in enumerate(docs)]
    found = {stage: dict.fromkeys(names, 0.0) for stage in rankings}
    for measured in ir_measures.iter_calc(measures, qrels, run):
        found[measured.query_id][named[str(measured.measure)]] = float(measured.value)
    return found


def contextual_integrity(source_titles: Sequence[str]) -> float:
    """Contextual-integrity entropy of the top-k passages (FunnelRAG, arXiv:2410.10293, C.3).

    Shannon entropy, natural log, of the distribution of source document titles:
    H = -sum_d p_d ln p_d with p_d = share of passages from document d. It is 0.0 when
    all passages come from one document (or there are none) and ln(n) when n passages
    come from n different documents. Lower means more contextually integral.
    """
    n = len(source_titles)
    return sum((c / n * math.log(n / c) for c in Counter(source_titles).values()), 0.0)
