"""``irglow cache``: the cached indexes and what the models folder keeps, listed; indexes a newer version replaced
and (with ``--older-than``) anything unused for that long, pruned."""

from __future__ import annotations

from irglow.index.cache import cached_indexes, describe, prunable, remove
from irglow.models.kept import describe_kept, kept, remove_kept, stale
from irglow.utils.paths import models_dir


def cmd_cache(args) -> int:
    indexes, models = cached_indexes(args.data_dir), kept()
    if args.action == "list":
        print(describe(indexes) if indexes else "no cached indexes")
        print(f"\n{models_dir()}:\n" + describe_kept(models) if models else f"\nnothing kept in {models_dir()}")
        return 0
    if args.older_than is not None and not (args.older_than >= 0 and args.older_than != float("inf")):
        raise SystemExit(f"--older-than {args.older_than:g}: give a number of days >= 0")
    doomed = prunable(indexes, args.older_than)
    # models, encodings and held-out runs are kept by content (none replaces another): only their age prunes them
    gone = stale(models, args.older_than) if args.older_than is not None else []
    if not doomed and not gone:
        print("nothing to prune: every cached index is the latest of its source and settings" +
              ("" if args.older_than is not None else " (models are pruned by age: --older-than DAYS)"))
        return 0
    if doomed:
        print(describe(doomed))
    if gone:
        print(describe_kept(gone))
    if args.dry_run:
        print(f"{len(doomed)} indexes and {len(gone)} kept models, encodings and runs would be removed (--dry-run)")
        return 0
    freed = remove(doomed) + remove_kept(gone)
    print(f"removed {len(doomed)} indexes and {len(gone)} kept models, encodings and runs, {freed / 2**20:.1f} MiB "
          f"freed")
    return 0
