"""Where irglow keeps its caches (indexes, the JVM's logs, the compiled bulk-search helper): one answer for
every module."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir(explicit: str | Path | None = None) -> Path:
    """Where indexes and other caches live: ``explicit``, else ``$IRGLOW_DATA``, else ``./data``."""
    given = explicit or os.environ.get("IRGLOW_DATA")
    path = Path(given or "data").resolve()
    if path.exists() and not path.is_dir():
        source = "--data-dir" if explicit else "IRGLOW_DATA" if given else "the default ./data"
        raise NotADirectoryError(f"{source} names {path}, which is a file: the data directory must be a folder")
    return path


def cache_dir(name: str) -> Path:
    """``$IRGLOW_CACHE/<name>`` (default ``~/.cache/irglow/<name>``): what is built once per content and shared
    by every data folder and process (the compiled Java helper, int8 graphs), never inside a folder a run may
    remove while a process still uses it."""
    return Path(os.environ.get("IRGLOW_CACHE", Path.home() / ".cache" / "irglow")) / name


def models_dir() -> Path:
    """Where trained models (and the corpus encodings and held-out runs made with them) are kept, each in a folder
    keyed on what it was made from: ``$IRGLOW_MODELS``, else ``$IRGLOW_CACHE/models``.  Every output folder shares
    it, so an experiment run into a second folder trains nothing the first one trained; under ``torchrun`` on
    several nodes it must be a folder every node mounts (point ``IRGLOW_MODELS`` at one)."""
    given = os.environ.get("IRGLOW_MODELS")
    return Path(given) if given else cache_dir("models")


def keep_data_dir(collection, folder: Path) -> None:
    """Tell a collection (and the collections it wraps) the data folder its index lives in, so its own caches —
    its document store's tables — go there too (``--data-dir``, ``data_dir =``), not to the default."""
    parts = [p[0] if isinstance(p, tuple) else p for p in getattr(collection, "parts", ())]
    for c in (collection, getattr(collection, "base", None), *parts):
        if c is not None:
            try:
                c.irglow_data_dir = Path(folder)
            except AttributeError:  # a collection with __slots__: the default data folder
                pass


def collection_data_dir(collection) -> Path:
    """The data folder a collection was told (:func:`keep_data_dir`), else the default one."""
    return getattr(collection, "irglow_data_dir", None) or data_dir()
