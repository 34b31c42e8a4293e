"""Neural stages that join the pipeline when enabled in the configuration.

Each stage is ``stage(config=, collection=, index=, stats=, out=, runs=, source=) -> {tag: Run}``
(``runs``: what the stages before it produced; ``source``: where its models are trained, the
evaluated collection itself or, zero-shot, another one); imports are deferred so the lexical
pipeline never pays for torch.
"""

from __future__ import annotations

from typing import Any, Callable

from irglow.models.source import TrainSource, keyed_train_dir, train_root  # noqa: F401  (re-exported)


def stage_tags(config: dict[str, Any]) -> dict[str, list[str]]:
    """The run tags each enabled stage will write, known from its settings alone (so a wrong
    ``eval.baseline`` is reported before any work, not after every stage has run)."""
    from irglow.config import stage_settings

    tags: dict[str, list[str]] = {}
    if config.get("twbert", {}).get("enabled", False):
        t = stage_settings(config["twbert"], "twbert")
        tags["twbert"] = ["bm25-ngram", "twbert"] + (["twbert-rm3"] if t.get("rm3", True) else [])
    if config.get("glow", {}).get("enabled", False):
        g = stage_settings(config["glow"], "glow")
        variants = list(g.get("variants", ["glow"]))
        tags["glow"] = variants + [f"{lex}+{v}" for lex in g.get("fuse_with", ["bm25f"]) for v in variants]
    if config.get("rerank", {}).get("enabled", False):
        r = config["rerank"]
        models = list(r.get("models", ["monobert", "nrmf"]))
        tags["rerank"] = models + [f"{a}+{m}" for a in r.get("rerank_also", []) for m in models]
    return tags


def check_stage_settings(config: dict[str, Any]) -> None:
    """Build each enabled stage's training configuration once, before any work, so a misspelt key, a
    wrong type or an out-of-range value stops the run at once, naming the key."""
    from irglow.config import stage_settings

    if config.get("twbert", {}).get("enabled", False):
        from irglow.models.twbert.train import TrainConfig

        t = stage_settings(config["twbert"], "twbert")
        t.pop("rm3", None), t.pop("model_dir", None)
        TrainConfig.from_dict(t)
    if config.get("glow", {}).get("enabled", False):
        from irglow.models.glow.train import GlowTrainConfig

        g = stage_settings(config["glow"], "glow")
        g.pop("variants", None), g.pop("fuse_with", None)
        GlowTrainConfig.from_dict(g)
    if config.get("rerank", {}).get("enabled", False):
        from irglow.models.rerank.train import RerankTrainConfig

        r = dict(config["rerank"])
        for kind in r.get("models", ["monobert", "nrmf"]):
            RerankTrainConfig.from_dict({**stage_settings(r.get(kind, {}), kind), "kind": kind})


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
