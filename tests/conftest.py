"""Shared fixtures: a private data directory per test and a tiny hand-made corpus."""

from __future__ import annotations

import pytest

from engine.types import Corpus, Document


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    """Every test gets its own cache directory, so no test sees another's caches."""
    path = tmp_path / "data"
    monkeypatch.setenv("FUNNEL_DATA_DIR", str(path))
    return path


TINY_DOCS = (
    ("Georges Seurat", "Georges Seurat was a French painter. He devised pointillism. "
     "His best known painting is A Sunday Afternoon."),
    ("A Sunday Afternoon", "A Sunday Afternoon on the Island of La Grande Jatte was painted "
     "by Georges Seurat from 1884 to 1886."),
    ("Pointillism", "Pointillism is a technique of painting in which small dots of colour "
     "are applied in patterns. Georges Seurat and Paul Signac developed it."),
    ("Paul Signac", "Paul Signac was a French painter who worked with Seurat on Pointillism."),
    ("Danube", "The Danube is a river that flows through Budapest and Vienna."),
    ("Budapest", "Budapest is the capital of Hungary. The Danube flows through it."),
    ("Vienna", "Vienna is the capital of Austria, on the Danube."),
    ("Photosynthesis", "Photosynthesis lets plants turn light into chemical energy."),
)


@pytest.fixture
def echo():
    """The toy paradigm 'echo' registered for one test (one registry line, as a real one)."""
    from engine.paradigms import registry
    from tests.fakes import ECHO

    registry.register(ECHO)
    yield ECHO
    registry.unregister(ECHO.name)


@pytest.fixture
def tiny_corpus() -> Corpus:
    """Eight short documents: a painting cluster, a river cluster and a loner."""
    return Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                for t, x in TINY_DOCS))


def torch_single_thread():
    """One torch thread for a test: on a shared 2-core machine two threads spin and run
    10-30x slower. Modules opt in with `pytest.fixture(autouse=True)(torch_single_thread)`."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
