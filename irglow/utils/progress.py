"""Progress bars that suit where they are written: live on a terminal; in a redirected log (``make run >
run.log``, CI) a plain line when a bar starts, every 30 seconds and when it ends — never the carriage-return
frames that turn a log file into one unreadable line.  Every progress bar of irglow comes from here."""

from __future__ import annotations

import sys
from typing import Any

LOG_INTERVAL_S = 30.0


def _bar_class() -> type:
    """tqdm's bar, imported when a bar is first drawn (40 ms a short command that draws none does not pay)."""
    if "ipykernel" in sys.modules:  # a notebook draws its own widget (tqdm.auto's choice, without importing asyncio
        from tqdm.auto import tqdm as bar  # and the notebook checks in every command-line start: 50 ms)
    else:
        from tqdm.std import tqdm as bar
    return bar


class _Off:
    """A disabled bar (``disable=True``): it draws nothing, as tqdm's own does, and needs no tqdm.  It iterates what
    it wraps and counts, and takes the calls irglow makes on a bar."""

    def __init__(self, iterable=None, *args: Any, total: float | None = None, **kwargs: Any):
        self.iterable, self.total, self.n = iterable, total, 0
        self.disable = True

    def __iter__(self):
        return iter(self.iterable)

    def __len__(self) -> int:
        return len(self.iterable) if self.iterable is not None and hasattr(self.iterable, "__len__") else \
            int(self.total or 0)

    def __enter__(self) -> "_Off":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def update(self, n: float = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        pass

    def refresh(self, *args: Any, **kwargs: Any) -> None:
        pass


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
    if any(c.__module__.startswith("tqdm.notebook") for c in _bar_class().__mro__):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def tqdm(*args: Any, **kwargs: Any):
    """``tqdm.auto.tqdm`` with the same arguments; on a stream that is not a terminal, lines instead of frames."""
    if kwargs.get("disable") is True:
        return _Off(*args, **kwargs)
    stream = kwargs.get("file") or sys.stderr
    if not kwargs.get("disable") and not _live(stream):
        kwargs["file"] = _Lines(stream)
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
        kwargs.setdefault("maxinterval", LOG_INTERVAL_S * 2)
    return _bar_class()(*args, **kwargs)
