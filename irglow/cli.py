"""``irglow <stage>``: one entry point for every stage; heavy imports happen inside the commands."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from pathlib import Path

from irglow.models.cli import add_duplicates_option
from irglow.models.glow.cli import add_glow_command
from irglow.models.rerank.cli import add_rerank_commands
from irglow.models.twbert.cli import add_twbert_command
from irglow import settings as declared
from irglow.settings import non_negative_int, positive_int
from irglow.eval.defaults import DEFAULT_MEASURES
from irglow.defaults import BM25_B, BM25_K1, DEPTH
from irglow.utils.distributed import collective


def _add_data(p: argparse.ArgumentParser, split: bool = True) -> None:
    p.add_argument("data", help="'demo', a BEIR folder, or an ir_datasets id")
    if split:
        p.add_argument("--split", default="test", help="queries/qrels split (default: test)")
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")


def _add_index_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fields", nargs="*", default=None, help="document fields to index (default: all)")
    p.add_argument("--stemmer", default="porter", choices=["porter", "krovetz", "none"])
    p.add_argument("--keep-stopwords", action="store_true")
    p.add_argument("--threads", type=positive_int, default=2)


def _index(args):
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index

    cfg = IndexConfig(fields=tuple(args.fields) if args.fields else None, stemmer=args.stemmer,
                      keep_stopwords=args.keep_stopwords, threads=args.threads)
    return build_index(load_collection(args.data), cfg, root=args.data_dir, force=getattr(args, "force", False))


def cmd_index(args) -> int:
    index = _index(args)
    print(index.path)
    print(f"documents: {index.meta['documents']}  fields: {', '.join(index.fields)} + contents  "
          f"empty (not indexed): {index.meta['skipped_empty']}")
    return 0


def cmd_stats(args) -> int:
    from irglow.index.stats import CollectionStats

    stats = CollectionStats.load(_index(args))
    print(f"statistics: {stats.path}")
    print(f"N = {stats.N}, terms = {len(stats.terms)}")
    for f in stats.meta["fields"]:
        print(f"  {f:>12}: docCount {stats.doc_count(f):>9}  avgdl {stats.avgdl(f):9.3f}")
    return 0


def _weights(items) -> dict[str, float]:
    from irglow.settings import field_values

    return field_values(items, float, "--field-weight {item} must look like FIELD=NUMBER")


def _numbers(text: str | None, option: str) -> list[float]:
    """A comma-separated list of finite numbers given to ``option``; anything else is an error naming it."""
    import math

    out = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            value = float(item)
        except ValueError:
            raise SystemExit(f"{option} {text!r}: {item.strip()!r} is not a number (give comma-separated numbers, "
                             f"e.g. {option} 0.7,0.3)") from None
        if not math.isfinite(value):
            raise SystemExit(f"{option} {text!r}: {item.strip()!r} is not a finite number")
        out.append(value)
    return out


def cmd_search(args) -> int:
    from irglow.data.collection import load_collection
    from irglow.data.records import Query
    from irglow.data.trec import read_topics
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher

    if args.query is not None and not args.query.strip():
        raise SystemExit("--query is empty: give the words to search for")
    if args.tag is not None:
        from irglow.runs.trec import check_token

        try:
            check_token(args.tag, "--tag")
        except ValueError as e:
            raise SystemExit(str(e)) from None
    # an ad-hoc --query prints its ranking, and writes it too when -o names a file
    output = Path(args.output) if args.output else (None if args.query else Path(f"runs/{args.tag or args.system}.run"))
    if output is not None:
        from irglow.utils.atomic import check_not_input, check_writable

        check_writable(check_not_input(output, [args.topics], data=args.data))
    index = _index(args)
    if args.query:
        queries = [Query("q", args.query)]
    elif args.topics:
        queries = read_topics(args.topics)
    else:
        queries = load_collection(args.data).queries(args.split)
    cfg = LexicalConfig(system=args.system, k1=args.k1, b=args.b, depth=args.depth, threads=args.threads,
                        field_weights=_weights(args.field_weight), rm3=args.rm3)
    run = LexicalSearcher(index, cfg).search(queries, tag=args.tag or args.system + ("-rm3" if args.rm3 else ""))
    if args.query:
        for rank, (doc_id, score) in enumerate(run.ranking["q"][:args.show], 1):
            print(f"{rank:>3} {doc_id:<20} {score:.4f}")
        if output is None:
            return 0
    output = Path(args.output or f"runs/{run.tag}.run")
    run.write(output)
    from irglow.config import write_manifest

    write_manifest(output.parent, {"search": vars(args)}, run=str(output))
    print(f"{len(run)} queries → {output}")
    return 0


def _qrels(args):
    from irglow.data.collection import load_collection
    from irglow.data.trec import read_qrels

    if args.qrels:
        return read_qrels(args.qrels)
    if not args.data:
        raise SystemExit("give --qrels FILE or --data DATA [--split S]")
    return load_collection(args.data).qrels(args.split)


def _read_runs(args, qrels) -> dict:
    """The runs named on the command line, keyed by one naming rule for ``eval`` and ``compare``, read and
    evaluated in parallel processes (only their per-query values come back)."""
    from irglow.eval.compare import evaluate_files
    from irglow.eval.measures import parse_measures

    names = []
    for p in args.runs:
        name = run_name(p, args.runs)
        if name in names:
            raise SystemExit(f"two runs would both be named {name!r} in the table ({args.runs}); rename one file")
        names.append(name)
    measures = [str(m) for m in parse_measures(args.measures)]
    evaluated = evaluate_files(args.runs, qrels, measures, judged=not args.no_judged, judged_only=args.judged_only,
                               duplicates=args.duplicates)
    return dict(zip(names, evaluated))


def cmd_eval(args) -> int:
    from irglow.eval.compare import compare

    qrels = _qrels(args)
    cmp = compare(_read_runs(args, qrels), qrels, args.measures, baseline=None, judged=not args.no_judged,
                  judged_only=args.judged_only)
    print(cmp.render(args.format))
    return 0


def _default_baseline(names: list[str]) -> str:
    """The first run, said on stderr — unless a run named bm25 is not first: a glob's order then chose another
    baseline than the one a reader expects, so ``--baseline`` is required."""
    if "bm25" in names and names[0] != "bm25":
        raise SystemExit(f"irglow: the runs include bm25 but the first run is {names[0]!r}; the baseline is the first "
                         f"run unless --baseline names one: pass --baseline bm25 (or --baseline {names[0]})")
    if names[0] != "bm25":
        print(f"baseline: {names[0]} (the first run; --baseline to choose another)", file=sys.stderr)
    return names[0]


def _comparison(args, qrels):
    """The comparison ``compare`` prints and ``report`` shows, from the same options."""
    from irglow.eval.compare import compare

    runs = _read_runs(args, qrels)
    baseline = args.baseline or _default_baseline(list(runs))
    risk_alphas = _numbers(args.risk_alpha, "--risk-alpha")
    return compare(runs, qrels, args.measures, baseline=baseline, alpha=args.alpha, test=args.test,
                   correction=args.correction, permutations=args.permutations, seed=args.seed, ci=args.ci,
                   judged=not args.no_judged, judged_only=args.judged_only, risk_alphas=risk_alphas, pairs=args.pairs)


def cmd_report(args) -> int:
    """One HTML page: overview, query list, query view (irglow/eval/report.py)."""
    from irglow.eval.report import write_report
    from irglow.utils.atomic import check_not_input, check_writable

    output = check_not_input(args.output or "report.html", [*args.runs, args.qrels, args.topics], data=args.data)
    check_writable(output)
    data = report_from_files(args)
    write_report(output, data)
    print(f"{len(data['runs'])} runs, {len(data['queries'])} queries → {output}")
    return 0


def report_from_files(args) -> dict:
    """The report's data from the command line's runs, qrels and options (what the page shows)."""
    from irglow.data.collection import load_collection
    from irglow.data.trec import read_topics
    from irglow.eval.report import report_data
    from irglow.models.explain import report_analysis, twbert_weights
    from irglow.runs.columns import read_ranked

    collection = load_collection(args.data) if args.data else None
    qrels = _qrels(args)
    cmp = _comparison(args, qrels)
    names = list(cmp.means.index)
    from irglow.eval.contrast import CONTRAST_DEPTH

    # the shown depth, and the ranks RBO and τ_AP compare and a moved document's real rank is found in
    keep = max(args.depth, CONTRAST_DEPTH)
    tops = {name: read_ranked(path, args.duplicates).top(keep) for name, path in zip(names, args.runs)}
    if args.topics:
        queries = {q.query_id: q.text for q in read_topics(args.topics)}
    elif collection is not None:
        queries = {q.query_id: q.text for q in collection.queries(args.split)}
    else:
        queries = {}
    weights, index, stats = {}, None, None
    if collection is not None and not args.no_analysis:  # the cached index `irglow search` builds
        from irglow.index.lucene_index import build_index
        from irglow.index.stats import CollectionStats

        index = build_index(collection, root=args.data_dir)
        stats = CollectionStats.load(index)
    for item in args.twbert or []:
        run, eq, model_dir = item.partition("=")
        if not eq or run not in names or collection is None:
            raise SystemExit(f"--twbert {item!r}: give RUN=MODEL_DIR for one of the runs {names}, with --data")
        from irglow.data.records import Query
        from irglow.index.lucene_index import build_index

        weights[run] = twbert_weights(model_dir, index or build_index(collection, root=args.data_dir),
                                      [Query(q, t) for q, t in queries.items()])
    judged = {q.query_id for q in qrels}
    extras = report_analysis(index, stats, {q: t for q, t in queries.items() if q in judged}, clusters=args.clusters,
                             k1=args.k1, b=args.b, encoder=args.encoder)
    return report_data(cmp, tops, qrels, queries, collection, depth=args.depth, term_weights=weights,
                       title=args.title or f"irglow: {', '.join(names)}", **extras)


def pairs_heatmap_path(output: str | None) -> Path:
    """Where ``--pairs all`` writes its heatmap without ``--heatmap``: ``<-o without suffix>-pairs.png`` beside
    the table, or ``pairs.png`` (what the option's help says)."""
    return Path(output).with_suffix("").with_name(Path(output).stem + "-pairs.png") if output else Path("pairs.png")


def cmd_compare(args) -> int:
    from irglow.utils.atomic import check_not_input, check_writable

    inputs = [*args.runs, args.qrels]
    for option, path in (("-o", args.output), ("--plot", args.plot), ("--heatmap", args.heatmap)):
        if path:  # before any work: an unwritable folder is said now, not after the table was printed
            check_writable(check_not_input(path, inputs, option, data=args.data))
    qrels = _qrels(args)
    cmp = _comparison(args, qrels)
    text = cmp.render(args.format)
    if args.format in ("markdown", "md"):  # the terminal's width: CI stacked, wide tables in blocks, prose wrapped
        import shutil

        print(cmp.to_terminal(shutil.get_terminal_size((100, 24)).columns))
    else:
        print(text)
    if args.output:
        from irglow.utils.atomic import atomic_write_text

        atomic_write_text(args.output, text)
    if args.plot:
        from irglow.eval.plots import plot_comparison

        plot_comparison(cmp, args.plot)
    if args.pairs:
        from irglow.eval.plots import plot_pairs

        heatmap = Path(args.heatmap) if args.heatmap else pairs_heatmap_path(args.output)
        written = plot_pairs(cmp, heatmap)
        if written is not None:
            print(f"pairs heatmap: {written}", file=sys.stderr)
        else:  # say why there is none, instead of "pairs heatmap: None"
            from irglow.eval import significance as sig

            why = ("one run has no pair" if len(cmp.means) < 2 else
                   f"{cmp.n_queries} quer{'y' if cmp.n_queries == 1 else 'ies'} are fewer than "
                   f"{sig.min_queries(cmp.alpha)}, the fewest on which a paired test can reach p < {cmp.alpha}")
            print(f"--pairs all: no Tukey HSD table and no heatmap: {why}", file=sys.stderr)
    return 0


def _stem(path: str) -> str:
    """``runs/bm25.run.gz`` → ``bm25``: the file name without ``.gz`` and its extension."""
    name = Path(path).name
    return Path(name[:-3] if name.endswith(".gz") else name).stem


def run_name(path: str, all_paths: list[str]) -> str:
    """A run's row name: its file stem, or its path (without extension) where two files share a stem."""
    stem = _stem(path)
    if sum(_stem(p) == stem for p in all_paths) == 1:
        return stem
    return str(Path(path).parent / stem)


def cmd_qrels(args) -> int:
    from irglow.data.collection import load_collection
    from irglow.data.trec import write_qrels
    from irglow.utils.atomic import check_not_input

    collection = load_collection(args.data)
    output = check_not_input(args.output or f"qrels/{collection.name}.{args.split}.qrels", [], data=args.data)
    path = write_qrels(collection.qrels(args.split), output)
    print(path)
    return 0


def cmd_fuse(args) -> int:
    from irglow.data.trec import read_qrels
    from irglow.runs.fusion import fuse, tune_weights
    from irglow.runs.trec import Run, check_token
    from irglow.utils.atomic import check_not_input, check_writable

    output = check_not_input(args.output, [*args.runs, *(args.tune_runs or []), args.tune_qrels])
    for p in args.runs:  # a run file's own folder may be a collection's: nothing of it is written over
        check_not_input(output, [], data=Path(p).parent if (Path(p).parent / "corpus.jsonl").exists() else None)
    check_writable(output)
    tag = check_token(args.tag or output.stem, "--tag")
    if len(args.runs) < 2:
        raise SystemExit("irglow fuse: give two runs or more")
    if args.per_query and (args.method not in (None, "rrf") or args.weights or args.tune_runs):
        raise SystemExit("irglow fuse: --per-query weighs reciprocal-rank fusion itself: give it without --weights, "
                         "--tune-runs or --method wsum")
    args.method = args.method or declared.DECLARED["fusion"]["method"].default
    weights = _numbers(args.weights, "--weights") or None
    if weights and len(weights) != len(args.runs):
        raise SystemExit(f"irglow fuse: --weights gives {len(weights)} weights for {len(args.runs)} runs")
    if weights and not any(w > 0 for w in weights):  # every document would score 0: an order by id, not a fusion
        raise SystemExit(f"irglow fuse: --weights {args.weights} gives every run weight 0; give at least one > 0")
    note = ""
    if args.tune_runs:
        if weights:
            raise SystemExit("irglow fuse: --weights or --tune-runs, not both")
        if len(args.tune_runs) != len(args.runs) or not args.tune_qrels:
            raise SystemExit("irglow fuse: --tune-runs needs one training-query run per RUN (same order) "
                             "and --tune-qrels")
        weights, score, _ = tune_weights([Run.read(p, args.duplicates) for p in args.tune_runs],
                                         read_qrels(args.tune_qrels),
                                         args.method, args.norm, args.measure, args.step, args.k, args.depth)
        note = f" (weights tuned on {args.tune_qrels}: {args.measure} {score:.4f})"
    runs = [Run.read(p, args.duplicates) for p in args.runs]
    if args.per_query:
        return _fuse_per_query(args, runs, output, tag)
    fused = fuse(runs, args.method, args.norm, weights, args.k, args.depth, tag)
    fused.write(output)
    from irglow.config import write_manifest

    write_manifest(output.parent, {"fuse": {k: v for k, v in vars(args).items() if k != "func"}}, run=str(output),
                   weights=weights)
    shown = ", ".join(f"{Path(p).stem} {w:g}" for p, w in zip(args.runs, weights or [1.0] * len(args.runs)))
    print(f"{args.method}{'' if args.method == 'rrf' else ' ' + args.norm} of {shown}{note} → {output}")
    return 0


def _fuse_per_query(args, runs, output: Path, tag: str) -> int:
    """``irglow fuse --per-query``: reciprocal-rank fusion with each query's run weights from the runs' own scores
    (irglow/runs/qpp.py; nothing judged is read), the weights written beside the run as ``<run>.weights.tsv``."""
    from irglow.config import write_manifest
    from irglow.runs.qpp import fuse_weighted, looks_dense, qpp_weights
    from irglow.utils.atomic import atomic_write_text

    names = [Path(p).stem for p in args.runs]
    for run, name in zip(runs, names):
        run.tag = name
    if len(set(names)) != len(names):
        raise SystemExit(f"irglow fuse: --per-query needs runs with distinct file names, not {names}")
    per_query = qpp_weights(runs, [looks_dense(r) for r in runs], args.per_query)
    fused = fuse_weighted(runs, per_query, args.k, args.depth, tag)
    fused.write(output)
    table = output.with_name(output.name + ".weights.tsv")
    atomic_write_text(table, "query\t" + "\t".join(names) + "\n" + "".join(
        f"{q}\t" + "\t".join(f"{w:.6g}" for w in ws) + "\n" for q, ws in per_query.items()))
    args.method = "rrf"
    write_manifest(output.parent, {"fuse": {k: v for k, v in vars(args).items() if k != "func"}}, run=str(output),
                   weights_per_query=str(table))
    print(f"rrf of {', '.join(names)}, weighted per query ({args.per_query}) → {output} (weights: {table})")
    return 0


@collective
def cmd_run(args) -> int:
    from irglow.config import load_config
    from irglow.pipeline import run_pipeline

    config = load_config(args.config, args.set)
    if args.grid:
        from irglow.grid import run_grid

        run_grid(config, args.grid, args.select_on)
    elif args.select_on:
        raise SystemExit("--select-on needs --grid KEY=V1,V2 (the settings to choose between)")
    else:
        run_pipeline(config)
    return 0


@collective
def cmd_zero_shot(args) -> int:
    from irglow.config import load_config
    from irglow.zero_shot import NoCollectionError, run_zero_shot

    config = load_config(args.config, args.set)
    zs = config.setdefault("zero_shot", {})
    if args.train:
        zs["train"] = args.train
    if args.train_split:
        zs["train_split"] = args.train_split
    if args.collections:
        zs["collections"] = [c for c in args.collections.split(",") if c]
    if args.output:
        config.setdefault("output", {})["dir"] = args.output
    try:
        run_zero_shot(config)
    except NoCollectionError as e:
        print(f"irglow zero-shot: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_settings(args) -> int:
    from irglow.settings import DECLARED

    classes = _settings_classes()
    unknown = [s for s in args.sections if s not in DECLARED and s not in classes]
    if unknown:
        print(f"irglow settings: no section {unknown}; sections: "
              f"{', '.join(dict.fromkeys([*DECLARED, *classes]))}", file=sys.stderr)
        return 2
    print(settings_reference(args.sections or None))
    return 0


def settings_reference(sections: list[str] | None = None) -> str:
    """``irglow settings``' text; the README's settings reference is this, verbatim (a test keeps it so)."""
    from irglow.settings import reference

    return reference(sections, _settings_classes()).rstrip("\n") + "\n"


def _settings_classes() -> dict:
    """The sections declared by settings dataclasses, by section (``rerank.<kind>``: monoBERT's and NRM-F's
    training, one class)."""
    from irglow.index.lucene_index import IndexConfig
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.model import GlowConfig
    from irglow.models.glow.train import GlowTrainConfig
    from irglow.models.rerank.monobert import MonoBERTConfig
    from irglow.models.rerank.nrmf import NRMFConfig
    from irglow.models.rerank.train import RerankTrainConfig
    from irglow.models.twbert.model import TWBertConfig
    from irglow.models.twbert.train import TrainConfig

    return {"index": IndexConfig, "lexical": LexicalSettings, "twbert": TrainConfig, "twbert.model": TWBertConfig,
            "glow": GlowTrainConfig, "glow.model": GlowConfig, "rerank.<kind>": RerankTrainConfig,
            "rerank.monobert.model": MonoBERTConfig, "rerank.nrmf.model": NRMFConfig}


def cmd_cache(args) -> int:
    from irglow.index.cache import cached_indexes, describe, prunable, remove

    indexes = cached_indexes(args.data_dir)
    if args.action == "list":
        print(describe(indexes) if indexes else "no cached indexes")
        return 0
    if args.older_than is not None and not (args.older_than >= 0 and args.older_than != float("inf")):
        raise SystemExit(f"--older-than {args.older_than:g}: give a number of days >= 0")
    doomed = prunable(indexes, args.older_than)
    if not doomed:
        print("nothing to prune: every cached index is the latest of its source and settings")
        return 0
    print(describe(doomed))
    if args.dry_run:
        print(f"{len(doomed)} indexes would be removed (--dry-run)")
        return 0
    print(f"removed {len(doomed)} indexes, {remove(doomed) / 2**20:.1f} MiB freed")
    return 0


def cmd_regressions(args) -> int:
    from irglow.regressions import run_matrix
    from irglow.utils.atomic import atomic_write_text

    matrix = run_matrix(args.config, args.output, [t for t in (args.tags or "").split(",") if t] or None,
                        args.data_dir)
    text = matrix.to_markdown()
    atomic_write_text(Path(args.output) / "regressions.md", text)
    atomic_write_text(Path(args.output) / "regressions.html", matrix.to_html())
    print("\n## Reproduction matrix\n")
    print(text)
    print(f"matrix in {args.output}/regressions.md and .html")
    return 1 if matrix.failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irglow", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build (or reuse) the Lucene index of a collection")
    _add_data(p, split=False)
    _add_index_opts(p)
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("stats", help="export collection statistics (N, df/cf per field, field lengths)")
    _add_data(p, split=False)
    _add_index_opts(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("search", help="lexical run: bm25, bm25-mf, bm25f, tfidf (+ --rm3)")
    _add_data(p)
    _add_index_opts(p)
    p.add_argument("--system", default="bm25", choices=["bm25", "bm25-mf", "bm25f", "tfidf"])
    p.add_argument("--k1", type=float, default=BM25_K1)
    p.add_argument("--b", type=float, default=BM25_B)
    p.add_argument("--depth", type=positive_int, default=DEPTH)
    p.add_argument("--field-weight", action="append", metavar="FIELD=W", help="bm25-mf/bm25f field weight")
    p.add_argument("--rm3", action="store_true")
    p.add_argument("--topics", help="TREC/TSV/BEIR topics file instead of the collection's queries")
    p.add_argument("--query", help="search one query and print the top hits")
    p.add_argument("--show", type=positive_int, default=10)
    p.add_argument("--tag", default=None)
    p.add_argument("-o", "--output", help="run file (default runs/<tag>.run)")
    p.set_defaults(func=cmd_search)

    for name, func, help_ in (("eval", cmd_eval, "evaluate run files with any ir_measures measure (and NCG@k)"),
                              ("compare", cmd_compare, "comparison table with significance marks against a baseline"),
                              ("report", cmd_report, "a results browser in one HTML file: overview, queries, "
                                                     "side-by-side rankings")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("runs", nargs="+", help="TREC run files")
        p.add_argument("--qrels", help="TREC qrels file")
        p.add_argument("--data", help="or: a collection whose qrels to use")
        p.add_argument("--split", default="test")
        p.add_argument("-m", "--measures", action=_AddMeasures, default=" ".join(DEFAULT_MEASURES), metavar="MEASURES",
                       help=f"ir_measures names; repeat it or list them: -m nDCG@10 -m AP, -m 'nDCG@10 AP' "
                            f"(default: {' '.join(DEFAULT_MEASURES)}, as the pipeline)")
        p.add_argument("--format", default="markdown", choices=["markdown", "csv", "latex"])
        add_duplicates_option(p)
        p.add_argument("--judged-only", action="store_true",
                       help="also score condensed lists (unjudged documents removed; columns marked ')")
        p.add_argument("--no-judged", action="store_true", help="leave out the Judged@10 column")
        if name == "report":
            p.add_argument("--depth", type=positive_int, default=10, help="documents per run shown in the query view")
            p.add_argument("--topics", help="query texts from a topics file (default: the collection's)")
            p.add_argument("--twbert", action="append", metavar="RUN=MODEL_DIR",
                           help="show TW-BERT's learned term weights for this run's queries")
            p.add_argument("--title")
            p.add_argument("--data-dir", help="where indexes are cached (for --twbert and the highlighting)")
            p.add_argument("--clusters", type=non_negative_int, default=None,
                           help="topic clusters of the queries' embeddings for the breakdown (default: about one "
                                "per 25 queries; 0: none)")
            p.add_argument("--encoder", default="default",
                           help="sentence encoder for the clusters (default: the shipped all-MiniLM-L6-v2)")
            p.add_argument("--no-analysis", action="store_true",
                           help="with --data, do not open the collection's index: raw query words are marked and "
                                "there is no mean-IDF grouping")
            p.add_argument("--k1", type=float, default=None, help="BM25 k1 of the highlighting's shade "
                                                                 "(default: the lexical default)")
            p.add_argument("--b", type=float, default=None, help="BM25 b of the highlighting's shade")
        if name in ("compare", "report"):
            p.add_argument("--baseline", help="run name (file stem); default: the first run")
            p.add_argument("--alpha", type=float, default=0.05)
            p.add_argument("--test", default="randomization", choices=["randomization", "t", "bootstrap", "wilcoxon"],
                           help="paired test against the baseline (default: randomization; README 'Statistics')")
            p.add_argument("--correction", default="holm", choices=["holm", "bonferroni", "bh", "none"],
                           help="multiple-comparison correction over the runs, per measure (default: holm)")
            p.add_argument("--permutations", type=positive_int, default=10000,
                           help="randomization/bootstrap draws (exact enumeration when 2^queries is not larger)")
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--ci", action="store_true", help="show Δ to the baseline with its 95%% CI in each cell")
            p.add_argument("--pairs", choices=["all"], help="all pairs: randomized Tukey HSD matrix, groups, heatmap")
            p.add_argument("--heatmap", help="where --pairs all writes its heatmap (default: <-o without its suffix>"
                                             "-pairs.png beside -o, else pairs.png)")
            p.add_argument("--risk-alpha", default="1,5", help="URisk/TRisk α values, comma-separated ('' for none)")
            p.add_argument("-o", "--output")
            p.add_argument("--plot", help="write a bar chart (PNG/PDF/SVG)")
        p.set_defaults(func=func)

    p = sub.add_parser("qrels", help="write a collection's qrels into qrels/")
    _add_data(p)
    p.add_argument("-o", "--output")
    p.set_defaults(func=cmd_qrels)

    p = sub.add_parser("fuse", help="hybrid run: reciprocal-rank or normalised-score fusion of runs")
    p.add_argument("runs", nargs="+", help="TREC run files (the same queries)")
    p.add_argument("-o", "--output", required=True)
    # the declared default is applied in cmd_fuse, so --per-query can tell a --method given from the default
    p.add_argument("--method", **declared.option("fusion", "method", default=None))
    p.add_argument("--norm", **declared.option("fusion", "norm"))
    p.add_argument("--weights", help="comma-separated, one per run (default: 1 each)")
    p.add_argument("--per-query", choices=["qpp", "diverse", "qpp+diverse"],
                   help="RRF with each query's run weights from the runs' own scores, no judgments: qpp (each run's "
                        "NQC or top-similarity spread, as a percentile of its own), diverse (runs repeating each "
                        "other share one say), or both; the weights go beside the run (<run>.weights.tsv)")
    p.add_argument("--k", type=float, default=60.0, help="RRF constant")
    p.add_argument("--tune-runs", nargs="+", help="runs of the *training* queries, same systems and order as RUNS: "
                   "the convex weights that maximise --measure on them fuse RUNS")
    p.add_argument("--tune-qrels", help="qrels of the training queries")
    p.add_argument("--measure", **declared.option("fusion", "measure"))
    p.add_argument("--step", **declared.option("fusion", "step"))
    p.add_argument("--depth", type=positive_int, default=DEPTH)
    p.add_argument("--tag")
    add_duplicates_option(p)
    p.set_defaults(func=cmd_fuse)

    p = sub.add_parser("settings", help="the settings reference: key, type and range, default, meaning")
    p.add_argument("sections", nargs="*", help="only these sections (default: every declared one)")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("cache", help="list cached indexes, or prune those a newer version replaced")
    p.add_argument("action", choices=["list", "prune"])
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    p.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                   help="prune: also remove indexes unused for this many days")
    p.add_argument("--dry-run", action="store_true", help="prune: only list what would be removed")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("regressions", help="the reproduction matrix: rerun checked-in experiments, ✓/✗ per figure")
    p.add_argument("--config", default="configs/regressions.yaml")
    p.add_argument("--tags", help="only experiments with one of these tags, comma-separated (e.g. lexical)")
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    p.add_argument("-o", "--output", default="out/regressions")
    p.set_defaults(func=cmd_regressions)

    p = sub.add_parser("run", help="the end-to-end pipeline from a configuration file")
    p.add_argument("--config", default="configs/demo.toml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override, e.g. lexical.depth=100")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a grid of settings, e.g. glow.model.weight_alpha=0.25,0.5,1 or preset=a,b ([presets.<name>])")
    p.add_argument("--select-on", choices=["validation"],
                   help="train every grid point, keep the best on the validation queries carved from the training "
                        "split, run the pipeline once with it (without: every point is a full run)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("zero-shot", help="train once, evaluate every system on a list of collections: one table")
    p.add_argument("--config", default="configs/zero-shot.toml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override, e.g. twbert.epochs=2")
    p.add_argument("--train", help="the training collection (overrides zero_shot.train)")
    p.add_argument("--train-split", help="its split (overrides zero_shot.train_split)")
    p.add_argument("--collections", help="comma-separated collections, each on its test split or "
                   "name@split (overrides zero_shot.collections)")
    p.add_argument("-o", "--output", help="output folder (overrides output.dir)")
    p.set_defaults(func=cmd_zero_shot)

    # the neural models' commands (their modules defer torch to the commands themselves)
    add_twbert_command(sub)
    add_glow_command(sub)
    add_rerank_commands(sub)
    return parser


class _AddMeasures(argparse.Action):
    """``-m`` repeated adds measures (``-m nDCG@10 -m AP``, as trec_eval's ``-m``): the last one alone was kept
    before, silently.  The first ``-m`` replaces the default list."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest)
        setattr(namespace, self.dest, values if given is self.default else f"{given} {values}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from irglow.data.irds import DatasetUnavailableError
    from irglow.data.trec import FormatError
    from irglow.index.jvm import JavaNotFoundError

    from irglow.utils import distributed

    # under torchrun an error names the rank that met it (torchrun's own summary names the rank that exited)
    rank_note = f" (rank {os.environ.get('RANK')} of {os.environ.get('WORLD_SIZE')})" if distributed.launched() else ""
    try:
        if distributed.launched():
            distributed.join()
            if not getattr(args.func, "collective", False):  # its work does not split: rank 0's alone
                return distributed.on_main(lambda: args.func(args))
        return args.func(args)
    except (FormatError, JavaNotFoundError, DatasetUnavailableError, FileNotFoundError, NotADirectoryError, KeyError,
            ValueError) as e:
        print(f"irglow {args.command}{rank_note}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        where = e.filename or "the output folder"
        message = e.strerror if e.strerror and "no space left" in e.strerror.lower() and e.strerror != \
            "No space left on device" else f"no space left on the device holding {where}"
        print(f"irglow {args.command}{rank_note}: error: {message}; outputs are written atomically, so nothing half-written "
              f"was left", file=sys.stderr)
        return 2


def entry() -> None:
    """Console-script entry: exit without the JVM + torch teardown (see ``jvm.exit_process``)."""
    from irglow.index.jvm import exit_process

    try:
        code = main()
    except BrokenPipeError:  # `irglow compare … | head -2`: the reader left; exit quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        code = 141
    except KeyboardInterrupt:
        print("interrupted; finished outputs are complete, unfinished ones were not written", file=sys.stderr)
        code = 130
    exit_process(code)


if __name__ == "__main__":
    entry()
