"""A dense index's encoding as Ray tasks: `python -m engine build --ray ADDRESS|local`, or a
corpus added in the Corpora tab with a Ray address.

The texts no earlier build encoded are cut into shards; each task encodes one shard and
writes it into the content-addressed vector store (engine.index.vectors) of the shared data
directory itself, as a one-process build would. The dense index is then built as always: it
finds every text encoded and only loads the vectors. So an interrupted Ray build keeps every
finished shard, and a one-process build after it encodes only what is left.

Ray is imported here only (`ray_cluster`, which evaluations on Ray use too, and `connect`,
which index shards served from Ray keep, engine.index.shards). `ADDRESS` is a
running cluster ("ray://host:10001" or "host:6379", whose workers see the same data
directory and packages) or "local": `workers` one-CPU workers started on this machine for
the build and stopped after it. A worker encodes with one torch thread: two one-thread
workers use two cores as one two-thread process does (docs/benchmarks/scale.md, "Encoding on Ray").
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from engine.errors import ConfigError
from engine.progress import LoggedProgress

logger = logging.getLogger(__name__)

LOCAL = "local"
CONNECT_SECONDS = 3.0  # how long a cluster's address may take to accept a connection
SHARD_TEXTS = 2048  # texts a task encodes: small enough to spread, large enough to batch
Progress = Callable[[int, int], None]


def check_address(address: str, workers: int) -> None:
    """Refuse an empty or malformed address, a cluster that does not answer within
    CONNECT_SECONDS, or a local worker count out of range, naming the fix (Ray itself
    would retry an unreachable address for minutes)."""
    if not address:
        raise ConfigError("Give a Ray address (host:port or ray://host:port) or 'local'.")
    most = (os.cpu_count() or 1) * 4
    if address == LOCAL:
        if not 1 <= workers <= most:
            raise ConfigError(f"workers={workers} is out of range; allowed: 1 to {most}.")
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"Ray address {address!r} is not host:port or ray://host:port; "
                          "give one of those, or 'local' for workers on this machine.")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as err:
        raise ConfigError(f"No Ray cluster answers at {address!r} ({err}); start one there "
                          "(ray start --head) or use 'local'.") from None


# the cluster this process stays connected to while it serves index shards from it
_serving: dict[str, Any] = {}


def _init(address: str, workers: int) -> Any:
    check_address(address, workers)
    try:
        import ray
    except ImportError:
        raise ConfigError("Ray is not installed; install it with "
                          "`pip install ray==2.60.0` or run without --ray.") from None
    from engine.paths import worker_environment

    runtime_env = {"env_vars": worker_environment()}
    if address == LOCAL:
        ray.init(num_cpus=workers, include_dashboard=False, runtime_env=runtime_env,
                 logging_level=logging.WARNING)
    else:
        ray.init(address=address, runtime_env=runtime_env, logging_level=logging.WARNING)
    return ray


def _other_cluster(address: str) -> ConfigError:
    serving = next(iter(_serving))
    return ConfigError(f"This process serves index shards from the Ray cluster at "
                       f"{serving!r} and Ray connects a process to one cluster: use "
                       f"{serving!r} instead of {address!r}, or restart without it.")


@contextmanager
def ray_cluster(address: str, workers: int = 2) -> Iterator[Any]:
    """The `ray` module connected to the cluster at `address` ("local": `workers` one-CPU
    workers started here), its workers seeing this process's engine, caches and data
    (`engine.paths.worker_environment`); shut down on leaving, unless the process stays
    connected to it to serve index shards (`connect`)."""
    if address in _serving:
        yield _serving[address]
        return
    if _serving:
        raise _other_cluster(address)
    ray = _init(address, workers)
    try:
        yield ray
    finally:
        ray.shutdown()


def connect(address: str, workers: int = 2) -> Any:
    """The `ray` module connected to `address` for as long as this process runs (index
    shards live in its actors): connected once, then the same connection. Ray connects a
    process to one cluster, so another address is refused, naming the one in use."""
    with _connecting:
        if address not in _serving:
            if _serving:
                raise _other_cluster(address)
            _serving[address] = _on_held_thread(lambda: _init(address, workers))
            logger.info("Ray: connected to %s to serve index shards",
                        f"a local cluster of {workers} workers" if address == LOCAL
                        else address)
    return _serving[address]


def disconnect() -> None:
    """Leave the cluster `connect` joined (its actors, and the shards they hold, end)."""
    with _connecting:
        for ray in _serving.values():
            ray.shutdown()
        _serving.clear()
        _release.set()


_connecting = threading.Lock()
_release = threading.Event()


def _on_held_thread(start: Callable[[], Any]) -> Any:
    """`start()` run on a thread that lives until `disconnect`: the processes of a local
    Ray cluster are killed when the *thread* that started them ends (Ray sets
    PR_SET_PDEATHSIG), and the thread asking (a request's, a corpus preparation's) ends
    long before the shards may."""
    result: queue.Queue = queue.Queue()

    def hold() -> None:
        try:
            result.put((start(), None))
        except BaseException as err:  # noqa: BLE001 - handed to the caller, raised there
            result.put((None, err))
            return
        _release.wait()

    _release.clear()
    threading.Thread(target=hold, name="ray-connection", daemon=True).start()
    ray, error = result.get()
    if error is not None:
        raise error
    return ray


def encode_shard(model: str, precision: str, texts: Sequence[str], batch_size: int) -> int:
    """In a worker: encode `texts` missing from the vector store into it; how many."""
    import torch

    from engine.index.encoding import encode, encoder_identity
    from engine.index.vectors import VectorStore

    torch.set_num_threads(1)
    store = VectorStore(encoder_identity(model, precision))
    todo = [texts[i] for i in store.missing(texts)]
    if todo:
        store.encode(todo, lambda batch: encode(batch, model, batch_size, precision=precision),
                     slice_size=len(todo), shard_size=len(todo))
    return len(todo)


def encode_on_ray(texts: Sequence[str], model: str, precision: str, address: str,
                  workers: int = 2, batch_size: int = 64,
                  progress: Progress | None = None) -> int:
    """Encode the `texts` the vector store of `model` (at `precision`, resolved) lacks, as
    Ray tasks at `address`; returns how many were encoded. `progress(done, total)` after
    every shard."""
    from engine.index.encoding import encoder_identity
    from engine.index.vectors import VectorStore

    check_address(address, workers)
    store = VectorStore(encoder_identity(model, precision))
    todo = [texts[i] for i in store.missing(texts)]
    if not todo:
        return 0
    shards = [todo[i:i + SHARD_TEXTS] for i in range(0, len(todo), SHARD_TEXTS)]
    logger.info("Ray: %d texts to encode in %d shards on %s", len(todo), len(shards),
                f"a local cluster of {workers} workers" if address == LOCAL else address)
    progress = LoggedProgress(logger, "Ray: encoding", "texts", then=progress)
    with ray_cluster(address, workers) as ray:
        task = ray.remote(num_cpus=1, max_retries=1)(encode_shard)
        pending = {task.remote(model, precision, shard, batch_size): len(shard)
                   for shard in shards}
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ray.get(ready[0])  # a failed task raises here, naming its error
            done += pending.pop(ready[0])
            progress(done, len(todo))
    return len(todo)
