"""Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``) as a pipeline stage: the
README's example of a new ranker — one module, one line in :data:`irglow.stages.STAGES`.

    [ql]
    enabled = true
    mu = 1000.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from irglow import settings
from irglow.stage import Stage


@dataclass(frozen=True)
class QLSettings:
    enabled: bool
    mu: float  # Anserini's default, 1000 (declared in irglow.settings)

    @classmethod
    def from_config(cls, config) -> "QLSettings":
        """Bound from the declarations (:mod:`irglow.settings`: type, range, default, said once)."""
        settings.check(config, ("ql",))
        return cls(**{k: settings.value(config, "ql", k) for k in ("enabled", "mu")})


class QueryLikelihoodStage(Stage):
    name = "ql"

    def check(self, config) -> None:
        QLSettings.from_config(config)

    def tags(self, config) -> list[str]:
        return ["ql"]

    def switch_on(self, config, run: str) -> bool:
        if run == "ql":
            config.setdefault("ql", {})["enabled"] = True
        return run == "ql"

    def run_names(self) -> list[str]:
        return ["ql"]

    def resolved(self, config):
        return asdict(QLSettings.from_config(config))

    def key(self, ctx) -> dict:
        return {"mu": QLSettings.from_config(ctx.config).mu, "depth": ctx.lexical.depth}

    def run(self, ctx) -> dict:
        from irglow.lexical import queries as lq
        from irglow.lexical.searchers import LexicalSearcher, index_searcher, search_queries
        from irglow.runs.trec import Run

        similarity = lq.J("org.apache.lucene.search.similarities.LMDirichletSimilarity")(
            float(QLSettings.from_config(ctx.config).mu))
        searcher = index_searcher(ctx.index, similarity)
        items = [(q.query_id, lq.bag_of_words(terms) if terms else None)
                 for q, terms in LexicalSearcher(ctx.index).analyzed(ctx.test_queries)]
        run = Run(search_queries(ctx.index, searcher, items, ctx.lexical.depth, ctx.lexical.threads, "ql"), "ql")
        run.write(ctx.out / "ql.run")
        return {"ql": run}
