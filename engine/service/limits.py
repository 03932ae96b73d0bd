"""Fair share between logged-in users: how many runs one user has going at once, and how many
long jobs (evaluations, sweeps, ceilings, corpus builds, a retrain) one has started that
are still going. Each limit is refused with a message that names it and the setting that
raises it. (Upload bytes per day are counted where uploads arrive: app.login.LoginGate.)

The door (engine.service.door) admits each action through `Limits.admit`, which returns
what to call when the action is over, `finish(result, ok)`: a run's slot is freed when its
call (or its stream) ends, however it ends; a long job is counted once its call succeeded
and until `alive(action, result)` says it has ended, asked whenever the user starts another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

RUN_ACTIONS = frozenset({"run", "stream", "reanswer", "ablation", "llm_judge",
                         "generate_questions", "make_pool"})
JOB_ACTIONS = frozenset({"evaluate", "sweep", "ceilings", "resume_evaluation", "add_corpus",
                         "retrain_classifier", "tune", "resume_tune"})
RUNS_PER_USER = 2
STARTING = object()  # a long job's place while its call runs
JOBS_PER_USER = 2


class LimitReached(Exception):
    """Raised as the door's NotAllowed: a user's share is used up for now."""


@dataclass
class Limits:
    """`runs`: one user's runs at once (--max-runs-per-user); `jobs`: one user's long jobs
    still going (--max-jobs-per-user); `alive(action, result)`: whether the long job an
    action started (its result: an evaluation id, a corpus name) is still going."""

    runs: int = RUNS_PER_USER
    jobs: int = JOBS_PER_USER
    alive: Callable[[str, object], bool] = lambda action, result: False
    _running: dict[str, int] = field(default_factory=dict)
    _jobs: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, user: str, action: str) -> Callable[[object, bool], None]:
        """Let `user` do `action` within their share (LimitReached if it is used up);
        returns `finish(result, ok)`, to call once the call is over."""
        if action in RUN_ACTIONS:
            with self._lock:
                if self._running.get(user, 0) >= self.runs:
                    raise LimitReached(
                        f"{user} has {self._running[user]} runs going at once, the limit "
                        f"(--max-runs-per-user, FUNNEL_MAX_RUNS_PER_USER = {self.runs}): "
                        "wait for one to finish.")
                self._running[user] = self._running.get(user, 0) + 1
            return lambda result, ok: self._ended(user)
        if action in JOB_ACTIONS:
            going = self._going(user)
            with self._lock:  # a job being started counts at once: two at a time cannot pass
                starting = [j for j in self._jobs.get(user, []) if j[1] is STARTING]
                if len(going) + len(starting) >= self.jobs:
                    names = ", ".join(f"{a} {r}" if r is not STARTING else f"{a} (starting)"
                                      for a, r in [*going, *starting])
                    raise LimitReached(
                        f"{user} has {len(going) + len(starting)} long jobs going ({names}), "
                        f"the limit (--max-jobs-per-user, FUNNEL_MAX_JOBS_PER_USER = "
                        f"{self.jobs}): wait for one to end, or cancel it.")
                placeholder = (action, STARTING)
                self._jobs.setdefault(user, []).append(placeholder)
            return lambda result, ok: self._started(user, placeholder, result, ok)
        return lambda result, ok: None

    def _ended(self, user: str) -> None:
        with self._lock:
            self._running[user] = max(0, self._running.get(user, 0) - 1)

    def _started(self, user: str, placeholder: tuple, result: object, ok: bool) -> None:
        """The job `placeholder` held a place for has started (ok: as `result`) or not."""
        with self._lock:
            jobs = self._jobs.get(user, [])
            if placeholder in jobs:
                jobs.remove(placeholder)
            if ok:
                jobs.append((placeholder[0], result))

    def _going(self, user: str) -> list[tuple[str, object]]:
        """`user`'s long jobs still going (those ended are forgotten; those starting are
        not asked)."""
        with self._lock:
            jobs = [j for j in self._jobs.get(user, []) if j[1] is not STARTING]
        going = [(a, r) for a, r in jobs if self.alive(a, r)]
        with self._lock:
            self._jobs[user] = [j for j in self._jobs.get(user, []) if j in going
                                or j not in jobs]
        return going


def job_alive(evaluations, corpora, annotation, tuning=None
              ) -> Callable[[str, object], bool]:
    """Whether the long job an action started is still going: an evaluation, sweep or
    ceilings stored as running (`evaluations`, the EvaluationStore), a corpus still preparing
    (`corpora.rows`), the classifier's retrain waiting or running (`annotation.job`), a
    tuning search running (`tuning.store`)."""

    def alive(action: str, result: object) -> bool:
        if action in ("tune", "resume_tune"):
            try:
                return tuning.store.get(int(result)).state == "running"
            except Exception:  # noqa: BLE001 - removed since: not going
                return False
        if action == "add_corpus":
            return any(row.name == result and row.status == "preparing"
                       for row in corpora.rows())
        if action == "retrain_classifier":
            return annotation.job.state in ("waiting", "running")
        try:
            return evaluations.get(int(result)).state == "running"
        except Exception:  # noqa: BLE001 - removed since: not going
            return False

    return alive
