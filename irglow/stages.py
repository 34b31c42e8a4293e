"""Neural stages that join the pipeline when enabled in the configuration.

Each stage is ``stage(config=, collection=, index=, stats=, out=, runs=, source=) -> {tag: Run}``
(``runs``: what the stages before it produced; ``source``: where its models are trained, the
evaluated collection itself or, zero-shot, another one); imports are deferred so the lexical
pipeline never pays for torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class TrainSource:
    """The collection, index, statistics and split that models are trained on."""

    collection: Any
    index: Any
    stats: Any
    split: str

    def queries(self):
        return self.collection.queries(self.split)

    def qrels(self):
        return self.collection.qrels(self.split)

    def is_other_than(self, collection) -> bool:
        """Zero-shot: the models are evaluated on a collection they never saw."""
        return self.collection.name != collection.name


def train_root(config: dict[str, Any], out: Path) -> Path:
    """Where a stage trains its models: shared by every test split of one pipeline run."""
    return Path(config.get("output", {}).get("train_dir") or out)


def neural_stages(config: dict[str, Any]) -> list[Callable]:
    stages: list[Callable] = []
    if config.get("twbert", {}).get("enabled", False):
        from irglow.models.twbert.stage import twbert_stage

        stages.append(twbert_stage)
    if config.get("glow", {}).get("enabled", False):
        from irglow.models.glow.stage import glow_stage

        stages.append(glow_stage)
    if config.get("rerank", {}).get("enabled", False):
        from irglow.models.rerank.stage import rerank_stage

        stages.append(rerank_stage)
    return stages
