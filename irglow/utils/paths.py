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
