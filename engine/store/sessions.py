"""Saved runs in DuckDB: save, list, reopen exactly, delete, export.

One DuckDB file (default `<data dir>/sessions.duckdb`) holds every saved run with its name,
notes and the full run trace as JSON, so a run reopens without recomputing anything. The
schema changes only through `MIGRATIONS` (engine/store/schema.py), each applied once, in
order, inside a transaction and recorded in `schema_migrations`; every statement takes its
values as parameters.

Durability: each save is one transaction (DuckDB writes its WAL before it commits), so a
crash or kill during a save loses that save at most, never an earlier one; an import's runs
are saved in one transaction (`save_all`), all or none. A file DuckDB cannot open is never
overwritten or deleted: the error names it and the way out.

The store is shared by the app's worker threads: one connection, one lock.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError, EngineError
from engine.store.schema import MIGRATIONS
from engine.trace import RunTrace

logger = logging.getLogger(__name__)

DEFAULT_FILE = "sessions.duckdb"
MAX_NAME_CHARS = 200
MAX_NOTES_CHARS = 20_000
PROGRESS_EVERY = 200  # statements of a long transaction between two debug lines

EXPORT_COLUMNS = ("id", "name", "notes", "created", "paradigm", "corpus", "corpus_fingerprint",
                  "question", "answer", "reader_tokens", "seconds", "metrics")


class SessionStoreError(EngineError):
    """The sessions database cannot be opened or used."""


@dataclass(frozen=True)
class SavedRun:
    """One row of the runs list (the trace itself stays in the database until loaded)."""

    id: int
    name: str
    notes: str
    created: str
    paradigm: str
    question: str
    answer: str
    reader_tokens: int
    seconds: float
    metrics: dict
    corpus: str = ""  # runs saved before corpora were recorded have none
    corpus_fingerprint: str = ""
    owner: str = ""  # the user who saved it; "" without logins or before them


def _unopened(path: Path, err: Exception) -> str:
    """Why the sessions database at `path` did not open, and what to do: another process
    holding its lock (DuckDB names it) is the app or a command running now, not damage."""
    holder = re.search(r"lock is held in (.+?) \(PID (\d+)\)", str(err))
    if holder:
        return (f"The sessions database {path} is in use by another process (PID "
                f"{holder.group(2)}, {holder.group(1)}): the app, or a command, running now. "
                "Use that app (or stop it first), or give this one another data "
                "directory (--data-dir, FUNNEL_DATA_DIR) or database (--sessions). Nothing "
                "was changed.")
    return (f"Cannot open the sessions database {path}: {err}. It was left untouched: "
            "saved runs stay in it. Give another data directory (--data-dir, "
            "FUNNEL_DATA_DIR) or database (--sessions) to start afresh, then restart.")


class SessionStore:
    """Saved runs in one DuckDB file."""

    def __init__(self, path: str | Path | None = None) -> None:
        import duckdb

        if path is None:
            from engine.paths import data_dir

            path = data_dir() / DEFAULT_FILE
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._con = duckdb.connect(str(self.path))
        except duckdb.Error as err:
            raise SessionStoreError(_unopened(self.path, err)) from None
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)  # saved runs and the audit log are the owner's
        self._migrate()

    # --- schema ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            self._con.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                              "version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, "
                              "applied TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)")
            done = {v for (v,) in self._con.execute(
                "SELECT version FROM schema_migrations").fetchall()}
            for version, description, statements in MIGRATIONS:
                if version in done:
                    continue
                self._con.execute("BEGIN TRANSACTION")
                try:
                    for statement in statements:
                        self._con.execute(statement)
                    self._con.execute("INSERT INTO schema_migrations (version, description) "
                                      "VALUES (?, ?)", [version, description])
                    self._con.execute("COMMIT")
                except Exception:
                    self._con.execute("ROLLBACK")
                    raise
                logger.info("sessions: applied migration %d (%s)", version, description)

    def schema_version(self) -> int:
        with self._lock:
            (version,) = self._con.execute(
                "SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
        return int(version)

    # --- runs -----------------------------------------------------------------------------

    def save(self, trace: RunTrace, name: str = "", notes: str = "", owner: str = "") -> int:
        """Store `trace` under `name` (default: the question), saved by `owner`, and
        return its id."""
        (run_id,) = self.save_all([trace], [name], notes, owner)
        return run_id

    def save_all(self, traces: list[RunTrace], names: list[str],
                 notes: str = "", owner: str = "") -> list[int]:
        """Store every trace (under its name in `names`; empty: its question) in one
        transaction, all or none (an import's runs); returns their ids."""
        statements = [self._save_statement(trace, name, notes, owner)
                      for trace, name in zip(traces, names, strict=True)]
        ids = [int(rows[0][0]) for rows in self.transaction(statements)]
        for run_id, (_, params) in zip(ids, statements, strict=True):
            logger.info("sessions: saved run %d (%s)", run_id, params[0])
        return ids

    @staticmethod
    def _save_statement(trace: RunTrace, name: str, notes: str,
                        owner: str = "") -> tuple[str, list]:
        name = (name or "").strip() or trace.question[:80]
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"The run name has {len(name)} characters; the limit is "
                              f"{MAX_NAME_CHARS}. Shorten it.")
        if len(notes or "") > MAX_NOTES_CHARS:
            raise ConfigError(f"The notes have {len(notes):,} characters; the limit is "
                              f"{MAX_NOTES_CHARS:,}. Shorten them.")
        return ("INSERT INTO runs (name, notes, question, paradigm, trace, metrics, "
                "reader_tokens, seconds, corpus, corpus_fingerprint, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                [name, notes or "", trace.question, trace.paradigm, trace.to_json(),
                 json.dumps(trace.metrics), trace.reader_input_tokens, trace.seconds,
                 trace.corpus.get("name", ""), trace.corpus.get("fingerprint", ""), owner])

    def saved_as(self, trace: RunTrace) -> tuple[int, str] | None:
        """(id, name) of the first saved run whose trace is `trace` exactly, or None. Two
        runs of one question differ at least in their timings, so an equal trace is the
        same run saved before."""
        with self._lock:
            row = self._con.execute(
                "SELECT id, name FROM runs WHERE question = ? AND paradigm = ? AND "
                "CAST(trace AS VARCHAR) = ? ORDER BY id LIMIT 1",
                [trace.question, trace.paradigm, trace.to_json()]).fetchone()
        return (int(row[0]), row[1]) if row is not None else None

    def list(self) -> list[SavedRun]:
        """Every saved run, newest first."""
        with self._lock:
            rows = self._con.execute(
                "SELECT id, name, notes, strftime(created, '%Y-%m-%d %H:%M:%S'), paradigm, "
                "question, json_extract_string(trace, '$.answer'), "
                "coalesce(reader_tokens, 0), coalesce(seconds, 0), coalesce(metrics, '{}'), "
                "coalesce(corpus, ''), coalesce(corpus_fingerprint, ''), owner "
                "FROM runs ORDER BY id DESC").fetchall()
        return [SavedRun(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6] or "", int(r[7]),
                         float(r[8]), json.loads(r[9]), r[10], r[11], r[12]) for r in rows]

    def load(self, run_id: int) -> RunTrace:
        """The saved trace of run `run_id`, exactly as it was saved."""
        return RunTrace.from_json(self._column(run_id, "trace"))

    def owner(self, run_id: int) -> str:
        """The user who saved run `run_id` ("" without logins or before them)."""
        return str(self._column(run_id, "owner"))

    def _column(self, run_id: int, column: str) -> object:
        """Column `column` (a name of this module's, never a request's) of run `run_id`;
        an unknown id is refused, naming the saved ones."""
        with self._lock:
            row = self._con.execute(f"SELECT {column} FROM runs WHERE id = ?",
                                    [self._id(run_id)]).fetchone()
        if row is None:
            raise ConfigError(f"No saved run with id {run_id}. "
                              f"Saved ids: {self._ids_hint()}.")
        return row[0]

    def set_owner(self, run_ids: list[int], owner: str) -> None:
        """Record the user who saved (imported) runs `run_ids`."""
        self.transaction([("UPDATE runs SET owner = ? WHERE id = ?", [owner, int(i)])
                          for i in run_ids])

    def delete(self, run_id: int) -> None:
        """Remove run `run_id`; an unknown id is an error (nothing else is touched)."""
        run_id = self._id(run_id)
        with self._lock:
            deleted = self._con.execute("DELETE FROM runs WHERE id = ? RETURNING id",
                                        [run_id]).fetchall()
        if not deleted:
            raise ConfigError(f"No saved run with id {run_id}. "
                              f"Saved ids: {self._ids_hint()}.")

    # --- export ---------------------------------------------------------------------------

    def export_jsonl(self, ids: list[int] | None = None) -> str:
        """One JSON object per run (its listing fields plus the full trace), newest first."""
        lines = []
        for run in self._selected(ids):
            record = {k: getattr(run, k) for k in EXPORT_COLUMNS}
            record["trace"] = json.loads(self.load(run.id).to_json())
            lines.append(json.dumps(record, ensure_ascii=False))
        return "".join(line + "\n" for line in lines)

    def export(self, fmt: str, ids: list[int] | None = None) -> str:
        """Runs `ids` (every saved run when None), newest first, as `fmt`: "jsonl" (full
        traces), "csv" (listing and metrics) or a RAG evaluation tool's input
        (engine.eval.exports: ragas, ragchecker, flashrag)."""
        if fmt == "jsonl":
            return self.export_jsonl(ids)
        if fmt == "csv":
            return self.export_csv(ids)
        from engine.eval.exports import export

        runs = self._selected(ids)
        return export([self.load(run.id) for run in runs], fmt,
                      runs=[f"saved run {run.id}" + (f" {run.name!r}" if run.name else "")
                            for run in runs])

    def export_files(self, fmt: str, ids: list[int] | None = None) -> dict[str, str]:
        """{file name: text} of runs `ids` (every saved run when None) in `fmt`: jsonl or
        csv (one file), or another tool's (engine.eval.exports.export_files: ragas one file
        per paradigm, trec qrels and a run file per paradigm and stage)."""
        if fmt in ("jsonl", "csv"):
            return {f"runs.{fmt}": self.export(fmt, ids)}
        from engine.eval.exports import export_files

        return export_files([self.load(run.id) for run in self._selected(ids)], fmt)

    def export_csv(self, ids: list[int] | None = None) -> str:
        """One CSV row per run: listing fields, seconds to the millisecond, metrics as JSON
        to four decimals (empty for a run without gold), no traces."""
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(EXPORT_COLUMNS)
        for run in self._selected(ids):
            writer.writerow([_csv_cell(k, getattr(run, k)) for k in EXPORT_COLUMNS])
        return buffer.getvalue()

    def execute(self, sql: str, params: list | None = None) -> list[tuple]:
        """Rows of one parameterised statement, under the store's lock (for the other
        tables of this file, e.g. labels)."""
        with self._lock:
            return self._con.execute(sql, params or []).fetchall()

    def transaction(self, statements: list[tuple[str, list]]) -> list[list[tuple]]:
        """Parameterised statements applied all or none (an import's every row: a crash
        or a kill before COMMIT leaves none of them); returns each one's rows."""
        found = []
        with self._lock:
            self._con.execute("BEGIN TRANSACTION")
            try:
                for n, (sql, params) in enumerate(statements, start=1):
                    found.append(self._con.execute(sql, params).fetchall())
                    if n % PROGRESS_EVERY == 0:
                        logger.debug("sessions: %d of %d statements of a transaction "
                                     "applied, not yet committed", n, len(statements))
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
        return found

    def close(self) -> None:
        with self._lock:
            self._con.close()

    # --- helpers --------------------------------------------------------------------------

    def _selected(self, ids: list[int] | None) -> list[SavedRun]:
        runs = self.list()
        if ids is None:
            return runs
        wanted = {self._id(i) for i in ids}
        missing = wanted - {r.id for r in runs}
        if missing:
            raise ConfigError(f"No saved run with id {sorted(missing)[0]}. "
                              f"Saved ids: {self._ids_hint()}.")
        return [r for r in runs if r.id in wanted]

    def _ids_hint(self) -> str:
        with self._lock:
            ids = [i for (i,) in self._con.execute(
                "SELECT id FROM runs ORDER BY id DESC LIMIT 20").fetchall()]
        return ", ".join(map(str, ids)) or "none yet"

    @staticmethod
    def _id(run_id: object) -> int:
        try:
            return int(run_id)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"Run id {run_id!r} is not a number; pick one from the "
                              "Sessions list.") from None


def _csv_cell(column: str, value):
    """A listing field as a spreadsheet reads it best."""
    if column == "seconds":
        return f"{value:.3f}"
    if column == "metrics":
        return json.dumps({k: round(v, 4) for k, v in value.items()}) if value else ""
    return value
