"""Every pipeline stage, in one list: the pipeline, the grid, zero-shot, the Experiment API and the model CLIs
read it.  irglow's own are listed here; a new ranker is one module with a :class:`~irglow.stage.Stage` subclass,
registered by its package's entry point (group ``irglow.stages``, ``name = "module:StageClass"``) and found here —
nothing of irglow is edited (``examples/linear_rerank.py``, a learned re-ranker).  The stage modules import
nothing from this one (no import circle) and load torch only inside their methods."""

from __future__ import annotations

from irglow.lexical.ql import QueryLikelihoodStage
from irglow.lexical.stage import LexicalStage
from irglow.models.glow.stage import GlowStage
from irglow.models.rerank.stage import RerankStage
from irglow.models.twbert.stage import TWBertStage
from irglow.hybrid import FusionStage
from irglow.stage import Stage
from irglow.utils.plugins import registered

ENTRY_POINTS = "irglow.stages"


def plugins(built_in: list[Stage]) -> list[Stage]:
    """The stages other packages register under the entry point group ``irglow.stages``; a name irglow's stages
    (or another plugin) already use is an error naming both."""
    found: list[Stage] = []
    for point in registered(ENTRY_POINTS):
        where = f"entry point {point.name} = {point.value!r} ({ENTRY_POINTS}"
        try:
            loaded = point.load()
        except Exception as e:  # noqa: BLE001 - a plugin's own failure, named with its entry point
            raise ValueError(f"{where}, package {point.dist.name if point.dist else '?'}) failed to load: "
                             f"{type(e).__name__}: {e}") from e
        if isinstance(loaded, type) and not issubclass(loaded, Stage):
            stage = None
        else:
            try:
                stage = loaded() if isinstance(loaded, type) else loaded
            except Exception as e:  # noqa: BLE001
                raise ValueError(f"{where}): making the stage failed: {type(e).__name__}: {e}") from e
        if not isinstance(stage, Stage) or not stage.name:
            raise ValueError(f"{where}) is not an irglow Stage with a name (a subclass of irglow.stage.Stage, "
                             f"name = '...'): it is {loaded!r}")
        taken = [s for s in [*built_in, *found] if s.name == stage.name]
        if taken:
            raise ValueError(f"entry point {point.name} = {point.value!r}: the stage name {stage.name!r} is taken by "
                             f"{type(taken[0]).__module__}.{type(taken[0]).__name__}")
        found.append(stage)
    return found


# the order a pipeline runs them in (registered stages after the built-in first stages, before the re-rankers and
# the fusion); a [fusion] entry runs as soon as the runs it fuses exist, a re-ranking once its first stage does
FIRST_STAGES: list[Stage] = [LexicalStage(), QueryLikelihoodStage(), TWBertStage(), GlowStage()]
LAST_STAGES: list[Stage] = [RerankStage(), FusionStage()]
STAGES: list[Stage] = [*FIRST_STAGES, *plugins(FIRST_STAGES + LAST_STAGES), *LAST_STAGES]


def stage(name: str) -> Stage:
    """The registered stage called ``name``."""
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r}; stages: {', '.join(s.name for s in STAGES)}")


def model_stages() -> list[Stage]:
    """The stages that train models (what ``--select-on validation`` may choose settings of)."""
    return [s for s in STAGES if s.trains]
