"""``irglow eval``, ``compare`` and ``report``: run files scored with ir_measures, compared with significance
tests, browsed in one HTML page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irglow import settings as declared
from irglow.eval.defaults import DEFAULT_MEASURES
from irglow.models.cli import add_duplicates_option
from irglow.settings import non_negative_int, positive_int
from irglow.commands.common import numbers


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
    risk_alphas = numbers(args.risk_alpha, "--risk-alpha")
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
    """``runs/bm25.run.gz`` → ``bm25``: the file name without ``.gz`` and its extension (``-``: ``stdin``)."""
    from irglow.data.sources import display_name

    name = Path(display_name(path)).name
    return Path(name[:-3] if name.endswith(".gz") else name).stem


def run_name(path: str, all_paths: list[str]) -> str:
    """A run's row name: its file stem, or its path (without extension) where two files share a stem."""
    stem = _stem(path)
    if sum(_stem(p) == stem for p in all_paths) == 1:
        return stem
    return str(Path(path).parent / stem)


class _AddMeasures(argparse.Action):
    """``-m`` repeated adds measures (``-m nDCG@10 -m AP``, as trec_eval's ``-m``): the last one alone was kept
    before, silently.  The first ``-m`` replaces the default list."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest)
        setattr(namespace, self.dest, values if given is self.default else f"{given} {values}")


def register(sub) -> None:
    """Add this module's commands to ``irglow``'s sub-commands."""
    for name, func, help_ in (("eval", cmd_eval, "evaluate run files with any ir_measures measure (and NCG@k)"),
                              ("compare", cmd_compare, "comparison table with significance marks against a baseline"),
                              ("report", cmd_report, "a results browser in one HTML file: overview, queries, "
                                                     "side-by-side rankings")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("runs", nargs="+", help="TREC run files")
        p.add_argument("--qrels", help="TREC qrels file")
        p.add_argument("--data", help="or: a collection whose qrels to use")
        p.add_argument("--split", default="test",
                       help="with --data: the split whose qrels judge the runs (default: test)")
        p.add_argument("-m", "--measures", action=_AddMeasures, default=" ".join(DEFAULT_MEASURES), metavar="MEASURES",
                       help=f"ir_measures names; repeat it or list them: -m nDCG@10 -m AP, -m 'nDCG@10 AP' "
                            f"(default: {' '.join(DEFAULT_MEASURES)}, as the pipeline)")
        p.add_argument("--format", default="markdown", choices=["markdown", "csv", "latex"],
                       help="the table's format (default: markdown)")
        add_duplicates_option(p)
        p.add_argument("--judged-only", action="store_true",
                       help="also score condensed lists (unjudged documents removed; columns marked ')")
        p.add_argument("--no-judged", action="store_true", help="leave out the Judged@10 column")
        if name == "report":
            p.add_argument("--depth", type=positive_int, default=10, help="documents per run shown in the query view (default: 10)")
            p.add_argument("--topics", help="query texts from a topics file (default: the collection's)")
            p.add_argument("--twbert", action="append", metavar="RUN=MODEL_DIR",
                           help="show TW-BERT's learned term weights for this run's queries")
            p.add_argument("--title", help="the page's title (default: irglow: the run names)")
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
            # the options of the pipeline's [eval] keys, from their one declaration
            for key in ("alpha", "test", "correction", "permutations", "seed"):
                p.add_argument(f"--{key}", **declared.option("eval", key))
            p.add_argument("--ci", action="store_true", help="show Δ to the baseline with its 95%% CI in each cell")
            p.add_argument("--pairs", choices=["all"], help="all pairs: randomized Tukey HSD matrix, groups, heatmap")
            p.add_argument("--heatmap", help="where --pairs all writes its heatmap (default: <-o without its suffix>"
                                             "-pairs.png beside -o, else pairs.png)")
            p.add_argument("--risk-alpha", default="1,5", help="URisk/TRisk α values, comma-separated ('' for none; default: 1,5)")
            p.add_argument("-o", "--output", help="also write the table (compare) or the page (report: default "
                                                  "report.html) to this file")
            p.add_argument("--plot", help="write a bar chart (PNG/PDF/SVG)")
        p.set_defaults(func=func)
