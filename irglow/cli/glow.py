"""``irglow glow train | search | explain``: their options (:mod:`irglow.commands.glow` does the work)."""

from __future__ import annotations

import argparse

from irglow.cli.options import add_data_dir_option, add_train_parser, command
from irglow.defaults import DEPTH
from irglow.settings import positive_int


def add_glow_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("glow", help="GLOW/BISON BM25-weighted attention encoders: train, search, explain")
    g = p.add_subparsers(dest="glow_command", required=True)

    add_train_parser(g, "train a Siamese encoder (variant: bert, glow, glow-idf, glow-tw, glow-us, glow-wt)",
                     command("irglow.commands.glow:cmd_train"),
                     config="configs/glow.toml", config_help="TOML/YAML with a [glow] section",
                     example="model.variant=glow-idf")

    s = g.add_parser("search", help="encode the corpus (embeddings on disk), faiss search → TREC run")
    s.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
    s.add_argument("--split", default="test", help="the queries searched (default: test)")
    s.add_argument("--model", required=True, help="a trained GLOW/BERT model folder (irglow glow train)")
    s.add_argument("--depth", type=positive_int, default=DEPTH, help=f"documents per query (default: {DEPTH})")
    s.add_argument("--faiss", choices=["flat", "hnsw", "ivf", "ivfpq"], default="flat",
                   help="flat: exact; hnsw; ivf (clusters, nprobe 128); ivfpq (1/16 of flat's memory, for corpora whose "
                        "flat index would not fit; recall against flat in BENCHMARKS.md; default: flat)")
    s.add_argument("--shard-rows", type=positive_int, default=None,
                   help="search an index of this many vectors at a time and merge the tops (a corpus whose one index "
                        "does not fit in memory)")
    s.add_argument("--field-tokens", action="append", default=[], metavar="FIELD=N",
                   help="a field's token budget at search time (repeatable; default: the model's own), e.g. "
                        "text=256; '*=N' sets the fields not named (the title's default)")
    s.add_argument("--workers", type=int, default=0, metavar="N",
                   help="processes that read and featurize documents while the model encodes (default: 0, this "
                        "process, featurizing ahead on a thread while a GPU encodes; each worker starts its own JVM)")
    s.add_argument("--read-all-fields", action="store_true",
                   help="a one-field model reads every field of the collection in its segment (title + text), as "
                        "models the pipeline trains on a one-field collection do")
    s.add_argument("-o", "--output", required=True, help="the run file to write")
    add_data_dir_option(s)
    s.set_defaults(func=command("irglow.commands.glow:cmd_search"))

    e = g.add_parser("explain", help="top attended words of a document per field, models side by side")
    e.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
    e.add_argument("--doc", required=True, help="document id")
    e.add_argument("--model", action="append", required=True, metavar="NAME=DIR",
                   help="a model to explain, named (repeat it to compare models side by side)")
    e.add_argument("--top", type=int, default=5, help="words shown per field (default: 5)")
    add_data_dir_option(e)
    e.set_defaults(func=command("irglow.commands.glow:cmd_explain"))
