"""Plots a person would rather look at than a table: grouped bars of each measure per run, one
measure across collections, per-query differences against the baseline, training curves."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from irglow.eval.compare import Comparison
from irglow.utils.atomic import atomic_file


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=120)
    _pyplot().close(fig)
    return path


def grouped_bars(values: pd.DataFrame, marks: pd.DataFrame, path: str | Path, title: str) -> Path:
    """One bar per row (a run) in each column's group (a measure or a collection); ``marks`` (▲/▼ or
    "") is written over its bar.  NaN cells (a run missing from a group) draw no bar."""
    import numpy as np

    plt = _pyplot()
    rows, groups = list(values.index), list(values.columns)
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(3.0 + 1.4 * len(groups) + 0.2 * len(rows), 4))
    x = np.arange(len(groups))
    for i, row in enumerate(rows):
        heights = values.loc[row].to_numpy(dtype=float)
        bars = ax.bar(x + i * width - 0.4 + width / 2, np.nan_to_num(heights), width, label=row)
        for j, g in enumerate(groups):
            mark = marks.loc[row, g] if row in marks.index and g in marks.columns else ""
            if mark and heights[j] == heights[j]:
                ax.annotate(mark, (bars[j].get_x() + width / 2, bars[j].get_height()), ha="center", va="bottom",
                            fontsize=8)
    ax.set_xticks(x, groups, rotation=20 if len(groups) > 5 else 0)
    top = float(np.nanmax(values.to_numpy(dtype=float))) if values.size else 1.0
    ax.set_ylim(0, min(1.05, top * 1.15 + 0.02))
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return _save(fig, path)


def plot_comparison(cmp: Comparison, path: str | Path, title: str = "") -> Path:
    marks = cmp.pvalues.copy().astype(object)
    for run in cmp.means.index:
        for m in cmp.means.columns:
            marks.loc[run, m] = ("▲" if cmp.deltas.loc[run, m] > 0 else "▼") if cmp.significant(run, m) else ""
    return grouped_bars(cmp.means, marks, path,
                        title or f"{cmp.n_queries} queries" + (f", ▲/▼ vs {cmp.baseline}" if cmp.baseline else ""))


def plot_per_query(cmp: Comparison, measure: str, path: str | Path, title: str = "") -> Path | None:
    """For each run but the baseline, its per-query difference to the baseline, sorted: how many
    queries a system helps or hurts, and by how much, which a mean hides.  ``None`` without a baseline."""
    import numpy as np

    if cmp.baseline is None or not cmp.values_per_query or len(cmp.means) < 2:
        return None
    plt = _pyplot()
    others = [r for r in cmp.means.index if r != cmp.baseline]
    cols = min(3, len(others))
    rows = -(-len(others) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows), squeeze=False, sharey=True)
    base = cmp.values_per_query[cmp.baseline][measure]
    for ax, run in zip(axes.flat, others):
        mine = cmp.values_per_query[run][measure]
        diff = np.sort(np.array([mine.get(q, 0.0) - v for q, v in base.items()]))[::-1]
        # two filled steps, not a bar per query: MS MARCO's 6,980 dev queries drew in ~100 s a split as bars
        edges, steps = np.arange(len(diff) + 1), np.append(diff, diff[-1:])
        ax.fill_between(edges, np.where(steps > 0, steps, 0.0), step="post", color="tab:green", linewidth=0)
        ax.fill_between(edges, np.where(steps < 0, steps, 0.0), step="post", color="tab:red", linewidth=0)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{run}: +{int((diff > 0).sum())} / −{int((diff < 0).sum())} / ={int((diff == 0).sum())}",
                     fontsize=9)
        ax.set_xticks([])
    for ax in list(axes.flat)[len(others):]:
        ax.axis("off")
    fig.suptitle(title or f"{measure} per query, minus {cmp.baseline} (queries sorted by difference)", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_training_curves(curves: Mapping[str, Sequence[Mapping]], path: str | Path, title: str = "") -> Path | None:
    """One panel per trained model: training loss (left axis) and every validation measure (right
    axis) against the step.  ``curves``: model → the trainer's history (dicts with ``step``, ``loss``
    and ``val_*`` / ``train_*`` entries).  ``None`` when no model has a history."""
    curves = {k: [h for h in v if isinstance(h, Mapping) and "step" in h] for k, v in curves.items()}
    curves = {k: v for k, v in curves.items() if v}
    if not curves:
        return None
    plt = _pyplot()
    cols = min(3, len(curves))
    rows = -(-len(curves) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows), squeeze=False)
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    for ax, (name, hist) in zip(axes.flat, curves.items()):
        steps = [h["step"] for h in hist]
        losses = [h.get("loss") for h in hist]
        if any(v is not None and v == v for v in losses):
            ax.plot(steps, [float("nan") if v is None else v for v in losses], color="tab:grey", label="loss")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        twin = ax.twinx()
        keys = sorted({k for h in hist for k in h if k.startswith(("val_", "train_")) and k != "train_seconds"
                       and isinstance(h.get(k), (int, float))})
        for k in keys:
            twin.plot(steps, [h.get(k, float("nan")) if h.get(k) is not None else float("nan") for h in hist],
                      marker=".", label=k)
        twin.set_ylabel("measure")
        handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
        labels = ax.get_legend_handles_labels()[1] + twin.get_legend_handles_labels()[1]
        twin.legend(handles, labels, fontsize=7, loc="lower right")
        ax.set_title(name, fontsize=10)
    fig.suptitle(title or "training curves", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_pairs(cmp: Comparison, path: str | Path, title: str = "") -> Path | None:
    """Heatmap of the all-pairs (Tukey HSD) adjusted p-values; pairs below alpha in bold, runs labelled
    with their groups.  ``None`` when the comparison has no pairs."""
    import numpy as np

    if cmp.pair_p is None:
        return None
    plt = _pyplot()
    names = list(cmp.pair_p.index)
    values = cmp.pair_p.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(2.0 + 0.75 * len(names), 1.6 + 0.6 * len(names)))
    image = ax.imshow(np.nan_to_num(values, nan=1.0), cmap="viridis_r", vmin=0, vmax=1)
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j:
                p = values[i, j]
                ax.text(j, i, f"{p:.3f}", ha="center", va="center", fontsize=7,
                        color="black" if p < 0.5 else "white", fontweight="bold" if p < cmp.alpha else "normal")
    labels = [f"{n} ({(cmp.groups or {}).get(n, '')})" for n in names]
    ax.set_xticks(range(len(names)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), labels, fontsize=8)
    fig.colorbar(image, ax=ax, label="adjusted p")
    ax.set_title(title or f"{cmp.means.columns[0]}: randomized Tukey HSD (bold: p < {cmp.alpha})", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def plot_forest(pooled: Mapping[str, object], per_collection: Mapping[str, Mapping[str, tuple[float, float, float]]],
                path: str | Path, measure: str, baseline: str) -> Path:
    """Forest plot: per system, each collection's Δ to the baseline with its 95% CI, and the pooled
    random-effects estimate (diamond) with its CI and I²."""
    plt = _pyplot()
    systems = list(pooled)
    rows = sum(len(per_collection[s]) + 2 for s in systems)
    fig, ax = plt.subplots(figsize=(7, 1.0 + 0.28 * rows))
    y, ticks, labels = 0, [], []
    for s in systems:
        for coll, (d, lo, hi) in per_collection[s].items():
            ax.errorbar([d], [y], xerr=[[d - lo], [hi - d]], fmt="s", color="tab:blue", markersize=4, capsize=2)
            ticks.append(y), labels.append(f"{s} · {coll}")
            y -= 1
        p = pooled[s]
        ax.fill([p.ci_low, p.effect, p.ci_high, p.effect], [y, y + 0.3, y, y - 0.3], color="black")
        ticks.append(y), labels.append(f"{s} · pooled (I² {p.i2:.0%})")
        y -= 2
    ax.axvline(0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xlabel(f"Δ {measure} vs {baseline} (95% CI)")
    ax.set_title(f"zero-shot effects against {baseline}: per collection and pooled (DerSimonian–Laird)", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)
