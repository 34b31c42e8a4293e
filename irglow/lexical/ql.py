"""Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``) as a pipeline stage: the
README's example of a new ranker — one module, one line in :data:`irglow.stages.STAGES`; a name, a settings
class, the runs it writes and ``run`` (its check, manifest entry, cache key and ``Experiment`` name come from
those).

    [ql]
    enabled = true
    mu = 1000.0
"""

from __future__ import annotations

from dataclasses import dataclass

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
    name = "ql"  # its [ql] section; `Experiment(systems=["ql"])` switches it on
    settings_class = QLSettings  # bound and checked before any work; the run gets it as ctx.settings

    def tags(self, config) -> list[str]:
        return ["ql"]

    def run(self, ctx) -> dict:
        from irglow.lexical import queries as lq
        from irglow.lexical.searchers import LexicalSearcher, index_searcher, search_queries
        from irglow.runs.trec import Run

        similarity = lq.J("org.apache.lucene.search.similarities.LMDirichletSimilarity")(float(ctx.settings.mu))
        searcher = index_searcher(ctx.index, similarity)
        items = [(q.query_id, lq.bag_of_words(terms) if terms else None)
                 for q, terms in LexicalSearcher(ctx.index).analyzed(ctx.test_queries)]
        run = Run(search_queries(ctx.index, searcher, items, ctx.lexical.depth, ctx.lexical.threads, "ql"), "ql")
        run.write(ctx.out / "ql.run")
        return {"ql": run}
