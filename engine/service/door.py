"""Who may do what: every action of the service layer, the least role it needs, and the one
check that enforces it.

`ACTIONS` is the table. An action is the name of a public method of the engine's facades
(engine.service.explorer.Explorer and engine.service.judging.Judging), classes decorated
with `guarded`, which asks the facade's `Door` before each such method runs. Without a users file
(`Door()`), nobody logs in and everyone may do everything: the app then listens on this
machine only. With one (`Door(users, who=...)`), the acting user is the one the app's
request names (`who`), or the one a background caller names with `acting_as` (the OTLP
receiver's key, say); an action with no user, or with too small a role, is refused with a
message that names the action and the role it needs:
"remove_corpus needs the admin role; you are a viewer".

A login (`login`) is throttled per name: after `MAX_FAILURES` wrong passwords in a row the
name is refused, without hashing, for `LOCKOUT_SECONDS`; the right password works again
after that. Every admin action and every refusal is handed to `audit` (engine.store.audit).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from engine.errors import EngineError
from engine.service.limits import LimitReached, Limits
from engine.store.audit import Audited
from engine.store.users import ROLES, User, Users

logger = logging.getLogger(__name__)

VIEWER, ANNOTATOR, ADMIN = ROLES
MAX_FAILURES = 5
LOCKOUT_SECONDS = 30.0

# what each role may do: viewer explores, compares and reads; annotator also saves runs,
# labels and judges; admin also changes corpora, starts evaluations, sweeps and ceilings,
# trains and activates classifiers, imports and deletes anything
ACTIONS: dict[str, str] = {
    # running a question: Explore, Compare
    **dict.fromkeys(("paradigm", "stream", "run", "reanswer", "ablation"), VIEWER),
    # reading what is stored or served
    **dict.fromkeys((
        "saved_runs", "load_run", "export_runs", "export_run_files", "corpus_names",
        "corpora", "models", "status", "failures", "standing_in", "ready",
        "supporting_in_corpus", "titles", "counted_corpus", "datasets", "dataset_corpus",
        "datasets_note", "questions", "evaluation_form", "evaluation_status", "evaluations",
        "evaluation", "evaluation_rows", "evaluation_trace", "evaluation_traces",
        "export_evaluation", "export_evaluation_files", "tracks", "attribution", "paired",
        "measured", "regressions", "ceiling_table", "gold_coverage", "coverage",
        "ablation_agreement", "wait_for_evaluation", "judged_pairs", "labels",
        "export_labels", "classifier_status", "question_sets", "pools", "pace",
        "agreement", "export_judgments", "assessors", "compared", "label_agreement",
        "pairwise_agreement"), VIEWER),
    # one's own work: saved runs, labels, judgments
    **dict.fromkeys(("save_run", "delete_run", "add_label", "to_judge", "judge", "undo"),
                    ANNOTATOR),
    # the server's: corpora, long jobs, classifiers, imports, anyone's work
    **dict.fromkeys((
        "add_corpus", "remove_corpus", "evaluate", "sweep", "ceilings", "resume_evaluation",
        "cancel_evaluation", "remove_evaluation", "import_pipeline", "import_labels",
        "retrain_classifier", "activate_classifier", "add_questions", "add_run_questions",
        "generate_questions", "make_pool", "pool_evaluation", "llm_judge",
        "import_judgments", "audit_log"), ADMIN),
}


# who acts while the app builds its page (its first lists, read once, before any request):
# a viewer, so the build reads and can do nothing else; no user may be named so (a user's
# name holds no space)
BUILDER = User("the app's build", VIEWER, "")


class NotAllowed(EngineError, PermissionError):
    """An action the acting user's role (or lack of a login) does not allow."""


C = TypeVar("C", bound=type)


def guarded(cls: C) -> C:
    """`cls` (a facade with a `door`) with every public method checked against ACTIONS
    under its own name before it runs. A public method missing from the table fails at
    import, so none goes unchecked."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(member):
            continue  # properties and helpers are not actions
        if name not in ACTIONS:
            raise KeyError(f"{cls.__name__}.{name} is not in engine.service.door.ACTIONS: "
                           "give it the least role that may do it")
        setattr(cls, name, _checked(member, name))
    return cls


def _checked(method: Callable[..., Any], action: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        finish = self.door.enter(action, _said(args, kwargs))
        try:
            result = method(self, *args, **kwargs)
        except BaseException:
            finish(None, False)
            raise
        if inspect.isgenerator(result):  # a stream holds its share until it ends
            return _finishing(result, finish)
        finish(result, True)
        return result

    checked.action = action  # type: ignore[attr-defined]
    return checked


def _said(args: tuple, kwargs: dict) -> str:
    """A call's arguments as the audit log shows them: short values as they are, the
    rest by their type ("remove_corpus('notes')", "save_run(RunTrace, 'mine')")."""
    def one(value: object) -> str:
        if isinstance(value, (str, int, float, bool, Path)) or value is None:
            text = repr(str(value) if isinstance(value, Path) else value)
            return text if len(text) <= 60 else text[:57] + "..."
        return type(value).__name__

    said = ", ".join([*map(one, args), *(f"{k}={one(v)}" for k, v in kwargs.items())])
    return said if len(said) <= 200 else said[:197] + "..."


def _finishing(stream: Iterator, finish: Callable[[object, bool], None]) -> Iterator:
    ok = False
    try:
        yield from stream
        ok = True
    finally:
        finish(None, ok)


def _nobody() -> str | None:
    return None


def _done(result: object, ok: bool) -> None:
    return None


class Door:
    """The roles' check for one process: `users` (None: no logins), `who` names the user of
    the request being served, `audit` receives admin actions and refusals."""

    def __init__(self, users: Users | None = None, *,
                 who: Callable[[], str | None] = _nobody,
                 audit: Callable[[Audited], None] | None = None,
                 limits: Limits | None = None) -> None:
        self.users = users
        self.who = who
        self.audit = audit
        self.limits = limits
        self._acting: ContextVar[User | None] = ContextVar("acting", default=None)
        self._failures: dict[str, tuple[int, float]] = {}  # name -> (in a row, last at)
        self._lock = threading.Lock()

    @property
    def logins(self) -> bool:
        return self.users is not None

    # --- who acts -------------------------------------------------------------------------

    def user(self) -> User | None:
        """The acting user: the one `acting_as` names, else the request's (None without
        logins, or when the request's user has been removed since they logged in)."""
        named = self._acting.get()
        if named is not None or self.users is None:
            return named
        name = self.who()
        if not name:
            return None
        try:
            return self.users.get(name)
        except EngineError:
            return None

    def name(self) -> str:
        """The acting user's name, "" without logins: what a saved run or label records."""
        user = self.user()
        return user.name if user is not None else ""

    def signed(self, typed: str, field: str) -> str:
        """Whose work this is: the logged-in user's name (another name typed in `field` is
        refused: work carries its login's name), else the name typed."""
        typed = " ".join(str(typed or "").split())
        user = self.user()
        if user is None:
            return typed
        if typed and typed != user.name:
            raise NotAllowed(f"{field} {typed!r} is not you: logged in as {user.name}, your "
                             "work carries your name; leave the name empty.")
        return user.name

    @contextlib.contextmanager
    def acting_as(self, user: User | None) -> Iterator[None]:
        """Act as `user` in this thread (a background caller with no request)."""
        token = self._acting.set(user)
        try:
            yield
        finally:
            self._acting.reset(token)

    # --- the check ------------------------------------------------------------------------

    def check(self, action: str, detail: str = "") -> User | None:
        """The acting user, if they may do `action`; else NotAllowed, audited."""
        needed = ACTIONS[action]
        user = self.user()
        if user is None and not self.logins:
            return None
        if user is None:
            self._audit(Audited("", "", action, False, detail or "no login"))
            raise NotAllowed(f"{action} needs a login: log in again (the session has ended "
                             "or its user was removed).")
        if not user.may(needed):
            self._audit(Audited(user.name, user.role, action, False, detail))
            raise NotAllowed(f"{action} needs the {needed} role; you are {_a(user.role)}. "
                             "An admin can change your role (funnel-engine users role).")
        if needed == ADMIN:
            self._audit(Audited(user.name, user.role, action, True, detail))
        return user

    def enter(self, action: str, detail: str = "") -> Callable[[object, bool], None]:
        """`check(action)` (`detail`: its arguments, for the audit log), then the acting
        user's share (engine.service.limits) taken: returns `finish(result, ok)` to call
        once the action is over."""
        user = self.check(action, detail)
        if user is None or self.limits is None:
            return _done
        try:
            return self.limits.admit(user.name, action)
        except LimitReached as err:
            self._audit(Audited(user.name, user.role, action, False,
                                f"limit reached: {detail}"))
            raise NotAllowed(str(err)) from None

    def may(self, action: str) -> bool:
        """Whether the acting user may do `action` (what the UI shows as enabled)."""
        user = self.user()
        if user is None:
            return not self.logins
        return user.may(ACTIONS[action])

    def owns(self, owner: str, action: str, what: str) -> None:
        """Refuse `action` on `what` (made by `owner`) unless the acting user made it or
        is an admin; without logins anyone may."""
        user = self.user()
        if user is None or owner == user.name:
            return
        if user.may(ADMIN):  # another's work: an admin's power, audited
            self._audit(Audited(user.name, user.role, action, True,
                                f"{what} of {owner or 'nobody'}"))
            return
        self._audit(Audited(user.name, user.role, action, False, what))
        raise NotAllowed(f"{action} of {what} needs the admin role or its owner "
                         f"({owner or 'nobody: made before logins'}); you are {user.name}, "
                         f"{_a(user.role)}.")

    # --- logging in -----------------------------------------------------------------------

    def login(self, name: str, password: str) -> User | None:
        """The user if `password` is `name`'s; None if not. After MAX_FAILURES wrong ones
        in a row the name is refused (NotAllowed, no hash spent) for LOCKOUT_SECONDS."""
        if self.users is None:
            raise NotAllowed("Logins are off: start the app with --users FILE.")
        with self._lock:
            failures, last = self._failures.get(name, (0, 0.0))
            wait = last + LOCKOUT_SECONDS - time.monotonic()
            if failures >= MAX_FAILURES and wait > 0:
                self._audit(Audited(name, "", "login", False, "locked out"))
                raise NotAllowed(f"{failures} wrong passwords for {name!r} in a row: wait "
                                 f"{wait:.0f} s before trying again.")
        user = self.users.verify(name, password)
        with self._lock:
            if user is None:
                failures = failures if failures < MAX_FAILURES else 0
                self._failures[name] = (failures + 1, time.monotonic())
            else:
                self._failures.pop(name, None)
        if user is None:
            self._audit(Audited(name, "", "login", False, "wrong name or password"))
        return user

    def _audit(self, entry: Audited) -> None:
        if not entry.allowed:
            logger.info("refused: %s (%s) %s %s", entry.user or "-", entry.role or "-",
                        entry.action, entry.detail)
        if self.audit is not None:
            self.audit(entry)


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"
