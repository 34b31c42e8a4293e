"""Work over forked processes that share one object with the parent — a run's columns, the qrels — handed over
at the fork (copy-on-write), never pickled per task and never left in the parent's module state."""

from __future__ import annotations

import multiprocessing
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_SHARED: Any = None  # set by a worker's initializer, in the worker only


def _adopt(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def _call(task: tuple[Callable[[Any, Any], Any], Any]) -> Any:
    fn, item = task
    return fn(_SHARED, item)


def forked_map(fn: Callable[[Any, T], R], shared: Any, items: Iterable[T], workers: int,
               ordered: bool = True) -> Iterator[R]:
    """``fn(shared, item)`` for every item on ``workers`` forked processes (in order, or as they finish with
    ``ordered=False``); ``fn`` is a module-level function (sent by reference), ``shared`` reaches the workers
    through the fork.  One worker: in this process."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(shared, item)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(min(workers, len(items)), initializer=_adopt, initargs=(shared,)) as pool:
        mapped = pool.imap if ordered else pool.imap_unordered
        yield from mapped(_call, [(fn, item) for item in items])
