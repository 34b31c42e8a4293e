"""``irglow settings``: the settings reference, every declared section's keys, types, defaults and meaning."""

from __future__ import annotations

import sys
from dataclasses import is_dataclass

from irglow.index.lucene_index import IndexConfig
from irglow.lexical.stage import LexicalSettings
from irglow.models.glow.model import GlowConfig
from irglow.models.glow.train import GlowTrainConfig
from irglow.models.rerank.kinds import BUILT_IN, plugin_kinds
from irglow.models.rerank.train import RerankTrainConfig
from irglow.models.twbert.model import TWBertConfig
from irglow.models.twbert.train import TrainConfig
from irglow.settings import DECLARED, declared_fields, reference
from irglow.stages import STAGES


def cmd_settings(args) -> int:
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
    return reference(sections, _settings_classes()).rstrip("\n") + "\n"


def _settings_classes() -> dict:
    """The sections declared by settings dataclasses, by section (``rerank.<kind>``: monoBERT's and NRM-F's
    training, one class), a registered stage's (:mod:`irglow.stages`) among them."""
    classes = {"index": IndexConfig, "lexical": LexicalSettings, "twbert": TrainConfig, "twbert.model": TWBertConfig,
               "glow": GlowTrainConfig, "glow.model": GlowConfig, "rerank.<kind>": RerankTrainConfig}
    for name, kind in BUILT_IN.items():  # irglow's kinds: [rerank.<kind>] above, their models' own tables
        classes[f"rerank.{name}.model"] = kind.config_class
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
