"""The build queue: one long build at a time, shortest first, a short one pausing a long one;
every waiting build knows its place and when it should start."""

from __future__ import annotations

import threading
import time

import pytest

from engine.service.builds import SHORT_SECONDS, BuildQueue, Cancelled


def eventually(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class Build:
    """A build in a thread that takes its turn, reports progress steps until released."""

    def __init__(self, queue: BuildQueue, label: str, seconds: float, log: list[str]) -> None:
        self.queue, self.label, self.seconds, self.log = queue, label, seconds, log
        self.release, self.turn = threading.Event(), None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.queue.turn(self.label, self.seconds) as turn:
            self.turn = turn
            self.log.append(f"{self.label} starts")
            step = turn.progress(lambda done, total: None)
            while not self.release.is_set():
                step(0, 1)  # a progress step: where a long build may pause
                time.sleep(0.01)
            self.log.append(f"{self.label} ends")

    def start(self) -> Build:
        self.thread.start()
        return self

    def end(self) -> None:
        self.release.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def test_long_builds_run_one_at_a_time_shortest_first():
    queue, log = BuildQueue(), []
    first = Build(queue, "training", 2_000, log).start()
    eventually(lambda: log == ["training starts"])
    longer = Build(queue, "big index", 1_500, log).start()
    shorter = Build(queue, "medium index", 600, log).start()
    eventually(lambda: len(queue.waiting()) == 2)
    assert [t.label for t in queue.waiting()] == ["medium index", "big index"]
    first.end()
    eventually(lambda: log[-1] == "medium index starts")
    assert "big index starts" not in log  # one long build at a time
    shorter.end()
    eventually(lambda: log[-1] == "big index starts")
    longer.end()


def test_a_short_build_goes_first_and_the_long_one_pauses_until_it_ends():
    from tests.fakes import Clock

    clock = Clock()
    queue, log = BuildQueue(clock), []
    training = Build(queue, "training", 2_000, log).start()
    eventually(lambda: training.turn is not None)
    small = Build(queue, "small index", SHORT_SECONDS / 4, log).start()
    eventually(lambda: "small index starts" in log)  # not behind the training
    eventually(lambda: training.turn.state == "paused")
    clock.advance(0.3)
    small.end()
    eventually(lambda: training.turn.state == "running")
    training.end()
    assert log == ["training starts", "small index starts", "small index ends",
                   "training ends"]
    # the pause is the training's own record: its pace leaves it out
    assert training.turn.paused_seconds == pytest.approx(0.3)


def test_the_pace_of_a_build_leaves_out_the_time_it_was_paused():
    from engine.service.builds import Turn
    from engine.service.tasks import Task

    task = Task("train", "training", lambda progress: None, state="running",
                started=time.monotonic() - 130)
    task.turn = Turn("training", 1_000)
    task.report(0, 1_000)
    task.paced_from = (time.monotonic() - 120, 0)  # its first step two minutes ago
    task.turn.paused_seconds = 60.0  # a minute of it paused for a shorter build
    task.report(100, 1_000)
    assert 535 <= task.seconds_left() <= 545  # 100 in the minute it ran, not in two


def test_builds_nobody_else_lists_have_a_status_line_each():
    queue, log = BuildQueue(), []
    retrain = Build(queue, "retraining the classifier", 2_000, log).start()
    eventually(lambda: retrain.turn is not None)
    retrain.turn.left = lambda: 600.0
    shown = Build(queue, "a corpus's index", 1_000, log).start()
    asked = Build(queue, "dense index (asked for by a run)", 300, log).start()
    eventually(lambda: len(queue.waiting()) == 2)
    mine = next(t for t in queue.waiting() if t.label == "a corpus's index")
    assert queue.lines(skip={mine}) == [
        "retraining the classifier: building, about 10 min left",
        "dense index (asked for by a run): number 1 in the build queue; starts in about "
        "10 min, then takes about 5 min"]
    for build in (retrain, shown, asked):
        build.release.set()
    for build in (retrain, shown, asked):
        build.end()


def test_a_waiting_build_knows_its_place_and_what_runs_before_it():
    queue, log = BuildQueue(), []
    running = Build(queue, "training", 1_000, log).start()
    eventually(lambda: running.turn is not None)
    running.turn.left = lambda: 400.0  # its live estimate once it keeps a pace
    a = Build(queue, "a", 300, log).start()
    b = Build(queue, "b", 700, log).start()
    eventually(lambda: len(queue.waiting()) == 2)
    turn_a, turn_b = queue.waiting()
    assert queue.wait_of(turn_a) == (1, 400.0)
    assert queue.wait_of(turn_b) == (2, 400.0 + 300.0)
    for build in (running, a, b):
        build.release.set()
    for build in (running, a, b):
        build.end()


def test_a_waiting_turn_is_given_up_when_cancelled():
    queue, log = BuildQueue(), []
    running = Build(queue, "training", 1_000, log).start()
    eventually(lambda: running.turn is not None)
    cancelled, waited = threading.Event(), []
    outcome = []

    def wait_then_cancel():
        try:
            with queue.turn("index", 900, cancelled=cancelled, on_wait=waited.append):
                outcome.append("ran")
        except Cancelled:
            outcome.append("cancelled")

    thread = threading.Thread(target=wait_then_cancel, daemon=True)
    thread.start()
    eventually(lambda: waited)
    cancelled.set()
    thread.join(5)
    assert outcome == ["cancelled"] and queue.waiting() == []
    running.end()


@pytest.mark.parametrize("seconds", [0.0, SHORT_SECONDS])
def test_short_builds_take_turns_among_themselves(seconds):
    queue, log = BuildQueue(), []
    one = Build(queue, "one", seconds, log).start()
    eventually(lambda: log == ["one starts"])
    two = Build(queue, "two", seconds, log).start()
    eventually(lambda: len(queue.waiting()) == 1)
    assert log == ["one starts"]
    one.end()
    eventually(lambda: log[-1] == "two starts")
    two.end()
