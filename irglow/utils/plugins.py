"""The entry points other packages register under irglow's groups (``irglow.stages``, ``irglow.rerankers``,
``irglow.lexical``), read once per import path: scanning every installed distribution's metadata costs ~6 ms, and
binding a configuration asks for a group hundreds of times.  Keyed by ``sys.path`` (what decides which
distributions are visible), so a path added at run time is scanned anew."""

from __future__ import annotations

import hashlib
import importlib
import sys
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points, packages_distributions, version
from pathlib import Path


@lru_cache(maxsize=16)
def _scanned(group: str, path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    return tuple(sorted(entry_points(group=group), key=lambda p: p.name))


def registered(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of ``group`` on the current import path, by name."""
    return _scanned(group, tuple(sys.path))


def module_code(module: str) -> dict[str, str] | None:
    """What a cache key holds of another package's code (``None`` for irglow's own, whose version every key
    holds): the distribution's name and version, and a digest of the module's source — of every ``.py`` file of
    its package where the module is a package's ``__init__`` — so an edited plugin, with or without a version
    bump, never reuses the runs or models its old code made."""
    if module == "irglow" or module.startswith("irglow."):
        return None
    loaded = importlib.import_module(module)
    origin = Path(getattr(loaded, "__file__", "") or "")
    files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin] if origin.name else []
    source = hashlib.sha256()
    for f in files:  # read each time: a file edited since it was imported is what the next run loads
        text = f.read_bytes()
        source.update(f"{f.relative_to(origin.parent)}\0{len(text)}\0".encode() + text)
    dists = packages_distributions().get(module.split(".")[0], [])
    return {"module": module, "package": ",".join(f"{d} {version(d)}" for d in dists),
            "source": source.hexdigest()[:16]}


def entry_point_code(group: str, name: str) -> dict[str, str] | None:
    """:func:`module_code` of the module behind ``name``'s entry point in ``group`` (``None``: none registered)."""
    point = next((p for p in registered(group) if p.name == name), None)
    return None if point is None else module_code(point.module)
