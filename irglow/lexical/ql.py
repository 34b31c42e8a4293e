"""Query likelihood with Dirichlet smoothing (Lucene's ``LMDirichletSimilarity``) as a pipeline stage: the
README's example of a new ranker — one module, one line in :data:`irglow.stages.STAGES`.

    [ql]
    enabled = true
    mu = 1000.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from irglow.stage import Stage


@dataclass
class QLSettings:
    enabled: bool = False
    mu: float = 1000.0  # Anserini's default for query likelihood

    @classmethod
    def from_config(cls, config) -> "QLSettings":
        from irglow.config import check_settings, check_values

        check_settings(config.get("ql", {}), ("enabled", "mu"), "[ql]")
        return check_values(cls(**config.get("ql", {})), "ql")


class QueryLikelihoodStage(Stage):
    name = "ql"

    def check(self, config) -> None:
        QLSettings.from_config(config)

    def tags(self, config) -> list[str]:
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
