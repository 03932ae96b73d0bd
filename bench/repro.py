"""The figures this project reproduces, computed again and held to the values recorded in
bench/figures.toml, each within its tolerance (as pyserini's reproduction matrices hold
theirs): a refactor, a dependency bump or a changed default that moves one fails.

    python -m bench.repro [CHECK ...] [--list]

Checks (each computed from data the project ships or fetches, skipped with the reason when
that data is absent):
  hotpotqa-dev500  every paradigm at its defaults, retrieval only, on all 500 HotpotQA dev500
                   questions over the pooled corpus: answer recall of the last cut (AR@1,
                   AR@4) and the gold documents' recall after every stage
  arguana          BEIR's ArguAna test queries, BM25 and the packaged MiniLM ranking whole
                   documents (bench/beir_reproduce.py): nDCG@10 next to BEIR's, bm25s' and
                   MTEB's published figures

Prints every figure beside its recorded value and verdict; exits 1 when one moved. The
tests run the same checks under the `repro` marker (`python -m pytest -m repro`), which
.ci/run runs where the data is present. Caches go to the data directory as the app's do.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FIGURES = Path(__file__).resolve().parent / "figures.toml"
DEV500 = "HotpotQA dev500"  # as engine.qa_data lists it


@dataclass(frozen=True)
class Figure:
    """One recorded figure of a check: its name in the check's results, the value it is held
    to, how far it may move, and where the value comes from."""

    name: str
    value: float
    tolerance: float
    source: str

    def holds(self, measured: float | None) -> bool:
        # a figure within its tolerance, plus half a unit of the third decimal it is written to
        return measured is not None and abs(measured - self.value) <= self.tolerance + 5e-4


@dataclass(frozen=True)
class Check:
    name: str
    what: str
    data: str
    figures: tuple[Figure, ...]


def checks() -> dict[str, Check]:
    """Every check of bench/figures.toml, by name, in the file's order."""
    table = tomllib.loads(FIGURES.read_text(encoding="utf-8"))
    return {name: Check(name, found["what"], found["data"],
                        tuple(Figure(**f) for f in found.get("figure", ())))
            for name, found in table.items()}


# -- HotpotQA dev500 ----------------------------------------------------------------------------

def hotpotqa_available() -> str:
    """Why the HotpotQA check cannot run here ("" when it can)."""
    from engine.qa_data import dataset_path, how_to_get

    path = dataset_path(DEV500)
    return "" if path is not None and path.is_file() else f"{path} is missing: {how_to_get()}"


def hotpotqa_dev500() -> dict[str, float]:
    """{"PARADIGM MEASURE": mean} of every paradigm at its defaults, retrieval only, over all
    dev500 questions: AR@1 and AR@4 of its last cut, and every stage's gold-document recall."""
    from bench.common import dev500_questions, run_side_by_side
    from engine.data.corpus import load_corpus
    from engine.eval.summary import summarise
    from engine.paradigms.registry import names
    from engine.service.store import make_paradigm

    corpus = load_corpus("pooled")  # holds every dev500 paragraph
    paradigms = {name: make_paradigm(name, corpus, retrieval_only=True) for name in names()}
    summary = summarise(run_side_by_side(paradigms, dev500_questions(), "repro_hotpotqa"))
    return {f"{name} {measure}": value for name, found in summary.items()
            for measure, value in found.items()
            if measure in ("AR@1", "AR@4") or measure.startswith("gold_doc_recall@")}


# -- ArguAna -------------------------------------------------------------------------------------

def arguana_available() -> str:
    """Why the ArguAna check cannot run here ("" when it can): its files are in the data
    directory, or a local mirror (FUNNEL_DATA_MIRROR) holds their source."""
    from bench.beir_reproduce import ARGUANA_SOURCE, arguana_folder, arguana_present

    if arguana_present():
        return ""
    mirror = os.environ.get("FUNNEL_DATA_MIRROR", "")
    owner_name, commit = ARGUANA_SOURCE
    if mirror and ("://" in mirror or (Path(mirror) / owner_name / commit).is_dir()):
        return ""  # a URL is only tried when fetched
    return (f"ArguAna is not in {arguana_folder()} and FUNNEL_DATA_MIRROR names no copy of "
            f"{owner_name} at {commit[:8]}: python -m bench.beir_reproduce arguana fetches it")


def arguana() -> dict[str, float]:
    """{"RETRIEVER nDCG@10": value} of BM25 (the engine's k1 and b, and Anserini's) and the
    packaged MiniLM over ArguAna's judged test queries, the query's own document left out."""
    from bench.beir_reproduce import arguana as fetched_arguana
    from bench.beir_reproduce import measured
    from engine.data.loaders.collections import read_beir

    collection = read_beir(fetched_arguana(), split="test", drop_unknown=True)
    return {f"{name} nDCG@10": found["nDCG@10"]
            for name, found in measured(collection).items()}


COMPUTE: dict[str, tuple[Callable[[], str], Callable[[], dict[str, float]]]] = {
    "hotpotqa-dev500": (hotpotqa_available, hotpotqa_dev500),
    "arguana": (arguana_available, arguana),
}


def verdicts(check: Check, measured: dict[str, float]) -> list[tuple[Figure, float | None, bool]]:
    """(figure, its measured value or None when the check no longer computes it, whether it
    holds) of every recorded figure of `check`."""
    return [(f, measured.get(f.name), f.holds(measured.get(f.name))) for f in check.figures]


def main() -> None:
    import logging

    from bench.common import markdown_table

    found = checks()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checks", nargs="*", metavar="CHECK",
                        help=f"of: {', '.join(found)} (default: all; one whose data is "
                             "absent says why and is not run)")
    parser.add_argument("--list", action="store_true", help="list the recorded figures only")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    unknown = [name for name in args.checks if name not in found]
    if unknown:
        parser.error(f"no check named {', '.join(unknown)}: the checks are {', '.join(found)}")
    moved = False
    for name in args.checks or found:
        check = found[name]
        print(f"\n{name}: {check.what}\n  data: {check.data}")
        available, compute = COMPUTE[name]
        missing = "" if args.list else available()
        if args.list or missing:
            print(f"  not run: {missing}" if missing else "")
            print(markdown_table(["figure", "recorded", "tolerance", "source"],
                                 [[f.name, f"{f.value:.3f}", f"±{f.tolerance:.3f}", f.source]
                                  for f in check.figures]))
            continue
        measured = compute()
        rows = verdicts(check, measured)
        moved |= not all(ok for _, _, ok in rows)
        recorded = {f.name for f in check.figures}
        print(markdown_table(["figure", "recorded", "measured", "tolerance", "verdict", "source"],
                             [[f.name, f"{f.value:.3f}",
                               "missing" if got is None else f"{got:.4f}",
                               f"±{f.tolerance:.3f}", "holds" if ok else "MOVED", f.source]
                              for f, got, ok in rows]
                             + [[figure, "", f"{value:.4f}", "", "not recorded", ""]
                                for figure, value in measured.items()
                                if figure not in recorded]))
    sys.exit(1 if moved else 0)


if __name__ == "__main__":
    main()
