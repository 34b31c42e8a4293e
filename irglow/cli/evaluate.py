"""``irglow eval``, ``compare`` and ``report``: their options (:mod:`irglow.commands.evaluate` and
:mod:`irglow.commands.report` do the work)."""

from __future__ import annotations

import argparse

from irglow import settings as declared
from irglow.cli.options import add_duplicates_option, command
from irglow.eval.defaults import DEFAULT_MEASURES
from irglow.settings import non_negative_int, positive_int


class _AddMeasures(argparse.Action):
    """``-m`` repeated adds measures (``-m nDCG@10 -m AP``, as trec_eval's ``-m``): the last one alone was kept
    before, silently.  The first ``-m`` replaces the default list."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest)
        setattr(namespace, self.dest, values if given is self.default else f"{given} {values}")


def register(sub) -> None:
    """Add ``irglow eval``, ``compare`` and ``report`` to ``irglow``'s sub-commands."""
    for name, func, help_ in (
            ("eval", "evaluate:cmd_eval", "evaluate run files with any ir_measures measure (and NCG@k)"),
            ("compare", "evaluate:cmd_compare", "comparison table with significance marks against a baseline"),
            ("report", "report:cmd_report", "a results browser in one HTML file: overview, queries, side-by-side "
                                            "rankings")):
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
        p.set_defaults(func=command(f"irglow.commands.{func}"))
