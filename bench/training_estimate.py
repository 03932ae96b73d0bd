"""How good is a training's "about N min left"? Train DR-RAG's selection classifier as the app
does on a first start and, every few seconds, note the time left the status line would say
(engine.service.preparation.Task: the pace kept since the first progress step); at the end,
compare each estimate's end with the real one.

    python -m bench.training_estimate [--every 10]

Prints one line per sample (elapsed, done/total, the estimated end, its ratio to the real
end) and the worst ratio after the first minute: the issue's goal is within 1.5x. Trains
for real (about 13 min on two idle cores, longer when they are shared); the model it trains
is the app's own cache entry, so a later start reuses it.
"""

from __future__ import annotations

import argparse
import threading
import time

from engine.service.tasks import Task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = parser.parse_args()

    from engine.cache import entry_dir
    from engine.models.kinds import SELECTION_CLASSIFIER
    from engine.train.fit_selection_classifier import ClassifierConfig, cache_key
    from engine.train.trainers import TRAINERS

    config = ClassifierConfig()
    if entry_dir(SELECTION_CLASSIFIER, cache_key(config, [])).exists():
        print("a trained classifier is cached already: delete it to measure a training")
    task = Task("train", "training", lambda progress: None, state="running",
                started=time.monotonic())
    samples: list[tuple[float, int, int, float | None]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(args.every):
            elapsed = time.monotonic() - task.started
            samples.append((elapsed, task.done, task.total, task.seconds_left()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    TRAINERS[SELECTION_CLASSIFIER].train(task.report)
    done.set()
    real = time.monotonic() - task.started
    print(f"real end: {real:.0f} s")
    print(f"{'elapsed s':>9} {'done/total':>14} {'est. end s':>10} {'ratio':>6}")
    worst = 1.0
    for elapsed, units, total, left in samples:
        if left is None:
            print(f"{elapsed:9.0f} {units:>6}/{total:<7} {'-':>10} {'-':>6}")
            continue
        ratio = (elapsed + left) / real
        if elapsed >= 60:
            worst = max(worst, ratio, 1 / ratio)
        print(f"{elapsed:9.0f} {units:>6}/{total:<7} {elapsed + left:10.0f} {ratio:6.2f}")
    print(f"worst estimated end / real end after the first minute: {worst:.2f}x")


if __name__ == "__main__":
    main()
