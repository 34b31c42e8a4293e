"""``irglow fuse``: its options (:mod:`irglow.commands.fuse` does the work)."""

from __future__ import annotations

from irglow import settings as declared
from irglow.cli.options import add_duplicates_option, command
from irglow.defaults import DEPTH, RRF_K
from irglow.settings import positive_int


def register(sub) -> None:
    """Add ``irglow fuse`` to ``irglow``'s sub-commands."""
    p = sub.add_parser("fuse", help="hybrid run: reciprocal-rank or normalised-score fusion of runs")
    p.add_argument("runs", nargs="+", help="TREC run files (the same queries)")
    p.add_argument("-o", "--output", required=True, help="the fused run file to write")
    # the declared default is applied in cmd_fuse, so --per-query can tell a --method given from the default
    p.add_argument("--method", **declared.option("fusion", "method", default=None))
    p.add_argument("--norm", **declared.option("fusion", "norm"))
    p.add_argument("--weights", help="comma-separated, one per run (default: 1 each)")
    p.add_argument("--per-query", choices=["qpp", "diverse", "qpp+diverse"],
                   help="RRF with each query's run weights from the runs' own scores, no judgments: qpp (each run's "
                        "NQC or top-similarity spread, as a percentile of its own), diverse (runs repeating each "
                        "other share one say), or both; the weights go beside the run (<run>.weights.tsv)")
    p.add_argument("--k", type=float, default=RRF_K, help=f"RRF constant (default {RRF_K:g})")
    p.add_argument("--tune-runs", nargs="+", help="runs of the *training* queries, same systems and order as RUNS: "
                   "the convex weights that maximise --measure on them fuse RUNS")
    p.add_argument("--tune-qrels", help="qrels of the training queries")
    p.add_argument("--measure", **declared.option("fusion", "measure"))
    p.add_argument("--step", **declared.option("fusion", "step"))
    p.add_argument("--depth", type=positive_int, default=DEPTH, help=f"documents kept per query (default: {DEPTH})")
    p.add_argument("--tag", help="the fused run's tag (default: the output file's name)")
    add_duplicates_option(p)
    p.set_defaults(func=command("irglow.commands.fuse:cmd_fuse"))
