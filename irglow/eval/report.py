"""Write a comparison the ways a person reads it: markdown report, CSV, LaTeX and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from irglow.eval.compare import Comparison
from irglow.eval.plots import plot_comparison, plot_per_query, plot_training_curves
from irglow.utils.atomic import atomic_write_text


def write_report(out: str | Path, cmp: Comparison, report: str, title: str,
                 histories: Mapping[str, Sequence[Mapping]] | None = None) -> None:
    """Print ``report`` and write results.md / .csv / .tex / .png into ``out``, with per-query.png
    (each run's per-query difference to the baseline) and, given the trained models' ``histories``
    (name → trainer history), training-curves.png."""
    out = Path(out)
    print(report)
    atomic_write_text(out / "results.md", report + "\n")
    atomic_write_text(out / "results.csv", cmp.to_csv())
    atomic_write_text(out / "results.tex", cmp.to_latex())
    plot_comparison(cmp, out / "results.png", title=title)
    plot_per_query(cmp, str(cmp.means.columns[0]), out / "per-query.png")
    if histories:
        plot_training_curves(histories, out / "training-curves.png", title=f"training curves: {title}")
