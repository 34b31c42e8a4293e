"""Write a comparison the ways a person reads it: markdown report, CSV, LaTeX and a plot."""

from __future__ import annotations

from pathlib import Path

from irglow.eval.compare import Comparison
from irglow.eval.plots import plot_comparison
from irglow.utils.atomic import atomic_write_text


def write_report(out: str | Path, cmp: Comparison, report: str, title: str) -> None:
    """Print ``report`` and write results.md / results.csv / results.tex / results.png into ``out``."""
    out = Path(out)
    print(report)
    atomic_write_text(out / "results.md", report + "\n")
    atomic_write_text(out / "results.csv", cmp.to_csv())
    atomic_write_text(out / "results.tex", cmp.to_latex())
    plot_comparison(cmp, out / "results.png", title=title)
