"""The entry points other packages register under irglow's groups (``irglow.stages``, ``irglow.rerankers``,
``irglow.lexical``), read once per import path: binding a configuration asks for a group hundreds of times.  Keyed
by ``sys.path`` (what decides which distributions are visible), so a path added at run time is scanned anew.

The scan reads each distribution's ``entry_points.txt`` itself, as ``importlib.metadata.entry_points`` would (the
first distribution of a name on the path wins), and imports ``importlib.metadata`` only where one names an irglow
group: with 250 distributions installed, ``entry_points()`` and its import cost 0.1 s of a 10-query search."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
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
    folder is of ``kinds``, the first of a name winning — in ``importlib.metadata``'s own order (its ``Lookup``):
    each path entry's children as the directory lists them (not sorted: of two dist-infos of one name in one
    folder, the one it lists first), then an egg's ``EGG-INFO`` where the entry is a ``.egg`` (a folder or a zip
    file).  One listing per entry."""
    seen: set[str] = set()
    for entry in path:
        root = entry or "."
        base = os.path.basename(root).lower()
        try:
            children = os.listdir(root)
        except NotADirectoryError:  # a zipped egg (or wheel) on the path
            children = _zip_children(root)
        except OSError:  # a missing folder
            continue
        infos, eggs = [], []
        for child in children:
            low = child.lower()
            if low.endswith(kinds):
                infos.append((dist_key(low.rpartition(".")[0].partition("-")[0]), os.path.join(root, child)))
            elif base.endswith(".egg") and low == "egg-info" and ".egg-info" in kinds:
                eggs.append((dist_key(base.rpartition(".")[0].partition("-")[0]), os.path.join(root, child)))
        for key, folder in (*infos, *eggs):
            if key not in seen:
                seen.add(key)
                yield key, folder


def _zip_children(archive: str) -> list[str]:
    import zipfile

    try:
        with zipfile.ZipFile(archive) as z:
            return list(dict.fromkeys(name.split("/", 1)[0] for name in z.namelist()))
    except (OSError, zipfile.BadZipFile):
        return []


def _metadata_file(folder: str, name: str) -> str:
    """A metadata file's text, from a folder or from inside a zipped egg (``x.egg/EGG-INFO``); ``OSError`` if none."""
    if os.path.isdir(folder):
        return Path(folder, name).read_text(encoding="utf-8")
    import zipfile

    archive, inner = os.path.split(folder)
    try:
        with zipfile.ZipFile(archive) as z:
            return z.read(f"{inner}/{name}").decode("utf-8")
    except (KeyError, zipfile.BadZipFile) as e:
        raise OSError(str(e)) from None


def _distribution(folder: str):
    """The ``importlib.metadata`` distribution of a metadata folder (inside a zip file too, as importlib opens it)."""
    from importlib.metadata import Distribution, PathDistribution

    if os.path.isdir(folder):
        return Distribution.at(folder)
    import zipfile

    archive, inner = os.path.split(folder)
    return PathDistribution(zipfile.Path(archive, inner + "/"))


@lru_cache(maxsize=4)
def _declared(path: tuple[str, ...]) -> tuple[tuple[str, str, str, str], ...]:
    """``(group, name, value, metadata folder)`` of every irglow entry point on the import path ``path``: each
    distribution's ``entry_points.txt``."""
    found: list[tuple[str, str, str, str]] = []
    for _, folder in distributions(path):
        try:
            text = _metadata_file(folder, "entry_points.txt")
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
    from importlib.metadata import EntryPoint  # only where a package registers something

    def point(name: str, value: str, folder: str) -> EntryPoint:
        made = EntryPoint(name, value, group)
        vars(made).update(dist=_distribution(folder))  # as entry_points() gives it: its package named
        return made

    return tuple(sorted((point(*p) for p in points), key=lambda p: p.name))


def registered(group: str) -> tuple[Any, ...]:
    """The entry points (``importlib.metadata.EntryPoint``) of ``group`` on the current import path, by name."""
    return _scanned(group, tuple(sys.path))


def irglow_version() -> str:
    """irglow's version, ``irglow.__version__`` (what every cache key of irglow's own code holds).  Read from the
    loaded package, not from installed metadata, which a checkout's stale ``irglow.egg-info`` can contradict."""
    return sys.modules["irglow"].__version__


RERANKERS = "irglow.rerankers"  # the entry-point group of re-ranker kinds (irglow.models.rerank.kinds)
_DEFINED: dict[str, dict[str, Any]] = {}  # {group: {name: object}}: kinds used as objects in this process


def define(group: str, name: str, obj: Any) -> None:
    """Make ``obj`` (a re-ranker kind a notebook cell or a script defines, used as an object: ``first >>
    LinearReranker()``) known under ``name`` in this process, beside ``group``'s entry points, which configuration
    files and the CLI name (another process knows only those).  A later definition of the name replaces it (a cell
    run again)."""
    _DEFINED.setdefault(group, {})[name] = obj


def defined(group: str) -> dict[str, Any]:
    """The objects this process defined in ``group`` (:func:`define`), by name."""
    return dict(_DEFINED.get(group, {}))


def class_code(cls: type) -> str:
    """A digest of what a class defined without a file runs (a notebook's ``__main__``): its methods' code, its
    simple attributes, its dataclass fields, and, followed by name, the functions, classes and constants of its module
    its code uses — so an edited cell (the class, or a helper it calls) never reuses what the old code made."""
    import dataclasses
    import inspect

    module = sys.modules.get(cls.__module__)
    names = vars(module) if module is not None else {}
    h, seen = hashlib.sha256(), set()

    def code(co) -> None:
        h.update(co.co_code + repr((co.co_names, co.co_varnames)).encode())
        for const in co.co_consts:
            code(const) if inspect.iscode(const) else h.update(repr(const).encode())
        for name in co.co_names:
            value = names.get(name)
            if isinstance(value, (str, int, float, bool, tuple, type(None))) and name in names:
                h.update(repr((name, value)).encode())  # a module-level constant it reads
            else:
                visit(value)

    def visit(obj) -> None:
        if id(obj) in seen or getattr(obj, "__module__", None) != cls.__module__:
            return
        seen.add(id(obj))
        if inspect.isfunction(obj):
            h.update(repr(obj.__defaults__).encode())
            code(obj.__code__)
        elif inspect.isclass(obj):
            h.update(obj.__qualname__.encode())
            for f in dataclasses.fields(obj) if dataclasses.is_dataclass(obj) else ():
                h.update(repr((f.name, str(f.type), f.default)).encode())
                if callable(f.default_factory):
                    visit(f.default_factory)
            for key, value in sorted(vars(obj).items()):
                inner = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
                if inspect.isfunction(inner) or inspect.isclass(inner):
                    h.update(key.encode())
                    visit(inner)
                elif isinstance(value, (str, int, float, bool, tuple, type(None))):
                    h.update(repr((key, value)).encode())

    visit(cls)
    return h.hexdigest()[:16]


def module_code(module: str, dist: Any = None) -> dict[str, str] | None:
    """What a cache key holds of another package's code (``None`` for irglow's own, whose version every key
    holds): the distribution's name and version, and a digest of the source of every module the plugin's package
    holds — every ``.py`` file under its top-level package's folder, and every ``.py`` file its distribution lists
    (its other top-level packages) — so an edited plugin, or an edited module it imports (``jmpkg.plugin`` reading
    ``jmpkg/consts.py``), with or without a version bump, never reuses the runs or models its old code made.
    ``dist``: the distribution the entry point came from (the one whose code is loaded), else the one
    ``importlib.metadata`` names for the top-level package."""
    if module == "irglow" or module.startswith("irglow."):
        return None
    loaded = importlib.import_module(module)
    top_name = module.split(".")[0]
    top = sys.modules.get(top_name) or importlib.import_module(top_name)
    files: dict[str, Path] = {}
    for folder in list(getattr(top, "__path__", None) or []):  # a package (a namespace package's every folder)
        for f in sorted(Path(folder).rglob("*.py")):
            files.setdefault(f"{top_name}/{f.relative_to(folder).as_posix()}", f)
    for m in (top, loaded):  # a single-file module, or an entry module outside its package's folders
        origin = getattr(m, "__file__", None)
        if origin and origin.endswith(".py") and not any(p == Path(origin) for p in files.values()):
            files[m.__name__.replace(".", "/") + ".py"] = Path(origin)
    from importlib.metadata import packages_distributions, distribution  # a plugin's key only

    dists = [dist] if dist is not None else []
    if not dists:
        for name in packages_distributions().get(top_name, []):
            try:
                dists.append(distribution(name))
            except Exception:  # noqa: BLE001 - listed but unreadable: keyed on the folders above
                continue
    origin = getattr(top, "__file__", None)
    if not dists and not getattr(top, "__path__", None) and origin:  # a lone module on the path (PYTHONPATH, a
        # notebook's folder): every module loaded from its folder, which it may import (jm.py reading jmconsts.py)
        here = Path(origin).parent
        for name, m in list(sys.modules.items()):
            f = getattr(m, "__file__", None)
            if f and f.endswith(".py") and Path(f).parent == here:
                files.setdefault(f"{name.replace('.', '/')}.py", Path(f))
    for d in dists:
        for listed in d.files or []:
            if listed.suffix == ".py":
                located = Path(d.locate_file(listed))
                if located.is_file():
                    files.setdefault(listed.as_posix(), located)
        # an editable install lists no module: its other top-level packages, found where they import from
        for other in (d.read_text("top_level.txt") or "").split():
            if other == top_name or other.startswith("_"):
                continue
            try:
                spec = importlib.util.find_spec(other)
            except (ImportError, ValueError):
                continue
            if spec is None:
                continue
            for folder in spec.submodule_search_locations or []:
                for f in sorted(Path(folder).rglob("*.py")):
                    files.setdefault(f"{other}/{f.relative_to(folder).as_posix()}", f)
            if not spec.submodule_search_locations and spec.origin and spec.origin.endswith(".py"):
                files.setdefault(f"{other}.py", Path(spec.origin))
    source = hashlib.sha256()
    for label, f in sorted(files.items()):  # read each time: a file edited since it was imported is what runs next
        try:
            text = f.read_bytes()
        except OSError:
            continue
        source.update(f"{label}\0{len(text)}\0".encode() + text)
    package = ",".join(dict.fromkeys(f"{d.metadata['Name']} {d.version}" for d in dists))
    return {"module": module, "package": package, "source": source.hexdigest()[:16]}


def entry_point_code(group: str, name: str) -> dict[str, str] | None:
    """:func:`module_code` of the module behind ``name``'s entry point in ``group`` (``None``: none registered),
    keyed with the distribution that registered it."""
    point = next((p for p in registered(group) if p.name == name), None)
    return None if point is None else module_code(point.module, getattr(point, "dist", None))
