"""Coordinate ascent: the one search both field-weight tuning and many-run fusion use."""

from __future__ import annotations

from typing import Callable, Iterable


def coordinate_ascent(start, moves: Iterable[Callable], score: Callable, passes: int, min_gain: float):
    """From ``start``, try each move in turn (a move maps the current best point to a trial point, or ``None``
    to skip) and keep a trial only where ``score`` rises by more than ``min_gain``; stop after ``passes`` or a
    pass that changes nothing.  Returns (best point, its score, every (point, score) tried)."""
    moves = list(moves)
    best_point, best = start, score(start)
    curve = [(start, best)]
    for _ in range(passes):
        improved = False
        for move in moves:
            trial = move(best_point)
            if trial is None:
                continue
            s = score(trial)
            curve.append((trial, s))
            if s > best + min_gain:
                best_point, best, improved = trial, s, True
        if not improved:
            break
    return best_point, best, curve
