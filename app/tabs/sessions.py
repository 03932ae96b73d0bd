"""Sessions: saved runs listed, reopened exactly from their stored trace, compared, deleted,
exported."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import gradio as gr

from app.downloads import download
from app.errors import refusing
from app.tabs.base import PRIVATE, Refresh, Tab
from app.tabs.contents import contents, scroll_to
from app.tabs.explore import trace_views
from app.views import figures
from app.views.trace import compare_table, esc
from engine.errors import EngineError
from engine.service.explorer import Explorer
from engine.store.sessions import SavedRun
from engine.trace import RunTrace

EXPORTS = {"jsonl": "JSONL (full traces)", "csv": "CSV (metrics)",
           "ragas": "ragas evaluation dataset (JSONL, a file per paradigm)",
           "ragchecker": "RAGChecker input (JSON)",
           "flashrag": "FlashRAG dataset (JSONL)",
           "trec": "TREC run files per stage and qrels"}
COLUMNS = ["id", "name", "paradigm", "corpus", "question", "answer", "EM", "F1",
           "reader tokens", "seconds", "saved", "by", "notes"]
EVERYONE = ""  # the "Saved by" filter's value that lists every run


def rows(explorer: Explorer, whose: str = EVERYONE) -> list[list]:
    """The saved runs' rows, newest first (of user `whose` only, if given)."""
    out = []
    for r in explorer.runs.saved_runs():
        if whose and r.owner != whose:
            continue
        m = r.metrics
        out.append([r.id, r.name, r.paradigm, r.corpus, r.question, r.answer,
                    m.get("EM", ""), round(m["F1"], 2) if "F1" in m else "", r.reader_tokens,
                    round(r.seconds, 2), r.created, r.owner, r.notes])
    return out


def listing(explorer: Explorer, whose: str = EVERYONE) -> tuple:
    """(the rows of `whose` runs, the "Saved by" filter offering everyone who saved one)."""
    owners = sorted({r.owner for r in explorer.runs.saved_runs() if r.owner})
    whose = whose if whose in owners else EVERYONE
    return rows(explorer, whose), gr.Dropdown(
        choices=[("everyone", EVERYONE), *((o, o) for o in owners)], value=whose)


def parse_ids(text: str, what: str = "run") -> list[int]:
    """Ids (of runs, or `what`) from text like "3" or "3, 5"; a clear error for anything
    else."""
    parts = [p for p in str(text or "").replace(",", " ").split() if p]
    if not parts:
        article = "an" if what[:1] in "aeiou" else "a"
        raise EngineError(f"Type {article} {what} id from the list (or two, like 3, 5, to "
                          "compare).")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise EngineError(f"{what.capitalize()} ids are numbers from the list; got "
                          f"{text!r}.") from None


def pick_id(current: str, run_id: object) -> str:
    """The id box after clicking run `run_id` in the list: one id becomes a pair to compare
    ("3" + 5 -> "3, 5"); anything else starts again with the clicked id."""
    try:
        before = parse_ids(current)
    except EngineError:
        before = []
    if len(before) == 1 and before[0] != int(run_id):
        return f"{before[0]}, {run_id}"
    return str(run_id)


def plural_runs(ids: list[int]) -> str:
    """"run 3", "runs 3, 5"."""
    return f"run {ids[0]}" if len(ids) == 1 else f"runs {', '.join(map(str, ids))}"


def run_heading(run: SavedRun, trace: RunTrace) -> str:
    """A compared run's column head: id, name, question, paradigm and corpus, escaped."""
    corpus = trace.corpus.get("name") or run.corpus or "corpus not recorded"
    fingerprint = trace.corpus.get("fingerprint") or run.corpus_fingerprint
    short = f" <small>{esc(fingerprint[:10])}</small>" if fingerprint else ""
    return (f"run {run.id}: {esc(run.name)}<br><small>{esc(run.question)}</small><br>"
            f"{esc(trace.paradigm)} · {esc(corpus)}{short}")


# the contents line's links (app.tabs.contents): a run opened under the list fills two screens
VIEWS = [("Saved runs", "fe-sessions-table"), ("The run opened", "fe-session-message"),
         ("Funnel and timing", "fe-session-funnel"), ("Passages per stage", "fe-session-tables")]


def build(explorer: Explorer) -> Tab:
    """The Sessions tab; its list is read again on every page load and when it is shown."""
    contents(VIEWS, "fe-sessions-contents")
    with gr.Row():
        gr.Markdown("Click a run to pick it; click a second one to pick a pair to compare.")
        whose = gr.Dropdown([("everyone", EVERYONE)], value=EVERYONE, label="Saved by",
                            scale=0, min_width=160, elem_id="fe-sessions-whose")
        refresh = gr.Button("Refresh list", size="sm", scale=0)
    table = gr.Dataframe(headers=COLUMNS, wrap=True,  # filled on page load (app.ui)
                         interactive=False, label="Saved runs", elem_id="fe-sessions-table",
                         max_height=420, column_widths=[  # "paradigm" and "seconds" unbroken
                             "4%", "10%", "8%", "7%", "17%", "12%", "4%", "4%", "6%", "7%",
                             "8%", "6%", "7%"])
    with gr.Row():
        ids = gr.Textbox(label="Run id(s)", placeholder="3   or   3, 5", scale=2,
                         elem_id="fe-session-ids")
        open_ = gr.Button("Open", variant="primary", scale=1, elem_id="fe-open")
        compare = gr.Button("Compare two", scale=1, elem_id="fe-compare-two")
        delete = gr.Button("Delete", variant="stop", scale=1, elem_id="fe-delete")
    with gr.Accordion("Export saved runs", open=False):
        with gr.Row():
            fmt = gr.Dropdown([(label, kind) for kind, label in EXPORTS.items()],
                              value="jsonl", label="Format",
                              info="the runs whose ids are typed above, or every saved run",
                              elem_id="fe-export-format")
            export_button = gr.Button("Export", elem_id="fe-export")
            download = gr.File(label="Export", interactive=False, height=90,
                               elem_id="fe-export-file")
    with gr.Accordion("Import a pipeline's runs", open=False):
        gr.Markdown(
            "Your own pipeline's runs, shown and measured like ours: **OpenInference "
            "traces** (OTLP/JSON as a collector's file exporter writes it, or Phoenix's "
            "spans as JSON), each trace a run whose RETRIEVER and RERANKER spans are its "
            "stages; or **TREC run files** (`qid Q0 docid rank score tag`), one per stage "
            "in the order they ran, with a `qrels` file if you have one (each file is told "
            "apart by its content). With a dataset the runs become an evaluation (Evaluate, "
            "Diagnose, paired against ours), one paradigm per pipeline the traces name "
            "(their `service.name`); without, traces are saved here as runs. An import is "
            "stored whole or not at all.")
        with gr.Row():
            uploads = gr.File(label="Trace or run files", file_count="multiple",
                              file_types=[".json", ".jsonl", ".run", ".txt", ".trec"],
                              height=120, elem_id="fe-import-files", scale=2)
            with gr.Column(scale=1):
                dataset = gr.Dropdown(
                    [("none: save traces as runs", "")] + [
                        (label, label) for label in explorer.catalog.datasets().values()],
                    value="", label="Dataset the pipeline answered",
                    info="its gold measures the runs", elem_id="fe-import-dataset")
                label = gr.Textbox(label="Pipeline name", placeholder="my-pipeline",
                                   max_length=80, elem_id="fe-import-label",
                                   info="default: the traces' service.name; with several "
                                        "pipelines in the files, a prefix of each one's")
                import_button = gr.Button("Import", elem_id="fe-import")
    with gr.Accordion("Audit log: admin actions and refusals (an admin's to read)",
                      open=False):
        with gr.Row():
            audit_whose = gr.Textbox(label="Of user (empty: everyone)", scale=2,
                                     elem_id="fe-audit-user")
            audit_show = gr.Button("Show the audit log", scale=1, elem_id="fe-audit-show")
        audit = gr.HTML(elem_id="fe-audit")
    message = gr.HTML(elem_id="fe-session-message")
    banner = gr.HTML()
    answer = gr.HTML(elem_id="fe-session-answer")
    with gr.Row():
        funnel_plot = gr.Plot(label="Funnel", elem_id="fe-session-funnel")
        waterfall_plot = gr.Plot(label="Timing", elem_id="fe-session-timing")
    heatmap = gr.Plot(label="Reader attention", visible=False, elem_id="fe-session-heatmap")
    tables = gr.HTML(elem_id="fe-session-tables")

    def select_row(current, evt: gr.SelectData):
        return pick_id(current, evt.row_value[0]) if evt.row_value else current

    views = [message, banner, answer, funnel_plot, waterfall_plot, heatmap, tables]
    refresh.click(partial(listing, explorer), whose, [table, whose], **PRIVATE)
    whose.input(partial(rows, explorer), whose, table, **PRIVATE)
    table.select(select_row, ids, ids, **PRIVATE)
    for button, show in ((open_, open_run), (compare, compare_runs)):  # shown under the list
        button.click(partial(show, explorer), ids, views, **PRIVATE).then(
            None, js=scroll_to("fe-session-message"), **PRIVATE)
    pending = gr.State(None)  # the ids a first Delete click asked to confirm
    delete.click(partial(delete_runs, explorer), [ids, pending, whose],
                 [message, table, pending], **PRIVATE)
    export_button.click(partial(export_runs, explorer), [fmt, ids], [download, message],
                        **PRIVATE)
    audit_show.click(partial(audit_table, explorer), audit_whose, audit,
                     **PRIVATE)
    import_button.click(partial(import_pipeline, explorer), [uploads, dataset, label, whose],
                        [message, table, uploads], **PRIVATE)
    return Tab(refresh=Refresh(partial(listing, explorer), [table, whose], [whose]),
               on_load=True)


# --- callbacks ----------------------------------------------------------------------------


def _no_run(box: str, *_) -> tuple:
    """A refused Open or Compare: the box, and the views cleared (they showed another
    run)."""
    return (box, "", "", None, None, gr.Plot(None, visible=False), "")


@refusing(shape=_no_run)
def open_run(explorer: Explorer, text) -> tuple:
    """(message, banner, answer, funnel, timing, reader attention, tables) of a saved run."""
    (run_id,) = parse_ids(text)[:1]
    trace = explorer.runs.load_run(run_id)
    banner, answer, funnel, waterfall, heatmap, tables = trace_views(trace)
    return (f"<div class='fe-kept'>Run {run_id}, reopened from its saved trace.</div>",
            banner, answer, funnel, waterfall, gr.Plot(heatmap, visible=True), tables)


@refusing(shape=_no_run)
def compare_runs(explorer: Explorer, text) -> tuple:
    """The same boxes for two or more saved runs side by side."""
    chosen = parse_ids(text)
    if len(chosen) < 2:
        raise EngineError("Give two run ids to compare, like 3, 5.")
    traces = [explorer.runs.load_run(i) for i in chosen]
    saved = {r.id: r for r in explorer.runs.saved_runs()}
    heads = [run_heading(saved[i], t) for i, t in zip(chosen, traces, strict=True)]
    # two runs' reader attention has no common grid: each shows on Open
    return ("", "", compare_table(traces, heads), figures.compare_funnel_figure(traces),
            figures.compare_figure(traces), gr.Plot(None, visible=False), "")


def _refused_delete(box: str, explorer: Explorer, text, pending, whose=EVERYONE) -> tuple:
    """A refused Delete: the box, the list read again (of several ids, those before the
    refused one are gone) and nothing left to confirm."""
    return box, rows(explorer, whose), None


@refusing(shape=_refused_delete)
def delete_runs(explorer: Explorer, text, pending, whose=EVERYONE) -> tuple:
    """(message, list of `whose` runs, pending ids): the first click names what would go;
    a second click on the same ids deletes them (one's own, or anyone's as an admin)."""
    chosen = parse_ids(text)
    if chosen != pending:
        known = {r.id for r in explorer.runs.saved_runs()}
        missing = [i for i in chosen if i not in known]
        if missing:
            raise EngineError(f"No saved run {missing[0]}; pick ids from the list.")
        return (f"<div class='fe-error'>Press Delete again to delete "
                f"{plural_runs(chosen)} for good.</div>", gr.skip(), chosen)
    for run_id in chosen:
        explorer.runs.delete_run(run_id)
    return (f"<div class='fe-kept'>Deleted {plural_runs(chosen)}.</div>",
            rows(explorer, whose), None)


@refusing()
def audit_table(explorer: Explorer, whose="") -> str:
    """The latest admin actions and refusals (of `whose` only), newest first, escaped."""
    entries = explorer.audit_log(200, str(whose or "").strip())
    if not entries:
        return "<div class='fe-stage'>Nothing in the audit log yet.</div>"
    body = "".join(
        f"<tr><td>{e.happened}</td><td>{esc(e.username or '-')}</td>"
        f"<td>{esc(e.role or '-')}</td><td>{esc(e.action)}</td>"
        f"<td>{'done' if e.allowed else 'refused'}</td><td>{esc(e.detail)}</td></tr>"
        for e in entries)
    return ("<table class='fe-table' id='fe-audit-table'><thead><tr><th>when (UTC)</th>"
            "<th>user</th><th>role</th><th>action</th><th></th><th>detail</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


@refusing(shape=lambda box, *_: (None, box))
def export_runs(explorer: Explorer, kind, text) -> tuple:
    """(the exported file, a message): the runs typed, or every saved run."""
    chosen = parse_ids(text) if str(text or "").strip() else None
    path, what = download(explorer.runs.export_run_files(kind, chosen), f"funnel_runs_{kind}")
    which = f"runs {text.strip()}" if chosen else "every saved run"
    return str(path), (f"<div class='fe-kept'>Exported {esc(which)} as "
                       f"{esc(EXPORTS[kind])} ({what}).</div>")


@refusing(outputs=3)
def import_pipeline(explorer: Explorer, uploads, dataset, label, whose=EVERYONE) -> tuple:
    """(message, list, the upload box): the uploaded files stored as an evaluation or as
    saved runs; the box is emptied once they are stored (a second click would store them
    again)."""
    from engine.data.loaders.jsonio import read_text

    paths = [Path(getattr(f, "name", f)) for f in (uploads or [])]
    if not paths:
        raise EngineError("Upload trace files or TREC run files first.")
    files = [(path.name, read_text(path)) for path in paths]
    imported = explorer.runs.import_pipeline(files, dataset or "", label or "")
    runs = f"{imported.runs} {'run' if imported.runs == 1 else 'runs'}"
    pipelines = ", ".join(imported.paradigms)
    if imported.evaluation is not None:
        return (f"<div class='fe-kept'>Stored {runs} of {esc(dataset)} by {esc(pipelines)} as "
                f"evaluation {imported.evaluation}: see it in Evaluate and Diagnose, and pair "
                "it there with an evaluation of our paradigms on the same dataset (over a "
                "corpus that holds its paragraphs).</div>", rows(explorer, whose), None)
    before = (f" {imported.already} of them saved before, left out." if imported.already
              else "")
    if not imported.sessions:
        return ("<div class='fe-kept'>Nothing new: every traced run was saved before."
                "</div>", gr.skip(), None)
    first, last = imported.sessions[0], imported.sessions[-1]
    where = f"runs {first}–{last}" if first != last else f"run {first}"
    return (f"<div class='fe-kept'>Saved {runs} of {esc(pipelines)} as {where}: type an id "
            f"above and Open it.{before}</div>", rows(explorer, whose), None)
