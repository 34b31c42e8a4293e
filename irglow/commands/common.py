"""What several commands share: opening the index their options name, a list of numbers."""

from __future__ import annotations

import math

from irglow.data.collection import load_collection
from irglow.index.lucene_index import IndexConfig, LuceneIndex, build_index


def open_index(args, short: bool = False) -> LuceneIndex:
    """The index of ``args.data`` built (or reused) with the index options
    (:func:`irglow.cli.options.add_index_options`); ``short``: the command's work is short (a few queries,
    :func:`~irglow.index.lucene_index.build_index`)."""
    cfg = IndexConfig(fields=tuple(args.fields) if args.fields else None, stemmer=args.stemmer,
                      keep_stopwords=args.keep_stopwords, threads=args.threads)
    return build_index(load_collection(args.data), cfg, root=args.data_dir, force=getattr(args, "force", False),
                       short=short)


def numbers(text: str | None, option: str) -> list[float]:
    """A comma-separated list of finite numbers given to ``option``; anything else is an error naming it."""
    out = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            value = float(item)
        except ValueError:
            raise SystemExit(f"{option} {text!r}: {item.strip()!r} is not a number (give comma-separated numbers, "
                             f"e.g. {option} 0.7,0.3)") from None
        if not math.isfinite(value):
            raise SystemExit(f"{option} {text!r}: {item.strip()!r} is not a finite number")
        out.append(value)
    return out


def writes_folder(option: str):
    """A command that writes the folder its ``option`` names for the whole of its work (a trainer's ``--out``: its
    checkpoints, ``best`` and manifest): held as a run holds its output folder
    (:func:`irglow.utils.atomic.output_lock`; rank 0's under ``torchrun``), so a second command into the same folder
    waits instead of interleaving checkpoints."""
    import functools

    from irglow.utils.atomic import output_lock

    def wrap(command):
        @functools.wraps(command)  # keeps the collective mark
        def held(args):
            with output_lock(getattr(args, option)):
                return command(args)
        return held
    return wrap
