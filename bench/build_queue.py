"""A small corpus added while a classifier trains: how long until it is ready, against its own
build time? (Issue 35: a 23-document upload waited 28 minutes for its dense index behind a
training.)

Prepares the wiki corpus as a first start does, with DR-RAG's selection classifier not yet
trained, so its training runs; once that training has run for `--after` seconds, a corpus
of `--documents` documents (wiki summaries, each made new with a salt so none of its texts
was encoded before) is prepared as the Corpora tab's Add does. Prints how long that corpus
took to be ready, how long its dense build itself took, and how the training fared (paused
while it ran; its time left before and after). Then the same corpus is built again alone
(its vectors cleared) for its build time with no training beside it.

    python -m bench.build_queue [--documents 23] [--after 90]

Uses a data directory of its own whose index caches link to the app's (`data/`), so only the
training and the small corpus are built; the training is abandoned when the figures are in.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from engine.paths import PROJECT_ROOT

SHARED_KINDS = ("bm25", "clusters", "dense", "graph", "models", "query-classifier",
                "vectors")


def small_corpus(n: int, size: int):
    """`n` documents of `size` wiki summaries each, salted so none was encoded before."""
    from engine.data.corpus import read_wiki_summaries
    from engine.documents import Corpus, Document

    salt = uuid.uuid4().hex[:8]
    summaries = read_wiki_summaries()[:n * size]
    return Corpus(f"small-{salt}", tuple(
        Document(id=f"{part[0].id} ({salt})", title=part[0].title,
                 text=" ".join(f"{d.text} [{salt}]" for d in part))
        for part in (summaries[i:i + size] for i in range(0, n * size, size))))


def wait(condition, timeout: float = 3600.0, step: float = 0.5) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise TimeoutError
        time.sleep(step)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=23)
    parser.add_argument("--size", type=int, default=8,
                        help="wiki summaries joined into each document (default 8)")
    parser.add_argument("--after", type=float, default=90.0,
                        help="seconds of training before the corpus is added")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    folder = Path(tempfile.mkdtemp(prefix="build-queue-"))
    (folder / "cache").mkdir()
    for kind in SHARED_KINDS:  # every index the wiki corpus needs, already built
        source = PROJECT_ROOT / "data" / "cache" / kind
        if source.is_dir():
            os.symlink(source, folder / "cache" / kind)
    os.environ["FUNNEL_DATA_DIR"] = str(folder)

    from engine.service.preparation import Preparation

    wiki = Preparation("wiki").start()
    training = next(t for t in wiki.tasks.values() if t.name.startswith("train ")
                    and "selection" in t.label)
    wait(lambda: training.state == "running" and training.paced_from is not None)
    time.sleep(args.after)
    left_before = training.seconds_left()
    print(f"training running for {time.monotonic() - training.started:.0f} s, "
          f"{training.done}/{training.total}, about {left_before or 0:.0f} s left")

    corpus = small_corpus(args.documents, args.size)
    small = Preparation(corpus.name, load=lambda progress: corpus, train=False).start()
    dense = next(t for t in small.tasks.values() if t.name.startswith("dense "))
    paused = []
    ready = wait(lambda: paused.append(training.turn is not None
                                       and training.turn.state == "paused")
                 or dense.state in ("ready", "failed"), step=0.2)
    passages = dense.done or dense.total
    print(f"small corpus ({args.documents} documents, {passages} passages): dense index "
          f"{dense.state} {ready:.1f} s after Add; its build took {dense.seconds:.1f} s; "
          f"the training was paused in {sum(paused)} of {len(paused)} checks meanwhile")
    waited = ready - dense.seconds
    wait(lambda: training.turn is None or training.turn.state == "running")
    time.sleep(30)
    print(f"training after: {training.done}/{training.total}, about "
          f"{training.seconds_left() or 0:.0f} s left")

    # the same corpus built alone: its vectors removed from the store, nothing beside it
    os.environ["FUNNEL_DATA_DIR"] = str(folder / "alone")
    from engine.index.dense import dense_index

    started = time.monotonic()
    dense_index(corpus)
    alone = time.monotonic() - started
    print(f"the same dense build alone: {alone:.1f} s")
    print(f"| documents | ready after Add | its build | alone | waited |\n|---|---|---|---|---|\n"
          f"| {args.documents} | {ready:.1f} s | {dense.seconds:.1f} s | {alone:.1f} s | "
          f"{waited:.1f} s |")
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)  # the abandoned training's thread


if __name__ == "__main__":
    main()
