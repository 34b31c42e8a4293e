"""The end-to-end job behind ``make run``: collection → index → statistics → runs → comparison table.

Driven by one configuration file (``configs/demo.toml``), with ``--set`` overrides; writes every
run as a TREC file, the qrels, a markdown/CSV/LaTeX table, a plot and a manifest into one folder.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.data.trec import write_qrels
from irglow.eval.compare import compare
from irglow.eval.plots import plot_comparison
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.lexical.stage import LexicalSettings
from irglow.plan import Plan, bind_plan, for_index
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import file_digest, queries_digest, value_digest
from irglow.defaults import SEED

log = logging.getLogger(__name__)


def _irglow_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("irglow")
    except PackageNotFoundError:
        return "unknown"

# raise when what a stage writes changes for the same inputs (2: lossless run scores; 3: stage notes, runs of the
# held-out training queries for [fusion]; 4: stages as objects, one fusion stage, per-system field weights)
STAGE_FORMAT = 4

class StageCache:
    """Skip a stage whose inputs are unchanged: its settings, the collection and index, and the exact
    run files it was given.  A record ``<out>/.stages/<name>.json`` is written only after the stage's
    run files are; a killed run therefore continues at the first stage without a valid record, and
    a changed setting re-runs that stage and everything that consumed its runs."""

    def __init__(self, out: Path, context: dict[str, Any]):
        self.out, self.context, self.report = out, context, {}
        self.digests: dict[str, str] = {}  # tag → digest of <out>/<tag>.run, as recorded or checked here

    def run_unit(self, stage, unit, ctx) -> dict[str, Run]:
        return self.run(unit.name, unit_key(stage, unit, ctx), unit.inputs, unit.produce, unit.collective)

    def run(self, name: str, settings: Any, inputs: dict[str, Run], produce, collective: bool = False
            ) -> dict[str, Run]:
        """``produce``'s runs, or the recorded ones when nothing they depend on changed.  Under ``torchrun`` rank 0
        decides and writes the record; a ``collective`` unit's ``produce`` runs on every rank (it splits its work
        and rank 0 writes), any other on rank 0 alone while the others wait; then every rank reads the files."""
        from irglow.utils import distributed

        key = value_digest({"stage": name, "settings": settings, "context": self.context,
                            "inputs": {t: self.digests.get(t) or file_digest(self.out / f"{t}.run")
                                       for t in sorted(inputs)}})
        record = self.out / ".stages" / f"{name.replace(':', '-')}.json"
        reused = distributed.on_main(lambda: self._recorded(record, key))
        if reused is not None:
            log.info("%s: settings and inputs unchanged, its runs are reused (%s)", name, record)
            self.report[name] = "reused"
            self.digests.update(reused)
            return {t: Run.read(self.out / f"{t}.run") for t in reused}
        # a stage writes its runs as <out>/<tag>.run; what is on disk is read back
        produced = list(produce() if collective else distributed.on_main(lambda: list(produce())))
        distributed.barrier()  # rank 0's files are on disk

        def write_record():
            record.parent.mkdir(parents=True, exist_ok=True)
            digests = {t: file_digest(self.out / f"{t}.run") for t in produced}
            atomic_write_text(record, json.dumps({"stage": name, "key": key, "runs": digests}, indent=1))
            return digests

        self.digests.update(distributed.on_main(write_record))
        self.report[name] = "ran"
        return {t: Run.read(self.out / f"{t}.run") for t in produced}

    def _recorded(self, record: Path, key: str) -> dict[str, str] | None:
        """The record's ``{tag: digest}`` when its key matches and its files are as it recorded them."""
        if not record.is_file():
            return None
        saved = json.loads(record.read_text())
        files = {t: self.out / f"{t}.run" for t in saved["runs"]}
        if saved["key"] == key and all(f.is_file() and file_digest(f) == saved["runs"][t] for t, f in files.items()):
            return saved["runs"]
        return None


def unit_key(stage, unit, ctx) -> dict[str, Any]:
    """What a unit's outputs depend on besides the runs it reads (:class:`StageCache` adds their digests, the
    index's and the test queries'): its settings; unless they say everything (a lexical run), also the lexical
    settings and field weights, the seed, the training data, the content of every model and file it loads from a
    path, which extra runs later stages want of it, and what else chose its checkpoints."""
    from irglow.utils.digest import local_paths_digest, tree_digest

    if unit.self_contained:
        return {"settings": unit.settings}
    models = unit.loads if unit.loads is not None else stage.reused_models(ctx.settings,
                                                                           list(ctx.source.index.fields))
    loads = {f"model:{n}": tree_digest(p) for n, p in models.items()}
    loads.update(local_paths_digest(unit.settings, skip=("model_dir",)))
    return {"settings": unit.settings, "lexical": ctx.lexical.key(), "field_weights": ctx.field_weights,
            "seed": ctx.seed, "trained_on": ctx.source.digest, "loads": loads,
            "held_out_runs": [t for t in unit.writes if t in ctx.tuning_runs],
            "training_runs": [t for t in unit.writes if t in ctx.training_runs], **stage.chosen_on_key(ctx)}


@dataclasses.dataclass
class Prepared:
    """What every test split and every grid point shares: the collection, its index and statistics, where the
    models train (the source and the folder), the lexical settings and field weights, and the time each took.
    Stages get these as arguments (:class:`~irglow.stage.Context`); nothing is written back into the config."""

    collection: Any
    index: Any
    stats: Any
    source: Any  # a TrainSource: this collection's train split, another collection (zero-shot) or a union
    lexical: LexicalSettings
    field_weights: dict[str, dict[str, float]]
    timings: dict[str, float]
    splits: list[str]
    out: Path
    train_root: Path
    plan: Plan | None = None  # the plan it was prepared for (bound again with the training index's fields)


def training_side(plan: Plan, timings: dict[str, float], collection=None, index=None, stats=None):
    """Where models train and the field weights tuned there: ``collection.train`` (another collection, or several
    as one union) when it names one, else ``collection``'s own train split.  Shared by the pipeline and
    zero-shot: (TrainSource, {system: field weights})."""
    from irglow.models.source import TrainSource
    from irglow.models.validation import sources

    c, lexical = plan.collection, plan.lexical
    validation = sources(plan.validation.also, plan.validation.queries, plan.seed,
                         lambda coll: index_and_stats(coll, plan, timings))
    if collection is not None and not c.trains_elsewhere:
        source = TrainSource(collection, index, stats, c.train_split, validation)
    else:
        train_coll, split = training_collection(c.train or c.name, c.train_split)
        train_index, train_stats = index_and_stats(train_coll, plan, timings)
        source = TrainSource(train_coll, train_index, train_stats, split, validation)
    unknown = sorted(set(lexical.field_weights) - set(source.index.fields))
    if unknown and not lexical.tune_bm25f:  # configured weights: a misspelt field would be dropped, not weighted
        raise ValueError(f"lexical.field_weights names {unknown}, which {source.collection.name}'s index lacks; its "
                         f"fields: {list(source.index.fields)}")
    from irglow.utils.distributed import on_main

    # tuned once, on rank 0, whatever the number of processes
    return source, on_main(lambda: lexical.field_weights_for(source.index, source.queries, source.qrels, timings))


def prepare(config: dict[str, Any] | Plan) -> Prepared:
    """Bind the configuration (every setting checked before any work), load and index the collection (and the
    training collection), tune each multi-field system's weights; the models' training root is ``out``, shared
    by every split."""
    plan = config if isinstance(config, Plan) else bind_plan(config)
    c, out = plan.collection, plan.output_dir
    from irglow.utils.atomic import check_not_input

    for folder in {c.name, *(t for t in [c.train] if isinstance(t, str))}:
        check_not_input(out, [], "output.dir", data=folder)  # a collection folder is never written into
    out.mkdir(parents=True, exist_ok=True)
    from irglow.utils.distributed import check_shared_folder

    check_shared_folder(out)  # under torchrun: every rank sees what rank 0 writes, or nothing starts
    splits = list(c.test_splits)
    collection = load_collection(c.name)
    if c.max_docs or c.max_queries:
        from irglow.data.collection import SampledCollection

        collection = SampledCollection(collection, splits if c.trains_elsewhere else [c.train_split, *splits],
                                       c.max_docs, dict(c.max_queries or {}), seed=SEED if plan.seed is None else plan.seed)
    timings: dict[str, float] = {}
    index, stats = index_and_stats(collection, plan, timings)
    source, weights = training_side(plan, timings, None if c.trains_elsewhere else collection, index, stats)
    weights = {s: {f: w for f, w in ws.items() if f in index.fields} for s, ws in weights.items()}
    plan = for_index(plan, list(source.index.fields))
    return Prepared(collection, index, stats, source, plan.lexical, weights, timings, splits, out, out, plan)


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
    ``prepared``: what :func:`prepare` already did (a grid search: ``config`` is then one point's, bound here
    with the prepared training index's fields); ``notes``: markdown for the reports."""
    p = prepared or prepare(config)
    if prepared is None:
        plan = p.plan
    else:
        raw = dict(config.config) if isinstance(config, Plan) else config
        plan = bind_plan(raw, list(p.source.index.fields))
    comparisons = {}
    for split in p.splits:
        comparisons[split] = evaluate_split(plan, p, split, p.out / split if len(p.splits) > 1 else p.out,
                                            notes=notes)
    from irglow.utils.distributed import barrier

    barrier()  # under torchrun: no rank leaves before rank 0 has written the tables
    return PipelineResult(p.out, comparisons)


def training_collection(value, default_split: str):
    """``collection.train`` as (collection, split): one source (``"a"``, ``"a@split"``), or several
    (``["a@train", "b@train"]``, ``"a@train,b@train"``) as one :class:`~irglow.data.union.UnionCollection`."""
    from irglow.data.union import SPLIT, UnionCollection, parse_sources

    sources = parse_sources(list(value) if isinstance(value, tuple) else value, default_split)
    if len(sources) == 1:
        return load_collection(sources[0][0]), sources[0][1]
    return UnionCollection([(load_collection(spec), split) for spec, split in sources]), SPLIT


def index_and_stats(collection, plan: Plan, timings: dict[str, float]):
    """The collection's Lucene index (built once, cached under ``data_dir``) and its statistics; under ``torchrun``
    rank 0 builds both while the others wait, then they open what it built."""
    from irglow.utils.distributed import main_first

    def build():
        t = time.perf_counter()
        index = build_index(collection, plan.index, root=plan.data_dir)
        timings["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        stats = CollectionStats.load(index)
        timings["stats_s"] = time.perf_counter() - t
        return index, stats

    return main_first(build)


def _diagnostic_plots(cmp, out: Path, train_dir: Path, stages: list[str]) -> list[str]:
    """``per-query.png`` (each system's per-query difference to the baseline, first measure) and
    ``training-curves.png`` (loss and validation per step of every model the stages trained)."""
    from irglow.eval.plots import plot_per_query, plot_training_curves
    from irglow.models.source import trained_models

    made = [plot_per_query(cmp, str(cmp.means.columns[0]), out / "per-query.png")]
    curves = {}
    if stages:
        for name, folder in trained_models(train_dir).items():
            f = folder / "training.json"
            if f.is_file():
                curves[name] = json.loads(f.read_text()).get("state", {}).get("history", [])
    made.append(plot_training_curves(curves, out / "training-curves.png"))
    return [p.name for p in made if p is not None]


def stage_report(out: Path, sections: list[str], hybrids: list[str] = ()) -> str:
    """Markdown lines on what the model stages did: each model's training and validation queries, optimizer
    steps, validation (start → kept, at which step) and training time, fusion weights and throughput, from the
    notes each stage leaves (fusion: one note per hybrid of this run, ``hybrids``; notes of hybrids a former
    configuration made stay on disk and are not shown)."""
    from irglow.models.checkpoints import training_summary
    from irglow.models.source import read_stage_notes

    def num(x, fmt="{:.4f}"):
        return "–" if x is None or x != x else fmt.format(x)

    def mixed(t) -> str:  # kept a mix with the starting checkpoint (irglow.models.mixing)
        return f", mixed with the checkpoint at m {t['mix']:.2f}" if t.get("mix") is not None else ""

    rows, lines = [], []
    notes_of = [(s, read_stage_notes(out, s)) for s in sections if s != "fusion"]
    notes_of += [("fusion", read_stage_notes(out, f"fusion-{tag}")) for tag in hybrids]
    for section, notes in notes_of:
        for name, model_dir in notes.get("models", {}).items():
            t = training_summary(model_dir)
            rows.append(f"| {name} | {num(t['train_queries'], '{}')} | {num(t['val_queries'], '{}')} | "
                        f"{num(t['steps'], '{}')} | {num(t['start'])} | {num(t['validation'])} | "
                        f"{num(t['step'], '{}')}{mixed(t)} | {num(t['seconds'], '{:.0f}')} |")
        for tag, f in notes.get("fusion", {}).items():
            tuned = (f" (tuned on {f['tuning_queries']} {f.get('tuning_set', 'held-out training')} queries, nDCG@10 "
                     f"{f['tuning_nDCG@10']:.4f}" + (f"; carried from {f['carried_from']}, nothing of this "
                                                    f"collection's judgments read" if f.get("carried_from") else "")
                     + ")" if f.get("tuning_queries") else
                     f" ({f['why']})" if f.get("why") else "")
            named = zip(f["parts"], f["weights"]) if len(f.get("parts", [])) == len(f["weights"]) else \
                ((None, w) for w in f["weights"])  # notes written before the parts were named
            weights = ", ".join(f"{n} {w:.2f}" if n else f"{w:.2f}" for n, w in named)
            lines.append(f"- {tag}: {f['method']} fusion, weights {weights}{tuned}")
        for key, unit in (("pairs_per_s", "query-document pairs/s"), ("encode_docs_per_s", "documents encoded/s")):
            if notes.get(key):
                lines.append(f"- {section} throughput ({unit}): " + ", ".join(
                    f"{n} {r:.1f}" for n, r in notes[key].items() if r == r))
    if rows:
        rows = ["| model | training queries | validation queries | optimizer steps | validation nDCG@10 at step 0 | "
                "kept | at step | training s |", "|:--|--:|--:|--:|--:|--:|--:|--:|", *rows]
    return "\n".join(rows + ([""] if rows and lines else []) + lines)


def settings_note(plan: Plan, p: Prepared, tags: list[str]) -> str:
    """What the caption owes the reader about parameters: each multi-field system's field weights (tuned for it
    on the training queries, or as configured), and any system scoring BM25 with other k1/b than [lexical]."""
    lx = p.lexical
    parts = []
    for system, weights in p.field_weights.items():
        how = "tuned for it on the training queries" if lx.tune_bm25f else "as configured"
        parts.append(f"`{system}` {weights or '1.0 per field'} ({how})")
    text = f"Field weights: {'; '.join(parts)}.\n" if parts else ""
    for stage, bound in plan.stages:
        values = stage.bm25_parameters(bound)
        if values is not None:
            if (values["k1"], values["b"]) != (lx.k1, lx.b):
                runs = [t for t in stage.tags(bound) if t in tags]
                text += (f"{', '.join(f'`{t}`' for t in runs)} score BM25 with k1 {values['k1']:g}, b {values['b']:g} "
                         f"([{stage.name}.model]), not [lexical]'s k1 {lx.k1:g}, b {lx.b:g}.\n")
    return text


def write_results_page(out: Path, cmp, runs: dict[str, Run], qrels, ctx, title: str,
                       clusters: int | None = None, notes: list[str] | None = None) -> Path:
    """``report.html`` beside the tables: the results browser (:mod:`irglow.eval.report`), with TW-BERT's
    learned term weights for its runs and the word weights GLOW's attention used, where those stages ran, the
    index's analysis for highlighting, and ``clusters`` topic clusters of the queries ([output] clusters)."""
    from irglow.eval.report import report_data, write_report
    from irglow.models.explain import glow_weights, report_analysis, twbert_weights
    from irglow.models.source import read_stage_notes

    weights = {}
    model = read_stage_notes(out, "twbert").get("models", {}).get("twbert")
    if model and "twbert" in runs and Path(model).is_dir():
        w = twbert_weights(model, ctx.index, ctx.test_queries)
        weights = {t: w for t in ("twbert", "twbert-rm3") if t in runs}
    for variant, folder in read_stage_notes(out, "glow").get("models", {}).items():
        if variant in runs and variant != "bert" and Path(folder).is_dir():
            weights[variant] = glow_weights(folder, ctx.index, ctx.stats, ctx.test_queries)
    texts = {q.query_id: q.text for q in ctx.test_queries}
    judged = {q.query_id for q in qrels}
    extras = report_analysis(ctx.index, ctx.stats, {q: t for q, t in texts.items() if q in judged}, clusters=clusters,
                             k1=ctx.lexical.k1, b=ctx.lexical.b)
    data = report_data(cmp, runs, qrels, texts, ctx.collection, term_weights=weights, title=f"irglow: {title}",
                       notes=notes, **extras)
    return write_report(out / "report.html", data)


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
    last = [s for s in stages if s is not fusion][-1]
    # each stage's work gets the shared context with its own settings object (the runs dict is shared)
    contexts = {s: dataclasses.replace(ctx, settings=bound) for s, bound in plan.stages}
    for stage in stages:
        if stage is fusion:
            continue
        t = time.perf_counter()
        for unit in stage.units(contexts[stage]):
            ctx.runs.update(cache.run_unit(stage, unit, contexts[stage]))
        timings[f"{stage.name}_s"] = time.perf_counter() - t
        if fusion is not None:
            t = time.perf_counter()
            for unit in fusion.ready(contexts[fusion], fused, final=stage is last):
                ctx.runs.update(cache.run_unit(fusion, unit, contexts[fusion]))
            timings["fusion_s"] = timings.get("fusion_s", 0.0) + time.perf_counter() - t
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
    plots = _diagnostic_plots(cmp, out, p.train_root, [s.name for s in stages if s.trains])
    # the page's notes: each hybrid's weights (and where they were tuned), each model's throughput
    write_results_page(out, cmp, runs, test_qrels, ctx, f"{collection.name} / {test_split}", plan.report_clusters,
                       notes=[line[2:] for line in training.splitlines() if line.startswith("- ")])
    write_manifest(out, plan.manifest_config(test_split), seed=plan.seed, index=str(index.path), qrels=str(qrels_path),
                   settings={s.name: s.resolved(bound) for s, bound in plan.stages}, field_weights=p.field_weights,
                   timings={k: round(v, 3) for k, v in timings.items()},
                   statistics={"N": stats.N, "avgdl": stats.meta["avgdl"]}, stages=cache.report, plots=plots)
    print(f"\n## {collection.name} — {test_split}\n")
    print(cmp.to_markdown())
    print(f"runs, tables, plot and manifest in {out}/")
    return cmp
