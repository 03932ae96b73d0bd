"""The question box with its optional dataset picker, shared by the Explore and Compare tabs.

Picking a dataset question fills the box and keeps the Question (gold answers, supporting
titles) in a gr.State, so the run is scored; editing the text afterwards drops the gold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from app.errors import raising_refusals
from app.views.trace import esc
from engine.documents import Question
from engine.paradigms.base import MAX_QUESTION_CHARS
from engine.service.explorer import Explorer

PASTE_LIMIT = 25 * MAX_QUESTION_CHARS
EXAMPLE = "Who painted A Sunday Afternoon on the Island of La Grande Jatte?"


@dataclass
class QuestionPicker:
    question: gr.Textbox
    gold: gr.State  # the picked dataset Question, or None
    beside: gr.Component | None  # what `beside` built to the right of the question


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


def gold_markdown(q: Question, held: int, total: int) -> str:
    """The picked question's gold, and a hint when the corpus lacks its evidence."""
    text = (f"**Gold answers:** {esc(' | '.join(q.answers)) or '(none)'}  \n"
            f"**Supporting titles:** {esc(' | '.join(q.supporting_titles)) or '(none)'}")
    if held < total:
        text += (f"  \n*The start-up corpus holds {held} of its {total} supporting "
                 "documents, so gold-document recall over it cannot reach 1. Choose the "
                 "`pooled` corpus to search every dataset's paragraphs too.*")
    return text


def dataset_choices(explorer: Explorer, first: bool = False, **kwargs) -> dict:
    """The listed datasets that are here as a dropdown update (the first one picked with
    `first`), saying in its info which are missing and the one command that fetches them."""
    datasets = explorer.datasets()
    return gr.update(choices=[(label, path) for path, label in datasets.items()],
                     info=explorer.datasets_note() or None, **kwargs,
                     **({"value": next(iter(datasets), None)} if first else {}))


def dataset_dropdown(explorer: Explorer, label: str, first: bool = False,
                     **kwargs) -> gr.Dropdown:
    """A dropdown of the listed datasets, by name. Its choices are read again whenever it
    is opened: the QA data may arrive after the page was built (a first start fetches it
    in the background)."""
    update = dataset_choices(explorer, first)
    dropdown = gr.Dropdown(update["choices"], value=update.get("value"), label=label,
                           info=update["info"], **kwargs)
    dropdown.focus(lambda: dataset_choices(explorer), None, dropdown,
                   api_visibility="private", queue=False)
    return dropdown


def question_picker(explorer: Explorer, prefix: str,
                    beside: Callable[[], gr.Component] | None = None) -> QuestionPicker:
    """Dataset and question dropdowns, the gold shown, and the question textbox with what
    `beside` builds to its right; element ids start with `prefix` (#fe-question)."""
    gold = gr.State(None)
    with gr.Row():
        dataset = dataset_dropdown(explorer, "Dataset (optional)", scale=1,
                                   elem_id=f"{prefix}-dataset")
        picked = gr.Dropdown([], label="Question from the dataset", scale=3,
                             elem_id=f"{prefix}-picked")
    gold_info = gr.Markdown(elem_id=f"{prefix}-gold")
    with gr.Row():
        question = gr.Textbox(label="Question", value=EXAMPLE, scale=4, lines=1,
                              # the browser cuts silently at max_length; a run refuses
                              # more than MAX_QUESTION_CHARS, naming the length, as the
                              # API does (engine.paradigms.base.check_question)
                              max_length=PASTE_LIMIT, elem_id=f"{prefix}-question")
        extra = beside() if beside else None

    @raising_refusals  # a toast: the picker has no box of its own
    def load_dataset(path):
        if not path:
            return gr.update(choices=[], value=None, info=None)
        qs = explorer.questions(path)
        if explorer.corpus is None:  # nothing to look the evidence up in yet
            return gr.update(choices=[(question_label(q), q.id) for q in qs],
                             value=None, info="the corpus is still loading: pick the dataset "
                                              "again to see which questions it can answer")
        marked = [(evidence_mark(*explorer.supporting_in_corpus(q)), q) for q in qs]
        whole = sum(mark == HELD for mark, _ in marked)
        return gr.update(choices=[(question_label(q, mark), q.id) for mark, q in marked],
                         value=None,
                         info=f"{HELD} the start-up corpus holds every supporting document "
                              f"({whole} of {len(qs)}), {PART} some, {NONE} none, "
                              f"{UNKNOWN} not named by the dataset")

    def pick(path, qid):
        q = next((q for q in explorer.questions(path) if q.id == qid), None) \
            if path and qid else None
        if q is None:
            return gr.update(), None, ""
        return q.text, q, gold_markdown(q, *explorer.supporting_in_corpus(q))

    dataset.change(load_dataset, dataset, picked, api_visibility="private")
    picked.change(pick, [dataset, picked], [question, gold, gold_info], api_visibility="private")
    return QuestionPicker(question, gold, extra)


def target(text: str, gold: Question | None) -> str | Question:
    """What to run: the picked Question while the box still holds its text, else the text."""
    return gold if gold is not None and gold.text == text else text
