"""What several commands share: opening the index their options name, a list of numbers."""

from __future__ import annotations

import math

from irglow.data.collection import load_collection
from irglow.index.jvm import short_command
from irglow.index.lucene_index import INDEX_RECORD, IndexConfig, LuceneIndex, build_index, index_path


def open_index(args, short: bool = False) -> LuceneIndex:
    """The index of ``args.data`` built (or reused) with the index options
    (:func:`irglow.cli.options.add_index_options`).  ``short``: the command's work is short (a few queries), so
    its JVM compiles with C1 alone (:func:`irglow.index.jvm.short_command`) — unless the index is to be built
    first, which is long work."""
    cfg = IndexConfig(fields=tuple(args.fields) if args.fields else None, stemmer=args.stemmer,
                      keep_stopwords=args.keep_stopwords, threads=args.threads)
    collection, force = load_collection(args.data), getattr(args, "force", False)
    if short and not force and (index_path(collection, cfg, args.data_dir) / INDEX_RECORD).is_file():
        short_command()
    return build_index(collection, cfg, root=args.data_dir, force=force)


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
