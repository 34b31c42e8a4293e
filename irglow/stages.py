"""Neural stages that join the pipeline when enabled in the configuration.

Each stage is ``stage(config=, collection=, index=, stats=, out=, runs=, source=) -> {tag: Run}``
(``runs``: what the stages before it produced; ``source``: where its models are trained, the
evaluated collection itself or, zero-shot, another one); imports are deferred so the lexical
pipeline never pays for torch.
"""

from __future__ import annotations

from typing import Any, Callable


# the pipeline's neural stages, in the order they run: name → module.  Each module offers ``<name>_stage``
# (the stage), ``tags(config)`` (the runs it writes) and ``check(config)`` (its settings, before any work);
# the modules import nothing from here.
STAGES = {"twbert": "irglow.models.twbert.stage", "glow": "irglow.models.glow.stage",
          "rerank": "irglow.models.rerank.stage"}


def _enabled(config: dict[str, Any]) -> list[tuple[str, Any]]:
    import importlib

    from irglow.config import flag

    return [(name, importlib.import_module(module)) for name, module in STAGES.items() if flag(config, name)]


def stage_tags(config: dict[str, Any]) -> dict[str, list[str]]:
    """The run tags each enabled stage will write, known from its settings alone (so a wrong
    ``eval.baseline`` is reported before any work, not after every stage has run)."""
    return {name: module.tags(config) for name, module in _enabled(config)}


def check_stage_settings(config: dict[str, Any]) -> None:
    """Build each enabled stage's training configuration once, before any work, so a misspelt key, a
    wrong type or an out-of-range value stops the run at once, naming the key."""
    for _, module in _enabled(config):
        module.check(config)


def neural_stages(config: dict[str, Any]) -> list[Callable]:
    return [getattr(module, f"{name}_stage") for name, module in _enabled(config)]
