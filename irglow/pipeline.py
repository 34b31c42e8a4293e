"""The end-to-end job behind ``make run``: collection → index → statistics → runs → comparison table.

Driven by one configuration file (``configs/demo.toml``), with ``--set`` overrides; writes every
run as a TREC file, the qrels, a markdown/CSV/LaTeX table, a plot and a manifest into one folder.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from pathlib import Path
from typing import Any

from irglow.config import write_manifest
from irglow.data.trec import write_qrels
from irglow.eval.compare import compare
from irglow.eval.plots import plot_comparison
from irglow.plan import Plan, bind_plan
from irglow.utils.atomic import atomic_write_text, output_lock
from irglow.utils.digest import queries_digest

from irglow.stage_cache import STAGE_FORMAT, StageCache
from irglow.utils.plugins import irglow_version
from irglow.preparation import Prepared, check_output, prepare
from irglow.outputs import diagnostic_plots, settings_note, stage_report, write_results_page
from irglow.hybrid import FusionSettings
from irglow.rankers import Fusion
from irglow.runs.keys import QuerySet, RunKey
from irglow.stage import Context, Produced
from irglow.utils.distributed import agree, barrier, from_main, is_main

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
    plan = config if isinstance(config, Plan) else bind_plan(config)
    out = prepared.out if prepared is not None else check_output(plan.setup)
    with output_lock(out):  # one writer per folder, for the whole run
        p = prepared or prepare(plan.setup)  # the same whatever the rankers: it is given none of them
        plan = plan.with_fields(list(p.source.index.fields))
        comparisons = {}
        for split in p.splits:
            comparisons[split] = evaluate_split(plan, p, split, p.out / split if len(p.splits) > 1 else p.out,
                                                notes=notes)

    barrier()  # under torchrun: no rank leaves before rank 0 has written the tables
    return PipelineResult(p.out, comparisons)


def evaluate_split(plan: Plan, p: Prepared, test_split: str, out: Path, notes: str = ""):
    """One test split: the plan's graph of units run (each cached by content, each once the runs it reads
    exist), then the comparison table, plots and manifest.  Returns the comparison."""
    out.mkdir(parents=True, exist_ok=True)
    timings = dict(p.timings)
    ctx = split_context(plan, p, test_split, out)
    # every unit keys on the content it reads: the index (its name carries the corpus digest and the analysis
    # settings) and the test queries; model stages also on what they train on and the models they load
    cache = StageCache(out, {"format": STAGE_FORMAT, "irglow": irglow_version(), "index": Path(p.index.path).name,
                             "test_split": test_split, "test_queries": queries_digest(ctx.test_queries)})
    units, contexts = split_units(plan, ctx)
    # under torchrun: as many units on every rank, and each unit's key rank 0's (StageCache.entry), or nothing runs
    agree("units", len(units))
    for stage, unit in run_order(units, plan.graph):
        t = time.perf_counter()
        say(f"── {unit.name} …")
        ctx.runs.update(run_unit(cache, stage, unit, contexts[stage]))
        seconds = time.perf_counter() - t
        timings[f"{stage.name}_s"] = timings.get(f"{stage.name}_s", 0.0) + seconds
        say(f"── {unit.name}: {cache.report.get(unit.name, 'done')} ({seconds:.1f} s)")
    return write_outputs(plan, p, ctx, cache, timings, notes)


def split_units(plan: Plan, ctx: Context) -> tuple[list[tuple[Any, Any]], dict[Any, Context]]:
    """Every node's units of one split (:meth:`~irglow.stage.Stage.units`: a stage makes units for a node, given the
    shared context with its own settings object; the runs are shared), and each stage's context.  First each run
    another node reads, whose stage makes its runs of training queries on demand (:meth:`~irglow.stage.Stage.run_of`:
    a Lucene run searches any), is given them: that node asks for them."""
    contexts = {s: dataclasses.replace(ctx, settings=bound) for s, bound in plan.stages}
    inputs = plan.graph.inputs()
    for stage, _ in plan.stages:  # in the stages' order: a fusion searches its parts' runs where they search
        for tag in (t for t in plan.written[stage.name] if t in inputs):
            for queries in (QuerySet.HELD_OUT, QuerySet.TRAINING):
                make = stage.run_of(contexts[stage], tag, queries)
                if make is not None:
                    ctx.runs.add_maker(RunKey(tag, queries), make)
    writer = {t: s for s, _ in plan.stages for t in plan.written[s.name]}
    units = []
    for tag, node in plan.graph.items():  # the stages' order, each stage's runs in its order
        stage = writer[tag]
        node_ctx = contexts[stage]
        if isinstance(node, Fusion) and node.every:  # its parts are known once they exist: among these
            node_ctx = dataclasses.replace(node_ctx, among=_among(plan.graph, node))
        units += [(stage, u) for u in stage.units(node, node_ctx)]
    return units, contexts


def _among(graph, every) -> tuple:
    """What a fusion of every run may fuse: every node that is no fusion and is not made from it."""
    def made_from(node) -> bool:
        return any(p is every or made_from(p) for p in node.parts)

    return tuple(n for n in graph.values() if not isinstance(n, Fusion) and not made_from(n))


def say(line: str) -> None:
    """A stage's header or time on the console (stderr, beside the progress bars; rank 0's under torchrun)."""
    if is_main():
        print(line, file=sys.stderr, flush=True)


def run_unit(cache: StageCache, stage, unit, ctx) -> dict:
    """One unit of the graph: its recorded runs where nothing it depends on changed, else made and recorded.  Under
    ``torchrun`` a collective unit runs on every rank (it splits its work and rank 0 writes), any other on rank 0
    while the others wait; then every rank reads the files."""
    entry = cache.entry(stage, unit, ctx)
    if entry.reused is not None:
        return entry.reused
    if unit.collective:
        made = _made(unit)
    else:
        with from_main() as shared:
            if shared.here:
                shared.value = _made(unit)
        made = shared.value
    barrier()  # rank 0's files are on disk
    return cache.record(entry, *made)


def _made(unit) -> tuple[list, dict | None]:
    """A unit run: what every rank needs to know of it, the keys of its runs (written where ``RunKey.path`` says)
    and its result as the record keeps it."""
    out = unit.produce()
    out = out if isinstance(out, Produced) else Produced(out)
    return [RunKey.of(k) for k in out.runs], out.result.to_json() if out.result is not None else None


def split_context(plan: Plan, p: Prepared, test_split: str, out: Path):
    """The :class:`~irglow.stage.Context` every stage of one test split shares: what it needs of the graph is which
    runs a fusion tunes on (their held-out training queries' runs), said here once."""
    graph = plan.graph
    fusion = next((b for _, b in plan.stages if isinstance(b, FusionSettings)), None)
    if fusion is not None and p.source.is_other_than(p.collection) and fusion.zero_shot == "rrf":
        graph = graph.untuned()  # zero-shot reciprocal-rank fusion tunes nothing: no held-out runs to write
    return Context(p.collection, p.index, p.stats, p.source, out, p.train_root, p.lexical, p.field_weights, test_split,
                   seed=plan.seed, held_out=frozenset(t for t in graph if graph.reads_held_out(t)))


def run_order(units: list[tuple[Any, Any]], graph) -> list[tuple[Any, Any]]:
    """The units in the order of the plan's graph (``{run: node}``): each after the units making the parts of the
    nodes it makes (``node.parts``: objects of the graph, matched by identity); a unit making a node that fuses
    every run (``all``, whose parts are known once they exist), after the units making what it fuses
    (:func:`_among`); otherwise in the order given (the stages').  Units whose nodes are parts of each other are
    refused, naming them."""
    maker = {id(graph[t]): i for i, (_, u) in enumerate(units) for t in u.writes if t in graph}
    parts = [[p for t in u.writes if t in graph
              for p in (_among(graph, graph[t]) if isinstance(graph[t], Fusion) and graph[t].every else graph[t].parts)]
             for _, u in units]
    after = [{maker[id(p)] for p in ps if id(p) in maker and maker[id(p)] != i} for i, ps in enumerate(parts)]
    done: list[int] = []
    while len(done) < len(units):
        ready = next((i for i in range(len(units)) if i not in done and after[i] <= set(done)), None)
        if ready is None:
            left = [i for i in range(len(units)) if i not in done]
            raise RuntimeError("runs that wait on each other (a re-ranking of a fusion that contains it?): " + "; ".join(
                f"{units[i][1].name} reads {[p.tag for p in parts[i] if id(p) in maker]}" for i in left))
        done.append(ready)
    return [units[i] for i in done]


def write_outputs(plan: Plan, p: Prepared, ctx, cache: StageCache, timings: dict[str, float], notes: str):
    """The comparison of every run of the split against the judgments, its tables, plots, page and manifest."""
    out, collection, test_split = ctx.out, p.collection, ctx.test_split

    if not is_main():  # under torchrun the tables, plots, page and manifest are rank 0's
        return None
    # the judgments are read only now, once every run is written: no stage can have read them (zero-shot, a
    # fusion's weights come from the training collection)
    cache.sweep()  # an earlier configuration's runs in this folder are not this one's: they go
    test_qrels = collection.qrels(test_split)
    qrels_path = write_qrels(test_qrels, Path("qrels") / f"{collection.name}.{test_split}.qrels")
    # the test runs in the plan's order (the stages', hybrids last), whatever order the graph ran them in
    tags = [t for t in plan.tags if t in ctx.runs] + [t for t in ctx.runs if t not in plan.tags]
    ev = plan.eval
    runs = {t: ctx.runs[t] for t in (tags if ev.runs is None else dict.fromkeys([ev.baseline, *ev.runs]))}
    measures = ev.measures if isinstance(ev.measures, str) else list(ev.measures)
    cmp = compare(runs, test_qrels, measures, baseline=ev.baseline, **ev.comparison)
    training = stage_report(cache.results)
    atomic_write_text(out / "results.md", cmp.to_markdown() + "\n" + settings_note(plan, p, tags)
                      + (f"\n{training}\n" if training else "") + (f"\n{notes}\n" if notes else ""))
    atomic_write_text(out / "results.csv", cmp.to_csv())
    atomic_write_text(out / "results.tex", cmp.to_latex())
    plot_comparison(cmp, out / "results.png", title=f"{collection.name} / {test_split}")
    if cmp.pair_p is not None:
        from irglow.eval.plots import plot_pairs

        plot_pairs(cmp, out / "pairs.png")
    else:  # an earlier experiment's heatmap would pass for this one's
        (out / "pairs.png").unlink(missing_ok=True)
    plots = diagnostic_plots(cmp, out, cache.results)
    # the page's notes: each hybrid's weights (and where they were tuned), each model's throughput
    if plan.report_page:
        write_results_page(out, cmp, runs, test_qrels, ctx, cache.results, f"{collection.name} / {test_split}",
                           plan.report_clusters,
                           notes=[line[2:] for line in training.splitlines() if line.startswith("- ")])
    else:  # a page of an earlier run would no longer show this one
        (out / "report.html").unlink(missing_ok=True)
    write_manifest(out, plan.manifest_config(test_split), seed=plan.seed, index=str(p.index.path), qrels=str(qrels_path),
                   settings={s.name: s.resolved(bound) for s, bound in plan.stages}, field_weights=p.field_weights,
                   timings={k: round(v, 3) for k, v in timings.items()},
                   statistics={"N": p.stats.N, "avgdl": p.stats.meta["avgdl"]}, stages=cache.report, plots=plots,
                   results={name: r.to_json() for name, r in cache.results.items()})  # by unit: stage and run
    print(f"\n## {collection.name} — {test_split}\n")
    print(cmp.to_markdown())
    page = f"; the results page: {out / 'report.html'}" if plan.report_page else ""
    print(f"runs, tables, plot and manifest in {out}/{page}")
    return cmp
