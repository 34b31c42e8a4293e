"""``irglow cache``: the cached indexes listed, or those a newer version replaced pruned."""

from __future__ import annotations

from irglow.index.cache import cached_indexes, describe, prunable, remove


def cmd_cache(args) -> int:
    indexes = cached_indexes(args.data_dir)
    if args.action == "list":
        print(describe(indexes) if indexes else "no cached indexes")
        return 0
    if args.older_than is not None and not (args.older_than >= 0 and args.older_than != float("inf")):
        raise SystemExit(f"--older-than {args.older_than:g}: give a number of days >= 0")
    doomed = prunable(indexes, args.older_than)
    if not doomed:
        print("nothing to prune: every cached index is the latest of its source and settings")
        return 0
    print(describe(doomed))
    if args.dry_run:
        print(f"{len(doomed)} indexes would be removed (--dry-run)")
        return 0
    print(f"removed {len(doomed)} indexes, {remove(doomed) / 2**20:.1f} MiB freed")
    return 0
