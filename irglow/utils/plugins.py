"""The entry points other packages register under irglow's groups (``irglow.stages``, ``irglow.rerankers``,
``irglow.lexical``), read once per import path: scanning every installed distribution's metadata costs ~6 ms, and
binding a configuration asks for a group hundreds of times.  Keyed by ``sys.path`` (what decides which
distributions are visible), so a path added at run time is scanned anew."""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points


@lru_cache(maxsize=16)
def _scanned(group: str, path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    return tuple(sorted(entry_points(group=group), key=lambda p: p.name))


def registered(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of ``group`` on the current import path, by name."""
    return _scanned(group, tuple(sys.path))
