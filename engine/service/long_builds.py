"""Builds a request would start before it can answer, and asking first for the long ones.

A config other than the defaults may need an index the app has not prepared (another
passage size: a new dense index). Whoever starts such a request — an evaluation, or one
run from Explore or the `run` endpoint — is told which build and about how long it takes
here (each need's own estimate, `Need.seconds_to_prepare`), and it starts only once
confirmed; then it takes its turn with the process's other long builds
(engine.service.builds). A build the app's own preparation has under way is not asked
about: a run answers on its stand-in meanwhile and an evaluation waits for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.documents import Corpus
from engine.errors import EngineError
from engine.paradigms.needs import Need
from engine.progress import duration
from engine.service.builds import BUILDS
from engine.service.preparation import Preparation
from engine.service.store import process_store

# an evaluation prepares builds quicker than this itself (it runs minutes anyway)
LONG_BUILD_SECONDS = 60.0
# a run reads only what is built: every build it would need is asked about, and confirming
# one is an admin's (a viewer's passage_tokens 101..106 once built six dense indexes
# unasked, 35 s of CPU and 25 MB each)
RUN_BUILD_SECONDS = 0.0


def long_builds(preparation: Preparation, needs: Iterable[Need],
                threshold: float) -> list[tuple[str, float]]:
    """(label, estimated seconds here) of each of `needs` that builds something (a load
    takes 0) and would take `threshold` seconds or more to prepare over `preparation`'s
    corpus, leaving out those the preparation is building already."""
    corpus = preparation.corpus
    return [(need.label, seconds) for need in needs
            if not preparation.underway(need.key)  # being built: stood in for or waited for
            and (seconds := need.seconds_to_prepare(corpus)) > 0 and seconds >= threshold]


def build_in_turn(need: Need, corpus: Corpus, seconds: float) -> None:
    """Prepare `need` over `corpus` (estimated at `seconds`) once its turn comes in the
    process's queue of long builds (engine.service.builds), as an evaluation does: one
    long build at a time, so a confirmed run never doubles the load of a build or a
    training already running."""
    with BUILDS.turn(f"{need.label} (asked for by a run)", seconds) as turn:
        need.prepare(corpus, turn.progress(lambda done, total: None), process_store())


class BuildNeeded(EngineError):
    """A request needs a long build the user has not confirmed: `builds` names each
    (label, estimated seconds), `what` says them as one phrase."""

    def __init__(self, builds: list[tuple[str, float]], confirm: str,
                 subject: str = "These configs need") -> None:
        self.builds = builds
        self.what = "; ".join(f"{label}: about {duration(seconds)} on this machine"
                              for label, seconds in builds)
        super().__init__(f"{subject} what is not built yet - {self.what}. {confirm}")

    @property
    def seconds(self) -> float:
        """The estimated seconds of every build together."""
        return sum(seconds for _, seconds in self.builds)
