"""Neural stages that join the pipeline when enabled in the configuration.

Each stage is ``stage(config=, collection=, index=, stats=, out=, runs=) -> {tag: Run}`` (``runs``: what
the stages before it produced); imports are
deferred so the lexical pipeline never pays for torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


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
