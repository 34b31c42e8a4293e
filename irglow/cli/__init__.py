"""``irglow <command>``: one entry point for every command.  Each command's options are declared in a module of
this package and its work done by :mod:`irglow.commands`, imported only when the command runs
(:func:`irglow.cli.options.command`): ``irglow search`` never imports what ``irglow glow train`` needs."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from irglow import __version__
from irglow.cli import collection, evaluate, experiment, fuse, reference, search
from irglow.cli.glow import add_glow_command
from irglow.cli.rerank import add_rerank_commands
from irglow.cli.twbert import add_twbert_command

# the commands in the order ``irglow --help`` lists them
COMMANDS = (collection.register_index, search.register, evaluate.register, collection.register_qrels, fuse.register,
            reference.register, experiment.register, add_twbert_command, add_glow_command, add_rerank_commands)


# one example per command, shown under its --help (what to copy first); a test checks every command has one
EXAMPLES = {
    "index": "irglow index demo --fields title body",
    "stats": "irglow stats demo",
    "search": "irglow search demo --system bm25f --query 'sleep apnea'\n  irglow search beir/scifact --split test "
              "--system qld --mu 500 -o runs/qld.run",
    "eval": "irglow eval runs/demo/bm25.run runs/demo/twbert.run --data demo:n_topics=120 -m nDCG@10 -m AP\n"
            "  zcat run.gz | irglow eval - --qrels qrels/test.qrels",
    "compare": "irglow compare runs/demo/*.run --data demo:n_topics=120 --baseline bm25 -o table.md "
               "--plot table.png",
    "report": "irglow report runs/demo/bm25.run runs/demo/twbert.run --data demo:n_topics=120 -o report.html",
    "qrels": "irglow qrels beir/scifact --split test -o qrels/scifact.test.qrels",
    "fuse": "irglow fuse runs/demo/bm25f.run runs/demo/glow.run --method rrf -o runs/hybrid.run",
    "settings": "irglow settings glow",
    "cache": "irglow cache prune --older-than 30 --dry-run",
    "regressions": "irglow regressions --tags lexical",
    "run": "irglow run --config configs/demo.toml --set lexical.depth=100",
    "zero-shot": "irglow zero-shot --set glow.enabled=true",
    "twbert": "irglow twbert train demo --out models/twbert",
    "twbert train": "irglow twbert train demo --out models/twbert --set epochs=2",
    "twbert search": "irglow twbert search demo --model models/twbert/best -o runs/twbert.run",
    "twbert explain": "irglow twbert explain 'sleep apnea treatment' --data demo --model models/twbert/best",
    "glow": "irglow glow train demo --out models/glow",
    "glow train": "irglow glow train demo --out models/glow --set epochs=1",
    "glow search": "irglow glow search demo --model models/glow/best -o runs/glow.run",
    "glow explain": "irglow glow explain demo --doc t000d01 --model glow=models/glow/best",
    "rerank": "irglow rerank runs/demo/bm25.run --data demo:n_topics=120 --model models/monobert/best "
              "-o runs/monobert.run",
    "monobert": "irglow monobert train demo --out models/monobert",
    "monobert train": "irglow monobert train demo --out models/monobert --set epochs=1",
    "monobert explain": "irglow monobert explain demo --model models/monobert/best --query 'sleep apnea' --doc t000d01",
    "nrmf": "irglow nrmf train demo --out models/nrmf",
    "nrmf train": "irglow nrmf train demo --out models/nrmf",
    "nrmf explain": "irglow nrmf explain demo --model models/nrmf/best --query 'sleep apnea' --doc t000d01",
}


class Parser(argparse.ArgumentParser):
    """argparse as a user meets it: a mistyped command or option gets "did you mean", and a wrong option of a
    sub-command is said with that sub-command's usage (argparse hands it up to ``irglow``'s own)."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self.prog != "irglow":  # the sub-command's: said here, with its usage
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message: str):
        super().error(message + _suggestion(message, self))


def _suggestion(message: str, parser: argparse.ArgumentParser) -> str:
    """"; did you mean 'search'?" for an invalid choice or an unknown option close to a known one."""
    import difflib
    import re

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        known = re.findall(r"'([^']*)'", choice.group(2))
        close = difflib.get_close_matches(choice.group(1), known, n=1)
    else:
        unknown = re.search(r"unrecognized arguments: (\S+)", message)
        given = unknown.group(1).split("=")[0] if unknown else ""
        close = difflib.get_close_matches(given, list(parser._option_string_actions), n=1) \
            if given.startswith("-") else []  # noqa: SLF001
    return f"; did you mean {close[0]!r}?" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="irglow", description="irglow: lexical baselines, neural rankers on top of them and honest "
                    "comparison tables, one command at a time")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log what each step does (INFO), not only warnings")
    parser.add_argument("--version", action="version", version=f"irglow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    _add_examples(parser, ())
    return parser


def _add_examples(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
    """Each command's example under its ``--help`` (:data:`EXAMPLES`)."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its sub-parsers here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                key = " ".join((*path, name))
                if key in EXAMPLES:
                    sub.epilog = "example:\n  " + EXAMPLES[key]
                    sub.formatter_class = argparse.RawDescriptionHelpFormatter
                _add_examples(sub, (*path, name))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from irglow.data.errors import DatasetUnavailableError
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
    if e.errno == errno.EFBIG and e.strerror == "File too large":  # the system's words: the limit named
        return (f"{where}: File too large: a file-size limit (ulimit -f, or the file system's) stopped it; outputs "
                f"are written atomically, so nothing half-written was left")
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"{where}: {reason}: irglow cannot write there; choose a writable place (-o, [output] dir, "
                f"--data-dir, data_dir in a configuration, or $IRGLOW_DATA) or change its permissions; nothing "
                f"half-written was left")
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
