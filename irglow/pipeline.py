"""The end-to-end job behind ``make run``: collection → index → statistics → runs → comparison table.

Driven by one configuration file (``configs/demo.toml``), with ``--set`` overrides; writes every
run as a TREC file, the qrels, a markdown/CSV/LaTeX table, a plot and a manifest into one folder.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from irglow.config import write_manifest
from irglow.data.trec import write_qrels
from irglow.eval.compare import compare
from irglow.eval.plots import plot_comparison
from irglow.plan import Plan, bind_plan
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import queries_digest

from irglow.stage_cache import STAGE_FORMAT, StageCache, _irglow_version
from irglow.preparation import Prepared, prepare
from irglow.outputs import diagnostic_plots, settings_note, stage_report, write_results_page

log = logging.getLogger(__name__)


@dataclasses.dataclass
class PipelineResult:
    """What a pipeline run made: its folder and each test split's comparison (the object ``irglow compare``
    renders: ``.table()``, ``.per_query(m)``, ``.pairs()``)."""

    out: Path
    comparisons: dict[str, Any]

    @property
    def comparison(self):
        """The comparison of the only (or first) test split."""
        return next(iter(self.comparisons.values()))


def run_pipeline(config: dict[str, Any] | Plan, prepared: Prepared | None = None, notes: str = "") -> PipelineResult:
    """Index once, tune once, train once; then every test split (``test_split`` may be a list, e.g.
    MS MARCO dev, TREC DL 2019 and 2020) gets its runs, table, plot and manifest — in ``out`` for one
    split, in ``out/<split>/`` for several.  Trained models live in ``out`` and are shared.
    ``prepared``: what :func:`prepare` already did (a grid search: ``config`` is then one point's plan, given the
    prepared training index's fields); ``notes``: markdown for the reports."""
    p = prepared or prepare(config)
    if prepared is None:
        plan = p.plan
    else:
        plan = (config if isinstance(config, Plan) else bind_plan(config)).with_fields(list(p.source.index.fields))
    comparisons = {}
    for split in p.splits:
        comparisons[split] = evaluate_split(plan, p, split, p.out / split if len(p.splits) > 1 else p.out,
                                            notes=notes)
    from irglow.utils.distributed import barrier

    barrier()  # under torchrun: no rank leaves before rank 0 has written the tables
    return PipelineResult(p.out, comparisons)


def evaluate_split(plan: Plan, p: Prepared, test_split: str, out: Path, notes: str = ""):
    """One test split: every enabled stage in registry order (each unit cached by content; a fusion entry as soon
    as its runs exist), the comparison table, plots and manifest.  Returns the comparison."""
    from irglow.hybrid import FusionStage
    from irglow.runs.wanted import TRAINING, TUNING
    from irglow.stage import Context

    out.mkdir(parents=True, exist_ok=True)
    timings = dict(p.timings)
    collection, index, stats = p.collection, p.index, p.stats
    stages = [s for s, _ in plan.stages]
    fusion = next((s for s in stages if isinstance(s, FusionStage)), None)
    tuning_runs = plan.tuning_runs
    if fusion is not None and p.source.is_other_than(collection) and dict(plan.stages)[fusion].zero_shot == "rrf":
        tuning_runs = frozenset()  # zero-shot reciprocal-rank fusion tunes nothing: no held-out runs to write
    ctx = Context(collection, index, stats, p.source, out, p.train_root, p.lexical, p.field_weights, test_split,
                  seed=plan.seed, training_runs=plan.training_runs, tuning_runs=tuning_runs)
    # every unit keys on the content it reads: the index (its name carries the corpus digest and the analysis
    # settings) and the test queries; model stages also on what they train on and the models they load
    cache = StageCache(out, {"format": STAGE_FORMAT, "irglow": _irglow_version(), "index": Path(index.path).name,
                             "test_split": test_split, "test_queries": queries_digest(ctx.test_queries)})
    fused: set[str] = set()
    # each stage's work gets the shared context with its own settings object (the runs dict is shared)
    contexts = {s: dataclasses.replace(ctx, settings=bound) for s, bound in plan.stages}
    waiting: list[tuple[Any, Any]] = []  # units whose ``needs`` do not exist yet (a re-ranking of a later fusion)

    def run(stage, unit) -> None:
        t = time.perf_counter()
        ctx.runs.update(cache.run_unit(stage, unit, contexts[stage]))
        timings[f"{stage.name}_s"] = timings.get(f"{stage.name}_s", 0.0) + time.perf_counter() - t

    def fuse(final: bool = False) -> None:  # every hybrid whose runs exist now
        if fusion is not None:
            for unit in fusion.ready(contexts[fusion], fused, final=final):
                run(fusion, unit)

    def release() -> None:  # the units held back whose runs exist now, and the hybrids they complete, until none
        while ready := [(s, u) for s, u in waiting if all(t in ctx.runs for t in u.needs)]:
            for item in ready:
                waiting.remove(item)
                run(*item)
            fuse()

    for stage in stages:
        if stage is fusion:
            continue
        for unit in stage.units(contexts[stage]):
            if all(t in ctx.runs for t in unit.needs):
                run(stage, unit)
            else:
                waiting.append((stage, unit))
        fuse()
        release()
    fuse(final=True)
    release()
    if waiting:  # the plan checks every run's parts exist; what is left waits on itself
        raise RuntimeError("runs that wait on each other (a re-ranking of a fusion that contains it?): "
                           + "; ".join(f"{u.name} needs {[t for t in u.needs if t not in ctx.runs]}" for _, u in waiting))
    from irglow.utils.distributed import is_main

    if not is_main():  # under torchrun the tables, plots, page and manifest are rank 0's
        return None
    # the judgments are read only now, once every run is written: no stage can have read them (zero-shot, a
    # fusion's weights come from the training collection)
    test_qrels = collection.qrels(test_split)
    qrels_path = write_qrels(test_qrels, Path("qrels") / f"{collection.name}.{test_split}.qrels")
    tags = [t for t in ctx.runs if not t.startswith((TUNING, TRAINING))]  # runs of training queries: not compared
    ev = plan.eval
    runs = {t: ctx.runs[t] for t in (tags if ev.runs is None else dict.fromkeys([ev.baseline, *ev.runs]))}
    measures = ev.measures if isinstance(ev.measures, str) else list(ev.measures)
    cmp = compare(runs, test_qrels, measures, baseline=ev.baseline, **ev.comparison)
    training = stage_report(out, [s.name for s in stages if s.trains], [t for t in ctx.runs if t in fused])
    atomic_write_text(out / "results.md", cmp.to_markdown() + "\n" + settings_note(plan, p, tags)
                      + (f"\n{training}\n" if training else "") + (f"\n{notes}\n" if notes else ""))
    atomic_write_text(out / "results.csv", cmp.to_csv())
    atomic_write_text(out / "results.tex", cmp.to_latex())
    plot_comparison(cmp, out / "results.png", title=f"{collection.name} / {test_split}")
    if cmp.pair_p is not None:
        from irglow.eval.plots import plot_pairs

        plot_pairs(cmp, out / "pairs.png")
    plots = diagnostic_plots(cmp, out, p.train_root, [s.name for s in stages if s.trains])
    # the page's notes: each hybrid's weights (and where they were tuned), each model's throughput
    if plan.report_page:
        write_results_page(out, cmp, runs, test_qrels, ctx, f"{collection.name} / {test_split}", plan.report_clusters,
                           notes=[line[2:] for line in training.splitlines() if line.startswith("- ")])
    else:  # a page of an earlier run would no longer show this one
        (out / "report.html").unlink(missing_ok=True)
    write_manifest(out, plan.manifest_config(test_split), seed=plan.seed, index=str(index.path), qrels=str(qrels_path),
                   settings={s.name: s.resolved(bound) for s, bound in plan.stages}, field_weights=p.field_weights,
                   timings={k: round(v, 3) for k, v in timings.items()},
                   statistics={"N": stats.N, "avgdl": stats.meta["avgdl"]}, stages=cache.report, plots=plots)
    print(f"\n## {collection.name} — {test_split}\n")
    print(cmp.to_markdown())
    print(f"runs, tables, plot and manifest in {out}/")
    return cmp
