"""A small thread-safe memo of the last few queries' results.

Several stages of one run ask the same index about the same question (a first stage and a
re-ranker both want the query's vector or every document's score); keeping the last few
answers makes the second ask free without holding on to every query ever seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
RECENT_QUERIES = 8


class Recent(Generic[T]):
    """`get(query, compute)`: `compute()` once per query among the last `size` asked."""

    def __init__(self, size: int = RECENT_QUERIES) -> None:
        self.size = size
        self._items: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, query: str, compute: Callable[[], T]) -> T:
        with self._lock:
            if query in self._items:
                self._items.move_to_end(query)
                return self._items[query]
        found = compute()  # outside the lock: two threads may both compute, never wait
        with self._lock:
            self._items[query] = found
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return found
