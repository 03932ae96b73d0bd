"""The people who may log in, their roles and their password hashes, in one users file.

`FUNNEL_USERS` (or `--users FILE`) names the file for the command line and the app alike.
It is JSON, written atomically and readable by its owner only. It holds each user's role
and an argon2id hash of their password (argon2-cffi, salted and slow by design: a
password is never stored, printed or logged). Roles, from least to most: viewer (explore,
compare, read), annotator (also save runs, label, judge), admin (also corpora,
evaluations, retraining, imports, deleting anything).

`verify` spends the same hashing work whether or not the name exists, so a wrong name and
a wrong password take as long and say the same.

Each user's record carries a session stamp, drawn anew when the user is added, their role
or password changes: a session is bound to the stamp it began under (`stamp`), so removing
a user, changing their role or password ends their sessions for good, and a name removed
and added again does not revive an old one.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engine.errors import ConfigError

ROLES = ("viewer", "annotator", "admin")
ENV = "FUNNEL_USERS"
MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1_024
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


@dataclass(frozen=True)
class User:
    name: str
    role: str
    created: str

    def may(self, role: str) -> bool:
        """Whether this user has `role` or a higher one."""
        return ROLES.index(self.role) >= ROLES.index(role)


def users_file(path: str | Path | None = None) -> Path | None:
    """The users file: `path`, else $FUNNEL_USERS; None when neither names one."""
    named = str(path or os.environ.get(ENV, "")).strip()
    return Path(named).expanduser() if named else None


class Users:
    """The users of one users file (created on the first `add`)."""

    def __init__(self, path: str | Path) -> None:
        from argon2 import PasswordHasher

        self.path = Path(path)
        self._hasher = PasswordHasher()  # argon2id, its library's recommended parameters
        self._dummy = self._hasher.hash("a password no one has")

    # --- reading ------------------------------------------------------------------------

    def list(self) -> list[User]:
        return [User(name, entry["role"], entry["created"])
                for name, entry in sorted(self._read().items())]

    def get(self, name: str) -> User:
        entry = self._read().get(name)
        if entry is None:
            raise ConfigError(f"No user {name!r} in {self.path}; its users: "
                              f"{', '.join(u.name for u in self.list()) or 'none yet'}.")
        return User(name, entry["role"], entry["created"])

    def stamp(self, name: str) -> str | None:
        """The session stamp of user `name`'s record, None when no such user may log in (an
        unreadable file: nobody may). A session begun under another stamp has ended."""
        try:
            entry = self._read().get(str(name))
        except ConfigError:
            return None
        return None if entry is None else str(entry.get("session", ""))

    def known(self, name: str) -> bool:
        """Whether `name` may log in (an unreadable file: nobody may)."""
        try:
            return str(name) in self._read()
        except ConfigError:
            return False

    def verify(self, name: str, password: str) -> User | None:
        """The user `name` if `password` is theirs, else None (a wrong name costs the
        same hash as a wrong password). A hash made with older parameters is renewed."""
        from argon2.exceptions import InvalidHashError, VerificationError

        entry = self._read().get(str(name))
        try:
            self._hasher.verify(entry["hash"] if entry else self._dummy, str(password))
        except (VerificationError, InvalidHashError):
            return None
        if entry is None:
            return None
        if self._hasher.check_needs_rehash(entry["hash"]):
            self._write_entry(name, {**entry, "hash": self._hasher.hash(password)})
        return User(name, entry["role"], entry["created"])

    # --- changing -----------------------------------------------------------------------

    def add(self, name: str, password: str, role: str = "viewer", *,
            checked: bool = True) -> User:
        """A new user with `role`; their password stored as an argon2id hash only. Its
        length is checked unless `checked` is False (the deprecated --auth's password,
        chosen before the rule)."""
        _check_name(name)
        _check_role(role)
        if checked:
            _check_password(password)
        if name in self._read():
            raise ConfigError(f"User {name!r} exists already: change their role with "
                              "`users role`, or remove them first.")
        created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        self._write_entry(name, {"role": role, "created": created,
                                 "hash": self._hasher.hash(password),
                                 "session": secrets.token_hex(8)})
        return User(name, role, created)

    def set_role(self, name: str, role: str) -> User:
        """Give `name` `role`; their sessions end (a new stamp)."""
        _check_role(role)
        self.get(name)
        self._write_entry(name, {**self._read()[name], "role": role,
                                 "session": secrets.token_hex(8)})
        return self.get(name)

    def set_password(self, name: str, password: str) -> User:
        """Give `name` a new password (its argon2id hash); their sessions end."""
        _check_password(password)
        self.get(name)
        self._write_entry(name, {**self._read()[name], "hash": self._hasher.hash(password),
                                 "session": secrets.token_hex(8)})
        return self.get(name)

    def remove(self, name: str) -> None:
        self.get(name)
        users = self._read()
        del users[name]
        self._write(users)

    # --- the file -----------------------------------------------------------------------

    def _read(self) -> dict[str, dict]:
        if not self.path.exists():
            return {}
        try:
            found = json.loads(self.path.read_text(encoding="utf-8"))
            users = found["users"]
            if not isinstance(users, dict) or not all(
                    isinstance(e, dict) and e.get("role") in ROLES and "hash" in e
                    for e in users.values()):
                raise ValueError("a user without a known role or a hash")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"The users file {self.path} is unreadable ({err}); restore "
                              "it, or name another with --users / FUNNEL_USERS.") from None
        return users

    def _write_entry(self, name: str, entry: dict) -> None:
        self._write({**self._read(), name: entry})

    def _write(self, users: dict[str, dict]) -> None:
        from engine.cache import atomic_path

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps({"users": users}, indent=1), encoding="utf-8")
            tmp.chmod(0o600)  # the hashes are slow to crack, not meant to be read


def _check_name(name: str) -> None:
    if not NAME.match(str(name or "")):
        raise ConfigError(f"User name {name!r} is not usable: 1-64 letters, digits, '.', "
                          "'_', '@' or '-', starting with a letter or digit.")


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ConfigError(f"role={role!r}: use one of {', '.join(ROLES)}.")


def _check_password(password: str) -> None:
    if not MIN_PASSWORD_CHARS <= len(password or "") <= MAX_PASSWORD_CHARS:
        raise ConfigError(f"A password has {MIN_PASSWORD_CHARS}-{MAX_PASSWORD_CHARS} "
                          f"characters; this one has {len(password or '')}.")
