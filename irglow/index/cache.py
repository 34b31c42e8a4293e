"""The index cache under ``<data>/indexes``: list it, and prune indexes a newer one has replaced.

Every changed corpus gets a new index (the name carries a digest of its content), so old versions
pile up.  ``irglow cache list`` shows each index with its source, size and last use;
``irglow cache prune`` removes, per source and analysis settings, all but the most recently used one
(and, with ``--older-than``, anything unused for that many days).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from irglow.index.lucene_index import data_dir


@dataclass(frozen=True)
class CachedIndex:
    path: Path
    source: str
    settings: str  # the analysis settings' part of the folder name
    documents: int | None
    size_bytes: int
    last_used: float  # epoch seconds (irglow-index.json is touched on every reuse)


def folder_size(path: Path) -> int:
    """The bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def cached_indexes(root: str | Path | None = None) -> list[CachedIndex]:
    """Every complete index in the cache, most recently used first."""
    folder = data_dir(root) / "indexes"
    out = []
    for p in sorted(folder.glob("*")) if folder.is_dir() else []:
        meta_file = p / "irglow-index.json"
        if p.name.startswith(".") or not meta_file.is_file():
            continue
        try:
            meta = json.loads(meta_file.read_text())
        except ValueError:
            meta = {}
        out.append(CachedIndex(p, str(meta.get("source") or meta.get("collection") or "?"), p.name.rsplit("-", 1)[-1],
                               meta.get("documents"), folder_size(p), meta_file.stat().st_mtime))
    return sorted(out, key=lambda c: -c.last_used)


def prunable(indexes: list[CachedIndex], older_than_days: float | None = None,
             now: float | None = None) -> list[CachedIndex]:
    """Indexes replaced by a more recently used one of the same source and settings, plus (with
    ``older_than_days``) any not used for that long."""
    now = time.time() if now is None else now
    seen: set[tuple[str, str]] = set()
    out = []
    for c in indexes:  # most recently used first
        group = (c.source, c.settings)
        stale = older_than_days is not None and now - c.last_used > older_than_days * 86400
        if group in seen or stale:
            out.append(c)
        seen.add(group)
    return out


def remove(indexes: list[CachedIndex]) -> int:
    freed = 0
    for c in indexes:
        freed += c.size_bytes
        shutil.rmtree(c.path, ignore_errors=True)
    return freed


def describe(indexes: list[CachedIndex]) -> str:
    from tabulate import tabulate

    rows = [[c.path.name, c.source, c.documents, f"{c.size_bytes / 2**20:.1f}",
             time.strftime("%Y-%m-%d %H:%M", time.localtime(c.last_used))] for c in indexes]
    return tabulate(rows, headers=["index", "source", "documents", "MiB", "last used"], disable_numparse=True)
