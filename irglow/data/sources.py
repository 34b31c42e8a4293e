"""Input files named on a command line, as trec_eval and Unix tools read them: ``-`` is standard input, and a
pipe (``<(zcat run.gz)``) or a named FIFO is read exactly once.

The readers open a file more than once (the gzip sniff, the columnar reader's separator check, a second pass
that names a bad byte), which a pipe cannot give twice: the second read of ``<(…)`` found nothing ("an empty
run") and the second open of a FIFO waited for a writer that had gone.  :func:`readable` reads such a source once
into a spooled file that every later open reads, and refuses a directory by name; a regular file is itself.
Spooled copies are removed when the process ends (:func:`remove_spooled`, also called by
:func:`irglow.index.jvm.exit_process`, which skips ``atexit``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

STDIN = "-"
_spooled: dict[str, Path] = {}  # the name given → its spooled copy (read once per process; inherited by forks)
_spool_dir: Path | None = None


def readable(path: str | Path) -> Path:
    """A path that can be opened as often as a reader needs: ``path`` itself for a regular file, else a spooled copy
    of what ``-`` (standard input), a pipe or a FIFO gave (read once, the first time it is asked for).  A directory
    or a missing file is an ``OSError`` naming it."""
    name = str(path)
    if name in _spooled:
        return _spooled[name]
    if name == STDIN:
        return _spool(name, sys.stdin.buffer)
    mode = os.stat(name).st_mode  # FileNotFoundError names it
    if stat.S_ISREG(mode):
        return Path(path)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a folder, not a file (give the run, qrels or topics file inside it)", name)
    with open(name, "rb") as stream:  # a pipe, a FIFO, a character device: read once, now
        return _spool(name, stream)


def display_name(path: str | Path) -> str:
    """How an input is named in messages and tables: ``stdin`` for ``-``, else as given."""
    return "stdin" if str(path) == STDIN else str(path)


def _spool(name: str, stream) -> Path:
    global _spool_dir
    if _spool_dir is None:
        _spool_dir = Path(tempfile.mkdtemp(prefix=f"irglow-input-{os.getpid()}-"))
        atexit.register(remove_spooled)
    target = _spool_dir / f"{len(_spooled)}.input"
    with open(target, "wb") as f:
        shutil.copyfileobj(stream, f, 1 << 20)
    _spooled[name] = target
    return target


def remove_spooled() -> None:
    """Remove this process's spooled inputs (a forked worker leaves its parent's alone)."""
    global _spool_dir
    if _spool_dir is not None and _spool_dir.name.startswith(f"irglow-input-{os.getpid()}-"):
        shutil.rmtree(_spool_dir, ignore_errors=True)
        _spool_dir = None
        _spooled.clear()
