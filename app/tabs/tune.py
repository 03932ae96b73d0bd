"""Sweep's Tune view: search paradigms' options under a cost, and the winner checked on
held-out questions.

Pick a dataset, the paradigms searched together, the measure (up), the cost (down), a
ceiling on the cost (or none: the front's knee is picked), and the budget (trials,
minutes). The options searched are listed as chosen; any can be named, narrowed or added
as JSON. While the search runs, every trial is drawn as measure against cost with the
front, those stopped early hollow; once it ends, each option's importance and each pick
against its paradigm's default on the held-out questions, with the interval, p and a plain
verdict. The winner is saved as a preset Explore runs by name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import partial

import gradio as gr

from app.errors import refused_box, refusing
from app.tabs.base import PRIVATE, Refresh, Tab
from app.tabs.corpora import corpus_choice
from app.tabs.picker import corpus_follows, dataset_dropdown
from app.views.tuning import (
    HELD_OUT_COLUMNS,
    IMPORTANCE_COLUMNS,
    TRIAL_COLUMNS,
    front_figure,
    held_out_rows,
    importance_rows,
    progress_html,
    space_html,
    trial_rows,
)
from engine.config import json_object
from engine.errors import ConfigError, EngineError
from engine.paradigms.registry import PARADIGMS
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded
from engine.tune.space import COSTS, MEASURES

POLL_SECONDS = 2.0
AUTO = "auto (nDCG@10 on judged questions, else AR@4)"
SEARCH_COLUMNS = ["id", "name", "dataset", "corpus", "paradigms", "measure", "cost", "state",
                  "trials", "preset", "by", "created"]


def parse_options(text) -> dict | None:
    """The Options box: JSON of {"paradigm.option": null | [low, high] | [values]}."""
    return json_object(text, "Options to search", '{"funnel.K": [2, 40], "flat.retriever": null}')


def parse_configs(text) -> dict | None:
    """The Fixed box: JSON of {paradigm: {option: value}}."""
    found = json_object(text, "Fixed options", '{"funnel": {"H": 2}}')
    if found is not None and not all(isinstance(v, dict) for v in found.values()):
        raise ConfigError('Fixed options: give {paradigm: {option: value}}, e.g. '
                          f'{{"funnel": {{"H": 2}}}}; got {str(text).strip()[:80]!r}.')
    return found


def _number(value, name: str, *, whole: bool = False) -> float | None:
    """A number box's value; empty or 0 is none."""
    if value in (None, "", 0):
        return None
    if whole and float(value) != int(value):
        raise ConfigError(f"{name} is a whole number; got {value!r}.")
    return int(value) if whole else float(value)


def preview(explorer: Explorer, paradigms, measure) -> str:
    """The options searched by default for the paradigms picked."""
    try:
        measure = "AR@4" if not measure or measure == AUTO else measure
        return space_html(explorer.tuning.search_space(list(paradigms or []), measure))
    except EngineError as err:
        return refused_box(err)


def begin(explorer: Explorer, build: bool, dataset, limit, held_out, seed, corpus,
          paradigms, measure, cost, ceiling, trials, minutes, options, fixed, preset,
          name) -> tuple:
    """Start a search: (progress, followed id, poll timer, "Build and start", id box)."""
    try:
        if not paradigms:
            raise ConfigError("Pick at least one paradigm to search.")
        tune_id = explorer.tuning.tune(
            dataset or "", list(paradigms), measure="" if measure == AUTO else measure or "",
            cost=cost or "seconds", ceiling=_number(ceiling, "Ceiling"),
            trials=_number(trials, "Trials", whole=True) or 30,
            minutes=_number(minutes, "Minutes"), options=parse_options(options),
            configs=parse_configs(fixed), held_out=float(held_out or 0.5),
            seed=int(seed or 0), limit=int(limit or 0), name=name or "",
            preset=(preset or "").strip(), corpus=corpus or "", build=build)
    except EngineError as err:
        return (refused_box(err), gr.skip(), gr.skip(),
                gr.Button(visible=isinstance(err, BuildNeeded)), gr.skip())
    return (progress_html(explorer.tuning.tune_status(tune_id)), tune_id,
            gr.Timer(active=True), gr.Button(visible=False), str(tune_id))


def shown(explorer: Explorer, tune_id) -> tuple:
    """(progress, figure, trials, importance, held-out) of search `tune_id`."""
    status = explorer.tuning.tune_status(tune_id)
    return (progress_html(status), front_figure(status),
            gr.Dataframe(trial_rows(status), headers=TRIAL_COLUMNS),
            gr.Dataframe(importance_rows(status), headers=IMPORTANCE_COLUMNS),
            gr.Dataframe(held_out_rows(status), headers=HELD_OUT_COLUMNS))


def follow(explorer: Explorer, tune_id) -> tuple:
    """A poll: the timer (off once the search ended), the stored searches (listed again
    once it ended, with its state and preset) and the views of the search followed."""
    if tune_id is None:
        return gr.Timer(active=False), *(gr.skip(),) * 6
    running = explorer.tuning.tune_status(tune_id).state == "running"
    return (gr.Timer(active=running), gr.skip() if running else searches(explorer),
            *shown(explorer, tune_id))


@refusing(outputs=7)
def open_search(explorer: Explorer, text) -> tuple:
    """The search whose id is typed: (message, followed id, timer, views...)."""
    try:
        tune_id = int(str(text or "").strip())
    except ValueError:
        raise ConfigError(f"A search id is a number, e.g. 3; got {text!r}.") from None
    views = shown(explorer, tune_id)
    running = explorer.tuning.tune_status(tune_id).state == "running"
    return views[0], tune_id, gr.Timer(active=running), *views[1:]


@refusing(outputs=3)
def cancel(explorer: Explorer, tune_id) -> tuple:
    if tune_id is None:
        raise ConfigError("No search is followed here: start one, or open one by its id.")
    explorer.tuning.cancel_tune(tune_id)
    return (f"<div class='fe-kept'>Search {tune_id} stops after the question in flight; "
            "its finished trials stay, and Resume goes on from them.</div>", gr.skip(),
            gr.Timer(active=True))


@refusing(outputs=3)
def resume(explorer: Explorer, text) -> tuple:
    try:
        tune_id = int(str(text or "").strip())
    except ValueError:
        raise ConfigError(f"Type the id of the search to resume, e.g. 3; got {text!r}."
                          ) from None
    tune_id = explorer.tuning.resume_tune(tune_id)
    return (progress_html(explorer.tuning.tune_status(tune_id)), tune_id,
            gr.Timer(active=True))


def searches(explorer: Explorer) -> gr.Dataframe:
    rows = [[", ".join(v) if isinstance(v := getattr(r, c), tuple) else v
             for c in SEARCH_COLUMNS] for r in explorer.tuning.tunes()]
    return gr.Dataframe(rows, headers=SEARCH_COLUMNS)


@dataclass(frozen=True)
class _Form:
    """A search's settings, in the order `begin` takes them."""

    dataset: gr.Dropdown
    limit: gr.Number
    held_out: gr.Number
    seed: gr.Number
    corpus: gr.Dropdown
    paradigms: gr.CheckboxGroup
    measure: gr.Dropdown
    cost: gr.Radio
    ceiling: gr.Number
    trials: gr.Number
    minutes: gr.Number
    options: gr.Textbox
    fixed: gr.Textbox
    preset: gr.Textbox
    name: gr.Textbox

    def inputs(self) -> list:
        return [getattr(self, f.name) for f in fields(self)]


def _search_form(explorer: Explorer) -> _Form:
    """The search's settings, and the space they search shown as they change."""
    with gr.Row():
        dataset = dataset_dropdown(explorer, "Dataset", first=True, scale=2,
                                   elem_id="fe-tune-dataset")
        limit = gr.Number(0, label="First N questions (0: all)", precision=0,
                          elem_id="fe-tune-limit")
        held_out = gr.Number(0.5, label="Held-out share", minimum=0.05, maximum=0.9,
                             elem_id="fe-tune-held-out",
                             info="kept from the search, to check the winner on")
        seed = gr.Number(0, label="Seed", precision=0, elem_id="fe-tune-seed")
        corpus = corpus_choice(explorer, "fe-tune-corpus")
    corpus_follows(explorer, dataset, corpus)
    names = [n for n in ("funnel", "flat", "best") if n in PARADIGMS]
    with gr.Row():
        paradigms = gr.CheckboxGroup([(s.label, n) for n, s in PARADIGMS.items()],
                                     value=names, label="Paradigms searched together",
                                     scale=3, elem_id="fe-tune-paradigms")
        measure = gr.Dropdown([AUTO, *MEASURES], value=AUTO, label="Measure (up)",
                              elem_id="fe-tune-measure", scale=2, min_width=340)
        cost = gr.Radio(list(COSTS), value="seconds", label="Cost (down)",
                        elem_id="fe-tune-cost")
    with gr.Row():
        ceiling = gr.Number(0, label="Ceiling on the cost (0: none, pick the knee)",
                            info="seconds (0.02 = 20 ms) or reader tokens per question",
                            elem_id="fe-tune-ceiling")
        trials = gr.Number(30, label="Trials", precision=0, minimum=1, maximum=500,
                           elem_id="fe-tune-trials")
        minutes = gr.Number(0, label="Minutes (0: no limit)", elem_id="fe-tune-minutes")
        preset = gr.Textbox(label="Save the winner as preset", placeholder="tune-ID",
                            elem_id="fe-tune-preset")
        name = gr.Textbox(label="Name (optional)", elem_id="fe-tune-name")
    space = gr.HTML(preview(explorer, names, AUTO), elem_id="fe-tune-space")
    with gr.Accordion("Options to search, and options held fixed", open=False):
        with gr.Row():
            options = gr.Textbox(label="Options to search (JSON; empty: those listed above)",
                                 placeholder='{"funnel.K": [2, 40], "flat.reranker": '
                                 '["bi-encoder", "trained"]}', lines=2,
                                 elem_id="fe-tune-options")
            fixed = gr.Textbox(label="Options held fixed (JSON per paradigm)",
                               placeholder='{"funnel": {"H": 2}}', lines=2,
                               elem_id="fe-tune-fixed")
    for event in (paradigms.change, measure.change):
        event(partial(preview, explorer), [paradigms, measure], space, **PRIVATE)
    return _Form(dataset, limit, held_out, seed, corpus, paradigms, measure, cost, ceiling,
                 trials, minutes, options, fixed, preset, name)


def build(explorer: Explorer) -> Tab:
    """The Tune view's widgets and events."""
    form = _search_form(explorer)
    with gr.Row():
        start = gr.Button("Start the search", variant="primary", elem_id="fe-tune-start")
        confirm = gr.Button("Build and start", visible=False, elem_id="fe-tune-build")
        stop = gr.Button("Cancel", elem_id="fe-tune-cancel")
    progress = gr.HTML(elem_id="fe-tune-progress")
    current = gr.State(None)
    poll = gr.Timer(POLL_SECONDS, active=False)
    plot = gr.Plot(label="Trials and the front", elem_id="fe-tune-front")
    table = gr.Dataframe(headers=TRIAL_COLUMNS, interactive=False, max_height=320,
                         label="Trials", elem_id="fe-tune-trials-table")
    with gr.Row():
        importance = gr.Dataframe(headers=IMPORTANCE_COLUMNS, interactive=False,
                                  label="Option importance (fANOVA)",
                                  elem_id="fe-tune-importance")
    held = gr.Dataframe(headers=HELD_OUT_COLUMNS, interactive=False,
                        label="Held out: each pick against its paradigm's default",
                        elem_id="fe-tune-held-table")
    gr.Markdown("### Stored searches")
    with gr.Row():
        ids = gr.Textbox(label="Search id", placeholder="3", scale=2, elem_id="fe-tune-id")
        open_button = gr.Button("Show", scale=1, elem_id="fe-tune-open")
        again = gr.Button("Resume", scale=1, elem_id="fe-tune-resume")
    listed = gr.Dataframe(headers=SEARCH_COLUMNS, interactive=False, max_height=240,
                          elem_id="fe-tune-list")

    started = [progress, current, poll, confirm, ids]
    listing = partial(searches, explorer)
    for button, build_first in ((start, False), (confirm, True)):  # listed once it started
        button.click(partial(begin, explorer, build_first), form.inputs(), started,
                     **PRIVATE).then(listing, None, listed, **PRIVATE)
    views = [progress, plot, table, importance, held]
    poll.tick(partial(follow, explorer), current, [poll, listed, *views], **PRIVATE)
    stop.click(partial(cancel, explorer), current, [progress, current, poll], **PRIVATE)
    for event in (open_button.click, ids.submit):
        event(partial(open_search, explorer), ids,
              [progress, current, poll, plot, table, importance, held], **PRIVATE)
    again.click(partial(resume, explorer), ids, [progress, current, poll], **PRIVATE)
    return Tab(corpus=form.corpus, refresh=Refresh(listing, [listed]),
               on_load=True)
