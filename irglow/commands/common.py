"""What several commands share: the collection and index options, opening the index, a list of numbers."""

from __future__ import annotations

import argparse

from irglow.defaults import STEMMER, STEMMERS
from irglow.settings import positive_int


def add_data_options(p: argparse.ArgumentParser, split: bool = True) -> None:
    p.add_argument("data", help="'demo', a BEIR folder, or an ir_datasets id")
    if split:
        p.add_argument("--split", default="test", help="queries/qrels split (default: test)")
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")


def add_index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fields", nargs="*", default=None, help="document fields to index (default: all)")
    p.add_argument("--stemmer", default=STEMMER, choices=list(STEMMERS),
                   help=f"the analyzer's stemmer (default {STEMMER})")
    p.add_argument("--keep-stopwords", action="store_true",
                   help="index stopwords too (default: Lucene's English list is removed)")
    p.add_argument("--threads", type=lambda t: positive_int(t, 0), default=0,
                   help="indexing threads (0, the default: every core this process may use)")


def open_index(args):
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index

    cfg = IndexConfig(fields=tuple(args.fields) if args.fields else None, stemmer=args.stemmer,
                      keep_stopwords=args.keep_stopwords, threads=args.threads)
    return build_index(load_collection(args.data), cfg, root=args.data_dir, force=getattr(args, "force", False))


def numbers(text: str | None, option: str) -> list[float]:
    """A comma-separated list of finite numbers given to ``option``; anything else is an error naming it."""
    import math

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
