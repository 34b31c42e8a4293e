"""``irglow index``, ``stats`` and ``qrels``: their options (:mod:`irglow.commands.collection` does the work)."""

from __future__ import annotations

from irglow.cli.options import add_data_options, add_index_options, command


def register_index(sub) -> None:
    """``irglow index`` and ``stats``."""
    p = sub.add_parser("index", help="build (or reuse) the Lucene index of a collection")
    add_data_options(p, split=False)
    add_index_options(p)
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.set_defaults(func=command("irglow.commands.collection:cmd_index"))

    p = sub.add_parser("stats", help="export collection statistics (N, df/cf per field, field lengths)")
    add_data_options(p, split=False)
    add_index_options(p)
    p.set_defaults(func=command("irglow.commands.collection:cmd_stats"))


def register_qrels(sub) -> None:
    """``irglow qrels``."""
    p = sub.add_parser("qrels", help="write a collection's qrels into qrels/")
    add_data_options(p)
    p.add_argument("-o", "--output", help="the qrels file to write (default: qrels/<collection>.<split>.qrels)")
    p.set_defaults(func=command("irglow.commands.collection:cmd_qrels"))
