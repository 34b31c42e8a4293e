"""The ``[lexical]`` section bound once, and the lexical systems as a pipeline stage.

Every system with tunable parameters is tuned for itself: ``tune_bm25f = true`` tunes BM25F's field weights
for BM25F (Lucene's CombinedFieldQuery) and, separately, the multi-field sum's weights for ``bm25-mf``
(Pyserini's Σ_f w_f·BM25_f, another model) — both by coordinate ascent on the *training* queries, starting
from 1.0 per field, so each keeps its untuned default unless the training queries prefer other weights.
"""

from __future__ import annotations

import copy
import itertools
import logging
from dataclasses import asdict, dataclass
from typing import Any

from irglow.defaults import BM25_B, BM25_K1, DEPTH, QLD_MU, THREADS
from irglow.lexical.systems import ENTRY_POINTS, lexical_system, lexical_systems, rm3_systems
from irglow.stage import Stage, Unit, unit_name
from irglow.utils.ascent import coordinate_ascent
from irglow.utils.plugins import entry_point_code
from irglow.settings import setting
from irglow.config import check_settings, check_values
from irglow.eval.measures import aggregate, parse_measures
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.runs.trec import gather_runs
from irglow.utils.distributed import split

log = logging.getLogger(__name__)

DEFAULT_SYSTEMS = ["bm25", "bm25-mf", "bm25f", "tfidf"]


@dataclass
class LexicalSettings:
    """``[lexical]``: the systems, BM25's parameters (for every system that uses BM25 without its own), depth,
    threads, and the field weights (configured, or tuned per system with ``tune_bm25f``)."""

    systems: list[str] = setting(factory=lambda: list(DEFAULT_SYSTEMS), doc="the lexical runs written (bm25, bm25f, "
                                 "bm25-mf, tfidf, qld; bm25 and bm25-mf also with RM3: bm25-rm3 …)", selects=True)
    k1: float = setting(BM25_K1, "BM25's k1 (Anserini's MS MARCO default)", low=0)
    b: float = setting(BM25_B, "BM25's b", low=0, high=1)
    depth: int = setting(DEPTH, "documents retrieved per query", low=1)
    threads: int = setting(THREADS, "search threads", low=1)
    mu: float = setting(QLD_MU, "qld's Dirichlet prior μ (query likelihood, Lucene's LMDirichletSimilarity)", above=0)
    tune_bm25f: bool = setting(False, "tune the BM25F field weights on the training queries")
    field_weights: dict[str, float] = setting(factory=dict, doc="bm25-mf / bm25f: {field = weight}, fixed (unset: "
                                              "tuned or 1.0 each)")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "LexicalSettings":
        """Parsed and checked once, before any work: a misspelt key, a wrong type or value is named."""
        lx = config.get("lexical", {})
        if not isinstance(lx, dict):
            raise ValueError(f"[lexical] must be a table of settings, not {lx!r}")
        check_settings(lx, cls.__dataclass_fields__, "[lexical]")
        settings = cls(**copy.deepcopy(dict(lx)))  # its own values: nothing of the configuration is kept
        if not isinstance(settings.systems, list):  # empty: no lexical run (an Experiment whose systems need none)
            raise ValueError(f"lexical.systems = {settings.systems!r} must be a list, e.g. ['bm25', 'bm25f']")
        check_values(settings, "lexical")
        settings.check_systems()
        return settings

    def check_systems(self) -> None:
        """Each system a lexical system irglow knows (RM3 where Pyserini offers it), named where it is not."""
        for system in self.systems:
            if "+" in str(system):  # one meaning for "+": the runs of a fusion
                raise ValueError(f"lexical.systems: {system!r}: '+' joins the runs of a fusion; a system with RM3 "
                                 f"is written {str(system).replace('+', '-')!r}")
            known, rm3 = lexical_systems(), rm3_systems()
            if str(system).removesuffix("-rm3") not in known:
                raise ValueError(f"lexical.systems: {system!r} is not a lexical system; known: {', '.join(known)}; "
                                 f"with RM3: {', '.join(n + '-rm3' for n in rm3)}")
            if str(system).endswith("-rm3") and system.removesuffix("-rm3") not in rm3:
                raise ValueError(f"lexical.systems: {system!r}: RM3 is offered for {', '.join(rm3)} (Pyserini's "
                                 f"implementation)")
            self.config(system, {}).check()

    def tags(self) -> list[str]:
        return list(self.systems)

    def config(self, system: str, weights: dict[str, dict[str, float]]):
        """The :class:`~irglow.lexical.searchers.LexicalConfig` of ``system`` (``bm25-rm3`` …); ``weights``: the
        field weights of each multi-field system (tuned or configured)."""
        name = system.removesuffix("-rm3")
        return LexicalConfig(system=name, k1=self.k1, b=self.b, depth=self.depth, threads=self.threads, mu=self.mu,
                             field_weights=dict(weights.get(name, self.field_weights))
                             if lexical_system(name).multi_field else {},
                             rm3=system.endswith("-rm3"))

    def key(self) -> dict[str, Any]:
        """What a model stage's outputs depend on here (its BM25 parameters and depth)."""
        return {"k1": self.k1, "b": self.b, "depth": self.depth}

    def field_weights_for(self, index, train_queries, train_qrels, timings: dict[str, float] | None = None
                          ) -> dict[str, dict[str, float]]:
        """Each multi-field system's weights: tuned for it on the training queries (``tune_bm25f``), else the
        configured ones.  ``train_queries``/``train_qrels`` may be callables: a collection without a training
        split is asked for one only when weights are tuned."""
        import time

        used = {t.removesuffix("-rm3") for t in self.systems}
        multi = [n for n, s in lexical_systems().items() if s.multi_field and n in used]
        if not self.tune_bm25f:
            return {s: dict(self.field_weights) for s in multi}
        t = time.perf_counter()
        queries = train_queries() if callable(train_queries) else train_queries
        qrels = train_qrels() if callable(train_qrels) else train_qrels
        out = {s: tune_field_weights(index, queries, qrels, list(index.fields), s, k1=self.k1, b=self.b)
               for s in multi}
        if timings is not None:
            timings["field_weight_tuning_s"] = time.perf_counter() - t
        return out


def tune_field_weights(index, queries, qrels, fields, system: str = "bm25f", grid=None, measure: str = "nDCG@10",
                       k1: float = BM25_K1, b: float = BM25_B, passes: int = 2) -> dict[str, float]:
    """Coordinate ascent over ``system``'s field weights on *training* queries (never the test split), from 1.0
    per field: a weight moves only where the training queries score higher with it."""
    m = parse_measures([measure])
    grid = grid or lexical_system(system).tuning_grid
    weights = {f: 1.0 for f in fields}

    def score(w):
        run = LexicalSearcher(index, LexicalConfig(system, k1=k1, b=b, depth=100, field_weights=w)).search(queries)
        return aggregate(m, qrels, run)[measure]

    def move(f, value):
        return lambda w: None if w[f] == value else {**w, f: value}

    weights, best, _ = coordinate_ascent(weights, [move(f, v) for f, v in itertools.product(fields, grid)], score,
                                         passes, 1e-6)
    log.info("%s field weights tuned on training queries: %s (%s %.4f)", system, weights, measure, best)
    return weights


def _written(run, path):
    run.write(path)
    return run


class LexicalStage(Stage):
    """Each ``[lexical]`` system: one Lucene run, cached on its own."""

    name = "lexical"
    settings_class = LexicalSettings

    always_enabled = True

    def node(self, tag, settings, node_of):
        from irglow.rankers import Lexical

        return Lexical(tag)

    def tags(self, settings: LexicalSettings) -> list[str]:
        return settings.tags()

    def with_nodes(self, settings: LexicalSettings, nodes) -> LexicalSettings:
        """The systems its nodes run (their field weights are tuned together, before any run)."""
        from dataclasses import replace

        bound = replace(settings, systems=[n.tag for n in nodes])
        bound.check_systems()
        return bound

    def transformer(self, ranker, folder):
        from irglow.lexical.pt import Lexical

        return Lexical(folder.index, config=folder.lexical.config(ranker.tag, folder.field_weights))

    def run_of(self, ctx, tag, query_set):
        """It learned nothing from the training queries: a later node (a fusion tuning its weight, a re-ranker
        learning from its run) has it search whichever of them it asks for, on the training index."""
        cfg = ctx.lexical_config(tag)
        return lambda queries: LexicalSearcher(ctx.source.index, cfg).search(queries, tag=tag)

    def units(self, node, ctx) -> list[Unit]:
        """One Lucene run, keyed on its own settings only (under torchrun each rank searches its share of the
        queries, rank 0 writes the whole run)."""
        tag, cfg = node.tag, ctx.lexical_config(node.tag)

        def search():
            run = LexicalSearcher(ctx.index, cfg).search(split(ctx.test_queries), tag=tag)
            return {tag: _written(gather_runs({tag: run}, ctx.test_queries)[tag], ctx.out / f"{tag}.run")}

        code = entry_point_code(ENTRY_POINTS, cfg.system)  # a registered system's code (None: irglow's own)
        return [Unit(unit_name(self.name, tag), {**asdict(cfg), **({"code": code} if code else {})}, {}, search, (tag,),
                     self_contained=True, collective=True)]
