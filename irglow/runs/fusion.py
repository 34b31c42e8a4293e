"""Hybrid runs: fuse TREC runs by reciprocal rank or by normalised, weighted score sums.

* ``rrf``: Σ_r w_r / (k + rank_r(d)) over the runs that retrieved d (Cormack et al. 2009, k = 60).
* ``wsum``: Σ_r w_r · norm_r(s_r(d)), norm ``min-max`` (per query, to [0, 1]), ``z-score`` (per
  query, mean 0, sd 1) or ``none``.  A document a run did not retrieve takes that run's lowest
  normalised score for the query (it ranked below everything the run returned), not 0, which for
  z-scores would put it at the run's *mean*; where every score the run gave is equal (one document, or
  ties), one less, so it still ranks below what the run returned.
* ``tune_weights``: the convex weights (Σ w = 1, grid ``step``) that maximise a measure on the
  *training* queries' runs; then the same weights fuse the test runs.

ranx (``ranx.fuse``, ``optimize_fusion``) does the same, and was the first choice; measured here it
costs 7 s to import and 14–38 s of numba JIT compilation per fresh process before fusing two runs of
two queries (30–80 s per method on real runs), on every ``make run`` and test session.  The methods
are a few lines of numpy, so they live here, with hand-worked tests, ranks in trec_eval's order and
metrics from ir-measures like every other number in irglow.  ``bench/fusion_vs_ranx.py`` compares
the two: min-max sums are identical and both tuners pick the same weights; RRF scores differ (by
≤ 5e-4) only where a run has tied scores, which ranx ranks in another order than trec_eval.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from irglow.data.records import Qrel
from irglow.eval.measures import aggregate, parse_measures
from irglow.runs.trec import Run, trec_order

from irglow.settings import FUSION_NORMS as NORMS  # declared once
from irglow.defaults import DEPTH, FUSION_MEASURE, FUSION_METHOD, FUSION_NORM, FUSION_STEP, RRF_K
from irglow.utils.ascent import coordinate_ascent
from irglow.utils.progress import tqdm


def _normalise(scores: np.ndarray, norm: str) -> np.ndarray:
    if norm == "min-max":
        span = scores.max() - scores.min()
        return (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    if norm == "z-score":
        sd = scores.std()
        return (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)
    if norm == "none":
        return scores
    raise ValueError(f"fusion norm must be one of {NORMS}, not {norm!r}")


@dataclass(frozen=True)
class FusionMethod:
    """A way to fuse runs, registered once (:func:`fusion_method`) and named by ``[fusion] method``,
    ``Fusion(method=…)`` and ``irglow fuse --method``: ``score(lists, weights, norm, k)`` gives one query's fused
    ``{document: score}`` from each run's ranked list (as the run holds it), its weight, the normalisation and the RRF
    constant; ``tuned``: its weights are tuned on training queries no fused model saw (else each part weighs 1 unless
    fixed); ``normalises``: it reads scores through ``norm`` (which then must be finite), not ranks.

    Args:
        name: Its registered name.
        score: One query's fused scores from each run's ranked list, weights, normalisation and RRF constant.
        tuned: Whether its weights are tuned on held-out training queries.
        normalises: Whether it reads scores through the normalisation.
    """

    name: str
    score: Callable[[list, list[float], str, float], dict[str, float]]
    tuned: bool
    normalises: bool


FUSION_METHODS: dict[str, FusionMethod] = {}


def fusion_method(name: str, *, tuned: bool, normalises: bool):
    """Register the decorated ``score(lists, weights, norm, k) -> {document: score}`` as the fusion method ``name``.

    Args:
        name: Its name in ``[fusion] method``, ``Fusion(method=…)`` and ``irglow fuse --method``.
        tuned: Whether its weights are tuned on held-out training queries (else fixed, each 1 unless given).
        normalises: Whether it reads scores through the normalisation (else ranks).
    """
    def register(score):
        FUSION_METHODS[name] = FusionMethod(name, score, tuned, normalises)
        return score

    return register


def method_of(name: str, where: str = "fusion method") -> FusionMethod:
    """The registered method ``name``; another name is an error listing them.

    Args:
        name: A method's name.
        where: The setting that names it, for the error.
    """
    if name not in FUSION_METHODS:
        raise ValueError(f"{where} = {name!r} must be one of {', '.join(FUSION_METHODS)}")
    return FUSION_METHODS[name]


@fusion_method("wsum", tuned=True, normalises=True)
def weighted_sum(lists, weights, norm: str, k: float) -> dict[str, float]:
    """The weighted sum of each run's normalised scores; a document a run did not retrieve counts as ranked below
    everything it returned: its lowest score, one lower where all its scores are equal (else such a run would count
    for nothing).

    Args:
        lists: One query's ranked list from each run.
        weights: One weight per run.
        norm: The score normalisation.
        k: Unused (RRF's constant).
    """
    per_run = []
    for docs, w in zip(lists, weights):
        if docs:
            normed = _normalise(np.array([s for _, s in docs], dtype=np.float64), norm)
            low, high = float(normed.min()), float(normed.max())
            per_run.append((w, {d: float(s) for (d, _), s in zip(docs, normed)}, low - (high == low)))
    return {d: sum(w * own.get(d, floor) for w, own, floor in per_run) for d in {d for _, own, _ in per_run for d in own}}


@fusion_method("rrf", tuned=False, normalises=False)
def reciprocal_rank(lists, weights, norm: str, k: float) -> dict[str, float]:
    """Reciprocal-rank fusion (Cormack et al., SIGIR 2009): each run adds ``weight / (k + rank)`` to a document.

    Args:
        lists: One query's ranked list from each run.
        weights: One weight per run.
        norm: Unused (ranks are read).
        k: The RRF constant.
    """
    fused: dict[str, float] = {}
    for docs, w in zip(lists, weights):
        for rank, (d, _) in enumerate(trec_order(docs), 1):
            fused[d] = fused.get(d, 0.0) + w / (k + rank)
    return fused


def fuse(runs: Sequence[Run], method: str = FUSION_METHOD, norm: str = FUSION_NORM, weights: Sequence[float] | None = None,
         k: float = RRF_K, depth: int = DEPTH, tag: str = "fused") -> Run:
    """One fused run over the union of the runs' queries; each query keeps its top ``depth`` documents.

    Args:
        runs: The runs to fuse.
        method: A registered fusion method (:func:`fusion_method`): ``wsum`` or ``rrf``.
        norm: The score normalisation before a weighted sum: ``min-max``, ``z-score`` or ``none``.
        weights: One weight per run (``None``: each 1).
        k: The RRF constant.
        depth: Documents kept per query.
        tag: The fused run's name.
    """
    check_fusion(method, norm, k, depth)
    if not runs:
        raise ValueError("fusion needs at least one run")
    weights = [1.0] * len(runs) if weights is None else list(weights)
    if len(weights) != len(runs):
        raise ValueError(f"{len(weights)} fusion weights for {len(runs)} runs")
    bad = [w for w in weights if not math.isfinite(w) or w < 0]
    if bad:
        raise ValueError(f"fusion weights must be finite and >= 0, got {bad}")
    way = FUSION_METHODS[method]
    if way.normalises and norm != "none":
        for i, run in enumerate(runs):
            if any(not math.isfinite(s) for docs in run.ranking.values() for _, s in docs):
                raise ValueError(f"run {i + 1} ({run.tag}) has infinite scores, which {norm} normalisation cannot "
                                 f"place; use --method rrf, or --norm none")
    ranking: dict[str, list[tuple[str, float]]] = {}
    for qid in sorted({q for r in runs for q in r.ranking}):
        fused = way.score([run.ranking.get(qid, []) for run in runs], weights, norm, k)
        ranking[qid] = trec_order(list(fused.items()))[:depth]
    return Run(ranking, tag)


def check_fusion(method: str, norm: str, k: float, depth: int) -> None:
    """Settings that would divide by zero, silently drop documents or mean nothing, refused up front.

    Args:
        method: A fusion method's name.
        norm: A normalisation.
        k: The RRF constant.
        depth: Documents kept per query.
    """
    method_of(method)
    if norm not in NORMS:
        raise ValueError(f"fusion norm must be one of {NORMS}, not {norm!r}")
    if not math.isfinite(k) or k < 0:
        raise ValueError(f"the RRF constant k must be a finite number >= 0, not {k!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"fusion depth must be an integer >= 1, not {depth!r}")


def convex_grid(n_runs: int, step: float = 0.05) -> list[tuple[float, ...]]:
    """Every weight vector on the simplex with entries in multiples of ``step`` (``1/step`` whole).

    Args:
        n_runs: The runs weighted.
        step: The grid's step (it must divide 1).
    """
    if not math.isfinite(step) or not 0 < step <= 1 or abs(1 / step - round(1 / step)) > 1e-9:
        raise ValueError(f"weight grid step must divide 1 into whole steps (0.05, 0.1, 0.25, 0.5, 1), not {step!r}")
    units = round(1 / step)
    return [tuple(c / units for c in combo) for combo in itertools.product(range(units + 1), repeat=n_runs)
            if sum(combo) == units]


FEW_TUNING_QUERIES = 10


def check_tuning_overlap(runs: Sequence[Run], qrels: list[Qrel]) -> int:
    """How many queries of the tuning runs have a relevant judgment in ``qrels``: none is an error naming both
    sides' ids, few a warning (weights chosen on a handful of queries are noise).

    Args:
        runs: The tuning runs.
        qrels: The tuning queries' judgments.
    """
    judged = {q.query_id for q in qrels if q.relevance > 0}
    ran = set().union(*(r.ranking for r in runs)) if runs else set()
    shared = judged & ran
    if not shared:
        def some(ids):
            return ", ".join(sorted(ids)[:3]) + (" …" if len(ids) > 3 else "") if ids else "none"
        raise ValueError(f"fusion tuning: the tuning runs and the tuning qrels share no query with a relevant "
                         f"judgment (runs: {len(ran)} queries, e.g. {some(ran)}; qrels: {len(judged)} judged, "
                         f"e.g. {some(judged)}); are they of the same queries?")
    if len(shared) < FEW_TUNING_QUERIES:
        import logging

        logging.getLogger(__name__).warning("fusion tuning: only %d tuning queries have a relevant judgment; weights "
                                            "chosen on so few are unreliable", len(shared))
    return len(shared)


def tune_weights(runs: Sequence[Run], qrels: list[Qrel], method: str = FUSION_METHOD, norm: str = FUSION_NORM,
                 measure: str = FUSION_MEASURE, step: float = FUSION_STEP, k: float = RRF_K,
                 depth: int = DEPTH) -> tuple[tuple[float, ...], float, list[tuple[tuple[float, ...], float]]]:
    """(best weights, best score, every (weights, score)) over the convex grid; ties keep the first.
    Refused when no tuning query has a relevant judgment (every point would score 0 and the "tuned" weights
    would be the grid's last point); a warning when fewer than :data:`FEW_TUNING_QUERIES` have one.

    Args:
        runs: The runs to fuse, of the tuning queries.
        qrels: The tuning queries' judgments.
        method: A registered fusion method (:func:`fusion_method`).
        norm: The score normalisation: ``min-max``, ``z-score`` or ``none``.
        measure: What the weights maximise (an ir_measures name).
        step: The convex grid's step (weights in multiples of it, summing to 1).
        k: The RRF constant.
        depth: Documents kept per query.
    """
    check_tuning_overlap(runs, qrels)
    m = parse_measures([measure])

    def score(w):
        return aggregate(m, qrels, fuse(runs, method, norm, w, k, depth))[str(m[0])]

    if len(runs) > GRID_MAX_RUNS:
        return scaled_ascent(len(runs), score)

    grid = list(convex_grid(len(runs), step))
    # a long tuning (large runs, a fine grid) shows where it is; a short one draws nothing
    curve = [(w, score(w)) for w in tqdm(grid, desc="fusion weights", unit="point", leave=False,
                                         disable=len(grid) * sum(len(r.ranking) for r in runs) < 20_000)]
    best = max(curve, key=lambda x: x[1])
    return best[0], best[1], curve


GRID_MAX_RUNS = 4  # the convex grid has C(1/step + n − 1, n − 1) points: 12,341 for 5 runs at 0.05


def scaled_ascent(n: int, score, factors=(0.0, 0.5, 2.0, 4.0), passes: int = 3):
    """Weights for many runs (an all-runs fusion): from equal weights, each run's weight is scaled by each
    factor in turn (0 drops the run) and kept where the tuning queries score higher, until a pass changes
    nothing; weights sum to 1.  Returns (weights, score, every (weights, score) tried).

    Args:
        n: The runs weighted.
        score: What scores a weight vector on the tuning queries.
        factors: The factors each weight is scaled by in turn.
        passes: The most passes over the runs.
    """
    def move(i, f):
        def scaled(weights):
            trial = list(weights)
            trial[i] *= f
            total = sum(trial)
            return tuple(round(x / total, 6) for x in trial) if total > 0 else None
        return scaled

    return coordinate_ascent(tuple([1.0 / n] * n), [move(i, f) for i in range(n) for f in factors], score, passes,
                             1e-9)


def fuse_tuned(test_runs: Sequence[Run], tune_runs: Sequence[Run], tune_qrels: list[Qrel], method: str = "wsum",
               norm: str = FUSION_NORM, measure: str = FUSION_MEASURE, step: float = FUSION_STEP, k: float = RRF_K,
               depth: int = DEPTH, tag: str = "fused") -> tuple[Run, dict]:
    """Fuse ``test_runs`` with the convex weights that do best on ``tune_runs`` (the same systems, in the same
    order, on held-out *training* queries).  RRF is tuned too: its weights, with ``k`` fixed.

    Args:
        test_runs: The runs fused, of the test queries.
        tune_runs: The same systems' runs of the tuning queries, in the same order.
        tune_qrels: The tuning queries' judgments.
        method: A registered fusion method.
        norm: The score normalisation: ``min-max``, ``z-score`` or ``none``.
        measure: What the weights maximise.
        step: The convex grid's step.
        k: The RRF constant.
        depth: Documents kept per query.
        tag: The fused run's name.

    Returns:
        The fused test run, and what was tuned (method, normalisation, weights, the tuning score).
    """
    weights, score, _ = tune_weights(tune_runs, tune_qrels, method, norm, measure, step, k, depth)
    info = {"method": method, "norm": norm if method_of(method).normalises else None, "weights": list(weights),
            f"tuning_{measure}": score, "tuning_queries": len({q.query_id for q in tune_qrels})}
    return fuse(test_runs, method, norm, weights, k, depth, tag), info


CROSS_FIT_FOLDS = 5


def cross_fitted(tune_runs: Sequence[Run], tune_qrels: list[Qrel], method: str = FUSION_METHOD, norm: str = FUSION_NORM,
                 measure: str = FUSION_MEASURE, step: float = FUSION_STEP, k: float = RRF_K, depth: int = DEPTH,
                 tag: str = "fused", folds: int = CROSS_FIT_FOLDS) -> tuple[Run, list[tuple[float, ...]]]:
    """A tuned fusion's run of the very queries it is tuned on, each query fused with weights tuned on the other
    folds' queries only (stacking's out-of-fold predictions): another fusion can then tune on it without the
    weights having seen the judgments they are scored against.  The queries are those every run ranks, dealt
    into ``folds`` in sorted order (a query's fold never depends on the runs); a fold whose other folds hold no
    relevant judgment takes equal weights.  Returns the run and each fold's weights.

    Args:
        tune_runs: The runs fused, of the tuning queries.
        tune_qrels: Their judgments.
        method: A registered fusion method.
        norm: The score normalisation.
        measure: What the weights maximise.
        step: The convex grid's step.
        k: The RRF constant.
        depth: Documents kept per query.
        tag: The fused run's name.
        folds: The folds the queries are dealt into.
    """
    qids = sorted(set.intersection(*(set(r.ranking) for r in tune_runs)))
    n = max(1, min(folds, len(qids)))
    fold_of = {q: i % n for i, q in enumerate(qids)}
    ranking: dict[str, list] = {}
    chosen = []
    for f in range(n):
        rest = {q for q in qids if fold_of[q] != f}
        rest_qrels = [r for r in tune_qrels if r.query_id in rest]
        if any(r.relevance > 0 for r in rest_qrels):
            weights = tune_weights([restricted(r, rest) for r in tune_runs], rest_qrels, method, norm, measure, step, k,
                                   depth)[0]
        else:
            weights = tuple([1.0 / len(tune_runs)] * len(tune_runs))
        mine = {q for q in qids if fold_of[q] == f}
        ranking.update(fuse([restricted(r, mine) for r in tune_runs], method, norm, weights, k, depth, tag).ranking)
        chosen.append(tuple(weights))
    return Run(ranking, tag), chosen


def restricted(run: Run, qids: set[str]) -> Run:
    """``run`` of the queries ``qids`` only."""
    return Run({q: d for q, d in run.ranking.items() if q in qids}, run.tag)
