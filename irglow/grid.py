"""Grids of settings over one pipeline: ``irglow run --config C --grid KEY=V1,V2 … [--select-on validation]``.

A grid point is one combination of values (``glow.model.weight_alpha=0.5``) or of named settings
(``preset=paper-amse-only``: a ``[presets.<name>]`` table of dotted keys in the configuration, so an
ablation is one name, not a list of overrides).  Points share the index, the statistics and every model
whose inputs they share (training folders are keyed on their inputs).

* ``--select-on validation``: each point trains the stages its keys name, the point whose models score
  best on the validation queries carved from the training split (mean validation nDCG@10 over the
  point's models) is kept, and the whole pipeline runs once with it — test queries are never seen by
  the choice.  ``grid.md`` / ``grid.csv`` list every point; the report and manifest carry the choice.
* without it, every point is a full pipeline run in ``out/<point>/`` (a sensitivity study on the test
  split, reported as such), summarised in ``grid.md`` / ``grid.csv``: one row per point, one column per run.
"""

from __future__ import annotations

import copy
import itertools
import logging
import re
from pathlib import Path
from typing import Any

from irglow import settings
from irglow.config import apply_override, flag
from irglow.utils.atomic import atomic_write_text
from irglow.utils.distributed import is_main
from irglow.eval.plots import plot_training_curves
from irglow.models.checkpoints import read_training, training_summary
from irglow.pipeline import run_pipeline
from irglow.plan import bind_plan
from irglow.preparation import prepare
from irglow.stages import model_stages

log = logging.getLogger(__name__)

SELECT_ON = ("validation",)


def split_values(text: str) -> list[str]:
    """``"0.25,0.5,1"`` → three values; commas inside brackets or quotes stay (``["bert","glow"],["glow"]``)."""
    values, depth, quote, current = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            values.append(current.strip())
            current = ""
            continue
        current += ch
    values.append(current.strip())
    return [v for v in values if v]


def merged_axes(grid: list[str]) -> list[str]:
    """``--grid k1=1.2 --grid k1=2`` is one axis ``k1=1.2,2`` (not one point setting k1 twice): each key once,
    in the order it first appears, its values in the order given (a value given twice once)."""
    values: dict[str, list[str]] = {}
    for item in grid:
        key, sep, given = item.partition("=")
        if not sep or not key.strip() or not split_values(given):
            raise ValueError(f"--grid {item!r} must look like section.key=value1,value2")
        axis = values.setdefault(key.strip(), [])
        axis += [v for v in split_values(given) if v not in axis]
    return [f"{key}={','.join(vs)}" for key, vs in values.items()]


def grid_points(grid: list[str], presets: dict[str, dict] | None = None) -> list[list[str]]:
    """Each point as the list of ``key=value`` overrides it applies (presets expanded), in grid order."""
    axes = []
    for item in merged_axes(grid):
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not split_values(values):
            raise ValueError(f"--grid {item!r} must look like section.key=value1,value2")
        if key == "preset":
            known = presets or {}
            axis = []
            for name in _preset_names(values, known):
                if name not in known:
                    raise ValueError(f"--grid preset={name}: no [presets.{name}] in the configuration"
                                     + (f"; its presets: {', '.join(known)}" if known else ""))
                axis.append((f"preset={name}", [f"{k}={_literal(v)}" for k, v in known[name].items()]))
            axes.append(axis)
        else:
            axes.append([(f"{key}={v}", [f"{key}={v}"]) for v in split_values(values)])
    return [[o for _, overrides in combo for o in overrides] for combo in itertools.product(*axes)] if axes else []


def point_labels(grid: list[str], presets: dict[str, dict] | None = None) -> list[str]:
    """A short, file-safe name per point, in the order of :func:`grid_points`."""
    axes = []
    for item in merged_axes(grid):
        key, _, values = item.partition("=")
        short = key.strip().split(".")[-1]
        if key.strip() == "preset":
            axes.append(_preset_names(values, presets or {}))
        else:
            axes.append([f"{short}={v}" for v in split_values(values)])
    return [_safe(",".join(combo)) for combo in itertools.product(*axes)]


def _preset_names(values: str, known: dict[str, dict]) -> list[str]:
    """``preset=a,b`` → ``[a, b]``; ``preset=all`` → every preset of the configuration, in its order."""
    names = split_values(values)
    return list(known) if names == ["all"] and "all" not in known else names


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=,+-]+", "_", text)[:120]


def _literal(value: Any) -> str:
    """A preset's value written back as the literal ``--set`` parses (Python literals, true/false)."""
    return repr(value)


def _with(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    point = copy.deepcopy(config)
    point.pop("presets", None)
    for item in overrides:
        apply_override(point, item)
    return point


def trained_sections(points: list[list[str]], config: dict[str, Any]) -> list[str]:
    """The enabled model stages the grid's keys belong to: what each point trains to be scored on validation
    (every point the same stages, so a preset that changes nothing — the default — is scored too)."""
    names = [s.name for s in model_stages()]
    named = {o.partition("=")[0].split(".")[0] for overrides in points for o in overrides}
    other = sorted(named - set(names))
    if other:  # the points share one index, statistics and field weights: only model settings may differ
        raise ValueError(f"--select-on validation chooses model settings ({', '.join(names)}); {other} would change "
                         "what every point shares (collection, index, lexical runs) — run such a grid without "
                         "--select-on, or set them with --set")
    sections = [s for s in names if s in named and flag(config, s)]
    if not sections:
        raise ValueError(f"--select-on validation scores a point by the models it trains, but {sorted(named)} "
                         f"name no enabled model stage ({', '.join(names)}); lexical settings have no "
                         "validation queries — choose them with a stage, or run the grid without --select-on")
    return sections


def run_grid(config: dict[str, Any], grid: list[str], select_on: str | None = None) -> Path:
    """Run the grid (see the module docstring); returns the output folder."""
    presets = config.get("presets", {})
    points, labels = grid_points(grid, presets), point_labels(grid, presets)
    if not points:
        raise ValueError("--grid needs at least one key=values")
    if select_on is not None and select_on not in SELECT_ON:
        raise ValueError(f"--select-on {select_on!r}: known: {', '.join(SELECT_ON)}")
    base = _with(config, [])
    out = Path(settings.value(base, "output", "dir"))
    plans = []  # each point bound once, before any work
    for label, overrides in zip(labels, points):
        point = _with(config, overrides)
        if select_on is None:  # each point in its own folder
            point.setdefault("output", {})["dir"] = str(out / label)
        plans.append(bind_plan(point))
    sections = trained_sections(points, base) if select_on is not None else []
    if hasattr(config, "seal"):  # every point bound: nothing below reads the configuration (irglow.config.SealedConfig)
        config.seal()
    if select_on is None:
        rows = []
        for label, overrides, plan in zip(labels, points, plans):
            log.info("grid point %s: %s", label, overrides)
            rows.append((label, overrides, run_pipeline(plan).comparison))
        if is_main():  # under torchrun the comparisons and the table are rank 0's
            _sensitivity_table(out, rows)
        return out

    # what every point shares (index, statistics, field weights, the training folder): only model settings differ
    prepared = prepare(plans[0].setup)
    fields = list(prepared.source.index.fields)
    scored, curves = [], {}
    for label, overrides, plan in zip(labels, points, plans):
        models = {}
        point = plan.with_fields(fields)
        for trainer, bound in point.stages:
            if trainer.name in sections:  # the experiment's BM25 for the pools, as the pipeline's unit trains
                models.update(trainer.train(bound, prepared.source, prepared.train_root,
                                            bm25=point.lexical.config("bm25", prepared.field_weights),
                                            nodes=[point.graph[t] for t in point.written[trainer.name]]))
        for name, model_dir in models.items():
            curves[f"{label}: {name}" if len(models) > 1 else label] = read_training(model_dir).get(
                "state", {}).get("history", [])
        summaries = {name: training_summary(d) for name, d in models.items()}
        values = [s["validation"] for s in summaries.values() if s["validation"] is not None]
        mean = sum(values) / len(values) if values else float("nan")
        seconds = sum(s["seconds"] or 0.0 for s in summaries.values())
        log.info("grid point %s: validation nDCG@10 %.4f (%s)", label, mean,
                 ", ".join(f"{n} {s['validation']:.4f}" for n, s in summaries.items() if s["validation"] is not None))
        scored.append({"point": label, "overrides": overrides, "validation": mean, "seconds": seconds,
                       "models": {n: s["validation"] for n, s in summaries.items()},
                       "start": {n: s["start"] for n, s in summaries.items()}})
    valid = [p for p in scored if p["validation"] == p["validation"]]
    if not valid:
        raise RuntimeError("no grid point has a validation score (too few training queries to hold any out)")
    chosen = max(valid, key=lambda p: p["validation"])  # the first of equal scores: grid order
    table = _selection_table(scored, chosen)
    if is_main():  # every rank made the same choice; rank 0 writes it down
        atomic_write_text(out / "grid.md", table + "\n")
        atomic_write_text(out / "grid.csv", "point,validation_ndcg@10,training_s,chosen\n" + "".join(
            f"{p['point']},{p['validation']:.6f},{p['seconds']:.1f},{int(p is chosen)}\n" for p in scored))
        plot_training_curves(curves, out / "grid-curves.png")
    log.info("chosen on validation: %s", chosen["point"])
    final = plans[scored.index(chosen)].recording("grid", {"select_on": select_on, "chosen": chosen["point"],
                                                           "points": scored})
    return run_pipeline(final, prepared, notes=table).out


def _selection_table(scored: list[dict], chosen: dict) -> str:
    """One row per point: the mean the choice used, then each model's validation nDCG@10 (start → kept)."""
    names = list(dict.fromkeys(n for p in scored for n in p["models"]))

    def cell(p, n):
        kept, start = p["models"].get(n), p["start"].get(n)
        if kept is None:
            return "–"
        return f"{start:.4f} → {kept:.4f}" if start is not None else f"{kept:.4f}"

    lines = ["Settings chosen on validation (the queries each model's training held out; test never seen): "
             f"**{chosen['point']}**.", "",
             "| grid point | mean validation nDCG@10 | " + " | ".join(f"{n} (step 0 → kept)" for n in names)
             + " | training s |", "|:--|--:|" + "--:|" * len(names) + "--:|"]
    for p in scored:
        mark = "**" if p is chosen else ""
        cells = " | ".join(cell(p, n) for n in names)
        lines.append(f"| {mark}{p['point']}{mark} | {mark}{p['validation']:.4f}{mark} | {cells} | {p['seconds']:.0f} |")
    return "\n".join(lines)


def _sensitivity_table(out: Path, rows: list[tuple[str, list[str], Any]]) -> None:
    """One row per point, one column per run: the first measure's mean on the test split."""
    import pandas as pd

    if not rows:
        return
    measure = str(rows[0][2].means.columns[0])
    frame = pd.DataFrame({label: cmp.means[measure] for label, _, cmp in rows}).T
    atomic_write_text(out / "grid.csv", frame.to_csv())
    atomic_write_text(out / "grid.md", f"Every grid point on the test split ({measure}; a sensitivity study, not a "
                                       f"selection):\n\n" + frame.to_markdown(floatfmt=".4f") + "\n")
    print(f"\n## grid ({measure})\n")
    print(frame.to_markdown(floatfmt=".4f"))
