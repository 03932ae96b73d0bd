"""The QA files the engine reads, where each comes from, and fetching them where missing.

The QA data (HotpotQA, MuSiQue, 2WikiMultihopQA, SQuAD v2, NQ-open; about 10 MB of
third-party text under CC BY-SA, CC BY and Apache-2.0) is never copied into the repository.
The repository carries, for each file, its public source pinned to a commit and its sha256.
Every file is the upstream file as it is at that commit, byte for byte (the sha256 of each
was checked against the upstream blob), so no conversion step is needed.

`fetch()` downloads what is missing into the QA data folder (engine.paths.shared_data_dir)
and keeps a file only when its sha256 matches, written under a temporary name and renamed
into place. `FUNNEL_DATA_MIRROR` (or `mirror=`) replaces the source host by a folder or URL
laid out as `<mirror>/<owner>/<name>/<commit>/<path>`: how tests, and a machine without
internet, fetch from a local copy. `FUNNEL_SHARED_DATA` instead reads a complete local copy
in place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.cache import owner_tag
from engine.errors import EngineError, ResourceMissingError
from engine.paths import fetched_data_dir, shared_data_dir

logger = logging.getLogger(__name__)

SOURCE = "https://raw.githubusercontent.com"
FETCH_COMMAND = "funnel-engine data fetch"
TIMEOUT_SECONDS = 20.0
CHUNK = 1 << 16

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class QAFile:
    """One QA file: where it lives in the data folder and where it comes from."""

    path: str  # relative to the QA data folder
    what: str
    licence: str
    repo: str  # owner/name of the public repository it comes from
    commit: str  # pinned: the file as it was at this commit
    source: str  # its path in that repository
    sha256: str
    size: int

    def url(self, mirror: str = "") -> str:
        base = (mirror or SOURCE).rstrip("/")
        return f"{base}/{self.repo}/{self.commit}/{self.source}"


HIPPORAG = ("OSU-NLP-Group/HippoRAG", "b144c46df14cabe5f5822d8caded4bec5f709461")

QA_FILES: tuple[QAFile, ...] = (
    QAFile("hotpotqa/dev500_contexts.jsonl", "HotpotQA dev (distractor), 500 questions",
           "CC BY-SA 4.0", "xindili-cmu/anlp-project-multihop",
           "df0d5757f42f098ab6026f40323e91c369307506",
           "processed_data/hotpotqa/dev_subsampled.jsonl",
           "837a919903fedf521211c4271f168ad5458488198e9c4d967bf5f3a579525ce8", 3_312_335),
    QAFile("hotpotqa/train100.json", "HotpotQA train, 100 questions", "CC BY-SA 4.0",
           *HIPPORAG, "data/hotpotqa_train.json",
           "6c0e2689d03c94b3bb4d5f94ed806ea4f4eb4f46c12132f8e91df774ad5c5a22", 810_836),
    QAFile("musique/train100.json", "MuSiQue train (answerable), 100 questions",
           "CC BY 4.0", *HIPPORAG, "data/musique_train.json",
           "bca674746844637f5c68408a96b67bc0542d98e7c53715f3acafe144bd5e4ff4", 1_179_088),
    QAFile("musique/corpus.json", "MuSiQue paragraphs", "CC BY 4.0", *HIPPORAG,
           "data/musique_train_corpus.json",
           "79845dd085f9df49c8ce440208763e2611aeb86c81ee0bdad2094504381bb651", 974_514),
    QAFile("2wikimultihopqa/corpus.json", "2WikiMultihopQA paragraphs",
           "Apache-2.0 / CC BY-SA (Wikipedia)", *HIPPORAG, "data/2wikimultihopqa_corpus.json",
           "9d6e352952aafb18dab22bf8195039461321a44a949df902ae83bce134ad238a", 3_083_943),
    QAFile("squad/small_v2.json", "SQuAD v2.0 dev subset", "CC BY-SA 4.0",
           "deepset-ai/haystack", "3ffdb0a9a3a11d581401415e58bf04b29d888ecd",
           "test/samples/squad/small.json",
           "dfed6c7aefe89fdcb8ed63b98dc742a0acf3565d92f97c61efaa077012b0fe68", 382_645),
    QAFile("nq_open/dev.jsonl", "NQ-open dev questions", "CC BY-SA 3.0",
           "google-research-datasets/natural-questions",
           "fb26a3073b1fe636c97302890a27b491d6530130", "nq_open/NQ-open.dev.jsonl",
           "f15567f38099f3615f5b8a685c0aef449c11ad90d3da3735e8d1b98115b40616", 391_316),
)
BY_PATH = {f.path: f for f in QA_FILES}

# The QA files offered as datasets: path -> the name the app shows, the API and the CLI
# take, evaluations store and a corpus with a dataset's paragraphs is named by
# ("wiki+HotpotQA dev500": engine.data.corpus.with_paragraphs).
DATASETS = {
    "hotpotqa/dev500_contexts.jsonl": "HotpotQA dev500",
    "hotpotqa/train100.json": "HotpotQA train100",
    "musique/train100.json": "MuSiQue train100",
    "squad/small_v2.json": "SQuAD v2 (small)",
    "nq_open/dev.jsonl": "NQ-open dev",
}


def listed_dataset(name: str) -> str | None:
    """The listed QA file (its path in the QA data folder) that `name` names: its label,
    case and spacing aside, or that path; None for any other name."""
    name = str(name or "").strip()
    if name in DATASETS:
        return name
    key = " ".join(name.split()).casefold()
    return next((path for path, label in DATASETS.items() if label.casefold() == key), None)


def dataset_path(name: str) -> Path | None:
    """Where the listed QA file `name` names lives (`listed_dataset`); None for any other
    name."""
    listed = listed_dataset(name)
    return shared_data_dir() / listed if listed is not None else None


class DataMissing(ResourceMissingError):
    """QA files a task needs are not in the QA data folder; the message names the fix."""


class FetchFailed(EngineError):
    """The QA data could not be fetched (no network, a bad mirror, a wrong checksum)."""


def how_to_get(fetch_state: str = "") -> str:
    """The one command (and the alternative) that puts the QA data in place. `fetch_state`
    is the app's background fetch, where one was started: "waiting" or "running" (say it
    is under way), "failed" (say so and how to try again), "" (none known: say a first
    start of the app fetches it)."""
    elsewhere = "or set FUNNEL_SHARED_DATA to a folder that holds the files"
    if fetch_state == "failed":
        return (f"the app's background fetch of it failed (see its line): run "
                f"`{FETCH_COMMAND}` to try again (FUNNEL_DATA_MIRROR=<URL or folder> fetches "
                f"from a mirror), {elsewhere}")
    if fetch_state in ("waiting", "running"):
        return (f"the app is fetching it in the background now (see its line); or run "
                f"`{FETCH_COMMAND}`, {elsewhere}")
    return (f"run `{FETCH_COMMAND}` (the app also fetches it in the background on a first "
            f"start), {elsewhere}")


def missing(paths: Iterable[str] | None = None, root: Path | None = None) -> list[str]:
    """Which of `paths` (default: every QA file) are not in the QA data folder. Only their
    presence counts here: a fetched file was checked against its sha256 before it was put
    in place, and a folder named by FUNNEL_SHARED_DATA may hold files of one's own
    (`verify` compares each with its pinned source)."""
    root = root or shared_data_dir()
    return [path for path in (paths if paths is not None else BY_PATH)
            if not (root / path).is_file()]


def require(paths: Iterable[str], purpose: str) -> Path:
    """The QA data folder, once every file of `paths` is in it; else `DataMissing` saying
    `purpose` ("no training data", say), which files and the fix."""
    root = shared_data_dir()
    absent = missing(paths, root)
    if absent:
        raise DataMissing(f"{purpose}: {', '.join(absent)} "
                          f"{'is' if len(absent) == 1 else 'are'} not in {root}; "
                          f"{how_to_get()}.")
    return root


def fetch(mirror: str = "", into: Path | None = None, progress: Progress | None = None,
          paths: Iterable[str] | None = None) -> list[str]:
    """Download every missing QA file (or `paths`) into `into` (default: the QA data
    folder), each checked against its sha256; returns the paths fetched. `mirror`
    (default `$FUNNEL_DATA_MIRROR`) replaces the source host: a URL or a folder."""
    mirror = _as_url(mirror or os.environ.get("FUNNEL_DATA_MIRROR", ""))
    if into is None:
        if paths is None and not missing():
            return []  # the folder read now (engine.paths.shared_data_dir) has them all
        into = fetch_target()
    wanted = [BY_PATH[p] for p in (paths if paths is not None else missing(root=into))]
    fetch_files(wanted, into, mirror, progress)
    _digest.cache_clear()
    return [f.path for f in wanted]


def fetch_files(files: Iterable[QAFile], into: Path, mirror: str = "",
                progress: Progress | None = None) -> None:
    """Download `files` (pinned sources, each checked against its sha256) into `into`, as
    `fetch` does the QA files: what a benchmark's own data uses too (bench/beir_reproduce).
    `mirror`: a URL or folder laid out as <mirror>/<owner>/<name>/<commit>/<path>."""
    files = list(files)
    mirror = _as_url(mirror)
    total, done = sum(f.size for f in files), 0
    for qa_file in files:
        logger.info("fetching %s (%s, %s bytes)", qa_file.path, qa_file.what,
                    f"{qa_file.size:,}")
        done = _download(qa_file, into, mirror, progress, done, total)


def fetch_target() -> Path:
    """Where `fetch` writes: the folder `FUNNEL_SHARED_DATA` names, else the data
    directory's `qa/`."""
    named = os.environ.get("FUNNEL_SHARED_DATA")
    return Path(named) if named else fetched_data_dir()


def _as_url(mirror: str) -> str:
    if not mirror or "://" in mirror:
        return mirror
    return Path(mirror).resolve().as_uri()  # a plain folder


def _download(qa_file: QAFile, into: Path, mirror: str, progress: Progress | None,
              done: int, total: int) -> int:
    url = qa_file.url(mirror)
    final = into / qa_file.path
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(f".{final.name}.{owner_tag()}-{uuid.uuid4().hex[:8]}.part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response, \
                partial.open("wb") as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(min(done, total), total)
        if digest.hexdigest() != qa_file.sha256:
            raise FetchFailed(f"{qa_file.path} from {url} has sha256 {digest.hexdigest()}, "
                              f"not {qa_file.sha256}; it was not kept. The source changed "
                              "or the mirror holds another file: fetch from the pinned "
                              "source, or fix the mirror.")
        os.replace(partial, final)
    except urllib.error.HTTPError as err:
        raise FetchFailed(f"{url} answered {err.code} {err.reason} for {qa_file.path}; "
                          f"check the mirror's layout (<mirror>/{qa_file.repo}/"
                          f"{qa_file.commit}/{qa_file.source}).") from err
    except (TimeoutError, urllib.error.URLError, ConnectionError) as err:
        reason = getattr(err, "reason", err)
        if url.startswith("file:"):
            raise FetchFailed(f"The mirror has no {qa_file.path} ({reason}); lay it out as "
                              f"<mirror>/{qa_file.repo}/{qa_file.commit}/{qa_file.source}."
                              ) from err
        raise FetchFailed(f"No network answers for the QA data ({url.split('/')[2]}: "
                          f"{reason}). On a "
                          f"machine with internet run `{FETCH_COMMAND}`; here, copy the "
                          "files to a folder and set FUNNEL_SHARED_DATA to it, or run "
                          f"`{FETCH_COMMAND} --mirror DIR` with DIR laid out as "
                          "<owner>/<name>/<commit>/<path>.") from err
    finally:
        partial.unlink(missing_ok=True)
    return done


@lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime: float) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def verify(root: Path | None = None) -> dict[str, str]:
    """{path: problem} for every QA file in `root` that is missing or differs from its
    pinned source (empty: all there and intact)."""
    root = root or shared_data_dir()
    problems = {}
    for qa_file in QA_FILES:
        path = root / qa_file.path
        try:
            stat = path.stat()
        except OSError:
            problems[qa_file.path] = "missing"
            continue
        if _digest(str(path), stat.st_size, stat.st_mtime) != qa_file.sha256:
            problems[qa_file.path] = "differs from its pinned source (sha256)"
    return problems
