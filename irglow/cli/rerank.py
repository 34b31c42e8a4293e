"""``irglow rerank`` and ``irglow monobert|nrmf train|explain``: their options (:mod:`irglow.commands.rerank` does
the work)."""

from __future__ import annotations

import argparse

from irglow import settings as declared
from irglow.cli.options import add_duplicates_option, add_train_parser, command
from irglow.models.rerank.builtin import TORCH_MODELS


def add_rerank_commands(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rerank", help="re-rank the top k of a run with a trained re-ranker (monoBERT, NRM-F or a "
                                          "registered kind)")
    r.add_argument("run", help="TREC run file to re-rank")
    r.add_argument("--model", required=True, help="a trained re-ranker's folder (its kind is read from it)")
    r.add_argument("--data", required=True, help="the run's collection: 'demo', a BEIR folder, or an ir_datasets id")
    r.add_argument("--split", default="test", help="the split whose query texts the run ranks (default: test)")
    r.add_argument("--depth", **declared.option("rerank", "depth"))
    r.add_argument("--batch-size", type=int, default=64, help="query-document pairs scored at once (default: 64)")
    r.add_argument("--tag", default=None, help="the re-ranked run's tag (default: <run tag>-<kind>)")
    r.add_argument("-o", "--output", required=True, help="the re-ranked run file to write")
    add_duplicates_option(r)
    r.set_defaults(func=command("irglow.commands.rerank:cmd_rerank"))
    for kind, title in ((name, m.title) for name, m in TORCH_MODELS.items()):  # irglow's kinds: its training loop
        p = sub.add_parser(kind, help=f"{title}: train, explain")
        g = p.add_subparsers(dest=f"{kind}_command", required=True)
        t = add_train_parser(g, f"train a {title} on a collection's judged queries",
                             command("irglow.commands.rerank:cmd_train"),
                             config="configs/rerank.toml", config_help=f"its [{kind}] section",
                             example="epochs=2, model.dim=128" if kind == "nrmf" else
                             "epochs=2, model.default_field_tokens=64")
        t.set_defaults(kind=kind)
        e = g.add_parser("explain", help="a query's documents: score, and its change without each field")
        e.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
        e.add_argument("--model", required=True, help="a trained model folder")
        e.add_argument("--query", required=True, help="query text")
        e.add_argument("--doc", action="append", required=True, help="document id (repeatable)")
        e.set_defaults(func=command("irglow.commands.rerank:cmd_explain"))
