"""``irglow fuse``: a hybrid of run files — reciprocal-rank or normalised-score fusion, weights tuned or per query."""

from __future__ import annotations

from pathlib import Path

from irglow import settings as declared
from irglow.commands.common import numbers
from irglow.config import write_run_manifest
from irglow.data.trec import read_qrels
from irglow.runs.fusion import fuse, tune_weights
from irglow.runs.qpp import fuse_weighted, looks_dense, qpp_weights
from irglow.runs.trec import Run, check_token
from irglow.utils.atomic import atomic_write_text, check_not_input, check_writable, is_stdout, say_written


def cmd_fuse(args) -> int:
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
    weights = numbers(args.weights, "--weights") or None
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
    write_run_manifest(output, {"fuse": {k: v for k, v in vars(args).items() if k != "func"}},
                       weights=weights)
    shown = ", ".join(f"{Path(p).stem} {w:g}" for p, w in zip(args.runs, weights or [1.0] * len(args.runs)))
    say_written(f"{args.method}{'' if args.method == 'rrf' else ' ' + args.norm} of {shown}{note}", output)
    return 0


def _fuse_per_query(args, runs, output: Path, tag: str) -> int:
    """``irglow fuse --per-query``: reciprocal-rank fusion with each query's run weights from the runs' own scores
    (irglow/runs/qpp.py; nothing judged is read), the weights written beside the run as ``<run>.weights.tsv``."""
    names = [Path(p).stem for p in args.runs]
    for run, name in zip(runs, names):
        run.tag = name
    if len(set(names)) != len(names):
        raise SystemExit(f"irglow fuse: --per-query needs runs with distinct file names, not {names}")
    per_query = qpp_weights(runs, [looks_dense(r) for r in runs], args.per_query)
    fused = fuse_weighted(runs, per_query, args.k, args.depth, tag)
    fused.write(output)
    table = Path(f"{tag}.weights.tsv") if is_stdout(output) else output.with_name(output.name + ".weights.tsv")
    atomic_write_text(table, "query\t" + "\t".join(names) + "\n" + "".join(
        f"{q}\t" + "\t".join(f"{w:.6g}" for w in ws) + "\n" for q, ws in per_query.items()))
    args.method = "rrf"
    write_run_manifest(output, {"fuse": {k: v for k, v in vars(args).items() if k != "func"}},
                       weights_per_query=str(table))
    say_written(f"rrf of {', '.join(names)}, weighted per query ({args.per_query})", output, f" (weights: {table})")
    return 0
