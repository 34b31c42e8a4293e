"""``irglow <command>``: one entry point for every command, each registered from its own module
(:mod:`irglow.commands` and the models' ``cli`` modules); heavy imports happen inside the commands."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from irglow.commands import collection, evaluate, experiment, fuse, reference, search
from irglow.models.glow.cli import add_glow_command
from irglow.models.rerank.cli import add_rerank_commands
from irglow.models.twbert.cli import add_twbert_command

# the commands in the order ``irglow --help`` lists them
COMMANDS = (collection.register_index, search.register, evaluate.register, collection.register_qrels, fuse.register,
            reference.register, experiment.register, add_twbert_command, add_glow_command, add_rerank_commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irglow", description="irglow: lexical baselines, neural rankers on top of "
                                     "them and honest comparison tables, one command at a time")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from irglow.data.irds import DatasetUnavailableError
    from irglow.data.trec import FormatError
    from irglow.index.jvm import JavaNotFoundError

    from irglow.utils import distributed

    # under torchrun an error names the rank that met it (torchrun's own summary names the rank that exited)
    rank_note = f" (rank {os.environ.get('RANK')} of {os.environ.get('WORLD_SIZE')})" if distributed.launched() else ""
    where = f"irglow {args.command}{rank_note}"
    try:
        if distributed.launched():
            distributed.join()
            distributed.agree("command lines", {k: v for k, v in vars(args).items() if k != "func"})
            if not getattr(args.func, "collective", False):  # its work does not split: rank 0's alone
                return distributed.on_main(lambda: args.func(args))
        return args.func(args)
    except (FormatError, JavaNotFoundError, DatasetUnavailableError, KeyError, ValueError) as e:
        print(f"{where}: error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # a command's own refusal: one line with the same prefix as every other error
        if isinstance(e.code, str):
            raise SystemExit(f"{where}: error: {_without_prefix(e.code, args.command)}") from None
        raise
    except BrokenPipeError:  # the reader left (`irglow compare … | head`): entry() exits quietly
        raise
    except OSError as e:
        print(f"{where}: error: {os_error(e)}", file=sys.stderr)
        return 2


def _without_prefix(message: str, command: str) -> str:
    """A message that already names the command (``irglow fuse: …``) without that name: the caller adds it."""
    for prefix in (f"irglow {command}: error: ", f"irglow {command}: ", "irglow: error: ", "irglow: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def os_error(e: OSError) -> str:
    """What a failed read or write is told: the file and the reason in words, and what to do where that is known
    (a read-only or unwritable place, a full disk, a folder where a file belongs)."""
    if e.filename is None and e.errno != errno.ENOSPC:
        return str(e)
    where = e.filename or "the output folder"
    reason = e.strerror or str(e)
    if e.errno == errno.ENOSPC:
        reason = e.strerror if e.strerror and "no space left" in e.strerror.lower() and \
            e.strerror != "No space left on device" else f"no space left on the device holding {where}"
        return f"{reason}; outputs are written atomically, so nothing half-written was left"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"{where}: {reason}: irglow cannot write there; choose a writable place (-o, [output] dir, "
                f"--data-dir or $IRGLOW_DATA) or change its permissions; nothing half-written was left")
    return f"{where}: {reason}"


def entry() -> None:
    """Console-script entry: exit without the JVM + torch teardown (see ``jvm.exit_process``)."""
    from irglow.index.jvm import exit_process

    try:
        code = main()
    except BrokenPipeError:  # `irglow compare … | head -2`: the reader left; exit quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        code = 141
    except KeyboardInterrupt:
        print("interrupted; finished outputs are complete, unfinished ones were not written", file=sys.stderr)
        code = 130
    exit_process(code)
