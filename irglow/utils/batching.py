"""Length bucketing: batches of inputs of similar length, so a batch pads to its own longest input, not to the
longest of a random mix (what sentence-transformers does when it encodes).

Inputs are sorted by length only inside a bounded window of consecutive inputs (``window`` batches), so the
reordering holds a window, not the corpus, and progress stays smooth; callers put each result back at its
input's position, so the order a caller sees never changes.
"""

from __future__ import annotations

from typing import Sequence

WINDOW_BATCHES = 50  # batches per sorting window


def length_batches(lengths: Sequence[int], size: int, window: int = WINDOW_BATCHES) -> list[list[int]]:
    """Batches of input positions: each window of ``window · size`` consecutive inputs sorted by length, longest
    first (a batch too large for memory fails at once, not at the end), cut into batches of ``size``."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1, not {size}")
    span = max(1, window) * size
    out: list[list[int]] = []
    for start in range(0, len(lengths), span):
        part = sorted(range(start, min(start + span, len(lengths))), key=lambda i: (-lengths[i], i))
        out.extend(part[i:i + size] for i in range(0, len(part), size))
    return out
