"""What the pipeline's pictures cost as the query set grows: the per-query difference plot and the training curves.

    python bench/plots.py --queries 50,1000,6980 --runs 16 --repeat 3

The per-query plot draws, for every run but the baseline, each query's difference to the baseline; MS MARCO
document's dev set has 6,980 queries and ``configs/msmarco.toml`` writes 16 runs, so that plot is drawn with 15
panels of 6,980 values for each evaluated split.  The values are drawn at random (the cost of a picture does not
depend on them).  Printed: a markdown table of the median seconds per plot at each size, and the ratio of the
largest size's time to the smallest's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from irglow.defaults import SEED
from irglow.eval.plots import plot_per_query, plot_training_curves


def comparison(n_queries: int, n_runs: int, seed: int = SEED) -> SimpleNamespace:
    """What ``plot_per_query`` reads of a :class:`~irglow.eval.compare.Comparison`."""
    rng = random.Random(seed)
    runs = ["bm25"] + [f"run-{i}" for i in range(n_runs - 1)]
    queries = [f"q{i}" for i in range(n_queries)]
    per_query = {r: {"nDCG@10": {q: rng.random() for q in queries}} for r in runs}
    means = pd.DataFrame({"nDCG@10": [0.5] * len(runs)}, index=runs)
    return SimpleNamespace(baseline="bm25", values_per_query=per_query, means=means)


def seconds(draw, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        draw()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="50,1000,6980", help="query counts, comma-separated")
    parser.add_argument("--runs", type=int, default=16, help="runs compared (one is the baseline)")
    parser.add_argument("--models", type=int, default=5, help="trained models in the training curves")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.queries.split(",")]
    curves = {f"model-{m}": [{"step": s, "loss": 1 / (s + 1), "val_ndcg@10": 0.3 + s / 100} for s in range(20)]
              for m in range(args.models)}
    with tempfile.TemporaryDirectory() as tmp:
        plot_training_curves(curves, Path(tmp) / "warm-up.png")  # matplotlib's first figure loads its fonts
        rows = []
        for n in sizes:
            cmp = comparison(n, args.runs)
            per_query = seconds(lambda: plot_per_query(cmp, "nDCG@10", Path(tmp) / "per-query.png"), args.repeat)
            rows.append((n, per_query))
        curve_time = seconds(lambda: plot_training_curves(curves, Path(tmp) / "curves.png"), args.repeat)
    print(f"| queries | per-query plot, {args.runs - 1} panels (s) |\n|---:|---:|")
    for n, t in rows:
        print(f"| {n:,} | {t:.2f} |")
    print(f"\ntraining curves, {args.models} models: {curve_time:.2f} s")
    if len(rows) > 1:
        print(f"per-query plot, {rows[-1][0]:,} queries against {rows[0][0]:,}: {rows[-1][1] / rows[0][1]:.1f}x the time")


if __name__ == "__main__":
    main()
