"""Sub-commands of the neural models, registered into ``irglow``'s parser (imports deferred), and the
``train`` sub-command every model shares."""

from __future__ import annotations

import argparse
from typing import Callable

def add_duplicates_option(p: argparse.ArgumentParser) -> None:
    """``--duplicates``, which a run file's repeated-line error suggests: every command reading runs has it."""
    p.add_argument("--duplicates", default="error", choices=["error", "keep-max"],
                   help="a repeated (query, document) line in a run: stop (default) or keep the highest score")


def add_train_parser(group: argparse._SubParsersAction, help: str, func: Callable, *, config: str | None,
                     config_help: str, example: str) -> argparse.ArgumentParser:
    """``… train DATA --out DIR [--split] [--config] [--set KEY=VALUE …] [--no-resume] [--data-dir]``: one
    shape for every trainer, so a training command learnt for one model works for the others."""
    t = group.add_parser("train", help=help)
    t.add_argument("data", help="'demo', a BEIR folder, or an ir_datasets id")
    t.add_argument("--split", default="train", help="the split trained on (default: train)")
    t.add_argument("--out", required=True, help="training directory (checkpoint/, the best model)")
    t.add_argument("--config", default=config, help=f"{config_help} (default: {config})")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"e.g. {example}")
    t.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint is there")
    t.add_argument("--data-dir", help="where indexes and statistics are kept")
    t.set_defaults(func=func)
    return t
