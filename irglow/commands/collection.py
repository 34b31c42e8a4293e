"""``irglow index``, ``stats`` and ``qrels``: a collection's index, its statistics and its judgments."""

from __future__ import annotations

from irglow.commands.common import open_index
from irglow.data.collection import load_collection
from irglow.data.trec import write_qrels
from irglow.index.stats import CollectionStats
from irglow.utils.atomic import check_not_input, is_stdout


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
    stats = CollectionStats.load(open_index(args))
    print(f"statistics: {stats.path}")
    print(f"N = {stats.N}, terms = {len(stats.terms)}")
    for f in stats.meta["fields"]:
        print(f"  {f:>12}: docCount {stats.doc_count(f):>9}  avgdl {stats.avgdl(f):9.3f}")
    return 0


def cmd_qrels(args) -> int:
    collection = load_collection(args.data)
    output = check_not_input(args.output or f"qrels/{collection.name}.{args.split}.qrels", [], data=args.data)
    path = write_qrels(collection.qrels(args.split), output)
    if not is_stdout(path):  # -o -: the judgments themselves are the output
        print(path)
    return 0
