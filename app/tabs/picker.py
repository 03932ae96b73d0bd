"""The question box with its optional dataset picker, shared by the Explore and Compare tabs.

Picking a dataset question fills the box and keeps the Question (gold answers, supporting
titles) in a gr.State, so the run is scored; editing the text afterwards drops the pick,
the gold and its note.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from app.errors import raising_refusals
from app.tabs.base import PRIVATE
from app.views.annotation import SET_ASIDE, trains_note
from app.views.trace import esc
from engine.data.corpus import grown_name
from engine.documents import Question
from engine.paradigms.base import MAX_QUESTION_CHARS
from engine.service.annotation import labelling_order, trainable
from engine.service.datasets import dataset_questions
from engine.service.explorer import Explorer

PASTE_LIMIT = 25 * MAX_QUESTION_CHARS
EXAMPLE = "Who painted A Sunday Afternoon on the Island of La Grande Jatte?"


Order = Callable[[dict[str, str]], dict[str, str]]


@dataclass
class QuestionPicker:
    question: gr.Textbox
    gold: gr.State  # the picked dataset Question, or None
    beside: gr.Component | None  # what `beside` built to the right of the question
    dataset: gr.Dropdown
    picked: gr.Dropdown
    gold_info: gr.Markdown
    order: Order | None = None  # of the datasets listed (Annotate's: trainable first)

    def follow(self, explorer: Explorer, corpus: gr.Dropdown) -> None:
        """The picked question's gold note counted in the corpus the tab searches, again
        whenever that choice changes; a collection's split picked picks its corpus."""
        corpus_follows(explorer, self.dataset, corpus, self.order)

        def note(path, qid, chosen):
            q = next((q for q in explorer.catalog.questions(path) if q.id == qid), None) \
                if path and qid else None
            if q is None:
                return ""
            chosen = (chosen or "").strip()
            if q.judged_only and chosen and chosen == explorer.catalog.dataset_corpus(path):
                # a collection's judgments name its own corpus's documents only (checked
                # when it was added): nothing to count, loaded or not
                return judged_markdown(q, explorer.catalog.titles(q.supporting_titles, chosen))
            counted = explorer.catalog.counted_corpus(chosen)
            held, total = explorer.catalog.supporting_in_corpus(q, chosen)
            if chosen and counted != chosen:  # not loaded: nothing to count in yet
                return gold_markdown(q, total, total) + (
                    f"  \n*Corpus {esc(chosen)} is not loaded yet (it loads on its first "
                    f"question); the start-up corpus {esc(counted)} holds {held} of the "
                    f"{total} supporting documents.*")
            grown = grown_name(counted, explorer.catalog.datasets().get(path, path))
            return gold_markdown(q, held, total, corpus=counted, grown=grown)

        for event in (self.picked.change, corpus.change):
            event(note, [self.dataset, self.picked, corpus], self.gold_info,
                  **PRIVATE)


def corpus_follows(explorer: Explorer, dataset: gr.Dropdown, corpus: gr.Dropdown,
                   order: Order | None = None) -> None:
    """An added collection's split picked in `dataset` picks the corpus it is judged over
    in `corpus` (its judgments name that corpus's documents); any other leaves it. And the
    other way: a corpus picked that has question sets of its own, with a dataset of another
    corpus, picks its first question set (HotpotQA over a user's corpus measures nothing);
    a corpus without any leaves the dataset as it is."""
    def judged_over(path):
        own = explorer.catalog.dataset_corpus(path) if path else None
        return gr.update(value=own) if own else gr.skip()

    def questions_of(chosen, path):
        own = own_question_set(explorer, chosen, path)
        # listed anew: a question set made after the page was drawn is not among its choices
        return gr.skip() if own is None else dataset_choices(explorer, order=order, value=own)

    dataset.change(judged_over, dataset, corpus, **PRIVATE, queue=False)
    corpus.change(questions_of, [corpus, dataset], dataset, **PRIVATE,
                  queue=False)


def own_question_set(explorer: Explorer, corpus: str | None, dataset: str | None) -> str | None:
    """The first question set of `corpus` when `dataset` is not one of its own; None when
    it is, or when `corpus` has none (the dataset then stays as it is)."""
    if not corpus or (dataset and explorer.catalog.dataset_corpus(dataset) == corpus):
        return None
    return next((path for path in explorer.catalog.datasets()
                 if explorer.catalog.dataset_corpus(path) == corpus), None)


HELD, PART, NONE, UNKNOWN = "●", "◐", "○", "·"


def evidence_mark(held: int, total: int) -> str:
    """How much of a question's gold evidence the corpus holds, as one symbol (UNKNOWN when
    the dataset names no supporting documents)."""
    if not total:
        return UNKNOWN
    return HELD if held == total else PART if held else NONE


def shorten(text: str, width: int = 100) -> str:
    """`text` cut at the last word boundary within `width` characters, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:width - 1].rsplit(" ", 1)[0] if " " in text[:width - 1] else text[:width - 1]
    return cut.rstrip(",;:") + "…"


def question_label(q: Question, mark: str = "") -> str:
    """A question as the picker lists it: its evidence mark and its text, shortened at a
    word; the dataset's id (often a 24-character hex string) stays the option's value."""
    return f"{mark} {shorten(q.text)}".strip()


def gold_markdown(q: Question, held: int, total: int, corpus: str = "the start-up corpus",
                  grown: str = "") -> str:
    """The picked question's gold, and, when `corpus` lacks some of its evidence, the
    corpora that hold it: `grown` (the corpus plus the dataset's paragraphs, what an
    evaluation of the dataset searches) and `pooled`."""
    if q.judged_only:  # a test collection's query: judged over its corpus
        text = judged_markdown(q)
        if held < total:
            text += (f"  \n*Corpus {esc(corpus)} holds {held} of its {total} documents "
                     "judged relevant: pick the collection's own corpus.*")
        return text
    text = (f"**Gold answers:** {esc(' | '.join(q.answers)) or '(none)'}  \n"
            f"**Supporting titles:** {esc(' | '.join(q.supporting_titles)) or '(none)'}")
    if held < total:
        offer = (f"the corpus `{esc(grown)}` (it plus this dataset's paragraphs: what an "
                 "evaluation of the dataset searches) or " if grown else "")
        text += (f"  \n*Corpus {esc(corpus)} holds {held} of its {total} supporting "
                 f"documents, so gold-document recall over it cannot reach 1. Choose {offer}"
                 "the `pooled` corpus (every dataset's paragraphs) to search them too.*")
    return text


def dataset_choices(explorer: Explorer, first: bool = False, order: Order | None = None,
                    **kwargs) -> dict:
    """The listed datasets that are here as a dropdown update (the first one picked with
    `first`; in `order`'s order), saying in its info which are missing and the one command
    that fetches them."""
    datasets = explorer.catalog.datasets()
    datasets = order(datasets) if order is not None else datasets
    return gr.update(choices=[(label, path) for path, label in datasets.items()],
                     info=explorer.catalog.datasets_note() or None, **kwargs,
                     **({"value": next(iter(datasets), None)} if first else {}))


def dataset_dropdown(explorer: Explorer, label: str, first: bool = False,
                     order: Order | None = None, **kwargs) -> gr.Dropdown:
    """A dropdown of the listed datasets, by name (in `order`'s order). Its choices are
    read again whenever it is opened: the QA data may arrive after the page was built (a
    first start fetches it in the background)."""
    update = dataset_choices(explorer, first, order)
    dropdown = gr.Dropdown(update["choices"], value=update.get("value"), label=label,
                           info=update["info"], **kwargs)
    dropdown.focus(lambda: dataset_choices(explorer, order=order), None, dropdown,
                   **PRIVATE, queue=False)
    return dropdown


def questions_update(explorer: Explorer, path, labelling: bool = False) -> tuple[dict, str]:
    """(the question dropdown's update, the note on labels) for the dataset picked: its
    listed questions marked by how much of their gold evidence the start-up corpus holds,
    and how many of its questions are listed. `labelling` (Annotate): the questions whose
    labels cannot train are marked "held out" and the note says which labels train."""
    if not path:
        return gr.update(choices=[], value=None, info=None), SET_ASIDE if labelling else ""
    qs = explorer.catalog.questions(path)
    total = len(dataset_questions(path))
    listed = (f"All its {total} questions" if len(qs) == total else
              f"The first {len(qs)} of its {total} questions, in the file's order (a "
              "shorter list opens quickly; Evaluate can run them all)")
    trains = trainable(dataset_questions(path)) if labelling else None
    held = "" if trains is None or not trains else " · held out"
    note = trains_note(explorer.catalog.datasets().get(path, path), total, trains) if labelling \
        else ""

    def shown(q: Question, mark: str = "") -> str:
        return question_label(q, mark) + (held if held and q.id not in trains else "")

    if explorer.catalog.corpus is None:  # nothing to look the evidence up in yet
        return gr.update(choices=[(shown(q), q.id) for q in qs], value=None,
                         info=f"{listed}. The corpus is still loading: pick the dataset "
                              "again to see which questions it can answer"), note
    own = explorer.catalog.dataset_corpus(path) or ""  # a collection's: judged over its corpus
    if own:  # whose judgments name its documents only (checked when it was added)
        marked = [(evidence_mark(len(q.supporting_titles), len(q.supporting_titles)), q)
                  for q in qs]
        holder = f"its corpus {own}"
    else:
        marked = [(evidence_mark(*explorer.catalog.supporting_in_corpus(q)), q) for q in qs]
        holder = "the start-up corpus"
    whole = sum(mark == HELD for mark, _ in marked)
    relevant = "document judged relevant" if own else "supporting document"
    return gr.update(choices=[(shown(q, mark), q.id) for mark, q in marked], value=None,
                     info=f"{listed}. {HELD} {holder} holds every {relevant} "
                          f"({whole} of {len(qs)}), {PART} some, {NONE} none, "
                          f"{UNKNOWN} not named by the dataset"), note


def judged_markdown(q: Question, titles: dict[str, str] | None = None,
                    shown: int = 8) -> str:
    """A judged question's gold: its relevant documents by grade (the first `shown`, by
    title where `titles` has one, else by id), how many are judged not relevant, and that
    it has no answers."""
    titles = titles or {}
    relevant = sorted(((g, d) for d, g in q.judgments if g >= 1), key=lambda p: -p[0])
    # by title and id: a collection's titles need not be unique (ArguAna's are topics)
    named = ", ".join(f"{esc(titles[d])} `{esc(d)}` ({g})" if titles.get(d, d) != d
                      else f"{esc(d)} ({g})" for g, d in relevant[:shown])
    more = f" and {len(relevant) - shown} more" if len(relevant) > shown else ""
    unrelated = sum(g < 1 for _, g in q.judgments)
    return (f"**Judged relevant (grade):** {named or '(none)'}{more}  \n"
            f"**Judged not relevant:** {unrelated} · **Gold answers:** none (a test "
            "collection's query: measured against its judgments)")


def question_picker(explorer: Explorer, prefix: str,
                    beside: Callable[[], gr.Component] | None = None,
                    labelling: bool = False) -> QuestionPicker:
    """Dataset and question dropdowns, the gold shown, and the question textbox with what
    `beside` builds to its right; element ids start with `prefix` (#fe-question).
    `labelling` (Annotate): the datasets whose labels train come first, and a note beside
    the picker says whether the chosen dataset's labels can train."""
    gold = gr.State(None)
    with gr.Row():
        dataset = dataset_dropdown(explorer, "Dataset (optional)", scale=1,
                                   order=labelling_order if labelling else None,
                                   elem_id=f"{prefix}-dataset")
        picked = gr.Dropdown([], label="Question from the dataset", scale=3,
                             elem_id=f"{prefix}-picked")
    trains = gr.Markdown(SET_ASIDE, elem_id=f"{prefix}-trains", visible=labelling)
    gold_info = gr.Markdown(elem_id=f"{prefix}-gold")
    with gr.Row():
        question = gr.Textbox(label="Question", placeholder=f"e.g. {EXAMPLE}", scale=4,
                              lines=1,
                              # the browser cuts silently at max_length; a run refuses
                              # more than MAX_QUESTION_CHARS, naming the length, as the
                              # API does (engine.paradigms.base.check_question)
                              max_length=PASTE_LIMIT, elem_id=f"{prefix}-question")
        extra = beside() if beside else None

    @raising_refusals  # a toast: the picker has no box of its own
    def load_dataset(path):
        return questions_update(explorer, path, labelling)

    def pick(path, qid):
        q = next((q for q in explorer.catalog.questions(path) if q.id == qid), None) \
            if path and qid else None
        if q is None:
            return gr.update(), None
        return q.text, q

    def typed(text, q):
        # a question typed over the picked one is not it: the pick, its gold and its note go
        if q is None or q.text == text:
            return gr.skip(), gr.skip(), gr.skip()
        return None, None, ""

    dataset.change(load_dataset, dataset, [picked, trains], **PRIVATE)
    picked.change(pick, [dataset, picked], [question, gold], **PRIVATE)
    question.input(typed, [question, gold], [picked, gold, gold_info],
                   **PRIVATE)
    # the gold note: QuestionPicker.follow, once the tab's corpus choice is built
    return QuestionPicker(question, gold, extra, dataset, picked, gold_info,
                          labelling_order if labelling else None)


def target(text: str, gold: Question | None) -> str | Question:
    """What to run: the picked Question while the box still holds its text, else the text."""
    return gold if gold is not None and gold.text == text else text
