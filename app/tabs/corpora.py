"""Corpora: every corpus the app can search, adding one (an upload or a path under the
allowed root), watching it prepare, removing it; the corpus choice the other tabs share; and
the models each role can use, with what each has built.
"""

from __future__ import annotations

from functools import partial

import gradio as gr

from app.errors import refused_box, refusing
from app.tabs.base import PRIVATE, Refresh, Tab, place_choice
from app.tabs.contents import contents
from app.views.trace import esc
from engine.data.ingest import SUFFIXES, megabytes
from engine.index.shards import DEFAULT_SHARDS
from engine.service.corpus_rows import CorpusRow
from engine.service.explorer import Explorer
from engine.service.models import ModelRow

REFRESH_SECONDS = 2.0


def uploaded_path(uploaded) -> str | None:
    """The server path of an uploaded file (Gradio passes a path or a file object)."""
    return (uploaded if isinstance(uploaded, str) else getattr(uploaded, "name", None)) or None


def corpus_choice(explorer: Explorer, elem_id: str) -> gr.Dropdown:
    """The corpus a tab's requests search (the start-up one first); the Corpora tab keeps
    its choices current (`offered`: not those that failed to load) from the page's load."""
    names = explorer.catalog.corpus_names()
    # a corpus removed while a tab still shows it reaches the engine, which says so
    return gr.Dropdown(names, value=names[0], label="Corpus", elem_id=elem_id,
                       allow_custom_value=True,
                       info="what is searched; add your own in the Corpora tab")


def served(row: CorpusRow) -> str:
    """Where a corpus's dense index is served, under its status, when not in the app."""
    if not row.served_by:
        return ""
    return f"<br><small class='fe-corpus-served'>dense index: {esc(row.served_by)}</small>"


def judged(row: CorpusRow) -> str:
    """A test collection's splits under its origin: each a dataset the pickers offer."""
    if not row.judged:
        return ""
    return (f"<br><small class='fe-corpus-judged'>test collection: "
            f"{esc(row.judged)}</small>")


def corpora_table(rows: list[CorpusRow]) -> str:
    """Every corpus as an HTML table, with its preparation's lines while it prepares and
    its error when it failed."""
    body = []
    for row in rows:
        documents = f"{row.documents:,}" if row.documents is not None else "-"
        body.append(
            f"<tr data-corpus='{esc(row.name)}'><td><b>{esc(row.name)}</b></td>"
            f"<td>{esc(row.origin)}{judged(row)}</td>"
            f"<td class='fe-corpus-{esc(row.status.replace(' ', '-'))}'>{esc(row.status)}"
            f"{served(row)}</td>"
            f"<td>{documents}</td><td><code>{esc(row.fingerprint or '-')}</code></td>"
            f"<td>{esc(', '.join(row.built) or '-')}</td>"
            f"<td>{megabytes(row.disk_bytes) if row.disk_bytes else '-'}</td>"
            f"<td>{esc(', '.join(row.answering) or '-')}</td></tr>")
        if row.error:
            body.append(f"<tr><td></td><td colspan='7' class='fe-error'>{esc(row.error)}"
                        "</td></tr>")
        elif row.status == "preparing":
            lines = "".join(f"<li>{esc(line)}</li>" for line in row.progress)
            body.append(f"<tr><td></td><td colspan='7'><ul class='fe-corpus-progress'>"
                        f"{lines}</ul></td></tr>")
    return ("<table class='fe-table' id='fe-corpora-list'><thead><tr><th>corpus</th>"
            "<th>from</th><th>status</th><th>documents</th><th>fingerprint</th>"
            "<th>built on disk</th><th>on disk</th><th>answering</th></tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


# the contents line's links (app.tabs.contents): corpora and models fill over two screens
VIEWS = [("Corpora", "fe-corpora-table"), ("Add a corpus", "fe-corpus-file"),
         ("Remove one", "fe-corpus-remove-name"), ("Models", "fe-models-head")]


def build(explorer: Explorer, choices: list[gr.Dropdown]) -> Tab:
    """The Corpora tab; `choices` are the other tabs' corpus dropdowns, kept current from
    every page load and whenever the tab is shown."""
    contents(VIEWS, "fe-corpora-contents")
    gr.Markdown(
        "Every corpus the app can search. Add your own: a JSONL, CSV or Parquet file with "
        "`id, title, text[, links]` columns, a `.zip` of `.txt`, `.md`, `.html` or `.pdf` "
        "files (or one such file: HTML by section, PDF by page), or a QA file the Evaluate "
        "tab reads. It is read and prepared in the background (one long "
        "build at a time; BM25 answers for the dense index meanwhile), then every tab's "
        "*Corpus* choice offers it. A **test collection** is added the same way: a BEIR "
        "folder or `.zip` (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`), or a folder "
        "of TREC `topics.*`, `qrels.*` and a `corpus.jsonl`; each of its splits is then a "
        "dataset every *Dataset* choice offers (\"name (test)\"), measured against its "
        "graded judgments.")
    table = gr.HTML(corpora_table(explorer.catalog.corpora()), elem_id="fe-corpora-table")
    with gr.Row():
        upload = gr.File(label="Corpus file", file_types=list(SUFFIXES), type="filepath",
                         elem_id="fe-corpus-file", scale=2)
        with gr.Column(scale=1):
            name = gr.Textbox(label="Name", placeholder="e.g. my-notes",
                              elem_id="fe-corpus-name",
                              info="1-40 letters, digits, '-' or '_'")
            add = gr.Button("Add corpus", variant="primary", elem_id="fe-corpus-add")
    with gr.Accordion("Or read a file on the server", open=False):
        with gr.Row():
            path = gr.Textbox(label="Path on the server", elem_id="fe-corpus-path", scale=2,
                              info="under the folder the app allows (--corpus-root), or an "
                                   "ir_datasets id from its local cache "
                                   "(irds:beir/nfcorpus/test)")
            path_name = gr.Textbox(label="Name", elem_id="fe-corpus-path-name", scale=1)
            add_path = gr.Button("Add from path", elem_id="fe-corpus-add-path", scale=1)
    with gr.Row():
        ray = place_choice("ray", "Ray", "fe-corpus-ray", "none: in this process",
                           (("local: two workers here", "local"),), scale=2,
                           info="a Ray cluster the operator allowed (it sees this data "
                                "directory), or two local workers: the dense passages of "
                                "the next corpus added are encoded there")
        sharded = gr.Checkbox(label=f"Serve its dense index from {DEFAULT_SHARDS} Ray shards",
                              elem_id="fe-corpus-shards", scale=1,
                              info="one index shard per Ray actor, searched side by side and "
                                   "merged exactly: for a corpus past one machine's memory")
    with gr.Row():
        qdrant = place_choice("qdrant", "Qdrant", "fe-corpus-qdrant", "none: in this process",
                              scale=2, info="serve its dense index from a Qdrant the operator "
                                            "allowed (a server, or a folder in local mode)")
        collection = gr.Textbox(label="Collection", elem_id="fe-corpus-collection", scale=1,
                                placeholder="default: the corpus's name",
                                info="holding its passages' vectors (payload 'unit': the "
                                     "passage id); written from this app's index if missing")
    drop_unknown = gr.Checkbox(
        label="A test collection: leave out its judgments of documents its corpus lacks",
        elem_id="fe-corpus-drop-unknown",
        info="each is named in the log; unticked, such a judgment refuses the collection "
             "(BEIR's own ArguAna judges 5 documents its corpus lacks)")
    with gr.Row():
        removable = gr.Dropdown(_added(explorer.catalog.corpora()), value=None,
                                label="Added corpus", scale=2,
                                elem_id="fe-corpus-remove-name")
        remove = gr.Button("Remove", variant="stop", elem_id="fe-corpus-remove", scale=1)
    pending = gr.State(None)  # the corpus a first Remove click asked to confirm
    message = gr.HTML(elem_id="fe-corpora-message")
    timer = gr.Timer(REFRESH_SECONDS, active=False)
    gr.Markdown(
        "### Models\nWhat each role can use here and what it has built. A paradigm's "
        "option names the model (`bi_encoder`, `preranker`/`reranker`, `classifier`, "
        "`reader`): a packaged alias, a model trained here, or a folder, hub id or (the "
        "reader's) OpenAI-compatible endpoint by the name the operator allowed it by "
        "(`--allow FILE`).", elem_id="fe-models-head")
    models = gr.HTML(models_table(explorer.catalog.models()), elem_id="fe-models-table")

    watched = gr.State(None)  # the corpus an Add started, told of when it is prepared

    def added(new_name: str, source, upload_it: bool, address: str, shards: bool,
              where: str, named: str, drop: bool, *current) -> tuple:
        source = uploaded_path(source) if upload_it else (source or "").strip()
        if not source:
            what = "Choose a file to upload" if upload_it else "Give a path on the server"
            return (*refreshed(explorer, current,
                               refused_box(f"{what} first, then a name for the corpus.")),
                    gr.skip())
        note, corpus = adding(explorer, new_name, source, upload_it, address,
                              DEFAULT_SHARDS if shards else 0, where, named, bool(drop))
        if not isinstance(corpus, str):  # refused at once: why, over the table as it is
            return (*refreshed(explorer, current, note), corpus)
        ended, table, timer, *offered = refreshed(explorer, current, ticked=True,
                                                  watched=corpus)
        if isinstance(ended, str):  # its read ended already: how, not "being read"
            return (ended, table, timer, *offered, None)
        # "being read", and the timer on whatever the table read: a preparation that ended
        # just after it was read is told by the next tick (the timer was left off, and the
        # message "being read" for good, when a refused BEIR zip failed that fast)
        return (note, table, gr.Timer(active=True), *offered, corpus)

    def ticked(corpus: str | None, *current) -> tuple:
        views = refreshed(explorer, current, ticked=True, watched=corpus)
        done = isinstance(views[0], str)  # nothing prepares any more: told how it ended
        return (*views, None if done else gr.skip())

    shown = [removable, *choices]  # their values: what a refresh keeps if still offered
    outputs = [message, table, timer, removable, *choices]
    serving = [ray, sharded, qdrant, collection, drop_unknown]
    add.click(lambda n, f, *c: added(n, f, True, *c), [name, upload, *serving, *shown],
              [*outputs, watched], **PRIVATE)
    add_path.click(lambda n, p, *c: added(n, p, False, *c), [path_name, path, *serving, *shown],
                   [*outputs, watched], **PRIVATE)
    remove.click(partial(remove_asked, explorer), [removable, pending, *choices],
                 [*outputs, pending], **PRIVATE)
    timer.tick(ticked, [watched, *shown], [*outputs, watched], **PRIVATE)

    def everything() -> tuple:  # the tab opened: the models too (not on every tick)
        return (*refreshed(explorer, [None] * len(shown)), models_table(explorer.catalog.models()))

    return Tab(refresh=Refresh(everything, [*outputs, models]), on_load=True)


# --- callbacks ----------------------------------------------------------------------------


def offered(rows: list[CorpusRow]) -> list[str]:
    """The corpora a tab's Corpus choice offers: every one but those that failed to load
    (nothing runs over them; the Corpora tab shows why), the start-up one always first."""
    return [row.name for row in rows if row.status != "failed" or row.origin == "started with"]


def refreshed(explorer: Explorer, current, note: str | None = None,
              ticked: bool = False, watched: str | None = None) -> tuple:
    """(message, table, timer, removable, every tab's choice) as they are now. `current`
    holds the values shown (the removable corpus, then each tab's choice; None: unknown):
    a value no longer offered is replaced (by nothing, or by the start-up corpus), so no
    dropdown goes on holding a corpus that is gone. `ticked` (the table's timer, which
    ticks while a corpus is prepared): once none is, the message that one is being read
    gives way to how corpus `watched` (the one added last) ended."""
    rows = explorer.catalog.corpora()
    names, removable = offered(rows), _added(rows)
    preparing = any(row.status == "preparing" for row in rows)
    if ticked and note is None and not preparing:
        note = ended(rows, watched)
    held, *chosen = current

    def choice(options: list[str], value, fallback) -> gr.Dropdown:
        if value is None or value in options:
            return gr.Dropdown(choices=options)
        return gr.Dropdown(choices=options, value=fallback)

    return (gr.skip() if note is None else note, corpora_table(rows),
            gr.Timer(active=preparing), choice(removable, held, None),
            *(choice(names, value, names[0]) for value in chosen))


def ended(rows: list[CorpusRow], corpus: str | None) -> str:
    """How the preparation of `corpus` ended: ready (a test collection's splits named, as
    the pickers offer them) or refused, with why and how to add it again ("": no corpus,
    or one removed since)."""
    row = next((r for r in rows if r.name == corpus), None)
    if row is None:
        return ""
    if row.status == "failed":
        why = row.error if row.error.endswith(".") else f"{row.error}."
        return refused_box(f"Corpus '{corpus}' was refused and nothing of it was stored: "
                           f"{why} Fix it and add it again; the name is free.")
    splits = (f" Its splits are datasets every Dataset choice offers: {esc(row.judged)}."
              if row.judged else "")
    held = "" if row.documents is None else (
        f" It holds {row.documents:,} documents (an HTML page gives one per section, a PDF "
        "one per page).")
    return (f"<div class='fe-kept'>Corpus <b>{esc(corpus)}</b> is ready: every tab's Corpus "
            f"choice offers it.{held}{splits}</div>")


def remove_asked(explorer: Explorer, corpus: str | None, pending: str | None,
                 *chosen) -> tuple:
    """Remove, as Delete in Sessions: the first click names what would go and asks; a
    second click on the same corpus removes it. Returns `refreshed`'s views and the corpus
    waiting for a confirmation."""
    current = (corpus, *chosen)
    if not corpus:
        return (*refreshed(explorer, current,
                           refused_box("Choose an added corpus to remove.")), None)
    if corpus != pending:
        failed = any(r.name == corpus and r.status == "failed" for r in explorer.catalog.corpora())
        what = ("to take it off the list: it failed to load, so nothing of it was stored"
                if failed else
                "for good: its stored file is deleted and no tab can search it any more")
        return (*refreshed(explorer, current, (
            f"<div class='fe-error'>Press Remove again to remove corpus <b>{esc(corpus)}</b> "
            f"{what}.</div>")), corpus)
    return (*refreshed(explorer, current, removing(explorer, corpus)), None)


@refusing(outputs=2, also=(ValueError,))
def adding(explorer: Explorer, name: str, source: str, upload: bool, ray: str,
           shards: int = 0, qdrant: str = "", collection: str = "",
           drop_unknown: bool = False) -> tuple[str, str]:
    """(the message after adding corpus `name` from `source`, shown above the table read
    again, and the corpus's name); refused at once: (why, gr.skip())."""
    corpus = explorer.catalog.add_corpus(name, source, upload=upload, ray=ray, shards=shards,
                                         qdrant=qdrant, collection=collection,
                                         drop_unknown=drop_unknown)
    return (f"<div class='fe-kept'>Corpus <b>{esc(corpus)}</b> is being read and "
            "prepared; the table shows how far.</div>", corpus)


@refusing()
def removing(explorer: Explorer, corpus: str) -> str:
    """The message after removing `corpus` (refused: why)."""
    explorer.catalog.remove_corpus(corpus)
    return f"<div class='fe-kept'>Removed corpus <b>{esc(corpus)}</b>.</div>"


def models_table(rows: list[ModelRow]) -> str:
    """Every role's models as an HTML table: name, source, status, what it built."""
    body = "".join(
        f"<tr data-role='{esc(row.role)}'><td>{esc(row.role)}</td><td><b>{esc(row.name)}"
        f"</b></td><td>{esc(row.source)}</td><td>{esc(row.status)}</td>"
        f"<td>{'<br>'.join(esc(b) for b in row.built) or '-'}</td>"
        f"<td><code>{esc(row.option)}</code></td></tr>" for row in rows)
    return ("<table class='fe-table' id='fe-models-list'><thead><tr><th>role</th>"
            "<th>model</th><th>from</th><th>status</th><th>built here</th>"
            "<th>option</th></tr></thead><tbody>" + body + "</tbody></table>")


def _added(rows: list[CorpusRow]) -> list[str]:
    """The corpora Remove offers: those added (one that failed to load too: Remove takes
    its line off the table)."""
    return [row.name for row in rows if row.origin == "added"]
