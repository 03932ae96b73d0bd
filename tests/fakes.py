"""Deterministic fake stages and a small annotated run trace, shared by several tests."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.config import param
from engine.documents import Candidate, Question, Unit
from engine.paradigms.base import Paradigm, ParadigmSpec, annotate
from engine.service.preparation import Preparation
from engine.service.tasks import Task
from engine.stages.base import Stage, StageOutput, rerank, run_stage
from engine.stages.expand import expand_to_documents
from engine.trace import LLMStep, RunTrace, StageResult
from engine.trace_details import ReadCount, StageDetails


class WordOverlapRanker(Stage):
    """Scores a candidate by how many query words its text contains."""

    granularity = "documents"

    def __init__(self, name: str = "overlap") -> None:
        self.name = name

    def run(self, query: str, candidates: Sequence[Candidate], k: int) -> StageOutput:
        words = set(query.lower().split())
        scores = [len(words & set(c.unit.text.lower().split())) for c in candidates]
        return StageOutput(rerank(candidates, scores, k), StageDetails(note="fake"))


def clusters(tiny_corpus) -> tuple[Candidate, ...]:
    groups = [("Danube", "Budapest", "Vienna"), ("Georges Seurat", "A Sunday Afternoon")]
    return tuple(Candidate(Unit(f"c{i}", g[0], "", g, "clusters"), 10.0 - i, i + 1)
                 for i, g in enumerate(groups))


def answer_step(seconds: float = 0.0, prompt_tokens: int = 42) -> LLMStep:
    return LLMStep(purpose="answer", model="fake", prompt="Context: ...", output=" Georges Seurat",
                   prompt_tokens=prompt_tokens, output_tokens=3, seconds=seconds,
                   answer="Georges Seurat")


def sample_trace(tiny_corpus) -> RunTrace:
    docs = expand_to_documents(tiny_corpus, clusters(tiny_corpus))
    first = run_stage(WordOverlapRanker(), "seurat painting", docs, 5)
    second = run_stage(WordOverlapRanker("rivers"), "river capital", first.candidates, 2)
    trace = RunTrace(question="Who painted A Sunday Afternoon?", paradigm="fake",
                     config={"K": 5}, stages=(first, second), answer="Georges Seurat",
                     llm_steps=(answer_step(),),
                     corpus={"name": tiny_corpus.name, "fingerprint": tiny_corpus.fingerprint,
                             "documents": len(tiny_corpus)})
    gold = Question("q1", "Who painted A Sunday Afternoon?", answers=("Georges Seurat",),
                    supporting_titles=("A Sunday Afternoon",))
    return annotate(trace, gold)


def ranked_stage(name: str, *units: tuple[str, str], seconds: float = 0.01) -> StageResult:
    """A passage stage whose candidates are (document, text) pairs, best first."""
    return StageResult(name, "passages", len(units), tuple(
        Candidate(Unit(f"{doc}#{i}", doc, text, (doc,), "passages"), 1.0 - i / 10, i + 1)
        for i, (doc, text) in enumerate(units)), seconds)


def gold_run(gold: Question, *stages: StageResult, said: str | None = "Georges Seurat",
             read: int | None = None, paradigm: str = "fake",
             seconds: float = 0.5) -> RunTrace:
    """An annotated run through `stages` that answers `said` (None: no reader), reading
    only the first `read` units when a token cap cut."""
    steps = ()
    if said is not None:
        capped = ReadCount(read, len(stages[-1].candidates)) if read is not None else None
        steps = (LLMStep("answer", "fake", "p", said, 10, 2, seconds, answer=said,
                         capped=capped),)
    return annotate(RunTrace(gold.text, paradigm, {}, stages, steps, answer=said or ""), gold)


# --- a toy paradigm, registered the way a real one is ---------------------------------------


@dataclass(frozen=True)
class EchoConfig:
    k: int = param(2, "k: documents kept by the overlap ranker", low=1, high=8)
    voice: str = param("plain", "how the answer is said", choices=("plain", "loud"))


class EchoParadigm(Paradigm):
    """Expands two fixed clusters, keeps the k documents sharing most query words, and
    'answers' with one fake LLM step: Seurat's name when what it reads mentions him."""

    name = "echo"

    def steps(self, question):
        docs = expand_to_documents(self.corpus, clusters(self.corpus))
        kept = run_stage(WordOverlapRanker(), question, docs, self.config.k)
        yield kept
        yield from self.read(question, kept.candidates)

    def reader_steps(self, question, candidates):
        said = ("Georges Seurat" if any("Seurat" in c.unit.text for c in candidates)
                else "unknown")
        said = said if self.config.voice == "plain" else said.upper()
        yield LLMStep(purpose="answer", model="echo", prompt=question, output=said,
                      prompt_tokens=7, output_tokens=2, seconds=0.0, answer=said)


ECHO = ParadigmSpec(name="echo", label="Echo (a toy)", description="a test paradigm",
                    config=EchoConfig, paradigm=EchoParadigm)


def fake_preparation(tiny_corpus, actions: dict) -> Preparation:
    prep = Preparation("tiny", dense=False)
    prep.tasks = {name: Task(name, f"task {name}", action) for name, action in actions.items()}
    prep.needs = {"funnel": ("corpus", "clusters", "reader", "preranker"),
                  "flat": ("corpus", "reader", "reranker", "dense")}
    return prep


def qa_file(path, n=3) -> str:
    """A HotpotQA-contexts file of `n` questions whose answer the tiny corpus holds."""
    rows = [{"question_id": f"q{i}", "question_text": "Who painted A Sunday Afternoon?",
             "answers_objects": [{"spans": ["Georges Seurat"]}],
             "contexts": [{"id": "0", "title": "Georges Seurat", "is_supporting": True,
                           "paragraph_text": "Georges Seurat was a French painter."}]}
            for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return str(path)


class Clock:
    """A clock a test moves: `clock()` is its seconds, `advance(s)` the time passing."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(prep: Preparation, sessions: Path) -> Iterator[tuple]:
    """(an Explorer over `prep` saving runs in `sessions`, its app served in this process,
    a gradio_client of it); both closed after."""

    from app.ui import build_app
    from engine.service.explorer import Explorer
    from engine.store.sessions import SessionStore

    store = SessionStore(sessions)
    explorer = Explorer(prep, store)
    demo = build_app(explorer)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                        quiet=True)
    try:
        yield explorer, demo, gradio_client(f"http://127.0.0.1:{port}/")
    finally:
        demo.close()
        store.close()



@contextmanager
def seeded_app(root: Path, seed: Callable, **options) -> Iterator[tuple[str, object]]:
    """(the URL of the whole app served in this process as a browser meets it, with its
    stylesheet and keys, over the tiny corpus and the toy paradigm 'echo'; what `seed`
    returned). `seed(env, explorer, preparation, store, corpus)` stores what the tests read
    before the app is built; `env` is a MonkeyPatch undone when the app closes. `options`
    go to the Explorer (`preparing`: how an added corpus is prepared)."""
    import pytest

    from app.ui import build_app, serve
    from engine.documents import Corpus, Document
    from engine.paradigms import registry
    from engine.service.explorer import Explorer
    from engine.store.sessions import SessionStore
    from tests.conftest import TINY_DOCS

    with pytest.MonkeyPatch.context() as env:
        env.setenv("FUNNEL_DATA_DIR", str(root / "data"))
        registry.register(ECHO)
        corpus = Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                      for t, x in TINY_DOCS))
        store = SessionStore(root / "runs.duckdb")
        preparation = fake_preparation(corpus, {"corpus": lambda progress: corpus}).run()
        explorer = Explorer(preparation, store, **options)
        seeded = seed(env, explorer, preparation, store, corpus)
        demo = build_app(explorer)
        port = free_port()
        serve(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
              quiet=True)
        try:
            yield f"http://127.0.0.1:{port}/", seeded
        finally:
            demo.close()
            store.close()
            registry.unregister(ECHO.name)

def app_refuses_at_start(argv: list[str], monkeypatch, capsys) -> str:
    """What `funnel-explorer ARGV` says on stderr when it refuses to start (exit code 2),
    before it prepares anything."""
    import pytest

    from app import main as app_main

    monkeypatch.setattr("sys.argv", ["app.py", *argv])
    monkeypatch.setattr(app_main, "Preparation", None)  # never reached
    with pytest.raises(SystemExit) as stopped:
        app_main.main()
    assert stopped.value.code == 2
    return capsys.readouterr().err


def serves_as(served, one, questions: Sequence[str], *, score_atol: float,
              vector_atol: float = 0.0) -> None:
    """Assert that the dense index `served` (remote: shards, a vector database) ranks,
    scores and reads vectors as the exact in-process index `one` does: for every question
    the same top-k rows for k = 1, 5, every row and more, their cosines within
    `score_atol`, and the same `search`; gathered rows (negative ones too) within
    `vector_atol` (0: identical), and every row's cosine within `score_atol`."""
    import numpy as np

    for question in questions:
        vector = one.encode_queries([question])[0]
        for k in (1, 5, len(one.units), len(one.units) + 3):
            rows, scores = served.top(vector, k)
            expected_rows, expected = one.top(vector, k)
            assert rows.tolist() == expected_rows.tolist()
            assert np.allclose(scores, expected, atol=score_atol)
        assert [c.unit for c in served.search(question, 5)] == \
            [c.unit for c in one.search(question, 5)]

    def same(got, want) -> bool:
        return (np.array_equal(got, want) if vector_atol == 0
                else np.allclose(got, want, atol=vector_atol))

    rows = np.array([len(one.units) - 1, 0, 9, 3, 9])
    assert same(served.vectors[rows], one.vectors[rows])
    assert same(served.vectors[-1], one.vectors[-1])
    assert np.allclose(served.vectors @ vector, one.vectors @ vector, atol=score_atol)


def gradio_client(url: str, **kwargs):
    """The real gradio_client on `url`, waiting as long as a loaded machine needs: its
    default is httpx's 5 s for every request, which a served app on 2 busy cores can miss
    answering /config (seen in a full CI run); no read limit, as for its event streams."""
    import httpx
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": httpx.Timeout(60.0, read=None)},
                  **kwargs)


def upload(page, box: str, path: Path) -> None:
    """Put `path` into the Gradio file box `box` (an element id) and wait until the box
    shows it uploaded, clearing what it held first. Gradio shows a file's stem and suffix
    in two spans, so the box may read "odd .json": the name is matched across that gap."""
    from playwright.sync_api import expect

    path = Path(path)
    clear = page.locator(f"#{box} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    page.locator(f"#{box} input[type=file]").set_input_files(str(path))
    shown = re.compile(rf"{re.escape(path.stem)}\s*{re.escape(path.suffix)}")
    expect(page.locator(f"#{box}")).to_contain_text(shown, timeout=30_000)
