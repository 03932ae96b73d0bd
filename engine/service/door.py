"""Who may do what: every action of the service layer, the least role it needs, and the one
check that enforces it.

`ACTIONS` is the table. An action is the name of a public method of the engine's facades
(engine.service.explorer.Explorer and the collaborators it exposes: Catalog, Runs,
Evaluations, Diagnoses, Annotation, Judging, Presets and Tuning), classes decorated
with `guarded`, which asks the facade's `Door` before each such method runs, and takes the
user's share of runs and long jobs (engine.service.limits). Without a users file (`Door()`),
nobody logs in and everyone may do everything: the app then listens on this machine only.
With one (`Door(users, who=...)`), the acting user is the one the app's request names
(`who`), or the one a background caller names with `acting_as` (the OTLP receiver's key,
say); an action with no user, or with too small a role, is refused with a
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
from engine.store.users import NAME, ROLES, User, Users

logger = logging.getLogger(__name__)

VIEWER, ANNOTATOR, ADMIN = ROLES
MAX_FAILURES = 5
MAX_NAMES_KEPT = 10_000  # names with wrong passwords remembered at once
# the actions whose call returns a stream (a generator) of what they do as they go
STREAMS = frozenset({"stream", "llm_judge", "generate_questions"})
# the facades' public properties: what they are, not actions
PROPERTIES = frozenset({"corpus", "corpus_spec", "catalog", "runs", "diagnoses",
                        "evaluations", "annotation", "judging", "nuggets", "presets",
                        "tuning", "door"})
LOCKOUT_SECONDS = 30.0
# the client address of the login being checked, as the app's gate sees it (app.login)
CLIENT_ADDRESS: ContextVar[str] = ContextVar("client_address", default="")

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
        "datasets_note", "questions", "evaluation_form", "evaluation_status", "list_evaluations",
        "evaluation", "evaluation_rows", "evaluation_trace", "evaluation_traces",
        "export_evaluation", "export_evaluation_files", "tracks", "attribution", "paired",
        "measured", "regressions", "ceiling_table", "gold_coverage", "coverage",
        "ablation_agreement", "wait_for_evaluation", "judged_pairs", "labels",
        "export_labels", "classifier_status", "question_sets", "pools", "pace",
        "document",
        "agreement", "export_judgments", "assessors", "compared", "label_agreement",
        "pairwise_agreement", "list_presets", "export_presets", "tunes", "tune_status",
        "search_space", "nuggets", "export_nuggets", "stored_answers", "nugget_scores",
        "export_assignments"), VIEWER),
    # one's own work: saved runs, labels, judgments, nuggets and their assignments
    **dict.fromkeys(("save_run", "delete_run", "add_label", "to_judge", "judge", "undo",
                     "save_preset", "remove_preset", "add_nugget", "edit_nugget",
                     "merge_nuggets", "remove_nugget", "to_assign", "assign",
                     "undo_assignment"), ANNOTATOR),
    # the server's: corpora, long jobs, classifiers, imports, anyone's work
    **dict.fromkeys((
        "add_corpus", "remove_corpus", "evaluate", "sweep", "ceilings", "resume_evaluation",
        "cancel_evaluation", "remove_evaluation", "import_pipeline", "import_labels",
        "retrain_classifier", "activate_classifier", "add_questions", "add_run_questions",
        "generate_questions", "make_pool", "pool_evaluation", "llm_judge",
        "import_judgments", "audit_log", "import_presets", "tune", "resume_tune",
        "cancel_tune", "add_gold_nuggets", "import_nuggets"), ADMIN),
    # checked inside an action, not a method of its own: a run confirming a long build
    "build_index": ADMIN,
}
EXTRA_ACTIONS = ("build_index",)  # the table's actions that are no facade's method


# who acts while the app builds its page (its first lists, read once, before any request):
# a viewer, so the build reads and can do nothing else; no user may be named so (a user's
# name holds no space)
BUILDER = User("the app's build", VIEWER, "")


class NotAllowed(EngineError, PermissionError):
    """An action the acting user's role (or lack of a login) does not allow."""


C = TypeVar("C", bound=type)


def guarded(cls: C) -> C:
    """`cls` (a facade with a `door`) with every public method, its own or inherited,
    checked against ACTIONS under its own name before it runs. A public method missing
    from the table, or a public attribute of any other kind (a staticmethod, a property
    not in PROPERTIES), fails at import, so nothing public goes unchecked."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, property) and name in PROPERTIES:
            continue  # what the facade is, not something it does
        if not inspect.isfunction(member):
            raise TypeError(f"{cls.__name__}.{name} is public but no method: make it one "
                            "(an action of ACTIONS) or private")
        if name not in ACTIONS:
            raise KeyError(f"{cls.__name__}.{name} is not in engine.service.door.ACTIONS: "
                           "give it the least role that may do it")
        setattr(cls, name, _checked(member, name))
    return cls


def _checked(method: Callable[..., Any], action: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        door, said = self.door, _said(args, kwargs)
        user = door.check(action, said)
        if action in STREAMS:  # a stream holds a share while it runs, not when made
            return _sharing(method(self, *args, **kwargs), door, user, action, said)
        finish = door.admit(user, action, said)
        try:
            result = method(self, *args, **kwargs)
        except BaseException:
            finish(None, False)
            raise
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


def _sharing(stream: Iterator, door: Door, user: User | None, action: str,
             said: str) -> Iterator:
    """`stream`, its user's share taken when it starts and given back however it ends (a
    stream never started takes none)."""
    finish = door.admit(user, action, said)
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
    the request being served, `audit` receives admin actions and refusals, `limits` (None:
    none) is each user's share, `clock` (seconds) times the lockout of a name."""

    def __init__(self, users: Users | None = None, *,
                 who: Callable[[], str | None] = _nobody,
                 audit: Callable[[Audited], None] | None = None,
                 limits: Limits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.users = users
        self.clock = clock
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

    def admit(self, user: User | None, action: str, detail: str = ""
              ) -> Callable[[object, bool], None]:
        """`user`'s share (engine.service.limits) taken for `action` (checked already;
        `detail`: its arguments, for the audit log): returns `finish(result, ok)` to call
        once the action is over."""
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
        shown = name if NAME.match(str(name)) else repr(str(name))[:66]  # for the logs
        with self._lock:
            now = self.clock()
            failures, last = self._failures.get(name, (0, 0.0))
            wait = last + LOCKOUT_SECONDS - now
            locked = failures >= MAX_FAILURES and wait > 0
            if not locked:  # the attempt counts before its hash: parallel guesses count too
                self._failures[name] = (0 if failures >= MAX_FAILURES else failures) + 1, now
                if len(self._failures) > MAX_NAMES_KEPT:  # names not seen for a window
                    self._failures = {n: (f, t) for n, (f, t) in self._failures.items()
                                      if now - t < LOCKOUT_SECONDS}
        source = f" (from {CLIENT_ADDRESS.get()})" if CLIENT_ADDRESS.get() else ""
        if locked:
            self._audit(Audited(shown, "", "login", False, f"locked out{source}"))
            raise NotAllowed(f"{failures} wrong passwords for {shown} in a row: wait "
                             f"{wait:.0f} s before trying again.")
        user = self.users.verify(name, password)
        if user is not None:
            with self._lock:
                self._failures.pop(name, None)
            return user
        self._audit(Audited(shown, "", "login", False, f"wrong name or password{source}"))
        return None

    def refused(self, name: str, action: str, detail: str) -> None:
        """Audit a refusal made outside the engine (the gate's upload limit, say)."""
        user = self.users.get(name) if self.users is not None and \
            self.users.known(name) else None
        self._audit(Audited(name, user.role if user else "", action, False, detail))

    def _audit(self, entry: Audited) -> None:
        if not entry.allowed:
            logger.info("refused: %s (%s) %s %s", entry.user or "-", entry.role or "-",
                        entry.action, entry.detail)
        if self.audit is not None:
            self.audit(entry)


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"
