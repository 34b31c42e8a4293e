"""Progress bars that suit where they are written: live on a terminal; in a redirected log (``make run >
run.log``, CI) a plain line when a bar starts, every 30 seconds and when it ends — never the carriage-return
frames that turn a log file into one unreadable line.  Every progress bar of irglow comes from here."""

from __future__ import annotations

import sys
from typing import Any

if "ipykernel" in sys.modules:  # a notebook draws its own widget (tqdm.auto's choice, without importing asyncio
    from tqdm.auto import tqdm as _tqdm  # and the notebook checks in every command-line start: 50 ms)
else:
    from tqdm.std import tqdm as _tqdm

LOG_INTERVAL_S = 30.0


class _Lines:
    """A stream that receives tqdm's frames and writes each as one line (blank clears dropped)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        for part in text.replace("\r", "\n").split("\n"):
            if part.strip():
                self.stream.write(part.rstrip() + "\n")

    def flush(self) -> None:
        self.stream.flush()


def _live(stream) -> bool:
    """Whether ``stream`` redraws a line in place (a terminal), or a notebook draws its own widget."""
    if any(c.__module__.startswith("tqdm.notebook") for c in _tqdm.__mro__):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def tqdm(*args: Any, **kwargs: Any):
    """``tqdm.auto.tqdm`` with the same arguments; on a stream that is not a terminal, lines instead of frames."""
    stream = kwargs.get("file") or sys.stderr
    if not kwargs.get("disable") and not _live(stream):
        kwargs["file"] = _Lines(stream)
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
        kwargs.setdefault("maxinterval", LOG_INTERVAL_S * 2)
    return _tqdm(*args, **kwargs)
