"""Plots a person would rather look at than a table: grouped bars of each measure per run."""

from __future__ import annotations

from pathlib import Path

from irglow.eval.compare import Comparison
from irglow.utils.atomic import atomic_file


def plot_comparison(cmp: Comparison, path: str | Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    means = cmp.means
    runs, measures = list(means.index), list(means.columns)
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(3.0 + 1.4 * len(measures) + 0.2 * len(runs), 4))
    x = np.arange(len(measures))
    for i, run in enumerate(runs):
        bars = ax.bar(x + i * width - 0.4 + width / 2, means.loc[run].values, width, label=run)
        for j, m in enumerate(measures):
            p = cmp.pvalues.loc[run, m]
            if p == p and p < cmp.alpha:
                ax.annotate("▲" if cmp.deltas.loc[run, m] > 0 else "▼", (bars[j].get_x() + width / 2, bars[j].get_height()),
                            ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, measures)
    ax.set_ylim(0, min(1.05, float(means.values.max()) * 1.15 + 0.02))
    ax.set_title(title or f"{cmp.n_queries} queries" + (f", ▲/▼ vs {cmp.baseline}" if cmp.baseline else ""))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    path = Path(path)
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=120)
    plt.close(fig)
    return path
