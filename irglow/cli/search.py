"""``irglow search``: its options (:mod:`irglow.commands.search` does the work)."""

from __future__ import annotations

import argparse

from irglow.cli.options import add_data_options, add_index_options, command
from irglow.defaults import BM25_B, BM25_K1, DEPTH, QLD_MU
from irglow.lexical.systems import BUILT_IN, lexical_systems
from irglow.settings import positive_int


def _system(name: str) -> str:
    """``--system``: irglow's lexical systems and the registered ones (loaded only when a name is not irglow's)."""
    if name in BUILT_IN:
        return name
    known = lexical_systems()
    if name not in known:
        raise argparse.ArgumentTypeError(f"{name!r} is not a lexical system; choose from {', '.join(known)}")
    return name


def register(sub) -> None:
    """Add ``irglow search`` to ``irglow``'s sub-commands."""
    p = sub.add_parser("search", help="lexical run: bm25, bm25-mf, bm25f, tfidf, qld or a registered system "
                                        "(+ --rm3)")
    add_data_options(p)
    add_index_options(p)
    p.add_argument("--system", default="bm25", type=_system,
                   help=f"the lexical system: {', '.join(BUILT_IN)} or one another package registers "
                        f"(irglow.lexical entry points) (default: bm25)")
    p.add_argument("--k1", type=float, default=BM25_K1, help=f"BM25's k1 (default: {BM25_K1})")
    p.add_argument("--b", type=float, default=BM25_B, help=f"BM25's b (default: {BM25_B})")
    p.add_argument("--mu", type=float, default=QLD_MU, help="qld's Dirichlet prior μ (default: %(default)s)")
    p.add_argument("--depth", type=positive_int, default=DEPTH,
                   help=f"documents retrieved per query (default: {DEPTH})")
    p.add_argument("--field-weight", action="append", metavar="FIELD=W", help="bm25-mf/bm25f field weight")
    p.add_argument("--rm3", action="store_true",
                   help="expand each query by RM3 (bm25 and bm25-mf; the run <system>-rm3)")
    p.add_argument("--topics", help="TREC/TSV/BEIR topics file instead of the collection's queries")
    p.add_argument("--query", help="search one query and print the top hits")
    p.add_argument("--show", type=positive_int, default=10, help="with --query: the hits printed (default: 10)")
    p.add_argument("--tag", default=None, help="the run's tag and file name (default: the system's name)")
    p.add_argument("-o", "--output", help="run file (default runs/<tag>.run)")
    p.set_defaults(func=command("irglow.commands.search:cmd_search"))
