"""The end-to-end job behind ``make run``: collection → index → statistics → runs → comparison table.

Driven by one configuration file (``configs/demo.toml``), with ``--set`` overrides; writes every
run as a TREC file, the qrels, a markdown/CSV/LaTeX table, a plot and a manifest into one folder.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.data.trec import write_qrels
from irglow.eval.compare import COMPARISON_SETTINGS, check_comparison_settings, compare
from irglow.eval.measures import aggregate, parse_measures
from irglow.eval.plots import plot_comparison
from irglow.index.lucene_index import IndexConfig, build_index, check_index_config
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.runs import hybrid
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text
from irglow.utils.digest import file_digest, local_paths_digest, queries_digest, tree_digest, value_digest

log = logging.getLogger(__name__)


def _irglow_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("irglow")
    except PackageNotFoundError:
        return "unknown"

# raise when what a stage writes changes for the same inputs (2: lossless run scores; 3: stage notes, runs of the
# held-out training queries for [fusion])
STAGE_FORMAT = 3
DEFAULT_MEASURES = ["nDCG@10", "RR@10", "R@100", "R@1000", "AP", "NCG@10"]

# what a pipeline configuration may hold; the stages' own sections are checked by their trainers
SECTIONS: dict[str, tuple[str, ...] | None] = {
    "seed": None, "data_dir": None,
    "collection": ("name", "train", "train_split", "test_split", "max_docs", "max_queries"),
    "index": ("fields", "stemmer", "keep_stopwords", "threads"),
    "lexical": ("systems", "k1", "b", "depth", "threads", "tune_bm25f", "field_weights"),
    "eval": ("measures", "baseline", "test", "correction", "permutations", "seed", "ci", "judged_only", "risk_alphas",
             "pairs", "alpha"),
    "output": ("dir", "train_dir"),
    "twbert": None, "glow": None, "rerank": None,
    "fusion": hybrid.SETTINGS,
    "zero_shot": None,  # irglow.zero_shot checks it
    "presets": None,  # named settings for `irglow run --grid preset=…` (irglow.grid checks them)
    "grid": None,  # written by irglow.grid: the points and the one chosen on validation
}
LEXICAL_SYSTEMS = ("bm25", "bm25-mf", "bm25f", "tfidf")
DEFAULT_SYSTEMS = ["bm25", "bm25-mf", "bm25f", "tfidf"]


def check_config(config: dict[str, Any]) -> None:
    """Stop before any work on a misspelt section or key, naming it and what is allowed."""
    from irglow.config import check_settings

    check_settings(config, SECTIONS, "top-level")
    for section, keys in SECTIONS.items():
        if keys is not None and section in config:
            if not isinstance(config[section], dict):
                raise ValueError(f"[{section}] must be a table of settings, not {config[section]!r}")
            check_settings(config[section], keys, f"[{section}]")
    lx = config.get("lexical", {})
    systems = lx.get("systems", DEFAULT_SYSTEMS)
    if not isinstance(systems, list) or not systems:
        raise ValueError(f"lexical.systems = {systems!r} must be a non-empty list, e.g. ['bm25', 'bm25f']")
    for system in systems:
        name, plus, variant = str(system).partition("+")
        if name not in LEXICAL_SYSTEMS or (plus and variant != "rm3"):
            raise ValueError(f"lexical.systems: {system!r} is not a lexical system; known: "
                             f"{', '.join(LEXICAL_SYSTEMS)}, each optionally with '+rm3'")
        LexicalConfig(system=name, **{k: lx[k] for k in ("k1", "b", "depth", "threads") if k in lx},
                      field_weights=lx.get("field_weights", {}) if name in ("bm25f", "bm25-mf") else {}).check()
    if not isinstance(lx.get("tune_bm25f", False), bool):
        raise ValueError(f"lexical.tune_bm25f = {lx['tune_bm25f']!r} must be true or false")
    c = config.get("collection", {})
    max_docs = c.get("max_docs")
    if max_docs is not None and (isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"collection.max_docs = {max_docs!r} must be an integer >= 1")
    if "seed" in config and (isinstance(config["seed"], bool) or not isinstance(config["seed"], int)):
        raise ValueError(f"seed = {config['seed']!r} must be an integer")
    check_index_config(index_config(config))
    ev = config.get("eval", {})
    parse_measures(ev.get("measures", DEFAULT_MEASURES))
    check_comparison_settings("eval.", **comparison_settings(ev))
    from irglow.stages import check_stage_settings, stage_tags

    tags = [lexical_tag(str(s)) for s in systems] + [t for ts in stage_tags(config).values() for t in ts]
    hybrid.check(config, tags)
    tags += hybrid.fused_tags(config)
    baseline = ev.get("baseline", "bm25")
    if baseline not in tags:
        raise ValueError(f"eval.baseline = {baseline!r} is not a run this configuration produces; its runs: "
                         f"{', '.join(tags)}")
    check_stage_settings(config)


def comparison_settings(ev: dict[str, Any]) -> dict[str, Any]:
    """The ``[eval]`` settings that shape a comparison (test, correction, CI, condensed view, risk, pairs)."""
    return {k: ev[k] for k in COMPARISON_SETTINGS if k in ev}


def tune_field_weights(index, queries, qrels, fields, grid=(1.0, 2.0, 4.0), measure="nDCG@10",
                       k1: float = 0.9, b: float = 0.4, passes: int = 2) -> dict[str, float]:
    """Coordinate ascent over BM25F field weights on *training* queries (never the test split)."""
    m = parse_measures([measure])
    weights = {f: 1.0 for f in fields}

    def score(w):
        run = LexicalSearcher(index, LexicalConfig("bm25f", k1=k1, b=b, depth=100, field_weights=w)).search(queries)
        return aggregate(m, qrels, run)[measure]

    best = score(weights)
    for _ in range(passes):
        improved = False
        for f, value in itertools.product(fields, grid):
            if value == weights[f]:
                continue
            trial = {**weights, f: value}
            s = score(trial)
            if s > best + 1e-6:
                best, weights, improved = s, trial, True
        if not improved:
            break
    log.info("BM25F weights tuned on training queries: %s (%s %.4f)", weights, measure, best)
    return weights


class StageCache:
    """Skip a stage whose inputs are unchanged: its settings, the collection and index, and the exact
    run files it was given.  A record ``<out>/.stages/<name>.json`` is written only after the stage's
    run files are; a killed run therefore continues at the first stage without a valid record, and
    a changed setting re-runs that stage and everything that consumed its runs."""

    def __init__(self, out: Path, context: dict[str, Any]):
        self.out, self.context, self.report = out, context, {}
        self.digests: dict[str, str] = {}  # tag → digest of <out>/<tag>.run, as recorded or checked here

    def run(self, name: str, settings: Any, inputs: dict[str, Run], produce) -> dict[str, Run]:
        key = value_digest({"stage": name, "settings": settings, "context": self.context,
                            "inputs": {t: self.digests.get(t) or file_digest(self.out / f"{t}.run")
                                       for t in sorted(inputs)}})
        record = self.out / ".stages" / f"{name.replace(':', '-')}.json"
        if record.is_file():
            saved = json.loads(record.read_text())
            files = {t: self.out / f"{t}.run" for t in saved["runs"]}
            if saved["key"] == key and all(f.is_file() and file_digest(f) == saved["runs"][t] for t, f in files.items()):
                log.info("%s: settings and inputs unchanged, its runs are reused (%s)", name, record)
                self.report[name] = "reused"
                self.digests.update(saved["runs"])
                return {t: Run.read(f) for t, f in files.items()}
        produced = produce()  # a stage writes its runs as <out>/<tag>.run; what is on disk is read back
        record.parent.mkdir(parents=True, exist_ok=True)
        digests = {t: file_digest(self.out / f"{t}.run") for t in produced}
        atomic_write_text(record, json.dumps({"stage": name, "key": key, "runs": digests}, indent=1))
        self.digests.update(digests)
        self.report[name] = "ran"
        return {t: Run.read(self.out / f"{t}.run") for t in produced}


@dataclasses.dataclass
class Prepared:
    """What every test split and every grid point shares: the collection, its index and statistics, where
    the models train, the field weights and the time each took."""

    collection: Any
    index: Any
    stats: Any
    source: Any  # a TrainSource on another collection (zero-shot), or None: this collection's train split
    weights: dict[str, float]
    timings: dict[str, float]
    splits: list[str]
    out: Path

    def train_source(self, config: dict[str, Any]):
        from irglow.models.source import TrainSource

        return self.source or TrainSource(self.collection, self.index, self.stats,
                                          config.get("collection", {}).get("train_split", "train"))


def prepare(config: dict[str, Any]) -> Prepared:
    """Check the configuration, load and index the collection (and the training collection), tune the
    field weights; the models' training root is ``out``, shared by every split."""
    check_config(config)
    c = config.get("collection", {})
    out = Path(config.get("output", {}).get("dir", "runs/demo"))
    out.mkdir(parents=True, exist_ok=True)
    train_split, test_split = c.get("train_split", "train"), c.get("test_split", "test")
    splits = list(test_split) if isinstance(test_split, (list, tuple)) else [test_split]
    name = c.get("name", "demo")
    # models trained on another collection (zero-shot), or on several at once (a union of sources)
    other_train = c.get("train") not in (None, "", [], name)
    collection = load_collection(name)
    if c.get("max_docs") or c.get("max_queries"):
        from irglow.data.collection import SampledCollection

        collection = SampledCollection(collection, splits if other_train else [train_split, *splits],
                                       c.get("max_docs"), c.get("max_queries") or {}, seed=config.get("seed", 13))
    timings: dict[str, float] = {}
    index, stats = index_and_stats(collection, config, timings)
    source = None
    if other_train:
        from irglow.models.source import TrainSource

        train_coll, split = training_collection(c["train"], train_split)
        train_index, train_stats = index_and_stats(train_coll, config, timings)
        source = TrainSource(train_coll, train_index, train_stats, split)
        weights = field_weights(config, train_index, source.queries, source.qrels, timings)
        weights = {f: w for f, w in weights.items() if f in index.fields}
    else:
        weights = field_weights(config, index, lambda: collection.queries(train_split),
                                lambda: collection.qrels(train_split), timings)
    config.setdefault("output", {})["train_dir"] = str(out)  # one training per stage, whatever the split
    return Prepared(collection, index, stats, source, weights, timings, splits, out)


def run_pipeline(config: dict[str, Any], prepared: Prepared | None = None, notes: str = "") -> Path:
    """Index once, tune once, train once; then every test split (``test_split`` may be a list, e.g.
    MS MARCO dev, TREC DL 2019 and 2020) gets its runs, table, plot and manifest — in ``out`` for one
    split, in ``out/<split>/`` for several.  Trained models live in ``out`` and are shared.
    ``prepared``: what :func:`prepare` already did (a grid search); ``notes``: markdown for the reports."""
    p = prepared or prepare(config)
    c = config.get("collection", {})
    for split in p.splits:
        split_config = {**config, "collection": {**c, "test_split": split}}
        evaluate_split(split_config, p.collection, p.index, p.stats, p.out / split if len(p.splits) > 1 else p.out,
                       dict(p.timings), p.weights, source=p.source, notes=notes)
    return p.out


def training_collection(value, default_split: str):
    """``collection.train`` as (collection, split): one source (``"a"``, ``"a@split"``), or several
    (``["a@train", "b@train"]``, ``"a@train,b@train"``) as one :class:`~irglow.data.union.UnionCollection`."""
    from irglow.data.union import SPLIT, UnionCollection, parse_sources

    sources = parse_sources(value, default_split)
    if len(sources) == 1:
        return load_collection(sources[0][0]), sources[0][1]
    return UnionCollection([(load_collection(spec), split) for spec, split in sources]), SPLIT


def lexical_tag(system: str) -> str:
    """A lexical system's run tag (and file stem): ``bm25+rm3`` → ``bm25-rm3``."""
    return system.replace("+", "-")


def index_config(config: dict[str, Any]) -> IndexConfig:
    """The ``[index]`` section as an :class:`IndexConfig` (a list of fields becomes a tuple; anything else is
    passed on as it is, for :func:`check_index_config` to name)."""
    icfg = config.get("index", {})
    fields = icfg.get("fields")
    return IndexConfig(fields=tuple(fields) if isinstance(fields, list) else (fields or None),
                       stemmer=icfg.get("stemmer", "porter"), keep_stopwords=icfg.get("keep_stopwords", False),
                       threads=icfg.get("threads", 2))


def index_and_stats(collection, config: dict[str, Any], timings: dict[str, float]):
    """The collection's Lucene index (built once, cached under ``data_dir``) and its statistics."""
    t = time.perf_counter()
    index = build_index(collection, index_config(config), root=config.get("data_dir"))
    timings["index_s"] = time.perf_counter() - t
    t = time.perf_counter()
    stats = CollectionStats.load(index)
    timings["stats_s"] = time.perf_counter() - t
    return index, stats


def field_weights(config: dict[str, Any], index, train_queries, train_qrels, timings: dict[str, float]) -> dict:
    """BM25F/multi-field weights: as configured, or (``tune_bm25f``) tuned on the training queries; the
    stages' fusion then uses the same bm25f.  ``train_queries``/``train_qrels`` may be callables, so a
    collection without a training split is only asked for one when weights are tuned."""
    lx = config.setdefault("lexical", {})
    weights = dict(lx.get("field_weights", {}))
    if lx.get("tune_bm25f", False):
        t = time.perf_counter()
        train_queries = train_queries() if callable(train_queries) else train_queries
        train_qrels = train_qrels() if callable(train_qrels) else train_qrels
        weights = tune_field_weights(index, train_queries, train_qrels, list(index.fields),
                                     k1=lx.get("k1", 0.9), b=lx.get("b", 0.4))
        timings["bm25f_tuning_s"] = time.perf_counter() - t
        lx["field_weights"] = weights
    return weights


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


def stage_report(out: Path, sections: list[str]) -> str:
    """Markdown lines on what the neural stages did: each model's validation (start → kept, at which step)
    and training time, fusion weights and throughput, from the notes each stage leaves."""
    from irglow.models.checkpoints import training_summary
    from irglow.models.source import read_stage_notes

    def num(x, fmt="{:.4f}"):
        return "–" if x is None or x != x else fmt.format(x)

    rows, lines = [], []
    for section in sections:
        notes = read_stage_notes(out, section)
        for name, model_dir in notes.get("models", {}).items():
            t = training_summary(model_dir)
            val = t["validation"] if t["validation"] == t["validation"] else None  # NaN: nothing held out
            rows.append(f"| {name} | {num(t['train_queries'], '{}')} | {num(t['val_queries'], '{}')} | "
                        f"{num(t['steps'], '{}')} | {num(t['start'])} | {num(val)} | {num(t['step'], '{}')} | "
                        f"{num(t['seconds'], '{:.0f}')} |")
        for tag, f in notes.get("fusion", {}).items():
            tuned = (f" (tuned on {f['tuning_queries']} held-out training queries, nDCG@10 "
                     f"{f['tuning_nDCG@10']:.4f})" if f.get("tuning_queries") else "")
            lines.append(f"- {tag}: {f['method']} fusion, weights {', '.join(f'{w:.2f}' for w in f['weights'])}{tuned}")
        for key, unit in (("pairs_per_s", "query-document pairs/s"), ("encode_docs_per_s", "documents encoded/s")):
            if notes.get(key):
                lines.append(f"- {section} throughput ({unit}): " + ", ".join(
                    f"{n} {r:.1f}" for n, r in notes[key].items() if r == r))
    if rows:
        rows = ["| model | training queries | validation queries | optimizer steps | validation nDCG@10 at step 0 | "
                "kept | at step | training s |", "|:--|--:|--:|--:|--:|--:|--:|--:|", *rows]
    return "\n".join(rows + ([""] if rows and lines else []) + lines)


def lexical_configs(lx: dict[str, Any], weights: dict[str, float]) -> dict[str, LexicalConfig]:
    """``{run tag: LexicalConfig}`` for the ``[lexical]`` systems (field weights as tuned or configured)."""
    configs = {}
    for system in lx.get("systems", DEFAULT_SYSTEMS):
        name, _, variant = system.partition("+")
        configs[lexical_tag(system)] = LexicalConfig(
            system=name, k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), depth=lx.get("depth", 1000),
            threads=lx.get("threads", 2), field_weights=weights if name in ("bm25f", "bm25-mf") else {},
            rm3=variant == "rm3")
    return configs


def _hybrids(config, runs: dict[str, Run], out: Path, source, collection, lexical: dict[str, LexicalConfig]):
    """The ``[fusion]`` hybrids (:mod:`irglow.runs.hybrid`), with their notes for the report."""
    from irglow.models.source import read_stage_notes, write_stage_notes

    rerank = read_stage_notes(out, "rerank")
    cut = {m: rerank["depth"] for m in rerank.get("models", {})} if "depth" in rerank else {}
    produced, info = hybrid.fuse_configured(
        config, runs, out, source, source.is_other_than(collection),
        lambda tag: LexicalSearcher(source.index, lexical[tag]), set(lexical), cut)
    write_stage_notes(out, "fusion", {"fusion": info})
    return produced


def _written(run: Run, path: Path) -> Run:
    run.write(path)
    return run


def evaluate_split(config: dict[str, Any], collection, index, stats, out: Path, timings: dict[str, float],
                    weights: dict[str, float], source=None, notes: str = ""):
    """One test split: lexical runs, the neural stages, the comparison table, plot and manifest.
    ``source`` (a :class:`~irglow.models.source.TrainSource`): where models train, when not this collection's
    train split (zero-shot).  Returns the comparison."""
    out.mkdir(parents=True, exist_ok=True)
    c, lx = config["collection"], config.get("lexical", {})
    train_split, test_split = c.get("train_split", "train"), c["test_split"]
    test_queries, test_qrels = collection.queries(test_split), collection.qrels(test_split)
    qrels_path = write_qrels(test_qrels, Path("qrels") / f"{collection.name}.{test_split}.qrels")
    runs: dict[str, Run] = {}
    from irglow.models.source import TrainSource
    from irglow.stages import neural_stages

    source = source or TrainSource(collection, index, stats, train_split)
    # every stage keys on the content it reads: the index (its name carries the corpus digest and the
    # analysis settings) and the test queries; the neural stages also on what they train on
    base_context = {"format": STAGE_FORMAT, "irglow": _irglow_version(), "index": Path(index.path).name,
                    "test_split": test_split, "test_queries": queries_digest(test_queries)}
    cache = StageCache(out, base_context)
    lexical = lexical_configs(lx, weights)
    for tag, cfg in lexical.items():
        t = time.perf_counter()
        runs.update(cache.run(f"lexical:{tag}", dataclasses.asdict(cfg), {},
                              lambda: {tag: _written(LexicalSearcher(index, cfg).search(test_queries, tag=tag),
                                                     out / f"{tag}.run")}))
        timings[f"search_{tag}_s"] = time.perf_counter() - t

    for stage in neural_stages(config):
        t = time.perf_counter()
        section = stage.__name__.removesuffix("_stage")
        # a stage also writes its runs of the held-out training queries that a [fusion] names
        module = sys.modules[stage.__module__]
        # the content of every model it loads from a path (model_dir, a checkpoint) and of a settings file
        loaded = {**{f"model:{n}": tree_digest(p) for n, p in module.reused_models(config, list(source.index.fields)
                                                                                    ).items()},
                  **local_paths_digest(config.get(section), skip=("model_dir",))}
        runs.update(cache.run(section, {"section": config.get(section), "lexical": lx, "seed": config.get("seed"),
                                        "trained_on": source.digest, "loads": loaded, "held_out_runs": [
                                            t for t in module.tags(config)
                                            if hybrid.wants_tuning(config, t)]},
                              dict(runs), lambda: stage(config=config, collection=collection, index=index,
                                                        stats=stats, out=out, runs=dict(runs), source=source)))
        timings[f"{stage.__name__}_s"] = time.perf_counter() - t
    if hybrid.components(config):
        t = time.perf_counter()
        runs.update(cache.run("fusion", {"section": config["fusion"], "lexical": lx, "trained_on": source.digest},
                              dict(runs), lambda: _hybrids(config, runs, out, source, collection, lexical)))
        timings["fusion_s"] = time.perf_counter() - t
    runs = {t: r for t, r in runs.items() if not t.startswith(hybrid.TUNING)}  # tuning runs are not compared

    ev = config.get("eval", {})
    cmp = compare(runs, test_qrels, ev.get("measures", DEFAULT_MEASURES), baseline=ev.get("baseline", "bm25"),
                  **comparison_settings(ev))
    fields_note = (f"Field weights of bm25-mf and bm25f: {weights or '1.0 per field'}"
                   f"{' (tuned on the training queries)' if lx.get('tune_bm25f') else ''}.\n")
    sections = [s.__name__.removesuffix("_stage") for s in neural_stages(config)]
    training = stage_report(out, sections + (["fusion"] if hybrid.components(config) else []))
    atomic_write_text(out / "results.md", cmp.to_markdown() + "\n" + fields_note
                      + (f"\n{training}\n" if training else "") + (f"\n{notes}\n" if notes else ""))
    atomic_write_text(out / "results.csv", cmp.to_csv())
    atomic_write_text(out / "results.tex", cmp.to_latex())
    plot_comparison(cmp, out / "results.png", title=f"{collection.name} / {test_split}")
    if cmp.pairs is not None:
        from irglow.eval.plots import plot_pairs

        plot_pairs(cmp, out / "pairs.png")
    plots = _diagnostic_plots(cmp, out, Path(config.get("output", {}).get("train_dir") or out), sections)
    write_manifest(out, config, seed=config.get("seed"), index=str(index.path), qrels=str(qrels_path),
                   bm25f_weights=weights, timings={k: round(v, 3) for k, v in timings.items()},
                   statistics={"N": stats.N, "avgdl": stats.meta["avgdl"]}, stages=cache.report, plots=plots)
    print(f"\n## {collection.name} — {test_split}\n")
    print(cmp.to_markdown())
    print(f"runs, tables, plot and manifest in {out}/")
    return cmp
