"""``irglow settings`` and ``cache``: the settings reference and the index cache."""

from __future__ import annotations

import sys


def cmd_settings(args) -> int:
    from irglow.settings import DECLARED

    classes = _settings_classes()
    unknown = [s for s in args.sections if s not in DECLARED and s not in classes]
    if unknown:
        print(f"irglow settings: no section {unknown}; sections: "
              f"{', '.join(dict.fromkeys([*DECLARED, *classes]))}", file=sys.stderr)
        return 2
    print(settings_reference(args.sections or None))
    return 0


def settings_reference(sections: list[str] | None = None) -> str:
    """``irglow settings``' text; the docs' settings reference is this, generated at build time (docs/gen_pages.py)."""
    from irglow.settings import reference

    return reference(sections, _settings_classes()).rstrip("\n") + "\n"


def _settings_classes() -> dict:
    """The sections declared by settings dataclasses, by section (``rerank.<kind>``: monoBERT's and NRM-F's
    training, one class), a registered stage's (:mod:`irglow.stages`) among them."""
    from dataclasses import is_dataclass

    from irglow.index.lucene_index import IndexConfig
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.model import GlowConfig
    from irglow.models.glow.train import GlowTrainConfig
    from irglow.models.rerank.monobert import MonoBERTConfig
    from irglow.models.rerank.nrmf import NRMFConfig
    from irglow.models.rerank.train import RerankTrainConfig
    from irglow.models.twbert.model import TWBertConfig
    from irglow.models.twbert.train import TrainConfig

    from irglow.settings import DECLARED, declared_fields
    from irglow.stages import STAGES

    classes = {"index": IndexConfig, "lexical": LexicalSettings, "twbert": TrainConfig, "twbert.model": TWBertConfig,
               "glow": GlowTrainConfig, "glow.model": GlowConfig, "rerank.<kind>": RerankTrainConfig,
               "rerank.monobert.model": MonoBERTConfig, "rerank.nrmf.model": NRMFConfig}
    from irglow.models.rerank.kinds import plugin_kinds

    for name, kind in plugin_kinds().items():  # a registered re-ranker kind's [rerank.<kind>] table
        if is_dataclass(kind.settings_class):
            classes[f"rerank.{name}"] = kind.settings_class
    for stage in STAGES:  # a plugin's section, where its settings class declares every field (irglow.settings.setting)
        if stage.name not in classes and stage.name not in DECLARED and is_dataclass(stage.settings_class):
            try:
                declared_fields(stage.name, stage.settings_class)
            except TypeError:
                continue
            classes[stage.name] = stage.settings_class
    return classes


def cmd_cache(args) -> int:
    from irglow.index.cache import cached_indexes, describe, prunable, remove

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


def register(sub) -> None:
    """Add this module's commands to ``irglow``'s sub-commands."""
    p = sub.add_parser("settings", help="the settings reference: key, type and range, default, meaning")
    p.add_argument("sections", nargs="*", help="only these sections (default: every declared one)")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("cache", help="list cached indexes, or prune those a newer version replaced")
    p.add_argument("action", choices=["list", "prune"], help="list: the cached indexes and their sizes; prune: remove "
                   "those a newer version of the same source replaced")
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    p.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                   help="prune: also remove indexes unused for this many days")
    p.add_argument("--dry-run", action="store_true", help="prune: only list what would be removed")
    p.set_defaults(func=cmd_cache)
