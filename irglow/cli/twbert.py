"""``irglow twbert train | search | explain``: their options (:mod:`irglow.commands.twbert` does the work)."""

from __future__ import annotations

import argparse

from irglow.cli.options import add_data_dir_option, add_train_parser, command
from irglow.defaults import DEPTH
from irglow.settings import positive_int


def add_twbert_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("twbert", help="TW-BERT query term weighting: train, search, explain")
    tw = p.add_subparsers(dest="twbert_command", required=True)

    add_train_parser(tw, "train on a collection's split (BM25 candidates, qrels labels)",
                     command("irglow.commands.twbert:cmd_train"), config=None,
                     config_help="TOML/YAML with a [twbert] section", example="epochs=4, model.k3=8")

    s = tw.add_parser("search", help="run TW-BERT-weighted queries in Lucene → TREC run")
    s.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
    s.add_argument("--split", default="test", help="the queries searched (default: test)")
    s.add_argument("--model", required=True, help="a TW-BERT model directory")
    s.add_argument("--depth", type=positive_int, default=DEPTH, help=f"documents per query (default: {DEPTH})")
    s.add_argument("--rm3", action="store_true", help="two-pass: RM3 feedback terms, weighted by TW-BERT")
    s.add_argument("-o", "--output", required=True, help="the run file to write")
    add_data_dir_option(s)
    s.set_defaults(func=command("irglow.commands.twbert:cmd_search"))

    e = tw.add_parser("explain", help="print each n-gram of a query and its learned weight")
    e.add_argument("query", help="the query whose uni- and bi-gram weights are printed")
    e.add_argument("--model", default=None, help="model directory (default: untrained head on MiniLM)")
    e.add_argument("--data", default="demo", help="collection whose index analyzer to use (default: demo)")
    add_data_dir_option(e)
    e.set_defaults(func=command("irglow.commands.twbert:cmd_explain"))
