"""Judge: relevance judged the TREC way over your own corpus (engine.service.judging).

1. A question set for an added corpus, listed by every Dataset choice as "<corpus>
   (<name>)": a question list (a file, or questions pasted one a line), the questions of
   the saved runs (a pipeline's, received or imported), or questions generated from the
   corpus's passages with their round trip's pass rate.
2. A pool: the paradigms run over its questions as an evaluation (in the background, its
   progress shown), then their top documents pooled (depth d), with how long judging them
   takes; that evaluation reads the grades as they come.
3. Judging: the pool unit by unit, the question's words highlighted in the unit's text
   (escaped); keys 0-3 grade it (0 irrelevant, 1 related, 2 highly relevant, 3 perfectly
   relevant), s skips it, u takes back the last grade. Each grade is stored with who gave
   it and how long it took, and the question set's measures read it at once.
4. The LLM judge over what is left of the pool, through any reader backend; Diagnose's
   Assessors view compares it with a person.
5. Judgments out and in: TREC qrels, or JSONL with who judged each.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

import gradio as gr

from app.downloads import download
from app.errors import refusing
from app.tabs.base import PRIVATE, Refresh, Tab, place_choice
from app.tabs.corpora import uploaded_path
from app.tabs.evaluate import POLL_SECONDS
from app.views.annotation import plural
from app.views.trace import esc, highlight
from engine.data.loaders.jsonio import read_text
from engine.errors import ConfigError
from engine.judging.pools import NothingToPool
from engine.paradigms.registry import PARADIGMS, parse_config
from engine.progress import duration
from engine.service.explorer import Explorer
from engine.store.judgments import GRADES

# the keys (app.tabs.annotate.KEYS_JS binds them while this tab is shown)
KEYS = {str(grade): f"fe-judge-{grade}" for grade in GRADES} | {"s": "fe-judge-skip",
                                                                 "u": "fe-judge-undo"}
WHOLE_CHARS = 20_000  # of a whole document shown under its unit


def pool_choices(explorer: Explorer) -> list[tuple[str, int]]:
    """Each pool as "<id>: <name> (<units> units, evaluation <id>, <made>)": two pools of
    one set, paradigms and depth still read apart."""
    return [(f"{p.id}: {p.name} ({p.units} units"
             f"{'' if p.evaluation_id is None else f', evaluation {p.evaluation_id}'}, "
             f"made {str(p.created)[:16]})", p.id) for p in explorer.judging.pools()]


def added_corpora(explorer: Explorer) -> list[str]:
    return [row.name for row in explorer.catalog.corpora() if row.origin == "added"]


def question_sets(explorer: Explorer) -> list[str]:
    return explorer.judging.question_sets()


def card(unit, question: str, progress: tuple[int, int], pace: float | None = None,
         document=None) -> str:
    """The unit to judge: its question, its title and text (the question's words marked),
    the whole `document` it comes from, folded, where that is more than the unit, which
    systems found it; or that the pool is judged. `pace`: the assessor's median seconds a
    judgment, and so the time left."""
    judged, total = progress
    timing = "" if pace is None else (
        f" · {pace:.1f} s a judgment (your median) · about "
        f"{duration((total - judged) * pace)} left")
    head = (f"<div class='fe-progress' id='fe-judge-progress'>{judged} of {total} judged"
            f"{timing}</div>")
    if unit is None:
        return head + ("<div class='fe-kept'>Every unit of this pool is judged (or skipped): "
                       "its question set's measures read your grades.</div>")
    found = ", ".join(f"{esc(system)} #{rank}" for system, rank in unit.found_by)
    return (f"{head}<div class='fe-judge-card'><p><b>Question {esc(unit.question_id)}:</b> "
            f"{esc(question)}</p><p><b>{esc(unit.title)}</b> <code>{esc(unit.document_id)}"
            f"</code></p><p class='fe-judge-text'>{highlight(unit.text, question)}</p>"
            f"{_whole(document, unit.text, question)}"
            f"<p><small>found by {found or '-'}</small></p></div>")


def _whole(document, shown: str, question: str) -> str:
    """The whole document, folded under the unit shown (which is one passage of it); ''
    when the unit is the whole document or the document is not at hand."""
    if document is None or len(document.text.strip()) <= len(shown.strip()):
        return ""
    text = document.text
    cut = len(text) > WHOLE_CHARS
    words = len(text.split())
    return (f"<details class='fe-judge-whole' id='fe-judge-whole'><summary>The whole "
            f"document ({words:,} words; the pool shows its passage ranked best)</summary>"
            f"<p class='fe-judge-text'>{highlight(text[:WHOLE_CHARS], question)}"
            f"{' [...]' if cut else ''}</p>"
            + (f"<p><small>its first {WHOLE_CHARS:,} characters of {len(text):,}</small>"
               "</p>" if cut else "") + "</details>")


@refusing(outputs=3)
def show(explorer: Explorer, pool_id, assessor, skipped: list[int]) -> tuple:
    """(card, the unit shown as JSON with the time it was shown, skipped positions)."""
    if pool_id in (None, ""):
        raise ConfigError("Pick a pool to judge (pool a question set first).")
    unit, question, progress = explorer.judging.to_judge(int(pool_id), assessor,
                                                         tuple(skipped))
    shown = json.dumps({"question_id": unit.question_id, "document_id": unit.document_id,
                        "position": unit.position, "at": time.time()}) if unit else ""
    pace = explorer.judging.pace(int(pool_id), assessor)
    document = explorer.judging.document(int(pool_id), unit.document_id) if unit else None
    return card(unit, question, progress, pace, document), shown, skipped


def graded(explorer: Explorer, grade: int, pool_id, assessor, shown: str,
           skipped: list[int]) -> tuple:
    if not shown:
        return show(explorer, pool_id, assessor, skipped)
    unit = json.loads(shown)
    explorer.judging.judge(int(pool_id), unit["question_id"], unit["document_id"], grade,
                           assessor, round(time.time() - unit["at"], 2))
    return show(explorer, pool_id, assessor, skipped)


def _said(text: str, kind: str = "fe-progress") -> str:
    return f"<div class='{kind}'>{text}</div>"


@refusing(outputs=2)
def pooling(explorer: Explorer, dataset, chosen, depth, configs_json=""):
    """Run the paradigms over the question set as an evaluation (in the background, as
    Evaluate runs one), saying how far it got, then pool its runs."""
    if not dataset:
        raise ConfigError("Pick the question set to pool (add one in step 1).")
    if not chosen:
        raise ConfigError("Pick the paradigms to pool, e.g. flat, funnel and best.")
    evaluation_id = explorer.evaluations.evaluate(dataset, list(chosen), parse_config(configs_json))
    status = explorer.evaluations.evaluation_status(evaluation_id)
    while status.state == "running":
        yield _said(f"Evaluation {evaluation_id} runs {esc(', '.join(chosen))} over "
                    f"{esc(dataset)}: {status.done} of {status.total} questions "
                    "(it goes on if you leave)."), gr.skip()
        explorer.evaluations.wait_for_evaluation(evaluation_id, timeout=POLL_SECONDS)
        status = explorer.evaluations.evaluation_status(evaluation_id)
    if status.state != "done":
        raise ConfigError(f"Evaluation {evaluation_id} {status.state}: "
                          f"{status.error or 'see the Evaluate tab'}.")
    try:
        pool_id, estimate = explorer.judging.pool_evaluation(evaluation_id, int(depth or 5))
    except NothingToPool:  # the evaluation was run for this pool alone: it goes too
        explorer.evaluations.remove_evaluation(evaluation_id)
        raise
    yield (_said(f"Pool {pool_id} of evaluation {evaluation_id}: {esc(estimate)}. Its "
                 "nDCG per stage reads your grades in Evaluate and Diagnose.", "fe-kept"),
           gr.Dropdown(pool_choices(explorer), value=pool_id))


@refusing()
def generating(explorer: Explorer, corpus, name, count, model, endpoint):
    """Generate a question set, saying how far it got and its round trip's pass rate."""
    last = None
    for last in explorer.judging.generate_questions(corpus or "", name or "",
                                                    int(count or 30), model or "smollm2",
                                                    endpoint or ""):
        yield _said(f"{last.asked} of {last.total} passages asked: {last.written} "
                    f"questions written, {len(last.kept)} found their passage again.")
    rate = f"{last.pass_rate:.0%}" if last and last.pass_rate is not None else "-"
    yield _said(f"Question set <b>{esc(corpus)} ({esc(name)})</b>: {len(last.kept)} "
                f"generated questions kept of {last.written} written from {last.total} "
                f"passages (round-trip pass rate {rate}); each judges its source passage's "
                "document 3. Pool it next.", "fe-kept")


@refusing()
def llm_judging(explorer: Explorer, pool_id, model, endpoint, limit):
    """The LLM judge over the pool's units it has not judged, saying how far it got."""
    if pool_id in (None, ""):
        raise ConfigError("Pick the pool the LLM judges (above).")
    last = None
    for last in explorer.judging.llm_judge(int(pool_id), model or "smollm2", endpoint or "",
                                           int(limit) if limit else None):
        yield _said(f"The LLM judge: {plural(last.judged, 'unit')} graded, "
                    f"{last.unreadable} answered without a grade; {last.left} left to grade.")
    yield _said("The LLM judge has nothing left to judge in this pool." if last is None else
                f"The LLM judge graded {plural(last.judged, 'unit')}; "
                f"{last.unreadable} answered without a grade (asked again next time); "
                f"{last.left} left to grade. "
                "Diagnose's Assessors view compares it with a person.", "fe-kept")


def build(explorer: Explorer) -> Tab:
    gr.Markdown("Judge relevance over your own corpus, the TREC way: a **question set** for "
                "an added corpus, a **pool** of the paradigms' top documents for it, then "
                "each pooled unit graded with the keys **0-3** (0 irrelevant, 1 related, "
                "2 highly relevant, 3 perfectly relevant), **s** to skip, **u** to undo. "
                "Every grade counts at once in Evaluate and Diagnose for that question set.")
    with gr.Accordion("1. A question set", open=False):
        corpus, making = _question_set_panel(explorer)
    with gr.Accordion("2. A pool", open=False):
        dataset, pooled = _pool_panel(explorer)
    message = gr.HTML(elem_id="fe-judge-message")
    pool = _grading_panel(explorer)
    with gr.Accordion("The LLM judge", open=False):
        _llm_panel(explorer, pool)
    with gr.Accordion("Judgments out and in", open=False):
        _exchange_panel(explorer, dataset, message)

    def sets(chosen=None) -> gr.Dropdown:
        return gr.Dropdown(question_sets(explorer), value=chosen)

    making(message, dataset, sets)
    pooled(message, pool)
    return Tab(refresh=Refresh(lambda: (gr.Dropdown(pool_choices(explorer)),
                                        gr.Dropdown(added_corpora(explorer)), sets()),
                               [pool, corpus, dataset]), on_load=True)


def _question_set_panel(explorer: Explorer) -> tuple:
    """Step 1: an added corpus's question set from a list, the saved runs or generated.
    Returns the corpus dropdown and how to wire the buttons to the tab's message and
    question set dropdown (drawn further down) and how to list the sets."""
    with gr.Row():
        corpus = gr.Dropdown(added_corpora(explorer), label="Added corpus",
                             elem_id="fe-judge-corpus", scale=1)
        name = gr.Textbox(label="Question set name", elem_id="fe-judge-set", scale=1,
                          placeholder="e.g. support")
    with gr.Tab("A list"):
        listed = gr.File(label="Question list (txt, csv, jsonl)", type="filepath",
                         elem_id="fe-judge-file")
        pasted = gr.Textbox(label="…or questions, one a line", lines=4,
                            elem_id="fe-judge-pasted")
        add = gr.Button("Add the question set", elem_id="fe-judge-add")
    with gr.Tab("Your pipeline's"):
        gr.Markdown("The questions of the saved runs: those your pipeline sent to the "
                    "OTLP receiver, or imported as traces (the Runs tab).")
        from_runs = gr.Button("Add the saved runs' questions", elem_id="fe-judge-from-runs")
    with gr.Tab("Generated"):
        gr.Markdown("A question per passage of a sample spread over the corpus, written "
                    "by a reader model; kept only if BM25 or the bi-encoder finds its "
                    "passage again in its top 20 (the pass rate is shown).")
        with gr.Row():
            count = gr.Number(30, label="Passages", precision=0, elem_id="fe-judge-gen-count")
            writer = gr.Textbox("smollm2", label="Reader model", elem_id="fe-judge-gen-model")
            writer_at = place_choice("endpoints", "Endpoint", "fe-judge-gen-endpoint",
                                     "none: the model here",
                                     info="an OpenAI-compatible server the operator "
                                          "allowed; the model is then its name there")
        generate = gr.Button("Generate questions", elem_id="fe-judge-generate")

    def wire(message, dataset, sets) -> None:
        @refusing(outputs=2)
        def added(corpus_name, set_name, upload, text) -> tuple:
            split = explorer.judging.add_questions(corpus_name or "", set_name or "",
                                                   uploaded_path(upload) or "", text or "")
            return _kept_set(split), sets(split.label)

        @refusing(outputs=2)
        def added_runs(corpus_name, set_name) -> tuple:
            split = explorer.judging.add_run_questions(corpus_name or "", set_name or "")
            return _kept_set(split), sets(split.label)

        add.click(added, [corpus, name, listed, pasted], [message, dataset], **PRIVATE)
        from_runs.click(added_runs, [corpus, name], [message, dataset], **PRIVATE)
        generate.click(partial(generating, explorer), [corpus, name, count, writer, writer_at],
                       message, **PRIVATE).then(sets, None, dataset, **PRIVATE)

    return corpus, wire


def _pool_panel(explorer: Explorer) -> tuple:
    """Step 2: a question set's pool of the paradigms' top documents. Returns the question
    set dropdown and how to wire the button to the tab's message and pool dropdown."""
    with gr.Row():
        dataset = gr.Dropdown(question_sets(explorer), label="Question set",
                              elem_id="fe-judge-dataset", scale=2)
        paradigms = gr.CheckboxGroup([(spec.label, name) for name, spec in
                                      PARADIGMS.items()], value=[
            p for p in ("flat", "funnel", "best") if p in PARADIGMS], label="Paradigms",
            elem_id="fe-judge-paradigms", scale=2)
        depth = gr.Number(5, label="Depth", precision=0, elem_id="fe-judge-depth", scale=1)
    configs = gr.Textbox(label="Configs (JSON, optional)", elem_id="fe-judge-configs",
                         placeholder='e.g. {"best": {"classify": false}} to pool best '
                                     'for every question')
    make = gr.Button("Pool them", elem_id="fe-judge-pool")

    def wire(message, pool) -> None:
        make.click(partial(pooling, explorer), [dataset, paradigms, depth, configs],
                   [message, pool], **PRIVATE)

    return dataset, wire


def _grading_panel(explorer: Explorer) -> gr.Dropdown:
    """Step 3: a pool judged unit by unit (grades, skip and undo on keys). Returns the
    pool dropdown."""
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
    views = [shown_card, shown, skipped]
    # a grade is a small write: it waits behind no run for a slot, and shows no spinner
    at_once = {**PRIVATE, "concurrency_limit": None, "show_progress": "hidden"}
    start.click(partial(show, explorer), [pool, assessor, skipped], views, **PRIVATE)
    for g, button in enumerate(grades):
        button.click(refusing(outputs=3)(partial(graded, explorer, g)),
                     [pool, assessor, shown, skipped], views, **at_once)

    def skipping(pool_id, who, now: str, gone: list[int]) -> tuple:
        gone = [*gone, json.loads(now)["position"]] if now else gone
        return show(explorer, pool_id, who, gone)

    @refusing(outputs=3)
    def undoing(pool_id, who, gone: list[int]) -> tuple:
        explorer.judging.undo(int(pool_id), who)
        return show(explorer, pool_id, who, gone)

    skip.click(skipping, [pool, assessor, shown, skipped], views, **at_once)
    undo.click(undoing, [pool, assessor, skipped], views, **at_once)
    return pool


def _llm_panel(explorer: Explorer, pool: gr.Dropdown) -> None:
    """Step 4: the LLM judge over what is left of `pool`, saying so under its button."""
    gr.Markdown("Judge the pool's units the LLM judge has not judged (UMBRELA's prompt), "
                "through the packaged reader or an OpenAI-compatible endpoint; its "
                "grades count only where no person judged, and Diagnose compares them.")
    with gr.Row():
        judge_model = gr.Textbox("smollm2", label="Model", elem_id="fe-judge-llm-model")
        judge_at = place_choice("endpoints", "Endpoint", "fe-judge-llm-endpoint",
                                "none: the model here",
                                info="an OpenAI-compatible server the operator allowed; "
                                     "the model is then its name there")
        limit = gr.Number(0, label="At most (0: every unit)", precision=0,
                          elem_id="fe-judge-llm-limit")
    llm = gr.Button("Judge with the LLM", elem_id="fe-judge-llm")
    llm_said = gr.HTML(elem_id="fe-judge-llm-message")
    llm.click(partial(llm_judging, explorer), [pool, judge_model, judge_at, limit], llm_said,
              **PRIVATE)
    pool.change(lambda: "", None, llm_said, **PRIVATE)  # what it said was another pool's


def _exchange_panel(explorer: Explorer, dataset: gr.Dropdown, message: gr.HTML) -> None:
    """Step 5: question set `dataset`'s judgments exported and imported."""
    gr.Markdown("A question set's judgments as TREC qrels (the grades its measures read: "
                "a person's, else a generated question's source) or as JSONL with who "
                "judged each; a qrels file or such a JSONL read back in, whole or not at "
                "all (a qrels file's judgments are the assessor's named here).")
    with gr.Row():
        fmt = gr.Radio(["qrels", "jsonl"], value="qrels", label="Format",
                       elem_id="fe-judge-format", scale=1)
        export = gr.Button("Export the question set's judgments", scale=1,
                           elem_id="fe-judge-export")
        exported = gr.File(label="Judgments", interactive=False, visible=False,
                           elem_id="fe-judge-exported", scale=1)
    with gr.Row():
        incoming = gr.File(label="Judgments to import (qrels or .jsonl)", type="filepath",
                           elem_id="fe-judge-import-file", scale=2)
        theirs = gr.Textbox(label="Whose (a qrels file's assessor)", scale=1,
                            elem_id="fe-judge-import-assessor")
        read_in = gr.Button("Import", scale=1, elem_id="fe-judge-import")

    @refusing(outputs=2)
    def exporting(set_name, kind) -> tuple:
        if not set_name:
            raise ConfigError("Pick the question set (step 2) whose judgments to export.")
        text = explorer.judging.export_judgments(set_name, kind)
        path, _ = download({f"judgments.{kind}": text}, f"{set_name}_judgments")
        lines = len(text.splitlines())
        return (_said(f"{lines} judgment{'' if lines == 1 else 's'} of {esc(set_name)} as "
                      f"{kind}.", "fe-kept"), gr.File(str(path), visible=True))

    @refusing()
    def importing(set_name, upload, whose) -> str:
        if not set_name or not uploaded_path(upload):
            raise ConfigError("Pick the question set (step 2) and a judgments file.")
        path = Path(uploaded_path(upload))
        found = explorer.judging.import_judgments(set_name, read_text(path), path.name,
                                                  whose or "")
        return _said(f"{found} judgment{'' if found == 1 else 's'} imported into "
                     f"{esc(set_name)}: its measures read them now.", "fe-kept")

    export.click(exporting, [dataset, fmt], [message, exported], **PRIVATE)
    read_in.click(importing, [dataset, incoming, theirs], message, **PRIVATE)


def _kept_set(split) -> str:
    return _said(f"Question set <b>{esc(split.label)}</b>: {split.questions} questions. "
                 "Pool it next.", "fe-kept")
