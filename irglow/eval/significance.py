"""Paired significance tests, multiple-comparison corrections, all-pairs Tukey HSD, effect sizes, risk
and random-effects pooling — the statistics behind every irglow table.

Per-query values of two systems on the same queries are *paired*; every test here works on the
per-query differences ``d = x − y``.

* ``randomization`` (default; Fisher's sign-flip permutation test): under H0 the sign of each
  difference is arbitrary; p = share of sign assignments whose |mean| reaches the observed one.
  Every assignment is enumerated when 2^n ≤ the permutation budget (an exact p), else a seeded
  sample (p = (hits + 1) / (B + 1)).  Smucker, Allan & Carterette (CIKM 2007) found it agrees with
  the t-test and the bootstrap on TREC runs and recommend it; it assumes only exchangeability of
  signs, not normality — which is why it is the default.
* ``t``: the paired t-test (normal differences; scipy's ``ttest_rel``).
* ``bootstrap``: paired bootstrap of the mean difference; percentile CI, and p from the
  null-shifted resamples (Sakai's shift method).
* ``wilcoxon``: the signed-rank test (scipy); Smucker et al. advise against it for IR (it tests
  medians of ranks, not means, and disagrees with the others more often).

All permutation/bootstrap draws come from one seeded generator and are shared by every pair and
measure of a table (common random numbers), so a table is reproducible and costs one draw.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from irglow.defaults import CORRECTIONS, PERMUTATIONS, SIGNIFICANCE_TESTS  # noqa: F401 (CORRECTIONS re-exported)

TESTS = SIGNIFICANCE_TESTS
DEFAULT_TEST = TESTS[0]
DEFAULT_PERMUTATIONS = PERMUTATIONS
CHUNK = 1000  # draws per block: memory stays at CHUNK × queries whatever the budget


@dataclass(frozen=True)
class TestResult:
    p: float
    delta: float  # mean(x) − mean(y)
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int


def min_queries(alpha: float = 0.05) -> int:
    """The fewest queries on which a paired test can mark a difference at ``alpha``: the smallest n whose
    exact two-sided sign-flip test can reach p < α (2 of its 2ⁿ sign vectors are as extreme as the data at
    best, so 2/2ⁿ < α; 6 at α = 0.05).  Below it every test is refused: the randomization test cannot
    reject, the t-test's normality and the bootstrap's resampling mean nothing on a handful of queries
    (3 all-positive queries: bootstrap p ≈ 0.0001, exact p = 0.25)."""
    return int(math.floor(math.log2(2 / alpha))) + 1


def _sign_blocks(n: int, permutations: int, seed: int):
    """Blocks of ±1 sign vectors (rows): all 2^n of them when that is within the budget, else seeded
    random ones.  Yields ``(signs, exact)``."""
    if n <= 20 and 2 ** n <= permutations:
        total = 2 ** n
        for start in range(0, total, CHUNK):
            codes = np.arange(start, min(total, start + CHUNK), dtype=np.int64)
            bits = (codes[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1
            yield (1.0 - 2.0 * bits).astype(np.float64), True
        return
    rng = np.random.default_rng(seed)
    for start in range(0, permutations, CHUNK):
        rows = min(CHUNK, permutations - start)
        yield np.where(rng.random((rows, n)) < 0.5, -1.0, 1.0), False


def randomization_pvalues(diffs: np.ndarray, permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """Two-sided sign-flip p-values, one per column of ``diffs`` (queries × comparisons), all columns
    tested against the same sign vectors."""
    diffs = np.asarray(diffs, dtype=np.float64)
    diffs = diffs[:, None] if diffs.ndim == 1 else diffs
    n = diffs.shape[0]
    observed = np.abs(diffs.sum(axis=0))
    tol = 1e-9 * np.maximum(1.0, observed)
    hits = np.zeros(diffs.shape[1])
    total, exact = 0, False
    for signs, exact in _sign_blocks(n, permutations, seed):
        hits += (np.abs(signs @ diffs) >= observed - tol).sum(axis=0)
        total += len(signs)
    if n == 0:
        return np.ones(diffs.shape[1])
    return hits / total if exact else (hits + 1) / (total + 1)


def _bootstrap_means(diffs: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of ``resamples`` paired bootstrap samples of each column: resamples × comparisons."""
    rng = np.random.default_rng(seed)
    n = diffs.shape[0]
    out = []
    for start in range(0, resamples, CHUNK):
        rows = min(CHUNK, resamples - start)
        picks = rng.integers(0, n, (rows, n)) + (np.arange(rows) * n)[:, None]  # row r's draws, offset
        counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        out.append(counts @ diffs / n)
    return np.concatenate(out) if out else np.zeros((0, diffs.shape[1]))


BOOTSTRAP_FLOATS = 1 << 24  # resampled means held at once (128 MB)


def bootstrap(diffs: np.ndarray, resamples: int = DEFAULT_PERMUTATIONS, seed: int = 0, level: float = 0.95
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, CI low, CI high) per column: percentile CI of the mean difference, and the two-sided p of
    the shift method (resampled means centred on the observed mean, compared with |observed|)."""
    diffs = np.asarray(diffs, dtype=np.float64)
    # the resampled means of a few columns at a time, each block drawn from the same seed (the same resamples for
    # every column: common random numbers), so memory is bounded by BOOTSTRAP_FLOATS whatever the resamples
    block = max(1, BOOTSTRAP_FLOATS // max(1, resamples))
    out = [np.zeros(0)] * 3
    for a in range(0, diffs.shape[1], block):
        part = diffs[:, a:a + block]
        means = _bootstrap_means(part, resamples, seed)
        observed = part.mean(axis=0)
        shifted = np.abs(means - observed)
        tol = 1e-12 * np.maximum(1.0, np.abs(observed))
        p = ((shifted >= np.abs(observed) - tol).sum(axis=0) + 1) / (len(means) + 1)
        tail = (1 - level) / 2
        got = (p, np.quantile(means, tail, axis=0), np.quantile(means, 1 - tail, axis=0))
        out = [np.concatenate([o, g]) for o, g in zip(out, got)]
    return out[0], out[1], out[2]


def t_interval(d: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    from scipy import stats

    n = len(d)
    if n < 2:
        return (float("nan"), float("nan"))
    se = d.std(ddof=1) / math.sqrt(n)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * se
    return float(d.mean() - half), float(d.mean() + half)


def test_differences(diffs: np.ndarray, test: str = DEFAULT_TEST, permutations: int = DEFAULT_PERMUTATIONS,
                     seed: int = 0, level: float = 0.95) -> list[TestResult]:
    """One result per column of ``diffs`` (queries × comparisons, system − baseline).  Every column of a
    table — all runs and measures — goes through one call, so the permutation and bootstrap draws are
    made once and shared (common random numbers)."""
    from scipy import stats

    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, not {test!r}")
    diffs = np.asarray(diffs, dtype=np.float64)
    if diffs.ndim != 2 or diffs.shape[1] == 0:
        return []
    zero = np.all(np.isclose(diffs, 0.0, atol=1e-12), axis=0)
    boot_p, low, high = bootstrap(diffs, permutations, seed + 1, level)
    if test == "randomization":
        p = randomization_pvalues(diffs, permutations, seed)
    elif test == "bootstrap":
        p = boot_p
    else:
        p = np.ones(diffs.shape[1])
        for j, d in enumerate(diffs.T):
            if zero[j]:
                continue
            with warnings.catch_warnings():  # constant differences: scipy warns and returns NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                if test == "t":  # the paired t-test is the one-sample t-test of the differences; a constant
                    # non-zero difference has no variance, t is undefined: NaN (no mark), never p = 0
                    p[j] = stats.ttest_1samp(d, 0.0).pvalue if np.ptp(d) > 1e-12 else np.nan
                else:
                    p[j] = stats.wilcoxon(d, zero_method="wilcox").pvalue
    out = []
    for j, d in enumerate(diffs.T):
        lo, hi = t_interval(d, level) if test == "t" else (float(low[j]), float(high[j]))
        p_j = 1.0 if zero[j] else float(p[j])
        out.append(TestResult(p_j, float(d.mean()), lo, hi, int((d > 1e-12).sum()), int((np.abs(d) <= 1e-12).sum()),
                              int((d < -1e-12).sum())))
    return out


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values: Holm's step-down, Bonferroni, Benjamini–Hochberg (false discovery rate) or none.
    An undefined p (NaN: a test that cannot be computed) stays undefined and is not counted in the family."""
    p_all = np.asarray(pvalues, dtype=float)
    defined = ~np.isnan(p_all)
    if not defined.all():
        out = np.full(len(p_all), np.nan)
        out[defined] = adjust(p_all[defined].tolist(), method)
        return out.tolist()
    p = p_all
    m = len(p)
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {method!r}")
    if m == 0 or method == "none":
        return p.tolist()
    if method == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p[i]))
            adjusted[i] = running
        return adjusted.tolist()
    running = 1.0  # BH: step-up from the largest p
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, p[i] * m / (rank + 1))
        adjusted[i] = min(1.0, running)
    return adjusted.tolist()


def tukey_hsd(scores: np.ndarray, permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """Randomized Tukey HSD (Carterette, TOIS 2012; Sakai's book): ``scores`` is queries × systems.
    Under H0 the systems are exchangeable within each query; each permutation shuffles every query's
    row and records the range (max − min) of the system means.  The adjusted p of a pair is the share
    of permutations whose range reaches the pair's observed |difference|; one family for all pairs."""
    scores = np.asarray(scores, dtype=np.float64)
    n, m = scores.shape
    means = scores.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    rng = np.random.default_rng(seed)
    ranges = []
    block = max(1, min(CHUNK, 2_000_000 // max(1, n * m)))  # about 16 MB of shuffled scores at a time
    for start in range(0, permutations, block):
        rows = min(block, permutations - start)
        order = np.argsort(rng.random((rows, n, m)), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(scores, (rows, n, m)), order, axis=2)
        perm_means = shuffled.mean(axis=1)
        ranges.append(perm_means.max(axis=1) - perm_means.min(axis=1))
    ranges = np.concatenate(ranges) if ranges else np.zeros(0)
    tol = 1e-9 * np.maximum(1.0, observed)
    p = ((ranges[None, None, :] >= (observed - tol)[:, :, None]).sum(axis=2) + 1) / (len(ranges) + 1)
    np.fill_diagonal(p, 1.0)
    return p


def groups(names: Sequence[str], means: Sequence[float], p: np.ndarray, alpha: float = 0.05) -> dict[str, str]:
    """Compact letter display: systems sharing a letter cannot be told apart at ``alpha``.  Systems
    are sorted by mean (best first); each maximal run of neighbours whose every pair is not significant
    gets a letter (Tukey's homogeneous subsets)."""
    order = sorted(range(len(names)), key=lambda i: -means[i])
    intervals: list[tuple[int, int]] = []
    for a in range(len(order)):
        b = a
        while b + 1 < len(order) and all(p[order[i], order[b + 1]] >= alpha for i in range(a, b + 1)):
            b += 1
        if not intervals or b > intervals[-1][1]:
            intervals.append((a, b))
    letters = {names[i]: "" for i in range(len(names))}
    for k, (a, b) in enumerate(intervals):
        letter = chr(ord("a") + k) if k < 26 else f"[{k}]"
        for pos in range(a, b + 1):
            letters[names[order[pos]]] += letter
    return letters


def risk(system: np.ndarray, baseline: np.ndarray, alpha: float = 1.0) -> tuple[float, float, float]:
    """(URisk, TRisk, p) of ``system`` against ``baseline`` (Dinçer, Macdonald & Ounis, SIGIR 2014):
    per query z = δ⁺ − (1 + α)·δ⁻ with δ = system − baseline; URisk = mean(z) (positive: a gain even
    with losses weighted 1 + α); TRisk = URisk / (sd(z)/√n), a t statistic (|TRisk| > 2 ≈ p < 0.05),
    its two-sided p from Student's t with n − 1 degrees of freedom."""
    from scipy import stats

    d = np.asarray(system, float) - np.asarray(baseline, float)
    z = np.where(d > 0, d, (1 + alpha) * d)
    n = len(z)
    urisk = float(z.mean()) if n else float("nan")
    if n < 2:  # no spread to estimate: TRisk and its p are undefined, never significant
        return urisk, float("nan"), float("nan")
    sd = float(z.std(ddof=1))
    if sd == 0:  # every query the same z: TRisk is 0 (no effect) or undefined (±∞), never a mark
        return urisk, (0.0 if urisk == 0 else math.copysign(math.inf, urisk)), (1.0 if urisk == 0 else float("nan"))
    trisk = urisk / (sd / math.sqrt(n))
    return urisk, trisk, float(2 * stats.t.sf(abs(trisk), n - 1))


@dataclass(frozen=True)
class Pooled:
    effect: float
    ci_low: float
    ci_high: float
    tau2: float
    i2: float  # share of the variation across collections due to heterogeneity, 0..1
    q: float
    k: int  # collections pooled
    excluded: int = 0  # collections left out: no within-collection variance (see dersimonian_laird)


def dersimonian_laird(effects: Sequence[float], variances: Sequence[float], level: float = 0.95) -> Pooled:
    """Random-effects meta-analysis of per-collection effects (DerSimonian & Laird, 1986): inverse-
    variance weights, between-collection variance τ² from Cochran's Q, I² = (Q − (k−1)) / Q.

    A collection whose per-query differences have no variance (a system identical to the baseline there)
    would get an infinite weight; a floor in its place makes the interval's width follow the floor.  Such
    collections are left out of the weights and counted in ``excluded``; with fewer than two left, nothing
    is pooled (NaN)."""
    from scipy import stats

    y_all = np.asarray(effects, float)
    v_all = np.asarray(variances, float)
    keep = v_all > 0
    y, v = y_all[keep], v_all[keep]
    k, excluded = len(y), int((~keep).sum())
    if k < 2:
        nan = float("nan")
        return Pooled(float(y[0]) if k == 1 else nan, nan, nan, nan, nan, nan, k, excluded)
    w = 1 / v
    fixed = (w * y).sum() / w.sum()
    q = float((w * (y - fixed) ** 2).sum())
    c = w.sum() - (w ** 2).sum() / w.sum()
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    ws = 1 / (v + tau2)
    pooled = float((ws * y).sum() / ws.sum())
    se = math.sqrt(1 / ws.sum())
    z = stats.norm.ppf(0.5 + level / 2)
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    return Pooled(pooled, pooled - z * se, pooled + z * se, tau2, i2, q, k, excluded)
