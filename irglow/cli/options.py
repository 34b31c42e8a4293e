"""What several commands' parsers share: the collection and index options, ``--duplicates``, the ``train``
sub-command every model has, and :func:`command`, the handler that imports a command's code only when it runs."""

from __future__ import annotations

import argparse
import importlib

from irglow.defaults import STEMMER, STEMMERS
from irglow.settings import positive_int


class Command:
    """A command's function named as ``"irglow.commands.search:cmd_search"`` and imported when called: ``irglow
    --help`` or ``irglow search`` does not import what ``irglow glow train`` needs (torch, transformers, pandas).
    Its ``repr`` is that name, which is what a run's manifest records of it."""

    def __init__(self, target: str) -> None:
        self.target = target

    def resolve(self):
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def collective(self) -> bool:
        """Whether every ``torchrun`` rank runs it (:func:`irglow.utils.distributed.collective`)."""
        return getattr(self.resolve(), "collective", False)

    def __call__(self, args: argparse.Namespace) -> int:
        return self.resolve()(args)

    def __repr__(self) -> str:
        return self.target


def command(target: str) -> Command:
    """``p.set_defaults(func=command("irglow.commands.search:cmd_search"))``."""
    return Command(target)


def add_data_dir_option(p: argparse.ArgumentParser) -> None:
    """``--data-dir``: where a command finds (or builds) its collection's index."""
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")


def add_config_options(p: argparse.ArgumentParser, default: str | None, help: str, example: str) -> None:
    """``--config FILE`` and ``--set KEY=VALUE`` (repeatable): a configuration and its overrides, for ``run``,
    ``zero-shot`` and every ``train``."""
    p.add_argument("--config", default=default, help=help)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"override, e.g. {example}")


def add_data_options(p: argparse.ArgumentParser, split: bool = True) -> None:
    p.add_argument("data", help="'demo', a BEIR folder, or an ir_datasets id")
    if split:
        p.add_argument("--split", default="test", help="queries/qrels split (default: test)")
    add_data_dir_option(p)


def add_index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fields", nargs="*", default=None, help="document fields to index (default: all)")
    p.add_argument("--stemmer", default=STEMMER, choices=list(STEMMERS),
                   help=f"the analyzer's stemmer (default {STEMMER})")
    p.add_argument("--keep-stopwords", action="store_true",
                   help="index stopwords too (default: Lucene's English list is removed)")
    p.add_argument("--threads", type=lambda t: positive_int(t, 0), default=0,
                   help="indexing threads (0, the default: every core this process may use)")


def add_duplicates_option(p: argparse.ArgumentParser) -> None:
    """``--duplicates``, which a run file's repeated-line error suggests: every command reading runs has it."""
    p.add_argument("--duplicates", default="error", choices=["error", "keep-max"],
                   help="a repeated (query, document) line in a run: stop (default) or keep the highest score")


def add_train_parser(group: argparse._SubParsersAction, help: str, func: Command, *, config: str | None,
                     config_help: str, example: str) -> argparse.ArgumentParser:
    """``… train DATA --out DIR [--split] [--config] [--set KEY=VALUE …] [--no-resume] [--data-dir]``: one
    shape for every trainer, so a training command learnt for one model works for the others."""
    t = group.add_parser("train", help=help)
    t.add_argument("data", help="'demo', a BEIR folder, or an ir_datasets id")
    t.add_argument("--split", default="train", help="the split trained on (default: train)")
    t.add_argument("--out", required=True, help="training directory (checkpoint/, the best model)")
    add_config_options(t, config, f"{config_help} (default: {config})", example)
    t.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint is there")
    add_data_dir_option(t)
    t.set_defaults(func=func)
    return t
