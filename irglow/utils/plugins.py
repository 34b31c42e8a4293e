"""The entry points other packages register under irglow's groups (``irglow.stages``, ``irglow.rerankers``,
``irglow.lexical``), read once per import path: binding a configuration asks for a group hundreds of times.  Keyed
by ``sys.path`` (what decides which distributions are visible), so a path added at run time is scanned anew.

The scan reads each distribution's ``entry_points.txt`` itself, as ``importlib.metadata.entry_points`` would (the
first distribution of a name on the path wins), and imports ``importlib.metadata`` only where one names an irglow
group: with 250 distributions installed, ``entry_points()`` and its import cost 0.1 s of a 10-query search."""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

GROUPS = "irglow."  # the prefix of irglow's entry-point groups


def dist_key(name: str) -> str:
    """A distribution's name as packaging normalizes it (``irglow-linear``, ``irglow_linear`` → ``irglow_linear``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def distributions(path: "list[str] | tuple[str, ...]", kinds: tuple[str, ...] = (".dist-info", ".egg-info")
                  ) -> Iterator[tuple[str, str]]:
    """``(normalized name, metadata folder)`` of each distribution on the import path ``path`` whose metadata
    folder is of ``kinds`` (one directory listing per entry), the first of a name winning, as for imports."""
    seen: set[str] = set()
    for entry in path:
        try:
            folders = sorted(os.listdir(entry or "."))
        except OSError:  # a missing folder, a zip file
            continue
        for folder in folders:
            if folder.endswith(kinds):
                key = dist_key(folder.rsplit(".", 1)[0].split("-")[0])
                if key not in seen:
                    seen.add(key)
                    yield key, os.path.join(entry or ".", folder)


@lru_cache(maxsize=4)
def _declared(path: tuple[str, ...]) -> tuple[tuple[str, str, str, str], ...]:
    """``(group, name, value, metadata folder)`` of every irglow entry point on the import path ``path``: each
    distribution's ``entry_points.txt``."""
    found: list[tuple[str, str, str, str]] = []
    for _, folder in distributions(path):
        try:
            text = Path(folder, "entry_points.txt").read_text(encoding="utf-8")
        except OSError:
            continue
        if "[" + GROUPS in text:
            found += [(*e, folder) for e in _entries(text)]
    return tuple(found)


def _entries(text: str) -> list[tuple[str, str, str]]:
    """An ``entry_points.txt``'s irglow entries (an INI file: ``[group]`` then ``name = module:attr`` lines)."""
    out, group = [], ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
        elif group.startswith(GROUPS) and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            out.append((group, name.strip(), value.strip()))
    return out


@lru_cache(maxsize=16)
def _scanned(group: str, path: tuple[str, ...]) -> tuple[Any, ...]:
    points = [(name, value, folder) for g, name, value, folder in _declared(path) if g == group]
    if not points:
        return ()
    from importlib.metadata import Distribution, EntryPoint  # only where a package registers something

    def point(name: str, value: str, folder: str) -> EntryPoint:
        made = EntryPoint(name, value, group)
        vars(made).update(dist=Distribution.at(folder))  # as entry_points() gives it: its package named
        return made

    return tuple(sorted((point(*p) for p in points), key=lambda p: p.name))


def registered(group: str) -> tuple[Any, ...]:
    """The entry points (``importlib.metadata.EntryPoint``) of ``group`` on the current import path, by name."""
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
    from importlib.metadata import packages_distributions, version  # a plugin's key only

    dists = packages_distributions().get(module.split(".")[0], [])
    return {"module": module, "package": ",".join(f"{d} {version(d)}" for d in dists),
            "source": source.hexdigest()[:16]}


def entry_point_code(group: str, name: str) -> dict[str, str] | None:
    """:func:`module_code` of the module behind ``name``'s entry point in ``group`` (``None``: none registered)."""
    point = next((p for p in registered(group) if p.name == name), None)
    return None if point is None else module_code(point.module)
