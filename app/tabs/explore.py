"""Explore: one question through one paradigm, every stage shown as it finishes."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

import gradio as gr

from app.errors import refused_box, refusing
from app.params import config_json, panel_values, param_panels, show_panels
from app.tabs import reanswer
from app.tabs.base import PRIVATE, Tab
from app.tabs.contents import contents
from app.tabs.corpora import corpus_choice
from app.tabs.picker import question_picker, target
from app.views import figures
from app.views.evaluation import position_of
from app.views.gold import gold_banner
from app.views.heatmap import heatmap_figure
from app.views.reader_calls import ablation_table, llm_steps_table
from app.views.trace import (
    answer_box,
    error_box,
    esc,
    stage_table,
)
from engine.documents import Question
from engine.errors import ConfigError, EngineError
from engine.paradigms.registry import PARADIGMS
from engine.readers.ablation import reading_step
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.trace import RunTrace

logger = logging.getLogger(__name__)


def trace_views(trace: RunTrace, heat_by: str = "layers") -> tuple:
    """(banner, answer, funnel, waterfall, heatmap, tables) of a (partial) trace."""
    tables = "".join(stage_table(trace, i) for i in range(len(trace.stages)))
    tables += llm_steps_table(trace) + ablation_table(trace)
    made = (f"<div class='fe-kept'>Preset <b>{esc(trace.preset)}</b>: {esc(trace.paradigm)} "
            "with its saved options.</div>") if trace.preset else ""
    return (made + gold_banner(trace), answer_box(trace) if trace.answer else "",
            figures.funnel_figure(trace), figures.waterfall_figure(trace),
            heatmap_figure(trace, heat_by), tables)


@dataclass(frozen=True, kw_only=True)
class ExploreTab(Tab):
    """Explore built: what Evaluate's and Diagnose's rows open a stored run into."""

    question: gr.Textbox
    paradigm: gr.Radio
    views: list[gr.Component]  # notice, the trace views, the trace JSON

    def opened(self, tabs: gr.Tabs) -> list[gr.Component]:
        """The outputs of open_evaluation_run: the views, question, paradigm, corpus and
        `tabs` (the app's, switched to Explore)."""
        return [*self.views, self.question, self.paradigm, self.corpus, tabs]


# the contents line's links (app.tabs.contents): a run's views fill over two screens
VIEWS = [("Question", "fe-dataset"), ("Answer", "fe-notice"), ("Funnel and timing", "fe-funnel"),
         ("Reader attention", "fe-heatmap"), ("Passages per stage", "fe-tables"),
         ("Save the run", "fe-save-name"), ("Re-answer", "fe-reanswer")]


def build(explorer: Explorer) -> ExploreTab:
    """The Explore tab's widgets and events; returns what other tabs show a run in."""
    contents(VIEWS, "fe-contents")
    first = next(iter(PARADIGMS))
    picker = question_picker(explorer, "fe", lambda: gr.Radio(
        [(spec.label, name) for name, spec in PARADIGMS.items()], value=first,
        label="Paradigm", scale=1, elem_id="fe-paradigm"))
    question, paradigm = picker.question, picker.beside
    trace_state = gr.State("")  # the last finished run, as trace JSON
    params = param_panels("fe", {first})
    with gr.Row():
        preset = gr.Dropdown([NO_PRESET], value=NO_PRESET, label="Preset",
                             info="a saved paradigm with its options (Sweep's Tune saves "
                             "its winners here)", elem_id="fe-preset", scale=1)
        corpus = corpus_choice(explorer, "fe-corpus")
        run = gr.Button("Run", variant="primary", elem_id="fe-run", scale=2)
    picker.follow(explorer, corpus)
    notice = gr.HTML(elem_id="fe-notice")
    build_run = gr.Button("Build and run", variant="primary", visible=False,
                          elem_id="fe-build-run")
    banner = gr.HTML(elem_id="fe-banner")
    answer = gr.HTML(elem_id="fe-answer")
    with gr.Row():
        funnel_plot = gr.Plot(label="Funnel", elem_id="fe-funnel")
        waterfall_plot = gr.Plot(label="Timing", elem_id="fe-waterfall")
    heat_by = gr.Radio(["layers", "heads"], value="layers", label="Heatmap columns")
    heatmap = gr.Plot(label="Reader attention", elem_id="fe-heatmap")
    with gr.Row():
        attribute = gr.Button("Attribute the answer: leave each passage out", scale=1,
                              elem_id="fe-ablate")
        attributed = gr.HTML(ATTRIBUTE_HINT, elem_id="fe-ablation")
    tables = gr.HTML(elem_id="fe-tables")
    with gr.Row():
        save_name = gr.Textbox(label="Run name", scale=2, elem_id="fe-save-name")
        save_notes = gr.Textbox(label="Notes", scale=3, elem_id="fe-save-notes")
        save = gr.Button("Save run", scale=1, elem_id="fe-save")
    saved = gr.HTML(elem_id="fe-saved")
    reanswer.build(explorer, trace_state)

    def redraw_heatmap(trace_json, heat):
        if not trace_json:
            return None
        return heatmap_figure(RunTrace.from_json(trace_json), heat)

    outputs = [notice, banner, answer, funnel_plot, waterfall_plot, heatmap, tables,
               trace_state]
    inputs = [question, picker.gold, paradigm, heat_by, corpus, preset, *params.inputs()]
    run_outputs = [*outputs, build_run, save_name, save_notes, saved]
    for trigger in (run.click, question.submit, build_run.click):
        # in the browser at once, before the server takes the run (under load it waited
        # ~20 s with the last run's answer on screen): the last run's views go and the
        # notice says a run is under way
        trigger(None, paradigm, outputs[:-1], js=RUNNING_JS, **PRIVATE)
    # Gradio's queue place and seconds beside the notice only, not a veil over every view
    progress = {"show_progress": "minimal", "show_progress_on": notice}
    for trigger in (run.click, question.submit):
        trigger(partial(ask, explorer, params.keys(), False), inputs, run_outputs, **PRIVATE,
                **progress)
        trigger(lambda: ATTRIBUTE_HINT, None, attributed, **PRIVATE)  # the last run's
    build_run.click(partial(ask, explorer, params.keys(), True), inputs, run_outputs,
                    **PRIVATE, **progress)
    paradigm.change(lambda name: show_panels(params, name), paradigm,
                    list(params.groups.values()), **PRIVATE)
    # a preset picked sets the paradigm and every option as saved; another paradigm picked
    # by hand leaves the preset (its options typed over a preset stay the preset's run)
    preset.focus(partial(preset_choices, explorer), None, preset, **PRIVATE)
    preset.input(partial(picked_preset, explorer, params), preset,
                 [paradigm, corpus, *params.inputs()], **PRIVATE)
    paradigm.input(lambda: NO_PRESET, None, preset, **PRIVATE)
    heat_by.change(redraw_heatmap, [trace_state, heat_by], heatmap, **PRIVATE)
    attribute.click(partial(attribute_run, explorer), [trace_state, heat_by],
                    [attributed, heatmap, tables, trace_state], **PRIVATE)
    save.click(partial(save_current, explorer), [trace_state, save_name, save_notes],
               [saved, save_name, save_notes], **PRIVATE)
    return ExploreTab(corpus=corpus, question=question, paradigm=paradigm, views=outputs)


# --- callbacks ----------------------------------------------------------------------------

ATTRIBUTE_HINT = ("<small>Reads the answer again without each passage the reader read (one "
                  "scoring pass a passage: the more it read, the longer): bars beside the "
                  "heatmap, a table under the LLM calls.</small>")

# the trace views and trace JSON of no run: what a refused run leaves, so that the last
# run's answer and figures never stand under a refusal as if they were this question's
CLEARED = ("", "", None, None, None, "", "")


NO_PRESET = "(none)"


def preset_choices(explorer: Explorer) -> dict:
    """The preset picker's choices, read again when it is opened (a search saves them)."""
    return gr.update(choices=[NO_PRESET, *(p.name for p in explorer.presets.list_presets())])


@refusing(outputs=1, shape=lambda box, explorer, params, name: (
    gr.update(value=NO_PRESET), *(gr.skip(),) * (len(params.inputs()) + 1)))
def picked_preset(explorer: Explorer, params, name) -> tuple:
    """(paradigm, corpus, every option widget) as preset `name` saved them (the rest at
    their defaults; the corpus it was made over, if it names one); nothing changes for
    "(none)"."""
    if not name or name == NO_PRESET:
        return gr.skip(), gr.skip(), *(gr.skip(),) * len(params.inputs())
    from dataclasses import asdict

    from engine.paradigms.registry import make_config

    chosen = next((p for p in explorer.presets.list_presets() if p.name == name), None)
    if chosen is None:
        raise ConfigError(f"No preset named {name!r} any more: pick another.")
    full = asdict(make_config(chosen.paradigm, chosen.config))
    corpus = gr.update(value=chosen.corpus) if chosen.corpus else gr.skip()
    return (gr.update(value=chosen.paradigm), corpus,
            *panel_values(params, {chosen.paradigm: full}))


def running_box(paradigm: str, stages: int = 0) -> str:
    """The notice while a run is under way: which paradigm, how many stages are done."""
    done = (f": {stages} stage{'s' if stages != 1 else ''} done, the next under way"
            if stages else "; its stages show as they finish")
    return f"<div class='fe-running'>Running <b>{esc(paradigm)}</b>{done}…</div>"


# the same notice and cleared views, set by the browser the moment Run is pressed (the
# notice, then the views of CLEARED but the trace JSON, which the server clears)
RUNNING_JS = """(paradigm) => {
  const name = String(paradigm ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return [`<div class='fe-running'>Running <b>${name}</b>; its stages show as they `
          + `finish…</div>`, "", "", null, null, null, ""];
}"""


def ask(explorer: Explorer, keys: list, build_first: bool, text, gold: Question | None,
        name, heat, searched, preset, *widgets):
    """Run the question, yielding (notice, the trace views, trace JSON, "Build and run"
    button, run name, notes, save message) as each stage arrives. A new run clears the
    last run's views, run name, notes and save message at once (they were the last
    run's; the browser cleared the views already, RUNNING_JS) and says it is under way
    until it ends. A refused run or a failed one leaves what it showed of its own; one
    that needs a long build says which and how long and shows "Build and run"
    (`build_first`: build it)."""
    hidden, same = gr.Button(visible=False), (gr.skip(),) * 3  # name, notes, message
    yield (running_box(name), *CLEARED, hidden, "", "", "")
    shown = False
    try:
        config = config_json(name, keys, list(widgets))
        notice, runs = _start(explorer, target(text, gold), name, config, searched or "",
                              build_first, "" if preset == NO_PRESET else preset or "")
        if notice:  # a build first: say so while it runs, before the first stage
            yield (notice, *(gr.skip(),) * len(CLEARED), hidden, *same)
        for trace in runs:
            shown = True
            yield (notice + running_box(name, len(trace.stages)), *trace_views(trace, heat),
                   "", hidden, *same)
        yield (notice, *trace_views(trace, heat), trace.to_json(), hidden, *same)
    except BuildNeeded as err:
        yield (build_box(err), *CLEARED, gr.Button(visible=True), *same)
    except EngineError as err:
        yield (refused_box(err), *_kept_or_cleared(shown), hidden, *same)
    except Exception as err:  # noqa: BLE001 - the page must stay usable
        logger.exception("run failed")
        yield (error_box(f"The run failed: {err}"), *_kept_or_cleared(shown), hidden, *same)


@refusing(outputs=4)
def attribute_run(explorer: Explorer, trace_json, heat) -> tuple:
    """(notice, heatmap, tables, trace JSON) once the run shown has its leave-one-out
    attribution (Explorer.ablation)."""
    if not trace_json:
        return error_box("Run a question first; there is no answer to attribute yet."), \
            gr.skip(), gr.skip(), gr.skip()
    trace = RunTrace.from_json(trace_json)
    if not trace.answered:
        return error_box("This run has no answer to attribute: no reader ran (a test "
                         "collection's question has no answer to find). Type the question "
                         "to have the reader answer it, then attribute that run."), \
            gr.skip(), gr.skip(), gr.skip()
    trace = explorer.runs.ablation(trace)
    _, _, _, _, heatmap, tables = trace_views(trace, heat)
    ablation = reading_step(trace).ablation
    changed = sum(ablation.changed)
    said = (f"leaving out {changed} of them changes the answer" if changed else
            "no single one left out changes the answer")
    notice = (f"<div class='fe-kept'>Attributed: {len(ablation.passages)} passages read again "
              f"without each in {ablation.seconds:.2f} s; {said}.</div>")
    return notice, heatmap, tables, trace.to_json()


def _start(explorer: Explorer, question, name: str, config: str, corpus: str,
           build_first: bool, preset: str = "") -> tuple[str, object]:
    """(notice, the run's trace stream); with `build_first`, a build the config still needs
    is named in the notice and made first (BuildNeeded is raised otherwise)."""
    try:
        return "", explorer.runs.stream(question, name, config, corpus, preset=preset)
    except BuildNeeded as needed:
        if not build_first:
            raise
        notice = (f"<div class='fe-stage'>Building first: {esc(needed.what)}. It takes its "
                  "turn with the other long builds (the status line lists them); the "
                  "stages show once it is built, and the other tabs keep answering.</div>")
        return notice, explorer.runs.stream(question, name, config, corpus, build=True,
                                            preset=preset)


def _kept_or_cleared(shown: bool) -> tuple:
    """The views after a run stopped: this run's stages so far (its own, if any showed),
    else cleared."""
    return (gr.skip(),) * len(CLEARED) if shown else CLEARED


def build_box(needed: BuildNeeded) -> str:
    """The notice for a run whose options need a long build first: which and how long,
    and the way on (Build and run, or the options the app prepared)."""
    return refused_box(f"These options need a build first - {needed.what}. Press "
                       "\"Build and run\" to build it and then run (the app stays usable "
                       "meanwhile), or go back to the options the app prepared (the "
                       "defaults).")


@refusing(outputs=3)
def save_current(explorer: Explorer, trace_json, name, notes) -> tuple:
    """(message, run name, notes) after Save: the name and notes clear once saved, so they
    never carry over to the next run's save; saving the same run again is refused
    (Explorer.save_run), naming the run it was saved as."""
    if not trace_json:
        return (error_box("Run a question first; there is nothing to save yet."),
                gr.skip(), gr.skip())
    run_id = explorer.runs.save_run(RunTrace.from_json(trace_json), name, notes)
    return f"<div class='fe-kept'>Saved as run {run_id}.</div>", "", ""


def _refused_opening(box: str, explorer: Explorer, outputs: int, *_) -> tuple:
    """A row that cannot open: the box in Explore's notice, the rest as it was."""
    return (box, *(gr.skip(),) * (outputs - 1))


@refusing(shape=_refused_opening)
def open_evaluation_run(explorer: Explorer, outputs: int, evaluation_id, row: list | None) -> tuple:
    """A per-question row opened in Explore: (notice, its trace views, trace JSON,
    question, paradigm, corpus, the selected tab), `outputs` values in all; the paradigm
    and corpus pickers are set to the run's where they offer them, so that Run runs it
    again over what it searched."""
    if evaluation_id is None or not row:
        return (gr.skip(),) * outputs
    number, paradigm = row[0], row[2]
    trace = explorer.evaluations.evaluation_trace(evaluation_id, position_of(number), paradigm)
    again = ("an imported pipeline's run: Run answers the question with the paradigm "
             "picked" if "imported" in trace.config else
             "Run runs it again with the options shown")
    notice = (f"<div class='fe-kept'>Evaluation {evaluation_id}, question {number}, "
              f"through {esc(paradigm)}: its stored trace ({again}).</div>")
    # an imported pipeline is no choice of the paradigm picker: it keeps its choice
    picked = trace.paradigm if trace.paradigm in PARADIGMS else gr.skip()
    searched = explorer.evaluations.evaluation(evaluation_id).corpus
    corpus = searched if searched in explorer.catalog.corpus_names() else gr.skip()
    return (notice, *trace_views(trace), trace.to_json(), trace.question, picked, corpus,
            gr.Tabs(selected="explore"))
