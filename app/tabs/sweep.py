"""Sweep: one paradigm over a grid of one or two numeric options, and the frontier (the
Grid view); a search over several paradigms' options under a cost (the Tune view,
app.tabs.tune).

Pick a dataset sample, a paradigm, one or two of its numeric options with values, and
whether the reader runs (without it a point costs seconds of retrieval only). The sweep
runs in the background as an evaluation of its grid points (reopened, diagnosed and
exported like any other); every point of it, or of several evaluations, is plotted as
recall (or EM) against median seconds per question with the Pareto frontier drawn.
"""

from __future__ import annotations

from functools import partial

import gradio as gr

from app.errors import refused_box, refusing
from app.tabs import tune
from app.tabs.base import PRIVATE, Tab
from app.tabs.corpora import corpus_choice
from app.tabs.picker import corpus_follows, dataset_dropdown
from app.tabs.sessions import parse_ids
from app.views.evaluation import progress_html
from app.views.frontier import (
    LAST_CUT,
    frontier_columns,
    frontier_figure,
    frontier_points,
    frontier_rows,
    tie_note,
)
from app.views.trace import esc
from engine.errors import ConfigError, EngineError
from engine.eval.sweep import pareto, sweepable
from engine.paradigms.registry import PARADIGMS, parse_config
from engine.service.explorer import Explorer
from engine.service.long_builds import BuildNeeded

POLL_SECONDS = 2.0
NONE = "(none)"
METRICS = ["AR@1", "AR@2", "AR@3", "AR@4", "AR@read", "EM", "F1", *LAST_CUT]
EXAMPLES = {"funnel": (("K", "5, 10, 20"), ("N", "4, 8, 16")),
            "flat": (("M", "10, 20, 50"), ("k", "2, 4, 8")),
            "drrag": (("k", "2, 3, 4"), None), "best": (("alpha", "0.1, 0.3, 0.5"), None),
            "longrag": (("context_tokens", "1000, 2000, 4000"), None)}


def offered(paradigm) -> tuple[list[str], str | None, str, str, str]:
    """(its sweepable options, the first offered, its values, the second, its values)."""
    names = [o.name for o in sweepable(paradigm)] if paradigm in PARADIGMS else []
    first, second = EXAMPLES.get(paradigm, ((names[0] if names else None, ""), None))
    return names, first[0], first[1], second[0] if second else NONE, \
        second[1] if second else ""


def option_choices(paradigm) -> tuple:
    """The option widgets' updates for `paradigm`: (first option, its values, second
    option, its values)."""
    names, first, first_values, second, second_values = offered(paradigm)
    return (gr.Dropdown(names, value=first), first_values,
            gr.Dropdown([NONE, *names], value=second), second_values)


def parse_values(name: str, text) -> list[float | int]:
    """Numbers from "5, 10, 20"; a clear error naming what is not one."""
    values = []
    for part in str(text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            values.append(int(part) if part.lstrip("-").isdigit() else float(part))
        except ValueError:
            raise ConfigError(f"{name}: {part!r} is not a number; give values like "
                              "5, 10, 20.") from None
    if not values:
        raise ConfigError(f"Give values for {name}, like 5, 10, 20.")
    return values


def begin(explorer: Explorer, build: bool, dataset, n, sample, seed, paradigm, first,
          first_values, second, second_values, retrieval_only, others, title,
          corpus="") -> tuple:
    """Start a sweep over `corpus` (its name; "": the start-up one): (progress, followed
    id, poll timer, "Build and start", ids box)."""
    # its own except, not @refusing: a refusal that needs a build first shows "Build and
    # start"
    try:
        options = {first: parse_values(first, first_values)} if first else {}
        if second and second != NONE:
            options[second] = parse_values(second, second_values)
        evaluation_id = explorer.evaluations.sweep(
            dataset or "", paradigm or "", options, parse_config(others or ""),
            limit=int(n or 0), sample=int(sample or 0), seed=int(seed or 0),
            retrieval_only=bool(retrieval_only), name=title or "", build=build,
            corpus=corpus or "")
    except EngineError as err:
        return (refused_box(err), gr.skip(), gr.skip(),
                gr.Button(visible=isinstance(err, BuildNeeded)), gr.skip())
    return (progress_html(explorer.evaluations.evaluation_status(evaluation_id)), evaluation_id,
            gr.Timer(active=True), gr.Button(visible=False), str(evaluation_id))


@refusing(outputs=4)
def frontier(explorer: Explorer, ids_text, metric) -> tuple:
    """(message, plot, table, the "Against" picker) of every point of the evaluations
    typed; the picker shows the measure drawn when judged questions put nDCG@10 in place
    of an answer measure."""
    ids = parse_ids(ids_text, "evaluation")
    summaries = {}
    for evaluation_id in ids:
        means = explorer.evaluations.evaluation_status(evaluation_id).means
        summaries.update({(label if len(ids) == 1 else f"{label} ({evaluation_id})"): s
                          for label, s in means.items()})
    metric = metric or "AR@4"
    points, judged, asked = frontier_points(summaries, metric), "", metric
    if not points and metric not in LAST_CUT and frontier_points(summaries, "nDCG@10"):
        metric, judged = "nDCG@10", (" Its questions have no answers (they are judged): "
                                     "against nDCG@10 of the last cut instead.")
        points = frontier_points(summaries, metric)
    front = pareto(points)
    message = (f"<div class='fe-kept'>{len(points)} points, {len(front)} on the frontier "
               f"(nothing else is both faster and better on {esc(metric)}).{esc(tie_note(points))}"
               f"{judged}</div>")
    return (message, frontier_figure(points, front, metric),
            gr.Dataframe(frontier_rows(points, front), headers=frontier_columns(metric)),
            gr.skip() if metric == asked else gr.update(value=metric))


def follow(explorer: Explorer, evaluation_id, metric) -> tuple:
    """A poll: (progress, timer, message, plot, table, "Against") of the sweep
    followed."""
    if evaluation_id is None:
        return gr.skip(), gr.Timer(active=False), *(gr.skip(),) * 4
    status = explorer.evaluations.evaluation_status(evaluation_id)
    return (progress_html(status), gr.Timer(active=status.state == "running"),
            *frontier(explorer, str(evaluation_id), metric))


def build(explorer: Explorer) -> Tab:
    """The Sweep tab: a grid (one paradigm, one or two options) and the Tune view (a
    search over several paradigms' options, app.tabs.tune); its corpus choices, and the
    stored searches' list read again when shown."""
    with gr.Tabs():
        with gr.Tab("Grid", id="sweep-grid"):
            corpus = _grid(explorer)
        with gr.Tab("Tune", id="sweep-tune"):
            tuned = tune.build(explorer)
    return Tab(corpus=corpus, more_corpora=(tuned.corpus,), refresh=tuned.refresh,
               on_load=True)


def _grid(explorer: Explorer) -> gr.Dropdown:
    """The grid sweep's widgets and events; returns its corpus choice."""
    with gr.Row():
        dataset = dataset_dropdown(explorer, "Dataset", first=True, scale=2,
                                   elem_id="fe-sweep-dataset")
        n = gr.Number(20, label="First N questions (0: all)", precision=0,
                      elem_id="fe-sweep-limit")
        sample = gr.Number(0, label="…or a random sample of", precision=0,
                           elem_id="fe-sweep-sample")
        seed = gr.Number(0, label="Seed", precision=0, elem_id="fe-sweep-seed")
    first_paradigm = "funnel" if "funnel" in PARADIGMS else next(iter(PARADIGMS))
    names, first_name, first_text, second_name, second_text = offered(first_paradigm)
    with gr.Row():
        paradigm = gr.Dropdown([(s.label, name) for name, s in PARADIGMS.items()],
                               value=first_paradigm, label="Paradigm", scale=2,
                               elem_id="fe-sweep-paradigm")
        first = gr.Dropdown(names, value=first_name, label="Option", elem_id="fe-sweep-first")
        first_values = gr.Textbox(first_text, label="its values", elem_id="fe-sweep-v1")
        second = gr.Dropdown([NONE, *names], value=second_name, label="Second option",
                             elem_id="fe-sweep-second")
        second_values = gr.Textbox(second_text, label="its values", elem_id="fe-sweep-v2")
    with gr.Row():
        retrieval_only = gr.Checkbox(True, label="Retrieval only (no reader: the cost of "
                                     "each point is retrieval seconds; EM needs the reader)",
                                     scale=2, elem_id="fe-sweep-retrieval-only")
        others = gr.Textbox(label="Other options, fixed (JSON, optional)",
                            placeholder='{"hybrid_weight": 0.5}', scale=2,
                            elem_id="fe-sweep-others")
        title = gr.Textbox(label="Name (optional)", scale=1, elem_id="fe-sweep-name")
        corpus = corpus_choice(explorer, "fe-sweep-corpus")
    corpus_follows(explorer, dataset, corpus)
    with gr.Row():
        start = gr.Button("Start the sweep", variant="primary", elem_id="fe-sweep-start")
        confirm = gr.Button("Build and start", visible=False, elem_id="fe-sweep-build")
    progress = gr.HTML(elem_id="fe-sweep-progress")
    current = gr.State(None)
    poll = gr.Timer(POLL_SECONDS, active=False)
    gr.Markdown("### The frontier")
    with gr.Row():
        ids = gr.Textbox(label="Evaluation ids to plot (a sweep, or several evaluations)",
                         placeholder="7   or   7, 8", scale=3, elem_id="fe-sweep-ids")
        metric = gr.Dropdown(METRICS, value="AR@4", label="Against", scale=1,
                             elem_id="fe-sweep-metric")
        show = gr.Button("Plot", scale=1, elem_id="fe-sweep-plot")
    message = gr.HTML(elem_id="fe-sweep-message")
    plot = gr.Plot(label="Frontier", elem_id="fe-sweep-frontier")
    table = gr.Dataframe(headers=frontier_columns("AR@4"), interactive=False, max_height=360,
                         elem_id="fe-sweep-table")

    paradigm.change(option_choices, paradigm, [first, first_values, second, second_values],
                    **PRIVATE)
    form = [dataset, n, sample, seed, paradigm, first, first_values, second, second_values,
            retrieval_only, others, title, corpus]
    started = [progress, current, poll, confirm, ids]
    start.click(partial(begin, explorer, False), form, started, **PRIVATE)
    confirm.click(partial(begin, explorer, True), form, started, **PRIVATE)
    drawn = [message, plot, table, metric]
    poll.tick(partial(follow, explorer), [current, metric], [progress, poll, *drawn],
              **PRIVATE)
    # .input, not .change: the picker set to the measure drawn does not draw again
    for event in (show.click, ids.submit, metric.input):
        event(partial(frontier, explorer), [ids, metric], drawn, **PRIVATE)
    return corpus
