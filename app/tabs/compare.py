"""Compare: one question through several paradigms side by side."""

from __future__ import annotations

import json
import logging

import gradio as gr

from app.errors import refused_box
from app.params import config_json, param_panels, show_panels
from app.tabs.base import PRIVATE, Tab
from app.tabs.contents import contents
from app.tabs.corpora import corpus_choice
from app.tabs.picker import question_picker, target
from app.views import figures
from app.views.gold import gold_banner
from app.views.trace import compare_table, error_box, esc, final_passages
from engine.errors import EngineError
from engine.paradigms.base import check_question
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded

logger = logging.getLogger(__name__)


DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 600, 32, 100_000


def with_budget(config: str, tokens: int) -> str:
    """A paradigm's JSON config with its reader's input capped at `tokens`."""
    values = json.loads(config or "{}")
    values.setdefault("reader", {})["max_context_tokens"] = tokens
    return json.dumps(values)


def _label(trace) -> str:
    """A run's column: its preset's name, or its paradigm's label as the checkboxes show it
    (its name if no longer registered)."""
    if trace.preset:
        return f"preset {trace.preset} ({trace.paradigm})"
    return PARADIGMS[trace.paradigm].label if trace.paradigm in PARADIGMS else trace.paradigm


def view(traces, errors, running: str):
    """(notice, table, timing figure, final passages) for the runs finished so far."""
    notice_html = "".join(error_box(m) for m in errors)
    if running:
        notice_html += f"<div class='fe-stage'>{esc(running)}</div>"
    if not traces:
        return notice_html, "", None, ""
    columns = "".join(
        f"<div class='fe-final-column'><h4>{esc(_label(t))}</h4>"
        f"{gold_banner(t)}{final_passages(t)}</div>" for t in traces)
    heads = [esc(_label(t)) for t in traces]
    return (notice_html, compare_table(traces, heads), figures.compare_figure(traces),
            f"<div class='fe-final-columns'>{columns}</div>")


# the contents line's links (app.tabs.contents): five paradigms' columns fill over two screens
VIEWS = [("Question", "fe-compare-dataset"), ("Side by side", "fe-compare-notice"),
         ("Seconds per stage", "fe-compare-timing"), ("Final passages", "fe-compare-finals")]


def build(explorer: Explorer) -> Tab:
    """The Compare tab: its own question box and dataset picker (a picked question brings
    its gold, so every cut shows whether the gold answer and documents are still in)."""
    contents(VIEWS, "fe-compare-contents")
    picker = question_picker(explorer, "fe-compare", lambda: gr.CheckboxGroup(
        [(spec.label, name) for name, spec in PARADIGMS.items()], value=list(PARADIGMS),
        label="Paradigms", scale=1, elem_id="fe-compare-paradigms"))
    question, chosen = picker.question, picker.beside
    with gr.Row():
        equal = gr.Checkbox(False, label="Equal reader budget", elem_id="fe-compare-equal",
                            info="cap the passages every paradigm's reader reads at the "
                                 "same number of tokens, best first (the prompt's "
                                 "instructions and worked examples come on top)")
        budget = gr.Number(DEFAULT_BUDGET, label="Reader tokens", precision=0,
                           elem_id="fe-compare-budget",
                           info=f"{MIN_BUDGET:,} to {MAX_BUDGET:,}")
    params = param_panels("fe-compare")
    with gr.Row():
        presets = gr.Dropdown([], value=[], multiselect=True, label="Presets beside them",
                              info="saved paradigms with their options (Sweep's Tune saves "
                              "its winners here)", elem_id="fe-compare-presets", scale=2)
        corpus = corpus_choice(explorer, "fe-compare-corpus")
        go = gr.Button("Compare", variant="primary", elem_id="fe-compare-run", scale=2)
    picker.follow(explorer, corpus)
    notice = gr.HTML(elem_id="fe-compare-notice")
    table = gr.HTML(elem_id="fe-compare-table")
    timing = gr.Plot(label="Seconds per stage", elem_id="fe-compare-timing")
    finals = gr.HTML(elem_id="fe-compare-finals")

    def compare(text, gold, names, chosen_presets, equal_budget, tokens, searched, *widgets):
        """Runs the paradigms one after another, showing each column as it finishes. A
        refused comparison clears the last one's columns (they were another question's)."""
        try:
            check_question(text)  # once, by the rule every run and the API follow
        except EngineError as err:
            yield refused_box(err), "", None, ""
            return
        runs = [(name, "") for name in names or []] + \
            [("", preset) for preset in chosen_presets or []]
        if not runs:
            yield error_box("Pick at least one paradigm or preset."), "", None, ""
            return
        if equal_budget and not (tokens and MIN_BUDGET <= tokens <= MAX_BUDGET):
            yield (error_box(f"Reader tokens {tokens} is out of range: give {MIN_BUDGET:,} "
                             f"to {MAX_BUDGET:,}, or untick the equal reader budget."),
                   "", None, "")
            return
        traces, errors = [], []
        for at, (name, preset) in enumerate(runs, start=1):
            name = name or f"preset {preset}"
            yield view(traces, errors, f"Running {name} ({at} of {len(runs)})…")
            try:
                config = "{}" if preset else config_json(name, params.keys(), list(widgets))
                if equal_budget:
                    config = with_budget(config, int(tokens))
                traces.append(explorer.runs.run(target(text, gold), name, config, searched or "",
                                                preset=preset))
            except BuildNeeded as err:
                logger.info("refused: %s: %s", name, err.what)
                errors.append(f"{name}: these options need a build first - {err.what}. "
                              "Build it with \"Build and run\" in Explore (same options), "
                              "then compare.")
            except EngineError as err:
                logger.info("refused: %s: %s", name, " ".join(str(err).split()))
                errors.append(f"{name}: {err}")
            except Exception as err:  # noqa: BLE001 - the page must stay usable
                logger.exception("compare run failed")
                errors.append(f"{name}: the run failed: {err}")
        yield view(traces, errors, "")

    chosen.change(lambda names: show_panels(params, names), chosen,
                  list(params.groups.values()), **PRIVATE)
    presets.focus(lambda: gr.update(choices=[p.name for p in
                                             explorer.presets.list_presets()]),
                  None, presets, **PRIVATE)
    for trigger in (go.click, question.submit):
        trigger(compare, [question, picker.gold, chosen, presets, equal, budget, corpus,
                          *params.inputs()],
                [notice, table, timing, finals], **PRIVATE)
    return Tab(corpus=corpus)
