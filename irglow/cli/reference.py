"""``irglow settings`` and ``cache``: their options (:mod:`irglow.commands.reference` and
:mod:`irglow.commands.cache` do the work)."""

from __future__ import annotations

from irglow.cli.options import add_data_dir_option, command


def register(sub) -> None:
    """Add ``irglow settings`` and ``cache`` to ``irglow``'s sub-commands."""
    p = sub.add_parser("settings", help="the settings reference: key, type and range, default, meaning")
    p.add_argument("sections", nargs="*", help="only these sections (default: every declared one)")
    p.set_defaults(func=command("irglow.commands.reference:cmd_settings"))

    p = sub.add_parser("cache", help="list cached indexes and kept models, or prune what is replaced or unused")
    p.add_argument("action", choices=["list", "prune"], help="list: the cached indexes, and the models, corpus "
                   "encodings and runs $IRGLOW_MODELS keeps, with sizes and last use; prune: remove the indexes a "
                   "newer version of the same source replaced")
    add_data_dir_option(p)
    p.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                   help="prune: also remove indexes, and kept models, encodings and runs, unused for this many days "
                        "(never one a process is writing)")
    p.add_argument("--dry-run", action="store_true", help="prune: only list what would be removed")
    p.set_defaults(func=command("irglow.commands.cache:cmd_cache"))
