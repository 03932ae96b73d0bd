"""Long work logs its progress at an interval, with its rate and time left."""

from __future__ import annotations

import logging

from engine.progress import LoggedProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_logged_at_an_interval_with_its_rate_and_time_left(caplog):
    clock, passed = Clock(), []
    progress = LoggedProgress(logging.getLogger("engine.test"), "Dense: encoding", "passages",
                              then=lambda done, total: passed.append(done), every=30,
                              clock=clock)
    caplog.set_level(logging.INFO)
    for seconds, done in ((10, 1_024), (29, 2_048), (40, 4_096), (50, 5_120), (80, 8_192)):
        clock.now = 100.0 + seconds
        progress(done, 44_000)
    clock.now = 100.0 + 2_580
    progress(44_000, 44_000)
    assert passed == [1_024, 2_048, 4_096, 5_120, 8_192, 44_000]  # the status line's, each
    assert [r.getMessage() for r in caplog.records] == [
        "Dense: encoding: 4,096 of 44,000 passages (9%), 102.4/s, about 6 min left",
        "Dense: encoding: 8,192 of 44,000 passages (19%), 102.4/s, about 6 min left",
        "Dense: encoding: 44,000 of 44,000 passages (100%), 17.1/s, done in 43 min"]


def test_work_shorter_than_the_interval_logs_nothing(caplog):
    clock = Clock()
    progress = LoggedProgress(logging.getLogger("engine.test"), "Clustering", "documents",
                              every=30, clock=clock)
    caplog.set_level(logging.INFO)
    for done in range(1, 9):
        clock.now += 1
        progress(done, 8)
    assert caplog.records == []


def test_time_paused_in_the_wrapped_callback_does_not_count_towards_the_rate(caplog):
    clock = Clock()

    def paused(done: int, total: int) -> None:  # a long build waiting for a short one
        clock.now += 600 if done == 2_000 else 0

    progress = LoggedProgress(logging.getLogger("engine.test"), "Dense: encoding", "passages",
                              then=paused, every=30, clock=clock)
    caplog.set_level(logging.INFO)
    for done in (1_000, 2_000):
        clock.now += 10
        progress(done, 10_000)
    assert [r.getMessage() for r in caplog.records] == [  # not 2,000 in 620 s: 3.2/s
        "Dense: encoding: 2,000 of 10,000 passages (20%), 100.0/s, about 80 s left"]

