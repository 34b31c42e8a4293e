"""Unsupervised query-performance predictors over a run's own scores, and fusion weights from them — for
zero-shot fusion, where no judgment of the evaluated collection may touch the run.

Predictors (each on one query's ranked scores, best first):

* :func:`nqc` — normalized query commitment (Shtok, Kurland, Carmel, Raiber & Markovits, TOIS 2012): the
  standard deviation of the top-k scores over the magnitude of a reference score (the corpus-as-a-document
  score in the paper; here, where the engine does not give it, the mean score of the whole retrieved list);
  high: the top stands apart, the run is committed.
* :func:`spread` — for dense runs (cosine similarities have no corpus score): s₁ minus the mean of s₂…s_k.

Scales differ between predictors and runs (BM25 scores against cosines), so :func:`percentile_weights` turns
each run's predictor values into their percentile among that run's own values over the evaluated queries: a
query where a run is more confident than usual *for that run* gets more of its weight.  Only the runs' scores
are read: nothing of the evaluated collection's judgments.
"""

from __future__ import annotations

import math
from irglow.defaults import DEPTH, RRF_K
from typing import Mapping, Sequence
from irglow.runs.trec import Run, trec_order


def _top(scores: Sequence[float], k: int) -> list[float]:
    return [float(s) for s in scores[:k]]


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def nqc(scores: Sequence[float], k: int = 100, reference: float | None = None) -> float:
    """σ(top k) / |reference| (reference: the mean of the whole list unless given); 0 for an empty list or a
    zero reference."""
    top = _top(scores, k)
    if not top:
        return 0.0
    ref = _mean([float(s) for s in scores]) if reference is None else reference
    mu = _mean(top)
    sd = math.sqrt(_mean([(s - mu) ** 2 for s in top]))
    return sd / abs(ref) if ref else 0.0


def spread(scores: Sequence[float], k: int = 10) -> float:
    """s₁ − mean(s₂ … s_k): how far a dense run's best match stands above the rest of its top."""
    top = _top(scores, k)
    if len(top) < 2:
        return 0.0
    return top[0] - _mean(top[1:])


def _overlaps(tops: Sequence[Sequence[str]], k: int) -> list[list[float]]:
    """For each ranking, the Jaccard overlap of its top k with every other ranking's top k (0 where both are
    empty)."""
    sets = [set(t[:k]) for t in tops]
    return [[len(a & b) / len(a | b) if a | b else 0.0 for j, b in enumerate(sets) if j != i]
            for i, a in enumerate(sets)]


def percentile_weights(values: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """run → query → the share of that run's queries whose value is at most this query's (ties share the
    highest rank): 1 where the run is at its most confident, near 0 at its least."""
    out = {}
    for run, per_query in values.items():
        ordered = sorted(per_query.values())
        n = len(ordered)
        rank: dict[float, int] = {}
        for i, v in enumerate(ordered, 1):
            rank[v] = i  # the last position holding v: ties share the highest rank
        out[run] = {q: rank[v] / n for q, v in per_query.items()}
    return out


def looks_dense(run) -> bool:
    """A run whose every score lies in [−1, 1] is read as cosine similarities (a dense run): its predictor is the
    spread of its top, not NQC, which needs scores with a corpus-level reference."""
    scores = [s for docs in run.ranking.values() for _, s in docs]
    return bool(scores) and all(-1.0 <= s <= 1.0 for s in scores)


def predictor_values(runs: Sequence, dense: Sequence[bool], k: int = 10) -> dict[str, dict[str, float]]:
    """run tag → query → its predictor: NQC over the top 100 for a score-based (lexical) run, the spread of the
    top k for a dense one (cosines have no corpus score to normalise by)."""
    out: dict[str, dict[str, float]] = {}
    for run, is_dense in zip(runs, dense):
        out[run.tag] = {q: spread([s for _, s in docs], k) if is_dense else nqc([s for _, s in docs], 100)
                        for q, docs in run.ranking.items()}
    return out


def qpp_weights(runs: Sequence, dense: Sequence[bool], scheme: str = "qpp", k: int = 10) -> dict[str, list[float]]:
    """query → one weight per run, from the runs' own scores and rankings only:

    * ``qpp``: 0.5 + the query's predictor percentile within the run (0.5 … 1.5);
    * ``diverse``: 1 / (1 + Σ of its top-k overlap with the other runs) — runs that repeat each other (three
      lexical runs) share one run's say instead of outvoting a different one;
    * ``qpp+diverse``: the product."""
    tags = [r.tag for r in runs]
    if len(set(tags)) != len(tags):
        raise ValueError(f"runs to weigh need distinct tags, not {tags}")
    pct = percentile_weights(predictor_values(runs, dense, k)) if "qpp" in scheme else {}
    out = {}
    for q in sorted({q for r in runs for q in r.ranking}):
        w = [1.0] * len(runs)
        if "qpp" in scheme:
            w = [0.5 + pct[t].get(q, 0.0) for t in tags]
        if "diverse" in scheme:
            tops = [[d for d, _ in r.ranking.get(q, [])[:k]] for r in runs]
            w = [wi / (1.0 + sum(others)) for wi, others in zip(w, _overlaps(tops, k))]
        out[q] = w
    return out


def fuse_weighted(runs: Sequence, weights: Mapping[str, Sequence[float]], k: float = RRF_K, depth: int = DEPTH,
                  tag: str = "fused"):
    """Reciprocal-rank fusion with each query's own run weights: Σ_r w_r(q) / (k + rank_r(d)), ranks in
    trec_eval's order; a query without weights fuses with equal ones."""
    ranking = {}
    for q in sorted({q for r in runs for q in r.ranking}):
        w = weights.get(q, [1.0] * len(runs))
        fused: dict[str, float] = {}
        for run, wr in zip(runs, w):
            for rank, (d, _) in enumerate(trec_order(run.ranking.get(q, [])), 1):
                fused[d] = fused.get(d, 0.0) + wr / (k + rank)
        ranking[q] = trec_order(list(fused.items()))[:depth]
    return Run(ranking, tag)
