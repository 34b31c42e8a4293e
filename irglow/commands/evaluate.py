"""``irglow eval`` and ``compare``: run files scored with ir_measures, compared with significance tests (the
comparison :mod:`irglow.commands.report` shows too)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from irglow.commands.common import numbers
from irglow.data.collection import load_collection
from irglow.data.sources import display_name
from irglow.data.trec import read_qrels
from irglow.eval import significance as sig
from irglow.eval.compare import compare, evaluate_files
from irglow.eval.measures import parse_measures
from irglow.eval.plots import plot_comparison, plot_pairs
from irglow.utils.atomic import atomic_write_text, check_not_input, check_writable, is_stdout


def _qrels(args):
    if args.qrels:
        return read_qrels(args.qrels)
    if not args.data:
        raise SystemExit("give --qrels FILE or --data DATA [--split S]")
    return load_collection(args.data).qrels(args.split)


def _read_runs(args, qrels) -> dict:
    """The runs named on the command line, keyed by one naming rule for ``eval`` and ``compare``, read and
    evaluated in parallel processes (only their per-query values come back)."""
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
    runs = _read_runs(args, qrels)
    baseline = args.baseline or _default_baseline(list(runs))
    risk_alphas = numbers(args.risk_alpha, "--risk-alpha")
    return compare(runs, qrels, args.measures, baseline=baseline, alpha=args.alpha, test=args.test,
                   correction=args.correction, permutations=args.permutations, seed=args.seed, ci=args.ci,
                   judged=not args.no_judged, judged_only=args.judged_only, risk_alphas=risk_alphas, pairs=args.pairs)


def pairs_heatmap_path(output: str | None) -> Path:
    """Where ``--pairs all`` writes its heatmap without ``--heatmap``: ``<-o without suffix>-pairs.png`` beside
    the table, or ``pairs.png`` (what the option's help says)."""
    return Path(output).with_suffix("").with_name(Path(output).stem + "-pairs.png") if output else Path("pairs.png")


def cmd_compare(args) -> int:
    inputs = [*args.runs, args.qrels]
    for option, path in (("-o", args.output), ("--plot", args.plot), ("--heatmap", args.heatmap)):
        if path:  # before any work: an unwritable folder is said now, not after the table was printed
            check_writable(check_not_input(path, inputs, option, data=args.data))
    qrels = _qrels(args)
    cmp = _comparison(args, qrels)
    text = cmp.render(args.format)
    if is_stdout(args.output):  # -o -: the table once, in its format, on standard output
        pass
    elif args.format in ("markdown", "md"):  # the terminal's width: CI stacked, wide tables in blocks, prose wrapped
        print(cmp.to_terminal(shutil.get_terminal_size((100, 24)).columns))
    else:
        print(text)
    if args.output:
        atomic_write_text(args.output, text)
    if args.plot:
        plot_comparison(cmp, args.plot)
    if args.pairs:
        heatmap = Path(args.heatmap) if args.heatmap else pairs_heatmap_path(args.output)
        written = plot_pairs(cmp, heatmap)
        if written is not None:
            print(f"pairs heatmap: {written}", file=sys.stderr)
        else:  # say why there is none, instead of "pairs heatmap: None"
            why = ("one run has no pair" if len(cmp.means) < 2 else
                   f"{cmp.n_queries} quer{'y' if cmp.n_queries == 1 else 'ies'} are fewer than "
                   f"{sig.min_queries(cmp.alpha)}, the fewest on which a paired test can reach p < {cmp.alpha}")
            print(f"--pairs all: no Tukey HSD table and no heatmap: {why}", file=sys.stderr)
    return 0


def _stem(path: str) -> str:
    """``runs/bm25.run.gz`` → ``bm25``: the file name without ``.gz`` and its extension (``-``: ``stdin``)."""
    name = Path(display_name(path)).name
    return Path(name[:-3] if name.endswith(".gz") else name).stem


def run_name(path: str, all_paths: list[str]) -> str:
    """A run's row name: its file stem, or its path (without extension) where two files share a stem."""
    stem = _stem(path)
    if sum(_stem(p) == stem for p in all_paths) == 1:
        return stem
    return str(Path(path).parent / stem)
