"""``irglow index``, ``stats`` and ``qrels``: a collection's index, its statistics and its judgments."""

from __future__ import annotations

from irglow.commands.common import add_data_options, add_index_options, open_index


def cmd_index(args) -> int:
    index = open_index(args)
    print(index.path)
    print(f"documents: {index.meta['documents']}  fields: {', '.join(index.fields)} + contents  "
          f"empty (not indexed): {index.meta['skipped_empty']}")
    if "seconds_per_million" in index.meta:  # built by this call or an earlier one: what it cost
        print(f"built in {index.meta['build_seconds']:.1f} s on {index.meta['threads']} threads "
              f"({index.meta['seconds_per_million']:,.0f} s per million documents)")
    return 0


def cmd_stats(args) -> int:
    from irglow.index.stats import CollectionStats

    stats = CollectionStats.load(open_index(args))
    print(f"statistics: {stats.path}")
    print(f"N = {stats.N}, terms = {len(stats.terms)}")
    for f in stats.meta["fields"]:
        print(f"  {f:>12}: docCount {stats.doc_count(f):>9}  avgdl {stats.avgdl(f):9.3f}")
    return 0


def cmd_qrels(args) -> int:
    from irglow.data.collection import load_collection
    from irglow.data.trec import write_qrels
    from irglow.utils.atomic import check_not_input

    collection = load_collection(args.data)
    output = check_not_input(args.output or f"qrels/{collection.name}.{args.split}.qrels", [], data=args.data)
    path = write_qrels(collection.qrels(args.split), output)
    print(path)
    return 0


def register_index(sub) -> None:
    """``irglow index`` and ``stats``."""
    p = sub.add_parser("index", help="build (or reuse) the Lucene index of a collection")
    add_data_options(p, split=False)
    add_index_options(p)
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("stats", help="export collection statistics (N, df/cf per field, field lengths)")
    add_data_options(p, split=False)
    add_index_options(p)
    p.set_defaults(func=cmd_stats)


def register_qrels(sub) -> None:
    """``irglow qrels``."""
    p = sub.add_parser("qrels", help="write a collection's qrels into qrels/")
    add_data_options(p)
    p.add_argument("-o", "--output", help="the qrels file to write (default: qrels/<collection>.<split>.qrels)")
    p.set_defaults(func=cmd_qrels)
