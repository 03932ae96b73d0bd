"""Judge: relevance judged the TREC way over your own corpus (engine.service.judging).

1. A question set: a question list (a file, or questions pasted one a line) for an added
   corpus, listed by every Dataset choice as "<corpus> (<name>)".
2. A pool: the paradigms' top documents for its questions (depth d), with how long judging
   them takes.
3. Judging: the pool unit by unit, the question's words highlighted in the unit's text
   (escaped); keys 0-3 grade it (0 irrelevant, 1 related, 2 highly relevant, 3 perfectly
   relevant), s skips it, u takes back the last grade. Each grade is stored with who gave
   it and how long it took, and the question set's measures read it at once.
"""

from __future__ import annotations

import json
import time
from functools import partial

import gradio as gr

from app.errors import refusing
from app.tabs.base import Refresh, Tab
from app.tabs.corpora import uploaded_path
from app.views.trace import esc, highlight
from engine.errors import ConfigError
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer
from engine.store.judgments import GRADES

# the keys (app.tabs.annotate.KEYS_JS binds them while this tab is shown)
KEYS = {str(grade): f"fe-judge-{grade}" for grade in GRADES} | {"s": "fe-judge-skip",
                                                                 "u": "fe-judge-undo"}


def pool_choices(explorer: Explorer) -> list[tuple[str, int]]:
    return [(f"{p.id}: {p.name} ({p.units} units)", p.id) for p in explorer.pools()]


def card(unit, question: str, progress: tuple[int, int]) -> str:
    """The unit to judge: its question, its title and text (the question's words marked),
    which systems found it; or that the pool is judged."""
    judged, total = progress
    head = f"<div class='fe-progress' id='fe-judge-progress'>{judged} of {total} judged</div>"
    if unit is None:
        return head + ("<div class='fe-kept'>Every unit of this pool is judged (or skipped): "
                       "its question set's measures read your grades.</div>")
    found = ", ".join(f"{esc(system)} #{rank}" for system, rank in unit.found_by)
    return (f"{head}<div class='fe-judge-card'><p><b>Question {esc(unit.question_id)}:</b> "
            f"{esc(question)}</p><p><b>{esc(unit.title)}</b> <code>{esc(unit.document_id)}"
            f"</code></p><p class='fe-judge-text'>{highlight(unit.text, question)}</p>"
            f"<p><small>found by {found or '-'}</small></p></div>")


@refusing(outputs=3)
def show(explorer: Explorer, pool_id, assessor, skipped: list[int]) -> tuple:
    """(card, the unit shown as JSON with the time it was shown, skipped positions)."""
    if pool_id in (None, ""):
        raise ConfigError("Pick a pool to judge (pool a question set first).")
    unit, question, progress = explorer.to_judge(int(pool_id), assessor, tuple(skipped))
    shown = json.dumps({"question_id": unit.question_id, "document_id": unit.document_id,
                        "position": unit.position, "at": time.time()}) if unit else ""
    return card(unit, question, progress), shown, skipped


def graded(explorer: Explorer, grade: int, pool_id, assessor, shown: str,
           skipped: list[int]) -> tuple:
    if not shown:
        return show(explorer, pool_id, assessor, skipped)
    unit = json.loads(shown)
    explorer.judge(int(pool_id), unit["question_id"], unit["document_id"], grade, assessor,
                   round(time.time() - unit["at"], 2))
    return show(explorer, pool_id, assessor, skipped)


def build(explorer: Explorer) -> Tab:
    gr.Markdown("Judge relevance over your own corpus, the TREC way: a **question set** for "
                "an added corpus, a **pool** of the paradigms' top documents for it, then "
                "each pooled unit graded with the keys **0-3** (0 irrelevant, 1 related, "
                "2 highly relevant, 3 perfectly relevant), **s** to skip, **u** to undo. "
                "Every grade counts at once in Evaluate and Diagnose for that question set.")
    with gr.Accordion("1. A question set", open=False):
        with gr.Row():
            corpus = gr.Textbox(label="Added corpus", elem_id="fe-judge-corpus", scale=1)
            name = gr.Textbox(label="Question set name", elem_id="fe-judge-set", scale=1,
                              placeholder="e.g. support")
        listed = gr.File(label="Question list (txt, csv, jsonl)", type="filepath",
                         elem_id="fe-judge-file")
        pasted = gr.Textbox(label="…or questions, one a line", lines=4,
                            elem_id="fe-judge-pasted")
        add = gr.Button("Add the question set", elem_id="fe-judge-add")
    with gr.Accordion("2. A pool", open=False):
        with gr.Row():
            dataset = gr.Textbox(label="Question set", elem_id="fe-judge-dataset", scale=2,
                                 placeholder="corpus (name)")
            paradigms = gr.CheckboxGroup(list(PARADIGMS), value=[
                p for p in ("flat", "funnel", "best") if p in PARADIGMS], label="Paradigms",
                elem_id="fe-judge-paradigms", scale=2)
            depth = gr.Number(5, label="Depth", precision=0, elem_id="fe-judge-depth",
                              scale=1)
        make = gr.Button("Pool them", elem_id="fe-judge-pool")
    message = gr.HTML(elem_id="fe-judge-message")
    with gr.Row():
        pool = gr.Dropdown(pool_choices(explorer), label="Pool", elem_id="fe-judge-pools",
                           scale=2)
        assessor = gr.Textbox(label="Assessor (your name)", elem_id="fe-judge-assessor",
                              scale=1)
        start = gr.Button("Judge", variant="primary", elem_id="fe-judge-start", scale=1)
    shown_card = gr.HTML(elem_id="fe-judge-card")
    with gr.Row():
        grades = [gr.Button(f"{g} {label}", elem_id=KEYS[str(g)]) for g, label in GRADES.items()]
        skip = gr.Button("skip (s)", elem_id=KEYS["s"])
        undo = gr.Button("undo (u)", elem_id=KEYS["u"])
    shown = gr.State("")
    skipped = gr.State([])
    private = {"api_visibility": "private"}

    @refusing()
    def added(corpus_name, set_name, upload, text) -> str:
        split = explorer.add_questions(corpus_name, set_name, uploaded_path(upload) or "",
                                       text or "")
        return (f"<div class='fe-kept'>Question set <b>{esc(split.label)}</b>: "
                f"{split.questions} questions. Pool it next.</div>")

    @refusing(outputs=2)
    def pooled(name_, chosen, d) -> tuple:
        pool_id, estimate = explorer.make_pool(name_, list(chosen or []), int(d or 5))
        return (f"<div class='fe-kept'>Pool {pool_id}: {esc(estimate)}.</div>",
                gr.Dropdown(pool_choices(explorer), value=pool_id))

    add.click(added, [corpus, name, listed, pasted], message, **private)
    make.click(pooled, [dataset, paradigms, depth], [message, pool], **private)
    views = [shown_card, shown, skipped]
    start.click(partial(show, explorer), [pool, assessor, skipped], views, **private)
    for g, button in enumerate(grades):
        button.click(refusing(outputs=3)(partial(graded, explorer, g)),
                     [pool, assessor, shown, skipped], views, **private)

    def skipping(pool_id, who, now: str, gone: list[int]) -> tuple:
        gone = [*gone, json.loads(now)["position"]] if now else gone
        return show(explorer, pool_id, who, gone)

    @refusing(outputs=3)
    def undoing(pool_id, who, gone: list[int]) -> tuple:
        explorer.undo_judgment(int(pool_id), who)
        return show(explorer, pool_id, who, gone)

    skip.click(skipping, [pool, assessor, shown, skipped], views, **private)
    undo.click(undoing, [pool, assessor, skipped], views, **private)
    return Tab(refresh=Refresh(lambda: gr.Dropdown(pool_choices(explorer)), [pool]),
               on_load=True)
