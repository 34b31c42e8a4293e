"""Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``) as a pipeline stage: the
the docs' example of a new ranker (docs/extending.md) — one module, one line in :data:`irglow.stages.STAGES`; a
name, a settings class, the runs it writes and ``run`` (its check, manifest entry, cache key and ``Experiment``
name come from those).

    [ql]
    enabled = true

Its μ is ``[lexical] mu``, the one the ``qld`` system uses: a stage reads the bound lexical settings it shares
(``ctx.lexical``) instead of declaring a second copy of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irglow import settings
from irglow.defaults import QLD_MU
from irglow.rankers import StageRun, _section, _set
from irglow.stage import Stage
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.lexical.stage import LexicalSettings


@dataclass(frozen=True)
class QLRun(StageRun):
    """The ``ql`` run; a ``mu`` given is the experiment's ``[lexical] mu`` (another ranker asking for another μ in
    the same experiment is an error naming both)."""

    mu: float | None = None

    def settings_of(self, config: dict[str, Any]) -> None:
        super().settings_of(config)
        if self.mu is not None:
            _set(_section(config, "lexical"), "mu", self.mu, "lexical")


def QL(mu: float | None = None) -> StageRun:  # noqa: N802 (a constructor, as PyTerrier's)
    """The ``ql`` run as a ranker (``Experiment(systems=[QL(mu=500)])``, ``QL() + Lexical("bm25")``); bound, it is
    ``QL(mu=…)`` with the experiment's ``[lexical] mu`` where that is not the default μ, else ``QL()``."""
    return StageRun("ql", "ql") if mu is None else QLRun("ql", "ql", mu=mu)


@dataclass(frozen=True)
class QLSettings:
    enabled: bool
    mu: float = QLD_MU  # [lexical] mu, bound with it: its node says the μ it ranks with

    @classmethod
    def from_config(cls, config) -> "QLSettings":
        """Bound from the declarations (:mod:`irglow.settings`: type, range, default, said once)."""
        settings.check(config, ("ql",))
        return cls(enabled=settings.value(config, "ql", "enabled"), mu=LexicalSettings.from_config(config).mu)


class QueryLikelihoodStage(Stage):
    name = "ql"  # its [ql] section; `Experiment(systems=["ql"])` switches it on
    settings_class = QLSettings  # bound and checked before any work; the run gets it as ctx.settings

    def tags(self, settings) -> list[str]:
        return ["ql"]

    def resolved(self, s: QLSettings) -> dict[str, Any]:
        """Its own section (its μ is ``[lexical]``'s, recorded there)."""
        return {"enabled": s.enabled}

    def bind(self, ranker, s: QLSettings, bind_part):
        """``QL(mu=…)`` where the experiment's μ is not the default, else ``QL()``: equal to the ranker that asked."""
        return self.node(ranker.tag, s, bind_part)

    def node(self, tag, s: QLSettings, node_of):
        """``QL(mu=…)`` where the experiment's μ is not the default, else ``QL()``: equal to the ranker that asked."""
        return QL() if s.mu == QLD_MU else QL(mu=s.mu)

    def run_of(self, ctx, tag, query_set):
        """It learns nothing from the training queries: a later node (a re-ranker learning from its run, a fusion
        tuning its weight) has it search whichever of them it asks for, on the training index — as a ``[lexical]``
        system does."""
        return lambda queries: self.search(ctx, ctx.source.index, queries)

    def run(self, ctx) -> dict:
        run = self.search(ctx, ctx.index, ctx.test_queries)
        run.write(ctx.out / "ql.run")
        return {"ql": run}

    def transformer(self, ranker, folder):
        from irglow.lexical.pt import QL

        return QL(folder.index, folder.lexical.mu, folder.lexical.depth, folder.lexical.threads)

    @staticmethod
    def search(ctx, index, queries):
        """The ``[lexical]`` system ``qld`` with the experiment's ``[lexical] mu``: one query-likelihood path, one μ."""
        config = LexicalConfig("qld", mu=ctx.lexical.mu, depth=ctx.lexical.depth, threads=ctx.lexical.threads)
        return LexicalSearcher(index, config).search(queries, tag="ql")
