"""What the models folder keeps (``$IRGLOW_MODELS``: trained models, corpus encodings, zero-shot held-out runs),
listed with size and last use, and pruned by age (``irglow cache``).  Each is kept by content, so nothing ever
replaces an old one: what no run has used for a number of days goes, except what a process is writing (its lock
held), which is left and said."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from irglow.index.cache import folder_size
from irglow.utils.atomic import written_now
from irglow.utils.paths import models_dir


@dataclass(frozen=True)
class Kept:
    path: Path
    kind: str  # model | encoding | held-out run
    name: str  # the model, the run encoded, the run held out
    size_bytes: int
    last_used: float  # epoch seconds (marked each time a run uses it: mark_used)


def encoding_lock(encoding: str | Path) -> Path:
    """The folder whose writer lock a corpus encoding's writer holds (beside the encoding, which is replaced whole
    when it is written: a lock inside it would go with it)."""
    return Path(f"{encoding}.lock")


def mark_used(path: str | Path) -> None:
    """Say that a run used ``path`` now (what :func:`kept` reads as its last use)."""
    try:
        os.utime(path)
    except OSError:  # a read-only models folder: its last use is not recorded
        pass


def kept(root: str | Path | None = None) -> list[Kept]:
    """Everything the models folder keeps, most recently used first."""
    root = Path(root) if root is not None else models_dir()
    found = [(f, "model", f.parent.name.removesuffix("-train"), f / "inputs.json") for f in root.glob("*-train/*")]
    found += [(f, "encoding", f.name.removesuffix(".embeddings"), f) for f in root.glob("encodings/*.embeddings")]
    found += [(f, "held-out run", f.name, f) for f in root.glob("held-out-runs/*")]
    items = [Kept(f, kind, name, folder_size(f), (marker if marker.exists() else f).stat().st_mtime)
             for f, kind, name, marker in found if f.is_dir()]
    return sorted(items, key=lambda k: -k.last_used)


def in_use(item: Kept) -> bool:
    """Whether a process holds its lock now (trains the model, writes the encoding or the run)."""
    return written_now(encoding_lock(item.path) if item.kind == "encoding" else item.path)


def stale(items: list[Kept], older_than_days: float, now: float | None = None) -> list[Kept]:
    """What no run used for ``older_than_days`` days and no process is writing."""
    now = time.time() if now is None else now
    return [k for k in items if now - k.last_used > older_than_days * 86400 and not in_use(k)]


def remove_kept(items: list[Kept]) -> int:
    """Remove them; the bytes freed."""
    for k in items:
        shutil.rmtree(k.path, ignore_errors=True)
        if k.kind == "encoding":
            shutil.rmtree(encoding_lock(k.path), ignore_errors=True)
    return sum(k.size_bytes for k in items)


def describe_kept(items: list[Kept]) -> str:
    from tabulate import tabulate

    rows = [[k.kind, k.name, k.path.name, f"{k.size_bytes / 2**20:.1f}",
             time.strftime("%Y-%m-%d %H:%M", time.localtime(k.last_used))] for k in items]
    return tabulate(rows, headers=["kept", "of", "folder", "MiB", "last used"], disable_numparse=True)
