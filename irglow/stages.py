"""Every pipeline stage, in one list: the pipeline, the grid, zero-shot, the Experiment API and the model CLIs
read it.  A new ranker is one module with a :class:`~irglow.stage.Stage` subclass and one line here.  The
stage modules import nothing from this one (no import circle) and load torch only inside their methods."""

from __future__ import annotations

from irglow.lexical.ql import QueryLikelihoodStage
from irglow.lexical.stage import LexicalStage
from irglow.models.glow.stage import GlowStage
from irglow.models.rerank.stage import RerankStage
from irglow.models.twbert.stage import TWBertStage
from irglow.hybrid import FusionStage
from irglow.stage import Stage

# the order a pipeline runs them in; a [fusion] entry runs as soon as the runs it fuses exist
STAGES: list[Stage] = [LexicalStage(), QueryLikelihoodStage(), TWBertStage(), GlowStage(), RerankStage(),
                       FusionStage()]


def stage(name: str) -> Stage:
    """The registered stage called ``name``."""
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r}; stages: {', '.join(s.name for s in STAGES)}")


def model_stages() -> list[Stage]:
    """The stages that train models (what ``--select-on validation`` may choose settings of)."""
    return [s for s in STAGES if s.trains]
