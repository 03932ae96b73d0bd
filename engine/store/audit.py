"""The audit log: every admin action and every refused access, in the sessions database
(table `audit`, migration 10) and as one JSON line each in a file beside it, which survives
the database and is read with the tools of the trade (jq, a log shipper)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engine.store.sessions import SessionStore

logger = logging.getLogger(__name__)

MAX_DETAIL_CHARS = 500


@dataclass(frozen=True)
class Audited:
    """One line of the audit log: who did, or was refused, what."""
    user: str
    role: str
    action: str
    allowed: bool
    detail: str = ""


@dataclass(frozen=True)
class AuditEntry:
    """A stored line of the audit log: its `id`, when it `happened` (UTC, to the second),
    who (`username`, `role`), the `action`, whether it was `allowed`, and its `detail`."""
    id: int
    happened: str
    username: str
    role: str
    action: str
    allowed: bool
    detail: str


class AuditLog:
    """Admin actions and refusals of one sessions database; `file`: its JSONL twin
    (default audit.jsonl beside the database)."""

    def __init__(self, store: SessionStore, file: str | Path | None = None) -> None:
        self.store = store
        self.file = Path(file) if file else store.path.with_name("audit.jsonl")

    def record(self, entry: Audited) -> None:
        """Store `entry` in the table and append it to the file; a failure to write is
        logged, never raised (the action it records has happened or been refused)."""
        detail = entry.detail[:MAX_DETAIL_CHARS]
        happened = datetime.now(UTC)
        try:
            self.store.execute(
                "INSERT INTO audit (happened, username, role, action, allowed, detail) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [happened, entry.user, entry.role, entry.action, entry.allowed, detail])
            line = json.dumps({"happened": happened.isoformat(timespec="seconds"),
                               "user": entry.user, "role": entry.role,
                               "action": entry.action, "allowed": entry.allowed,
                               "detail": detail}, ensure_ascii=False) + "\n"
            fd = os.open(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        except Exception:
            logger.exception("could not write the audit log entry %s", entry)

    def entries(self, limit: int = 200, user: str = "") -> list[AuditEntry]:
        """The latest `limit` entries (of `user` only, if given), newest first."""
        where, params = ("WHERE username = ?", [user]) if user else ("", [])
        rows = self.store.execute(
            "SELECT id, strftime(happened, '%Y-%m-%d %H:%M:%S'), username, role, action, "
            f"allowed, detail FROM audit {where} ORDER BY id DESC LIMIT ?",
            [*params, max(1, int(limit))])
        return [AuditEntry(*row) for row in rows]
